"""Learned fusion: folds never fit on the topics they score; CV figures are the official scorer's; the saved
fusion is versioned, verified on read and applies to new topics."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import modelseek as ms
from modelseek.core.errors import InputError
from modelseek.retrieval.fusion import LearnedFusion, candidate_fusions, optimize_fusion, simplex_weights
from modelseek.retrieval.fusion.learned import LEARNED, PLAIN_RRF
from modelseek.testing.fusion_zoo import make_fusion_zoo


@pytest.fixture(scope="module")
def zoo():
    return make_fusion_zoo(n_tasks=40, n_models=12, seed=1)


@pytest.fixture(scope="module")
def learned(zoo):
    truth, runs = zoo
    return optimize_fusion(list(runs.values()), truth, folds=4, seed=3, step=0.25)


def test_simplex_grid():
    g = simplex_weights(3, 0.5)
    assert g == [(1.0, 0.0, 0.0), (0.5, 0.5, 0.0), (0.5, 0.0, 0.5), (0.0, 1.0, 0.0), (0.0, 0.5, 0.5),
                 (0.0, 0.0, 1.0)]
    assert all(abs(sum(w) - 1) < 1e-12 for w in simplex_weights(4, 0.1))
    assert len(simplex_weights(3, 0.1)) == 66
    with pytest.raises(InputError, match="divide 1"):
        simplex_weights(2, 0.3)


def test_grid_starts_with_plain_rrf_and_holds_each_run_alone():
    grid = candidate_fusions(["a", "b"], step=0.5)
    assert grid[0] == ms.retrieval.fusion.Fusion.build(["a", "b"], "rrf")
    singles = [g for g in grid if g.method.value == "wsum" and sorted(g.weights) == [0.0, 1.0]]
    assert len(singles) == 2 * 4   # each run alone under each of the 4 normalisations
    assert len(set(grid)) == len(grid)


def test_folds_never_fit_on_the_topics_they_score(learned, zoo):
    truth, _ = zoo
    cv = learned.cv
    held = [set(f.held_out) for f in cv.folds]
    topics = set(learned.fitted_topics)
    assert len(cv.folds) == 4
    for f in cv.folds:
        assert set(f.fitted).isdisjoint(f.held_out)
        assert set(f.fitted) | set(f.held_out) == topics
    assert sum(len(h) for h in held) == len(topics) and set().union(*held) == topics   # a partition
    # every topic is scored by the fold that held it out
    for f in cv.folds:
        assert set(cv.per_topic.index[cv.per_topic["fold"] == f.fold]) == set(f.held_out)


def test_a_fold_choice_does_not_depend_on_its_held_out_truth(learned, zoo):
    truth, runs = zoo
    fold = learned.cv.folds[0]
    frame = truth.frame[["task_id", "model_id", "f1"]]
    held = frame["task_id"].isin(fold.held_out)
    # scramble the truth of the held-out topics only (reverse each one's order)
    frame.loc[held, "f1"] = 1.01 - frame.loc[held, "f1"]
    # (criticality kept as it was: folds are stratified by tier)
    scrambled = ms.GroundTruth(frame, criticality=truth.criticalities)
    other = optimize_fusion(list(runs.values()), scrambled, folds=4, seed=3, step=0.25)
    assert other.cv.folds[0].held_out == fold.held_out
    assert other.cv.folds[0].fusion == fold.fusion
    assert other.cv.folds[0].train_score == pytest.approx(fold.train_score)
    # ... while what it scores on those topics did change
    assert not np.allclose(other.cv.per_topic.loc[list(fold.held_out), LEARNED],
                           learned.cv.per_topic.loc[list(fold.held_out), LEARNED])


def test_cv_values_are_the_official_scorer(learned, zoo):
    truth, runs = zoo
    cv = learned.cv
    for f in cv.folds:
        part = f.fusion.apply(list(runs.values())).restrict(f.held_out)
        rep = ms.evaluate(part, truth, ["ndcg@5"], topics=list(f.held_out))
        assert cv.per_topic.loc[list(f.held_out), LEARNED].to_numpy() == pytest.approx(
            rep.per_topic["ndcg@5"].to_numpy(), abs=1e-12)
    for rid, r in runs.items():
        assert cv.per_topic[rid].mean() == pytest.approx(ms.evaluate(r, truth, ["ndcg@5"]).mean()["ndcg@5"])
    assert cv.per_topic[PLAIN_RRF].mean() == pytest.approx(
        ms.evaluate(ms.fuse(list(runs.values())), truth, ["ndcg@5"]).mean()["ndcg@5"])


def test_learned_fusion_beats_each_input_on_the_generated_zoo(learned):
    summ = learned.cv.summary(n_resamples=500)
    for name in ("prior", "est_a", "est_b"):
        assert summ.loc[name, "diff"] > 0, summ     # learned − input, on held-out topics
    assert summ.loc["prior", "diff_low"] > 0 and summ.loc["est_b", "diff_low"] > 0
    assert summ.loc[LEARNED, "low"] <= summ.loc[LEARNED, "mean"] <= summ.loc[LEARNED, "high"]
    assert set(learned.cv.per_fold().columns) >= {"n", LEARNED, PLAIN_RRF}


def test_final_fusion_is_the_best_on_all_topics(zoo):
    truth, runs = zoo
    learned = optimize_fusion(list(runs.values()), truth, folds=None, step=0.25, selection="best")
    assert learned.cv is None
    grid = candidate_fusions(list(runs), step=0.25)
    means = [ms.evaluate(g.apply(list(runs.values())), truth, ["ndcg@5"]).mean()["ndcg@5"] for g in grid[:12]]
    assert learned.train_score >= max(means) - 1e-12
    got = ms.evaluate(learned.apply(list(runs.values())), truth, ["ndcg@5"]).mean()["ndcg@5"]
    assert got == pytest.approx(learned.train_score)


def test_save_load_apply_to_new_topics(tmp_path, zoo):
    truth, runs = zoo
    known = truth.task_ids[:30]
    learned = optimize_fusion(list(runs.values()), truth.subset(known), folds=3, seed=0, step=0.5)
    assert learned.fitted_topics == known
    path = tmp_path / "fusion.json"
    learned.save(path)
    doc = json.loads(path.read_text())
    assert doc["format"] == "modelseek-fusion" and doc["version"] == 1 and len(doc["sha256"]) == 64
    back = LearnedFusion.load(path)
    assert back.fusion == learned.fusion and back.fitted_topics == known
    fused = back.apply(list(runs.values()))
    assert list(fused) == truth.task_ids                  # new topics (no ground truth) fused too
    assert fused == learned.apply(list(runs.values()))


def test_saved_fusion_is_verified(tmp_path, learned):
    path = tmp_path / "f.json"
    learned.save(path)
    doc = json.loads(path.read_text())
    doc["fusion"]["weights"] = {k: 1.0 for k in doc["fusion"]["weights"]}
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError, match="checksum mismatch"):
        LearnedFusion.load(path)
    doc["version"] = 99
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError, match="unsupported version 99"):
        LearnedFusion.load(path)
    path.write_text('{"format": "modelseek-fusion",\n "version": 1,, }')
    with pytest.raises(InputError, match=r"f\.json:2"):
        LearnedFusion.load(path)


def test_apply_needs_the_same_runs(learned, zoo):
    _, runs = zoo
    with pytest.raises(InputError, match="missing est_b"):
        learned.apply([runs["prior"], runs["est_a"]])


def test_no_shared_topics_or_ids_are_errors(zoo):
    truth, runs = zoo
    other = ms.Run.from_scores({"zz": {"1": 1.0}}, "x")
    with pytest.raises(InputError, match="no topic of the runs has ground truth"):
        optimize_fusion([other], truth)
    renamed = ms.Run.from_scores({t: {f"m{d}": s for d, s in runs["prior"].scores(t).items()}
                                  for t in runs["prior"]}, "p")
    with pytest.raises(InputError, match="no docID"):
        optimize_fusion([renamed], truth)
    with pytest.raises(InputError, match="ndcg@k|cut-off"):
        optimize_fusion(list(runs.values()), truth, metric="mrr")


def test_the_search_is_deterministic(zoo):
    truth, runs = zoo
    a = optimize_fusion(list(runs.values()), truth, folds=3, seed=5, step=0.5)
    b = optimize_fusion(list(runs.values()), truth, folds=3, seed=5, step=0.5)
    assert a.fusion == b.fusion and [f.held_out for f in a.cv.folds] == [f.held_out for f in b.cv.folds]
    pd.testing.assert_frame_equal(a.cv.per_topic, b.cv.per_topic)
    assert np.isfinite(a.cv.per_topic[LEARNED]).all()


def test_one_standard_error_rule_prefers_fewer_runs():
    from modelseek.retrieval.fusion import Fusion, choose

    grid = [Fusion.build(["a", "b"], "rrf"),                         # both runs
            Fusion.build(["a", "b"], "wsum", "min-max", [1, 0]),     # a alone
            Fusion.build(["a", "b"], "wsum", "min-max", [0, 1])]     # b alone
    M = np.array([[1.0, 1.0, 1.0, 1.0, 1.0],
                  [1.05, 0.95, 1.0, 1.0, 0.99],   # mean 0.998: 0.002 below, paired SE ~0.016
                  [0.5, 0.5, 0.5, 0.5, 0.5]])
    assert choose(M, range(5), grid, "best") == 0
    assert choose(M, range(5), grid, "1se") == 1
    # only the columns given count: on topics 0..3 'a' ties the best (mean 1.0), on topic 4 alone it loses
    assert choose(M, [0, 1, 2, 3], grid, "1se") == 1
    assert choose(M, [4], grid, "1se") == 0
    M2 = M.copy()
    M2[1] = [0.9, 0.9, 0.9, 0.9, 0.85]            # clearly worse: the best is kept
    assert choose(M2, range(5), grid, "1se") == 0
