"""The one nDCG (:mod:`modelseek.retrieval.metrics.ndcg`): checked against trec_eval's C code (pytrec_eval), against the
scorer of run files (:func:`modelseek.retrieval.evaluation.evaluate`), and against the copies it replaced in the learned
rankers, the adaptive ranker and learned fusion (kept below verbatim as they were, so that a change of
convention — tie order, ideal over all candidates, absent candidates, gain of a grade — shows up here)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from modelseek import GradingScheme, GroundTruth, Run, evaluate
from modelseek.retrieval.fusion.core import make_block
from modelseek.retrieval.fusion.learned import _Judged
from modelseek.retrieval.metrics import DEFAULT_METRICS, RANKING_METRICS, ndcg_at_k
from modelseek.retrieval.metrics.ndcg import ideal_dcg, ndcg
from modelseek.retrieval.rankers._learned import ndcg_matrix

S = GradingScheme.NTCIR


# ---- the copies as they were before issue #24 (reference values, not used by the package)

def _truth(y, tasks, models) -> GroundTruth:
    """A ground truth of the tasks x models F1 matrix ``y`` (0 = not run)."""
    wide = pd.DataFrame(np.where(y > 0, y, np.nan), index=tasks, columns=models)
    long = wide.rename_axis(index="task_id", columns="model_id").stack().dropna().rename("f1").reset_index()
    return GroundTruth(long)

def _old_ndcg_matrix(scores, targets, k=5, scheme=S):
    out = np.zeros(len(scores))
    disc = 1.0 / np.log2(np.arange(2, k + 2))
    for i, (s, y) in enumerate(zip(scores, targets)):
        gains = np.array([scheme.gain(scheme.grade(v)) for v in y])
        order = np.argsort(-s, kind="stable")[:k]
        ideal = np.sort(gains)[::-1][:k]
        idcg = float(ideal @ disc[: len(ideal)])
        out[i] = float(gains[order] @ disc[: len(order)]) / idcg if idcg > 0 else 0.0
    return out


def _old_adaptive_ndcg5(pred, y):
    gains = np.vectorize(lambda v: S.gain(S.grade(v)))(y)
    disc = 1.0 / np.log2(np.arange(2, 7))
    idcg = (-np.sort(-gains, axis=1)[:, :5] * disc[: min(5, y.shape[1])]).sum(axis=1)
    order = np.argsort(-pred, axis=1, kind="stable")[:, :5]
    dcg = (np.take_along_axis(gains, order, axis=1) * disc[: order.shape[1]]).sum(axis=1)
    return np.where(idcg > 0, dcg / np.where(idcg > 0, idcg, 1.0), 0.0)


def _old_judged(block, truth, scheme, k, fused):
    gains = np.zeros(block.scores.shape[1:])
    idcg = np.zeros(len(block.topics))
    for ti, t in enumerate(block.topics):
        grades = truth.grades(t, scheme)
        for j, d in enumerate(block.docs[ti]):
            gains[ti, j] = scheme.gain(grades.get(d, 0))
        ideal = sorted((scheme.gain(g) for g in grades.values()), reverse=True)
        idcg[ti] = sum(g / math.log2(i + 2) for i, g in enumerate(ideal[:k]))
    absent = np.isnan(fused)
    order = np.argsort(np.where(absent, np.inf, -fused), axis=1, kind="stable")[:, :k]
    g = np.take_along_axis(np.where(absent, 0.0, gains), order, axis=1)
    disc = 1.0 / np.log2(np.arange(2, order.shape[1] + 2))
    dcg = (g * disc).sum(axis=1)
    return np.where(idcg > 0, dcg / np.where(idcg > 0, idcg, 1.0), 0.0)


def _old_ndcg_at_k(ranking, grades, k, gain):
    dcg = lambda gs: sum(g / math.log2(i + 2) for i, g in enumerate(gs[:k]))  # noqa: E731
    idcg = dcg(sorted((gain(g) for g in grades.values()), reverse=True))
    return 0.0 if idcg <= 0 else dcg([gain(grades.get(d, 0)) for d in ranking]) / idcg


# ---- data: the NTCIR-19 subtask-A ground truth (../shared), or a generated one of the same shape
@pytest.fixture(scope="module")
def targets() -> tuple[np.ndarray, list[str], list[str]]:
    """Normalised F1, tasks x models."""
    path = Path(__file__).resolve().parents[2] / "shared" / "data" / "ntcir19-mr" / "subtask-a" / "ground-truth.csv"
    if path.exists():
        df = pd.read_csv(path, dtype={"task_id": str, "model_id": str})
        table = df.pivot(index="task_id", columns="model_id", values="normalized_f1").fillna(0.0)
        return table.to_numpy(float), list(table.index), list(table.columns)
    rng = np.random.default_rng(7)
    y = rng.uniform(0.2, 1.0, size=(40, 30))
    y[rng.random(y.shape) < 0.3] = 0.0
    y /= y.max(axis=1, keepdims=True)
    return y, [f"t{i}" for i in range(40)], [f"m{j}" for j in range(30)]


def _scores_with_ties(rng, shape):
    return rng.integers(0, 6, size=shape).astype(float)  # few levels: many ties, to check the tie order


def test_learned_rankers_ndcg_matrix_gives_the_same_values(targets):
    y, _, _ = targets
    rng = np.random.default_rng(0)
    for k in (1, 3, 5, 10):
        scores = _scores_with_ties(rng, y.shape)
        np.testing.assert_allclose(ndcg_matrix(scores, y, k), _old_ndcg_matrix(scores, y, k), rtol=0, atol=1e-15)
        paper = GradingScheme.PAPER
        np.testing.assert_allclose(ndcg_matrix(scores, y, k, paper), _old_ndcg_matrix(scores, y, k, paper),
                                   rtol=0, atol=1e-15)


def test_adaptive_rankers_ndcg5_is_bit_identical(targets):
    """The adaptive ranker selects its stages by these values: they must not move by one ulp."""
    y, _, _ = targets
    gains = np.vectorize(lambda v: S.gain(S.grade(v)))(y)
    rng = np.random.default_rng(1)
    for _ in range(5):
        pred = np.concatenate([_scores_with_ties(rng, y.shape[:1] + (y.shape[1] // 2,)),
                               rng.normal(size=(y.shape[0], y.shape[1] - y.shape[1] // 2))], axis=1)
        assert np.array_equal(ndcg(pred, gains, 5, ideal_dcg(gains, 5)), _old_adaptive_ndcg5(pred, y))


def test_learned_fusion_scorer_gives_the_same_values(targets):
    y, tasks, models = targets
    rng = np.random.default_rng(2)
    truth = _truth(y, tasks, models)
    runs = []
    for r in range(3):
        keep = rng.random(y.shape) < 0.7  # each run ranks a different subset: absent candidates are NaN
        runs.append(Run.from_scores({t: {m: float(rng.integers(0, 4)) for j, m in enumerate(models) if keep[i, j]}
                                     for i, t in enumerate(tasks)}, run_id=f"r{r}"))
    block = make_block(runs)
    for k in (1, 5, 10):
        summed = np.where(np.isnan(block.scores).all(axis=0), np.nan, np.nansum(block.scores, axis=0))
        for scheme in (S, GradingScheme.PAPER):
            judged = _Judged.build(block, truth, scheme, k)
            for fused in (block.scores[0], summed):
                np.testing.assert_allclose(judged.ndcg(fused), _old_judged(block, truth, scheme, k, fused),
                                           rtol=0, atol=1e-15)


def test_ndcg_at_k_gives_the_same_values(targets):
    y, _, models = targets
    rng = np.random.default_rng(3)
    for i in range(min(len(y), 30)):
        grades = {m: S.grade(v) for m, v in zip(models, y[i]) if v > 0}
        ranking = list(rng.permutation(models)[: rng.integers(0, len(models) + 1)])
        for k in (1, 5, 20):
            assert ndcg_at_k(ranking, grades, k, S.gain) == pytest.approx(_old_ndcg_at_k(ranking, grades, k, S.gain),
                                                                          abs=1e-15)


def test_matches_trec_eval_through_pytrec_eval(targets):
    """Per topic, the one nDCG, its per-list form and the run-file scorer agree with trec_eval (ndcg_cut_k),
    whose gain is the grade itself: the paper's gain (linear in the grade)."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    y, tasks, models = targets
    rng = np.random.default_rng(4)
    paper = GradingScheme.PAPER
    truth = _truth(y, tasks, models)
    grades = {t: truth.grades(t, paper) for t in tasks}
    # distinct scores: trec_eval breaks ties by docID, the official scorer by line order
    scores = rng.permutation(y.size).reshape(y.shape).astype(float)
    run = {t: {m: float(scores[i, j]) for j, m in enumerate(models)} for i, t in enumerate(tasks)}
    ks = (1, 3, 5, 10)
    ev = pytrec_eval.RelevanceEvaluator(grades, {f"ndcg_cut.{','.join(map(str, ks))}"})
    ref = ev.evaluate(run)
    gains = np.array([[paper.gain(grades[t].get(m, 0)) for m in models] for t in tasks], dtype=float)
    report = evaluate(Run.from_scores(run), truth, [f"ndcg@{k}" for k in ks], scheme=paper).per_topic
    for k in ks:
        want = np.array([ref[t][f"ndcg_cut_{k}"] for t in tasks])
        assert want.min() < want.max()  # a real spread of values, not all 0 or 1
        np.testing.assert_allclose(ndcg(scores, gains, k), want, rtol=0, atol=1e-12)
        per_list = [ndcg_at_k(sorted(models, key=lambda m: -run[t][m]), grades[t], k, paper.gain) for t in tasks]
        np.testing.assert_allclose(per_list, want, rtol=0, atol=1e-12)
        np.testing.assert_allclose(report.loc[tasks, f"ndcg@{k}"].to_numpy(float), want, rtol=0, atol=1e-12)


