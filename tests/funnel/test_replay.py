"""Replay (``modelseek replay``, :mod:`modelseek.retrieval.funnel.replay`): answers known by hand on small truths, the prior's
figures against an independent computation through ``evaluate``, the Gaussian conditioning against its formula,
and the NTCIR-19 training tasks where the data are present."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from modelseek import evaluate
from modelseek.retrieval.data.folds import make_folds
from modelseek.retrieval.data.run import Run
from modelseek.retrieval.data.truth import GroundTruth
from modelseek.core.errors import InputError
from modelseek.retrieval.funnel.curve import sequential_wins, shipped_history, summarize
from modelseek.retrieval.funnel.replay import JointModel, replay

NTCIR = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "ntcir19-mr" / "subtask-a" / "ground-truth.csv"
need_ntcir = pytest.mark.skipif(not NTCIR.is_file(), reason="the NTCIR-19 ground truth (../shared/data) is absent")

# 8 models: the best four are graded 3, 2, 1, 1 on every task, the other four 0 (normalized F1 <= 0.90)
F1 = [0.80, 0.77, 0.75, 0.73, 0.60, 0.50, 0.40, 0.30]


def _truth(n_tasks: int = 6, shift: bool = True) -> GroundTruth:
    rows = []
    for t in range(n_tasks):
        perm = np.random.default_rng(t).permutation(len(F1)) if shift else np.arange(len(F1))
        rows += [(f"t{t}", f"m{j}", F1[int(np.argsort(perm)[j])]) for j in range(len(F1))]
    return GroundTruth(pd.DataFrame(rows, columns=["task_id", "model_id", "f1"]))


def _signal(truth: GroundTruth, sign: float, run_id: str) -> Run:
    return Run.from_scores({t: {m: sign * v for m, v in truth.f1(t).items()} for t in truth.task_ids}, run_id=run_id)


def _values(data, policy, k, metric):
    return data.values[policy][k][metric]


def test_oracle_reaches_one_and_reversed_the_floor():
    truth = _truth()
    data = replay(truth, signals=[_signal(truth, 1, "oracle"), _signal(truth, -1, "reversed")],
                  finetunes=[0, 1, 3, 5, 8], noise=0.0, folds=3)
    for k in (0, 1, 3, 5, 8):
        assert np.allclose(_values(data, "oracle", k, "ndcg@5"), 1.0)
        assert np.allclose(_values(data, "oracle", k, "regret"), 0.0)
    for k in (0, 1, 3):  # the four worst (all grade 0) fill the top five with the fifth worst at best
        assert np.allclose(_values(data, "reversed", k, "ndcg@1"), 0.0)
    for k in (0, 1, 3, 5):  # top five: the five worst; the best of them by F1 is 0.73 (grade 1, at place 1 at k=5)
        got = _values(data, "reversed", k, "ndcg@5")
        ideal = sum((2 ** g - 1) / math.log2(i + 2) for i, g in enumerate([3, 2, 1, 1, 0]))
        place = 1 if k == 5 else 5  # fine-tuned, 0.73 is observed best of the picks; unfine-tuned it is 5th
        assert np.allclose(got, 1 / math.log2(place + 1) / ideal)
    assert np.allclose(_values(data, "reversed", 5, "regret"), 1 - 0.73 / 0.80)
    assert np.allclose(_values(data, "reversed", 0, "regret"), 1 - 0.30 / 0.80)
    assert np.allclose(_values(data, "reversed", 8, "ndcg@5"), 1.0)  # everything fine-tuned: the truth's order


def _independent_prior(truth: GroundTruth, k: int, folds: int, seed: int) -> tuple[float, float]:
    """The prior's top-k figures, computed apart from replay: mean model_rank on the other folds with pandas, the
    final ranking written as a Run and scored by :func:`modelseek.evaluate`."""
    held = make_folds(truth.task_ids, truth.tiers(truth.task_ids), folds=folds, seed=seed)
    ranks = truth.matrix("model_rank")
    scores = {}
    for fold in held:
        mean_rank = ranks.drop(index=fold).mean(axis=0)
        mean_rank = mean_rank.fillna(mean_rank.mean())  # a model the other folds never fine-tuned: neutral
        order = sorted(ranks.columns, key=lambda m: (mean_rank[m], list(ranks.columns).index(m)))
        for t in fold:
            f1 = truth.f1(t)
            here = [m for m in order if m in f1]  # a model without a result on t is not in its pool
            tuned = sorted(here[:k], key=lambda m: -f1[m])
            final = tuned + [m for m in here if m not in tuned]
            scores[t] = {m: float(len(final) - i) for i, m in enumerate(final)}
    report = evaluate(Run.from_scores(scores, run_id="prior-top-k"), truth, metrics=["ndcg@5", "ndcg@1", "regret"])
    pt = report.per_topic
    return float(pt["ndcg@5"].mean()), float(pt["regret"].mean())


@pytest.mark.parametrize("k", [0, 1, 3, 5])
def test_prior_top_k_equals_an_independent_computation(k):
    truth = _truth(12)
    data = replay(truth, finetunes=[k], folds=4, seed=2, sequential=False)
    ndcg5, regret = _independent_prior(truth, k, 4, 2)
    assert _values(data, "prior", k, "ndcg@5").mean() == pytest.approx(ndcg5, abs=1e-12)
    assert _values(data, "prior", k, "regret").mean() == pytest.approx(regret, abs=1e-12)


def _holey(n_tasks: int = 12) -> GroundTruth:
    """``_truth`` with a hole on most tasks (a different model each time), as a published zoo has them."""
    frame = _truth(n_tasks).frame[["task_id", "model_id", "f1"]]
    drop = {(f"t{t}", f"m{(3 * t) % 8}") for t in range(n_tasks) if t % 4}
    return GroundTruth(frame[[(a, b) not in drop for a, b in zip(frame.task_id, frame.model_id)]])


@pytest.mark.parametrize("k", [0, 1, 3, 5, 8])
def test_a_truth_with_holes_replays_each_task_over_its_own_pool(k):
    truth = _holey()
    assert truth.matrix("f1").isna().to_numpy().sum() == 9
    data = replay(truth, signals=[_signal(truth, 1, "oracle")], finetunes=[k], noise=0.0, folds=4, seed=2)
    ndcg5, regret = _independent_prior(truth, k, 4, 2)
    assert _values(data, "prior", k, "ndcg@5").mean() == pytest.approx(ndcg5, abs=1e-12)
    assert _values(data, "prior", k, "regret").mean() == pytest.approx(regret, abs=1e-12)
    assert np.allclose(_values(data, "oracle", k, "ndcg@5"), 1.0)  # the truth's order: perfect, holes or not
    assert np.allclose(_values(data, "oracle", k, "regret"), 0.0)
    for policy in ("prior", "rrf", "sequential"):
        assert np.isfinite(_values(data, policy, k, "ndcg@5")).all()
        assert (_values(data, policy, k, "regret") >= 0).all()
    assert np.isfinite(data.reliability["prior"]) and data.reliability["oracle"] == pytest.approx(1.0)
    assert data.extra["trust"] == [0.0] * 4  # 9 history tasks a fold: too few to learn a weight from


def test_a_model_scored_on_one_task_only_is_neutral_where_that_task_is_held_out():
    frame = _holey().frame[["task_id", "model_id", "f1"]]
    lonely = GroundTruth(pd.concat([frame, pd.DataFrame([("t0", "m9", 0.79)], columns=frame.columns)]))
    data = replay(lonely, finetunes=[0, 3], folds=4, seed=2)  # t0's fold has never seen m9: no evidence either way
    for k in (0, 3):  # the independent computation gives an unseen model the mean of the others' mean ranks
        ndcg5, regret = _independent_prior(lonely, k, 4, 2)
        assert _values(data, "prior", k, "ndcg@5").mean() == pytest.approx(ndcg5, abs=1e-12)
        assert _values(data, "prior", k, "regret").mean() == pytest.approx(regret, abs=1e-12)
    hist = GroundTruth(frame.assign(task_id=lambda d: "h" + d.task_id))
    with pytest.raises(InputError, match="no fine-tuning result for model"):  # a given history must know them all
        replay(lonely, history=hist)


def test_a_truth_of_few_tasks_is_cross_fitted_one_task_a_fold_by_default():
    data = replay(_truth(3), finetunes=[0, 1, 3])
    assert data.folds == 3 and data.extra["trust"] == [0.0] * 3
    assert np.array_equal(_values(data, "sequential", 3, "ndcg@5"), _values(data, "prior", 3, "ndcg@5"))
    with pytest.raises(InputError, match="folds"):  # asked for explicitly, more folds than tasks is an error
        replay(_truth(3), folds=5)


def test_a_task_needs_two_scored_models():
    frame = _truth(6).frame[["task_id", "model_id", "f1"]]
    lone = GroundTruth(frame[(frame.task_id != "t3") | (frame.model_id == "m0")])
    with pytest.raises(InputError, match="task 't3' has 1 scored model"):
        replay(lone)


@need_ntcir
@pytest.mark.slow(reason="6 s in the quick loop on 2 busy cores")
def test_ntcir_prior_curve_equals_independent_computation_and_sequential_is_not_shipped():
    truth = GroundTruth.from_csv(NTCIR)
    data = replay(truth, finetunes=[0, 1, 3, 5, 10], noise=0.0, folds=5, seed=0)
    for k in (0, 3, 5, 10):
        ndcg5, regret = _independent_prior(truth, k, 5, 0)
        assert _values(data, "prior", k, "ndcg@5").mean() == pytest.approx(ndcg5, abs=1e-12)
        assert _values(data, "prior", k, "regret").mean() == pytest.approx(regret, abs=1e-12)
    means = [_values(data, "prior", k, "ndcg@5").mean() for k in (0, 3, 5, 10)]
    assert means == sorted(means) and means[-1] > means[0] + 0.15  # fine-tuning the prior's top pays
    shipped, why = sequential_wins(data)
    assert not shipped and "does not beat" in why
    assert data.extra["trust"] == [0.0] * 5  # no fold's history gives the joint model any weight ...
    s = summarize(data, n_boot=200)
    for b in s["budgets"]:  # ... so the sequential order is the prior's top-k: as good, and not better; the funnel
        # ranks the prior's top-k by the merge where every fold's history chose it: k = 3 and 5, where its held-out
        # gain is positive with its interval (at k = 10 it is not: fine-tuned first)
        assert b["funnel"] == ("prior+merge" if b["k"] in (3, 5) else "prior") and b["funnel"] in b["policies"]
        assert b["sequential_vs_plain"]["ndcg@5"] == {"diff": 0.0, "low": 0.0, "high": 0.0}
    full = replay(truth, finetunes=[0, 1, 3, 5, 10], noise=0.0, folds=5, seed=0, acquisition="pi")
    for k in (1, 3, 5, 10):  # trusted fully, the Gaussian's order loses to the prior's top-k
        assert _values(full, "sequential", k, "ndcg@5").mean() < _values(full, "prior", k, "ndcg@5").mean()


@need_ntcir
def test_shipped_history_is_the_ntcir_truth():
    truth = GroundTruth.from_csv(NTCIR)
    shipped = shipped_history()
    assert sorted(shipped.task_ids) == sorted(truth.task_ids)
    a = truth.matrix("normalized_f1").loc[shipped.task_ids, shipped.model_ids].to_numpy()
    assert np.abs(a - shipped.matrix("f1").to_numpy()).max() < 1e-6  # stored as float32
    assert truth.tiers(truth.task_ids) == shipped.tiers(truth.task_ids)  # same folds for the same seed


def test_noise_draws_are_seeded_and_paired():
    truth = _truth(8)
    a = replay(truth, finetunes=[3], noise=0.05, repeats=5, folds=4, seed=7, sequential=False)
    b = replay(truth, finetunes=[3], noise=0.05, repeats=5, folds=4, seed=7, sequential=False)
    c = replay(truth, finetunes=[3], noise=0.0, folds=4, seed=7, sequential=False)
    assert np.array_equal(_values(a, "prior", 3, "ndcg@5"), _values(b, "prior", 3, "ndcg@5"))
    assert not np.array_equal(_values(a, "prior", 3, "ndcg@5"), _values(c, "prior", 3, "ndcg@5"))
    # noise only reorders the fine-tuned: at k = 0 nothing is observed, so nothing changes
    d = replay(truth, finetunes=[0], noise=0.05, repeats=5, folds=4, seed=7, sequential=False)
    e = replay(truth, finetunes=[0], noise=0.0, folds=4, seed=7, sequential=False)
    assert np.array_equal(_values(d, "prior", 0, "ndcg@5"), _values(e, "prior", 0, "ndcg@5"))


def test_gaussian_conditioning_matches_the_formula():
    rng = np.random.default_rng(0)
    hist = rng.multivariate_normal([0.5, 0.6, 0.7], [[1, 0.8, 0.1], [0.8, 1, 0.2], [0.1, 0.2, 1]], size=500) * 0.05
    model = JointModel(hist, noise=0.01)
    mu, var = model.condition([0], [0.58])
    c, m = model.cov, model.mean
    s00 = c[0, 0] + 0.01 ** 2
    assert mu[1] == pytest.approx(m[1] + c[1, 0] / s00 * (0.58 - m[0]))
    assert var[1] == pytest.approx(c[1, 1] - c[1, 0] ** 2 / s00)
    assert mu[1] - m[1] > 5 * abs(mu[2] - m[2])  # the correlated candidate moves, the other hardly
    picks, means = model.walk(np.array([1, 2, 0]), np.array([0.40, 0.70, 0.66]), 3, "pi")
    assert picks[0] == 2 and sorted(picks) == [0, 1, 2] and len(means) == 4
    assert np.allclose(means[1], model.condition([2], [0.66])[0])  # pi ranks the others by the conditional mean
    base = np.array([1, 2, 0])
    for trust in (0.0, 50.0):  # blend: the plain order's first; weight 0 keeps the plain order whatever is seen
        picks, scores = model.walk(base, np.array([0.40, 0.70, 0.66]), 2, "blend", trust)
        assert picks[0] == 2 and len(scores) == 3
        if trust == 0:
            assert picks == [2, 0] and all(np.argsort(-sc).tolist() == [2, 0, 1] for sc in scores)


@pytest.mark.slow(reason="4 s in the quick loop on 2 busy cores")
def test_blend_with_zero_trust_is_the_plain_top_k_and_learns_trust_where_models_co_vary():
    from modelseek.testing.funnel import make_family_truth

    fam = make_family_truth()
    zero = replay(fam, finetunes=[0, 1, 3, 5], noise=0.005, repeats=3, folds=4, seed=0, trust=0.0)
    for k in (0, 1, 3, 5):
        for metric in ("ndcg@5", "regret"):
            assert np.array_equal(_values(zero, "sequential", k, metric), _values(zero, "prior", k, metric))
    learned = replay(fam, finetunes=[0, 1, 3, 5], noise=0.005, repeats=3, folds=4, seed=0)
    assert len(learned.extra["trust"]) == 4 and min(learned.extra["trust"]) > 0  # every fold's history trusts it
    s = summarize(learned, n_boot=300)
    k3 = next(b for b in s["budgets"] if b["k"] == 3)["sequential_vs_plain"]["ndcg@5"]
    assert k3["low"] > 0.05  # the first fine-tune tells which family leads on this task
    shipped, why = sequential_wins(learned)
    assert shipped and "beats the plain top-k" in why
    assert all(b["funnel"] == ("sequential" if b["k"] else "prior") for b in s["budgets"])
    # the same weights, chosen from each fold's history alone by the rule that ships the order
    from modelseek.retrieval.funnel.replay import fit_trust, splits, Table

    table = Table.from_truth(fam)
    first = splits(fam, table, None, 4, 0)[0]
    lam, means = fit_trust(first.history, table.model_ids, (), [0, 1, 3, 5], 0.005, 3, 4, 0)
    assert lam == learned.extra["trust"][0] and all(means[lam][k] >= means[0.0][k] for k in (1, 3, 5))


def test_bad_inputs_are_located_errors():
    truth = _truth(6)
    partial = Run.from_scores({t: truth.f1(t) for t in truth.task_ids[:3]}, run_id="half")
    with pytest.raises(InputError, match="no topic 't3'"):
        replay(truth, signals=[partial], folds=3)
    with pytest.raises(InputError, match="built-in policy"):
        replay(truth, signals=[_signal(truth, 1, "prior")], folds=3)
    with pytest.raises(InputError, match="noise"):
        replay(truth, noise=float("nan"))


def _write(truth: GroundTruth, path: Path) -> Path:
    truth.frame[["task_id", "model_id", "f1"]].to_csv(path, index=False)
    return path


def test_cli_journey_with_signals_json_and_plot(cli, tmp_path):
    truth = _truth(10)
    csv = _write(truth, tmp_path / "truth.csv")
    _signal(truth, 1, "oracle").write(tmp_path / "oracle.trec")
    r = cli("replay", str(csv), "--signals", str(tmp_path / "oracle.trec"), "--finetunes", "1,3",
                         "--noise", "0.01", "--repeats", "3", "--folds", "5", "--json", "--plot",
                         str(tmp_path / "r.png"))
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert [b["k"] for b in doc["budgets"]] == [0, 1, 3]
    for b in doc["budgets"]:
        # the plain orders (the reliability-weighted fusion among them), fine-tuned first; the base order's
        # expected-gain merge; and (where the folds chose differently) the funnel's mix of the two
        assert {"prior", "oracle", "rrf", "weighted", "rrf+merge", "sequential"} <= set(b["policies"]) <= {
            "prior", "oracle", "rrf", "weighted", "rrf+merge", "sequential", "funnel"}
        assert b["funnel"] in b["policies"] and b["funnel"] in ("rrf", "rrf+merge", "funnel")
        assert b["merge_vs_plain"]["ndcg@5"]["diff"] == pytest.approx(
            b["policies"]["rrf+merge"]["ndcg@5"] - b["policies"]["rrf"]["ndcg@5"])
        # noise (sd 0.01) can swap fine-tuned candidates 0.02 apart; one fine-tuned or none: the oracle's order
        assert b["policies"]["oracle"]["ndcg@5"] == pytest.approx(1.0) if b["k"] <= 1 else \
            0.95 < b["policies"]["oracle"]["ndcg@5"] < 1.0  # k = 3: three observed, noisily
        lo, hi = b["policies"]["prior"]["intervals"]["ndcg@5"]
        assert lo <= b["policies"]["prior"]["ndcg@5"] <= hi
    assert doc["noise"] == 0.01 and doc["repeats"] == 3 and doc["reliability"]["oracle"] == pytest.approx(1.0)
    assert doc["figures"].startswith("nested: 5-fold cross-fitting") and "not withheld" in doc["figures"]
    assert (tmp_path / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    r = cli("replay", str(csv), "--finetunes", "3")
    assert r.code == 0 and "k = 3 fine-tune(s)" in r.out and "order used by the funnel" in r.out
    half = Run.from_scores({t: truth.f1(t) for t in truth.task_ids[:4]}, run_id="half")
    half.write(tmp_path / "half.trec")
    r = cli("replay", str(csv), "--signals", str(tmp_path / "half.trec"))
    assert r.code == 1 and "half.trec" in r.err and "topic" in r.err and len(r.err.strip().splitlines()) == 1


def test_cli_train_truth_and_errors(cli, tmp_path):
    truth = _truth(6)
    hist = GroundTruth(truth.frame[["task_id", "model_id", "f1"]].assign(task_id=lambda d: "h" + d.task_id))
    csv, hcsv = _write(truth, tmp_path / "truth.csv"), _write(hist, tmp_path / "hist.csv")
    r = cli("replay", str(csv), "--train-truth", str(hcsv), "--json")
    assert r.code == 0, r.err
    assert json.loads(r.out)["folds"] is None and json.loads(r.out)["history"].endswith("hist.csv")
    assert json.loads(r.out)["figures"].startswith("withheld: the 6 replayed tasks")
    r = cli("replay", str(csv), "--train-truth", str(csv))  # every history task is replayed: none left to learn
    assert r.code == 1 and r.err.startswith("error:") and "truth.csv" in r.err and len(r.err.strip().splitlines()) == 1
    acc = tmp_path / "zoo.csv"  # a published zoo's records with their own column name
    acc.write_text("task_id,model_id,accuracy\nt0,m0,81.5\nt0,m1,79.0\n")
    r = cli("replay", str(acc), "--any-score")
    assert r.code == 1 and "zoo.csv:1" in r.err and "'f1'" in r.err and "'accuracy'" in r.err
    assert len(r.err.strip().splitlines()) == 1
    bad = tmp_path / "bad.csv"
    bad.write_text("task_id,model_id,f1\nt0,m0,0.5\nt0,m1,lots\n")
    r = cli("replay", str(bad))
    assert r.code == 1 and "bad.csv:3" in r.err and "f1" in r.err and len(r.err.strip().splitlines()) == 1


@pytest.mark.slow(reason="2 s in the quick loop on 2 busy cores")
def test_budget_curve_of_the_shipped_history_per_tier():
    from modelseek.retrieval.funnel.curve import budget_curve

    shipped = shipped_history()
    whole = budget_curve()
    assert [p["k"] for p in whole.curve] == [0, 1, 3, 5] and whole.tasks == len(shipped.task_ids) == 70
    # the curve is the funnel's policy's: the prior's top-k, ranked as the history chose per k (fine-tuned first or
    # the expected-gain merge)
    data = replay(shipped, finetunes=[0, 1, 3, 5], noise=0.01, repeats=20, folds=5, seed=0, sequential=False)
    for p in whole.curve:
        assert p["ndcg@5"] == pytest.approx(data.values[data.final[p["k"]]][p["k"]]["ndcg@5"].mean())
    assert data.final[0] == "prior" and whole.curve[1]["ndcg@5"] >= whole.curve[0]["ndcg@5"] - 1e-12
    assert whole.curve[3]["ndcg@5"] > whole.curve[0]["ndcg@5"] and whole.curve[3]["regret"] < whole.curve[0]["regret"]
    for p in whole.curve:
        assert p["ndcg@5_low"] <= p["ndcg@5"] <= p["ndcg@5_high"]
    gains = whole.gain_per_finetune()
    assert [(g["from"], g["to"]) for g in gains] == [(0, 1), (1, 3), (3, 5)]
    assert gains[1]["ndcg@5"] == pytest.approx((whole.curve[2]["ndcg@5"] - whole.curve[1]["ndcg@5"]) / 2)
    # the tier's curve is the mean over that tier's tasks of the same per-task replay
    high = [i for i, t in enumerate(data.task_ids) if shipped.criticality(t).value == "high"]
    tier = budget_curve(tier="high")
    assert tier.tasks == len(high) and tier.curve[2]["ndcg@5"] == pytest.approx(
        data.values[data.final[3]][3]["ndcg@5"][high].mean())
    with pytest.raises(InputError, match="criticality 'none'"):
        budget_curve(tier="none")


def test_rank_prints_what_fine_tuning_buys(cli, tmp_path):
    pytest.importorskip("transformers")
    table = tmp_path / "reviews.csv"
    table.write_text("text,label\n" + "".join(f"great film number {i},pos\nawful film number {i},neg\n"
                                              for i in range(30)))
    r = cli("rank", table)
    assert r.code == 0, r.err
    line = next(x for x in r.out.splitlines() if "fine-tuning the top k" in x)
    tier = r.out.split("criticality: ")[1].split(" ")[0].lower()
    m = __import__("modelseek.retrieval.funnel.curve", fromlist=["budget_curve"]).budget_curve(tier=tier)
    for p in m.curve:  # the figures printed are the tier's replay curve
        assert f"{p['k']}: nDCG@5 {p['ndcg@5']:.2f}" in line
    assert f"{m.tasks} {tier}-criticality past tasks" in line


def test_select_plans_with_the_reliability_measured_on_the_given_history(tmp_path):
    from modelseek import select
    from modelseek.testing.funnel import SimulatedBackend, make_funnel_world

    w = make_funnel_world(n_models=30, n_tasks=12, n_texts=200, seed=5)
    hist = w.truth().subset([t.id for t in w.tasks[2:]])
    lines: list[str] = []
    res = select(w.tasks[0], w.pool, "2h", tmp_path / "o", backend=SimulatedBackend(w, 0), history=hist,
                 plan_only=True, echo=lines.append)
    # replay's default noise assumption (0), select's too
    expected = replay(hist, finetunes=[0, 1, 3, 5], noise=0.0, repeats=20, folds=5, seed=0, sequential=False)
    r = expected.reliability["prior"]
    assert res.measured.tasks == 10 and res.measured.reliability["prior"] == pytest.approx(r)
    assert res.measured.curve[2]["ndcg@5"] == pytest.approx(
        expected.values[expected.final[3]][3]["ndcg@5"].mean())  # the funnel's policy at k = 3
    body = json.loads((tmp_path / "o" / "state.json").read_text().split("\n", 1)[1])
    assert body["settings"]["reliability"] == [round(min(max(r, 0.0), 0.95), 4), 0.7]  # the plan's inputs
    assert any(f"planning with reliabilities: prior {round(r, 2):.2f} (measured)" in x for x in lines)
    assert any(x.startswith("  expected gain per fine-tune: 0->1: nDCG@5 +0.000") for x in lines)


@pytest.mark.slow(reason="10 s: the replay benchmark end to end, three worlds and every acquisition rule")
def test_benchmark_small(tmp_path, capsys):
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "replay.py"
    spec = importlib.util.spec_from_file_location("replay_bench", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    csv = _write(_truth(10), tmp_path / "truth.csv")
    out_json, out_png = tmp_path / "r.json", tmp_path / "r.png"
    assert bench.main(["--truth", str(csv), "--repeats", "2", "--json", str(out_json), "--plot", str(out_png)]) == 0
    doc = json.loads(out_json.read_text())
    assert set(doc["ntcir_sequential_tried"]) >= {"blend", "pi", "ei", "mean", "blend, trust 8"}
    assert out_png.stat().st_size > 1000
    assert [b["k"] for b in doc["zoo"]["budgets"]] == [0, 1, 3, 5, 10]
    zoo3 = doc["zoo"]["budgets"][2]["policies"]
    assert zoo3["rrf"]["ndcg@5"] > zoo3["prior"]["ndcg@5"]  # the estimators carry the task-specific fit
    assert "order used by the funnel" in capsys.readouterr().out
    assert bench.main(["--truth", str(tmp_path / "absent.csv")]) == 1