def test_one_default_metric_list_everywhere():
    import importlib
    import inspect

    bench, ev = importlib.import_module("modelseek.retrieval.bench"), importlib.import_module("modelseek.retrieval.evaluation")

    assert DEFAULT_METRICS == ("ndcg@1", "ndcg@3", "ndcg@5", "mrr", "kendall")  # issue #45: one set, CLI and API
    assert inspect.signature(ev.evaluate).parameters["metrics"].default is DEFAULT_METRICS
    # bench and compare test the ranking metrics (as before #45), library and CLI alike
    assert inspect.signature(bench.cross_validate).parameters["metrics"].default is RANKING_METRICS
    assert RANKING_METRICS == DEFAULT_METRICS[:4]
    cli_eval, cli_compare = (importlib.import_module(f"modelseek.cli.{m}") for m in ("evaluate", "compare"))
    assert cli_compare.DEFAULT_METRICS.split(",") == list(RANKING_METRICS)
    assert cli_eval.DEFAULT_METRICS.split(",") == list(DEFAULT_METRICS)


def test_rejects_bad_k_and_shapes():
    with pytest.raises(ValueError):
        ndcg(np.zeros((1, 2)), np.zeros((1, 2)), 0)
    with pytest.raises(ValueError):
        ndcg(np.zeros((1, 2)), np.zeros((1, 3)), 1)
    assert ndcg(np.array([[np.nan, np.nan]]), np.array([[7.0, 3.0]]), 2).tolist() == [0.0]  # nothing ranked
