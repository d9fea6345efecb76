"""EEVEE: readers, the meta-model score, the batched evaluator against the loop, search, importance, tiers,
sweep and the CLI. Tiny tables and few generations throughout."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from modelseek.retrieval.data.truth import GroundTruth
from modelseek.eevee import (BatchedEvaluator, LoopEvaluator, MetaConfig, SearchConfig, Table, importance,
                             load_table, parse_ks, search, sweep, tiers)
from modelseek.core.errors import InputError


FAST = SearchConfig(population=40, keep=6, children=4, generations=2, seed=0)
GATE = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "gate" / "03032024-full.csv"


# ------------------------------------------------------------------------------------------------ readers
def test_gate_reader_small(small_gate):
    t = load_table(small_gate)
    assert t.n_models == 10 and len(t.columns) == 6 and t.benchmark_names == ["b1", "b2", "b3", "b4", "b5"]
    assert np.isnan(t.values[3, 2]) and int(np.isnan(t.values).sum()) == 1
    assert t.lower_is_better == (False, True, False, True, False, True)
    o = t.oriented()
    np.testing.assert_allclose(o[:, 1], -t.values[:, 1])
    np.testing.assert_allclose(o[:, 0], t.values[:, 0])


def test_tidy_reader_matches_gate(small_gate, tmp_path):
    g = load_table(small_gate)
    rows = ["model,benchmark,metric,value"]
    for i, m in enumerate(g.models):
        for j, (b, met) in enumerate(zip(g.benchmarks, g.metrics)):
            if not np.isnan(g.values[i, j]):
                rows.append(f"{m},{b},{met},{float(g.values[i, j])!r}")
    p = tmp_path / "tidy.csv"
    p.write_text("\n".join(rows) + "\n")
    t = load_table(p)
    assert t.models == g.models and t.columns == g.columns and t.lower_is_better == g.lower_is_better
    np.testing.assert_array_equal(np.isnan(t.values), np.isnan(g.values))
    np.testing.assert_allclose(np.nan_to_num(t.values), np.nan_to_num(g.values))


@pytest.mark.skipif(not GATE.exists(), reason=f"GATE table not found at {GATE} (../shared/data is absent)")
def test_real_gate_table_and_groups():
    t = load_table(GATE)  # task_mapping.yaml and task_weights.yaml beside it
    assert (t.n_models, len(t.columns), len(t.benchmark_names)) == (16, 59, 31)
    assert int(np.isnan(t.values).sum()) == 5
    assert np.isnan(t.values[:, t.columns.index("cityscapes.dice-loss")]).sum() == 5
    lib = {c for c, f in zip(t.columns, t.lower_is_better) if f}
    assert "iwildcam.mae" in lib and "cifar100.loss" in lib and "acdc.dice-loss" in lib
    assert all(c.split(".", 1)[1] in ("loss", "dice-loss", "mae") for c in lib)
    assert len(set(t.groups)) == 8
    w = t.column_weights()
    assert w.sum() == pytest.approx(1.0)
    # the one-column group "Video Regression" (iwildcam.mae) weighs 1/8 of the loss
    assert w[t.columns.index("iwildcam.mae")] == pytest.approx(1 / 8)


def test_column_weights_hierarchy():
    t = Table(np.zeros((3, 4)) + np.arange(3)[:, None], ("x", "y", "z"), ("a", "a", "b", "c"),
              ("m1", "m2", "m1", "m1"), (False,) * 4).with_groups({"g1": ["a", "b.m1"], "g2": ["c.m1"]},
                                                                    {"g1": 3.0, "g2": 1.0})
    # g1 (weight 3/4) averages benchmarks a and b; a averages its two metrics
    np.testing.assert_allclose(t.column_weights(), [0.1875, 0.1875, 0.375, 0.25])
    # a column without values drops out and the averages are taken over what remains
    np.testing.assert_allclose(t.column_weights(np.array([True, False, True, True])), [0.375, 0, 0.375, 0.25])


@pytest.mark.slow(reason="7 s (setup and call) on 2 busy cores")
def test_from_ground_truth(tiny_layout):
    truth = GroundTruth.from_csv(tiny_layout / "ground-truth.csv")
    t = Table.from_ground_truth(truth)
    assert list(t.models) == truth.model_ids and t.benchmark_names == truth.task_ids
    m = truth.matrix("f1")
    assert t.values[0, 0] == pytest.approx(m.loc[truth.task_ids[0], truth.model_ids[0]])
    r = search(t, 2, FAST)
    assert len(r.best.subset) == 2 and set(r.best.subset) <= set(truth.task_ids)


# ------------------------------------------------------------------------------------------------ errors
def test_error_one_model(tmp_path):
    p = tmp_path / "one.csv"
    p.write_text("Model,a,b\nMetric,acc,acc\nonly,1,2\n")
    t = load_table(p)
    with pytest.raises(InputError, match="at least 4 models"):
        search(t, 1, FAST)


def test_error_non_numeric_cell(tmp_path):
    p = tmp_path / "bad.csv"
    p.write_text("Model,a,b\nMetric,acc,loss\nm1,1,2\nm2,0.5,oops\n")
    with pytest.raises(InputError) as exc:
        load_table(p)
    assert exc.value.line == 4 and exc.value.field == "b.loss" and "oops" in str(exc.value)
    assert str(exc.value).startswith(f"{p}:4: field 'b.loss'")


def test_error_k_too_large(signal_table):
    with pytest.raises(InputError, match=r"k = 9 is larger than the number of benchmarks \(8\)"):
        search(signal_table, 9, FAST)
    with pytest.raises(InputError, match="larger than the number of benchmarks"):
        parse_ks("1-30", 8)


def test_cli_errors(cli, tmp_path, small_gate):
    bad = tmp_path / "bad.csv"
    bad.write_text("model,benchmark,metric,value\nm1,a,acc,1\nm2,a,acc,x\n")
    r = cli("eevee", "search", "--table", bad, "-k", "1")
    assert r.code == 1 and f"{bad}:3: field 'value'" in r.err
    r = cli("eevee", "search", "--table", small_gate, "-k", "6")
    assert r.code == 1 and "larger than the number of benchmarks (5)" in r.err
    one = tmp_path / "one.csv"
    one.write_text("model,benchmark,value\nm1,a,1\nm1,b,2\n")
    r = cli("eevee", "search", "--table", one, "-k", "1")
    assert r.code == 1 and "at least 4 models" in r.err


# ------------------------------------------------------------------------------------------------ meta-model
@pytest.mark.slow(reason="6 s (setup and call) on 2 busy cores")
def test_batched_matches_loop(small_gate):
    t = load_table(small_gate)
    subsets = [("b1",), ("b2", "b4"), ("b1", "b3", "b5"), ()]
    a = BatchedEvaluator(t).losses(subsets)
    b = LoopEvaluator(t).losses(subsets)
    assert a.shape == (4, 10)
    np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    # a subset's score does not depend on the other subsets trained with it
    c = BatchedEvaluator(t).losses([("b1", "b3", "b5")])
    np.testing.assert_allclose(c[0], a[2], rtol=1e-5)


def test_no_leak_predictions_ignore_other_test_models(small_gate):
    t = load_table(small_gate)
    ev = BatchedEvaluator(t)
    split_tr, split_te = ev.data.splits[0]
    other, probe = split_te[0], split_te[1]
    changed = t.values.copy()
    changed[other] = changed[other] * 10 + 3
    t2 = Table(changed, t.models, t.benchmarks, t.metrics, t.lower_is_better)
    for leaky, same in ((False, True), (True, False)):
        p1 = BatchedEvaluator(t, MetaConfig(leaky=leaky)).predict(["b1", "b2"])
        p2 = BatchedEvaluator(t2, MetaConfig(leaky=leaky)).predict(["b1", "b2"])
        assert np.allclose(p1[0, probe], p2[0, probe], rtol=1e-5) is same


def test_table_unit_loss_is_the_weighted_mse_of_the_raw_predictions(small_gate):
    """The default test loss: the cross-validated raw-scale predictions' squared errors divided by each
    metric's variance over the whole table, averaged per column over observed test models, weighted by the
    column weights, then averaged over splits."""
    t = load_table(small_gate)
    ev = BatchedEvaluator(t)
    sub = ["b1", "b3"]
    pred = ev.predict(sub)                                   # (splits, models, columns), NaN off-test
    raw = t.values
    sd = np.nanstd(raw, 0)
    per_split = []
    for s, (_, te) in enumerate(ev.data.splits):
        err = ((pred[s, te] - raw[te]) / sd) ** 2            # raw scale: the sign flip cancels
        obs = ~np.isnan(raw[te])
        w = t.column_weights(obs.any(0))
        col_mse = np.where(obs, err, 0).sum(0) / np.maximum(obs.sum(0), 1)
        per_split.append(float((col_mse * w).sum()))
    score = ev.score(sub)
    np.testing.assert_allclose(score.per_split, per_split, rtol=2e-4)
    # "split": the same errors in each split's training z-units (what the model is trained in)
    sp = BatchedEvaluator(t, MetaConfig(loss_scale="split"))
    ratio = (sp.data.std / sd[None, :]) ** 2
    assert not np.allclose(ratio, 1.0)
    np.testing.assert_allclose(sp.predict(sub), pred, rtol=1e-5)  # the unit changes the score, not the model
    with pytest.raises(InputError, match="loss_scale"):
        BatchedEvaluator(t, MetaConfig(loss_scale="z"))


def test_table_unit_bounds_an_outlier_test_model():
    """A test model 50 training-SDs away dominates the split-unit loss; in the table's unit it weighs in
    like any other model (its distance is at most sqrt(n-1) table SDs)."""
    rng = np.random.default_rng(3)
    n = 12
    q = rng.normal(size=n)
    vals = np.stack([q + 0.05 * rng.normal(size=n), q + 0.05 * rng.normal(size=n),
                     0.01 * rng.normal(size=n) + 1.0], axis=1)
    vals[0, 2] = 0.5                                          # one model far outside the others on b3
    t = Table(vals, tuple(f"m{i}" for i in range(n)), ("b1", "b2", "b3"), ("acc", "acc", "acc"),
              (False, False, False))
    table_unit = BatchedEvaluator(t).score(["b1"])
    split_unit = BatchedEvaluator(t, MetaConfig(loss_scale="split")).score(["b1"])
    assert split_unit.max > 100 * table_unit.max
    assert table_unit.max < 5.0


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
def test_column_constant_over_training_models_is_predicted_as_that_constant():
    """F1 = 1.0 for every model but one: in the splits where that model is held out, the training models
    give the column no scale, and the meta-model predicts exactly 1.0 for it (not a random unit's noise)."""
    rng = np.random.default_rng(5)
    n = 10
    q = rng.normal(size=n)
    solved = np.full(n, 0.1 + 0.2)                          # equal floats whose mean is off by an ulp
    solved[4] = 0.25
    vals = np.stack([q, q + 0.1 * rng.normal(size=n), solved], axis=1)
    t = Table(vals, tuple(f"m{i}" for i in range(n)), ("a", "b", "c"), ("f1", "f1", "f1"), (False,) * 3)
    ev = BatchedEvaluator(t)
    pred = ev.predict(["a"])
    held_out = [s for s, (_, te) in enumerate(ev.data.splits) if 4 in te]
    assert held_out
    for s in held_out:
        te = ev.data.splits[s][1]
        assert np.all(pred[s, te, 2] == solved[0])
    np.testing.assert_allclose(ev.losses([("a",), ("b", "c")]), LoopEvaluator(t).losses([("a",), ("b", "c")]),
                               rtol=1e-4, atol=1e-6)
    # as an input, such a column passes nothing of the held-out model's value to the meta-model
    other = vals.copy()
    other[4, 2] = 0.9
    t2 = Table(other, t.models, t.benchmarks, t.metrics, t.lower_is_better)
    for model in ("mlp", "ridge"):
        p1 = BatchedEvaluator(t, MetaConfig(model=model)).predict(["a", "c"])
        p2 = BatchedEvaluator(t2, MetaConfig(model=model)).predict(["a", "c"])
        for s in held_out:
            np.testing.assert_array_equal(p1[s, 4, :2], p2[s, 4, :2])


@pytest.mark.parametrize("leaky", [False, True])
def test_ridge_meta_model_matches_sklearn_with_leave_one_out_alpha(small_gate, leaky):
    """The ridge meta-model: alpha chosen by the exact leave-one-out error of the training models (the
    intercept refitted without the left-out model), then sklearn's Ridge with an intercept on the split's
    z-scored data; predictions on the raw scale."""
    from sklearn.linear_model import Ridge

    t = load_table(small_gate)
    alphas = (0.1, 1.0, 10.0)
    ev = BatchedEvaluator(t, MetaConfig(model="ridge", model_params={"alphas": alphas}, leaky=leaky))
    d, sub = ev.data, ["b1", "b3"]
    cols = d.columns(sub)
    pred = ev.predict(sub)
    sign = np.where(np.asarray(t.lower_is_better), -1.0, 1.0)
    for s in range(4):
        X, Y, A = (d.Xtr[s].double().numpy()[:, cols], d.Xtr[s].double().numpy(), d.Atr[s].double().numpy())
        crit = []
        for a in alphas:
            err = 0.0
            for i in range(len(X)):
                keep = np.arange(len(X)) != i
                fit = Ridge(alpha=a).fit(X[keep], Y[keep])
                err += float(((fit.predict(X[i:i + 1]) - Y[i]) ** 2 * A[i]).sum())
            crit.append(err)
        a = alphas[int(np.argmin(crit))]
        raw = (Ridge(alpha=a).fit(X, Y).predict(d.Xte[s].double().numpy()[:, cols]) * d.std[s] + d.mean[s]) * sign
        np.testing.assert_allclose(pred[s, d.splits[s][1]], raw, rtol=1e-5, atol=1e-5)
    # the loss of the ridge predictions, as for the MLP; scores are deterministic
    again = BatchedEvaluator(t, MetaConfig(model="ridge", model_params={"alphas": alphas}, leaky=leaky))
    assert ev.score(sub).mean == again.score(sub).mean
    with pytest.raises(InputError, match="meta-model"):
        BatchedEvaluator(t, MetaConfig(model="forest"))
    with pytest.raises(InputError, match="MLP"):
        LoopEvaluator(t, MetaConfig(model="ridge"))


def test_ridge_finds_the_copied_target_and_cli(signal_table, cli, small_gate):
    ev = BatchedEvaluator(signal_table, MetaConfig(model="ridge"))
    assert search(ev, 1, FAST).best.subset[0] in ("target", "copy")
    tiny = ("--population", "6", "--keep", "3", "--children", "2", "--generations", "1", "--json")
    r = cli("eevee", "search", "--table", small_gate, "-k", "2", "--meta-model", "ridge", "--meta-param", "alphas=1",
            *tiny)
    j = json.loads(r.out)
    assert r.code == 0 and j["meta_model"] == "ridge" and j["meta_model_params"] == {"alphas": [1.0]}
    fixed = BatchedEvaluator(load_table(small_gate), MetaConfig(model="ridge", model_params={"alphas": (1.0,)}))
    assert j["top"][0]["score"] == pytest.approx(fixed.score(j["top"][0]["benchmarks"]).mean)
    # the deprecated alias gives the same search, with a one-line note
    old = cli("eevee", "search", "--table", small_gate, "-k", "2", "--meta-model", "ridge", "--ridge-alpha", "1", *tiny)
    assert old.code == 0 and json.loads(old.out)["top"] == j["top"]
    assert [ln for ln in old.err.splitlines() if ln.startswith("note:")] == [
        "note: --ridge-alpha is deprecated; use --meta-param alphas=... (the ridge meta-model's own parameter)"]
    bad = cli("eevee", "search", "--table", small_gate, "-k", "2", "--meta-model", "ridge", "--ridge-alpha", "x")
    assert bad.code == 2 and "argument --ridge-alpha" in bad.err  # a usage error (option type)


def test_leaky_fills_missing_with_five(small_gate):
    t = load_table(small_gate)
    tr = BatchedEvaluator(t).data
    lk = BatchedEvaluator(t, MetaConfig(leaky=True)).data
    # no leak: the missing cell is the training mean (0 in z-space) and drops out of the loss
    for s, (trn, te) in enumerate(tr.splits):
        if 3 in te:
            i = list(te).index(3)
            assert tr.Xte[s, i, 2] == 0 and tr.Ate[s, i, 2] == 0
    # leaky: 5 (in the table as read), then z-scores over all 10 models
    col = t.values[:, 2].copy()
    col[3] = 5.0
    assert not t.lower_is_better[2]
    assert lk.Xtr.shape[1] + lk.Xte.shape[1] == 10
    z = (col - col.mean()) / col.std()
    s0tr, s0te = lk.splits[0]
    np.testing.assert_allclose(lk.Xtr[0, :, 2].numpy(), z[s0tr], rtol=1e-5)


# ------------------------------------------------------------------------------------------------ search
def test_copied_target_is_chosen(signal_table):
    ev = BatchedEvaluator(signal_table)
    r1 = search(ev, 1, FAST)
    assert r1.best.subset[0] in ("target", "copy")
    r2 = search(ev, 2, FAST)
    assert len(set(r2.best.subset) & {"target", "copy"}) == 1  # the copy adds nothing to its original
    imp = importance(ev, r2.best.subset)
    assert imp[0][0] in ("target", "copy") and imp[0][1] > 0


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
def test_search_deterministic_and_shaped(signal_table):
    a = search(signal_table, 3, FAST)
    b = search(signal_table, 3, FAST)
    assert [(s.subset, s.mean) for s in a.top] == [(s.subset, s.mean) for s in b.top]
    assert len(a.top) == FAST.keep and [s.mean for s in a.top] == sorted(s.mean for s in a.top)
    assert len({s.subset for s in a.top}) == len(a.top)
    assert all(s.min <= s.mean <= s.max and len(s.per_split) == 10 for s in a.top)
    # k=1: the 8 benchmarks are fewer than the population, so all are scored
    r = search(signal_table, 1, FAST)
    assert r.n_trained == 8 and len(r.top) == 6


def test_cli_search_json_deterministic(cli, small_gate):
    args = ("eevee", "search", "--table", small_gate, "-k", "2", "--generations", "2", "--population", "6",
            "--keep", "3", "--children", "2", "--seed", "0", "--json")
    r1, r2 = cli(*args), cli(*args)
    assert r1.code == 0 and r2.code == 0
    j1, j2 = json.loads(r1.out), json.loads(r2.out)
    assert j1["top"] == j2["top"] and j1["n_trained"] == j2["n_trained"]  # all but the wall time
    top = j1["top"]
    assert len(top) == 3 and all(len(t["benchmarks"]) == 2 and isinstance(t["score"], float) for t in top)
    assert [t["score"] for t in top] == sorted(t["score"] for t in top)
    assert j1["loss_scale"] == "table" and j1["leaky"] is False
    r3 = cli(*args, "--loss-scale", "split")
    j3 = json.loads(r3.out)
    assert r3.code == 0 and j3["loss_scale"] == "split"
    ev = BatchedEvaluator(load_table(small_gate), MetaConfig(loss_scale="split"))
    assert [t["score"] for t in j3["top"]] == pytest.approx([ev.score(t["benchmarks"]).mean for t in j3["top"]])


def test_tiers_respect_budget(tmp_path, cli, small_gate):
    costs = tmp_path / "costs.csv"
    costs.write_text("benchmark,cost\nb1,5\nb2,1\nb3,2\nb4,4\nb5,3\n")
    t = load_table(small_gate, costs=costs)
    out = tiers(t, [0.5, 3, 100], FAST)
    assert out[0].score is None
    assert out[1].cost <= 3 and out[1].score is not None
    ev = BatchedEvaluator(t)
    # the 3-budget tier is the best of every affordable subset
    affordable = [s for s in ([("b2",), ("b3",), ("b5",), ("b2", "b3")])]
    assert out[1].score.mean == pytest.approx(min(x.mean for x in ev.scores(affordable)))
    r = cli("eevee", "tiers", "--table", small_gate, "--costs", costs, "--budgets", "3,100", "--json",
            "--population", "20", "--keep", "4", "--children", "2", "--generations", "1")
    assert r.code == 0
    tj = json.loads(r.out)["tiers"]
    assert tj[0]["cost"] <= 3 and tj[0]["benchmarks"] == list(out[1].score.subset)


@pytest.mark.slow(reason="2 s (setup and call) on 2 busy cores")
def test_sweep_resumes_and_plots(tmp_path, cli, small_gate):
    t = load_table(small_gate)
    res = sweep(t, [1, 2], FAST, out_dir=tmp_path / "sw")
    assert sorted(res) == [1, 2] and (tmp_path / "sw" / "k2.json").exists()
    ev = BatchedEvaluator(t)
    again = sweep(t, [1, 2], FAST, out_dir=tmp_path / "sw", evaluator=ev)
    assert ev.n_trained == 0
    assert [s.subset for s in again[2].top] == [s.subset for s in res[2].top]
    png = tmp_path / "k.png"
    r = cli("eevee", "sweep", "--table", small_gate, "--k", "1-2", "--plot", png, "--out", tmp_path / "sw",
            "--population", "40", "--keep", "6", "--children", "4", "--generations", "2")
    assert r.code == 0 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    imp_png = tmp_path / "imp.png"
    r = cli("eevee", "importance", "--table", small_gate, "--subset", "b1,b2,b3", "--plot", imp_png, "--json")
    assert r.code == 0 and imp_png.read_bytes()[:4] == b"\x89PNG"
    items = json.loads(r.out)["importance"]
    assert sorted(i["benchmark"] for i in items) == ["b1", "b2", "b3"]


def test_cli_ground_truth_table(cli, tiny_layout):
    r = cli("eevee", "search", "--ground-truth", tiny_layout / "ground-truth.csv", "-k", "2", "--population", "10",
            "--keep", "3", "--children", "2", "--generations", "1", "--json")
    assert r.code == 0
    assert len(json.loads(r.out)["top"][0]["benchmarks"]) == 2


@pytest.mark.slow(reason="spawns two worker processes that import torch (35 s)")
def test_workers_give_the_same_scores(small_gate):
    t = load_table(small_gate)
    from itertools import combinations

    subsets = [c for k in range(1, 6) for c in combinations(["b1", "b2", "b3", "b4", "b5"], k)]  # 31
    one = BatchedEvaluator(t).losses(subsets)
    ev = BatchedEvaluator(t, workers=2)
    try:
        two = ev.losses(subsets)
        assert ev._pool is not None  # 31 subsets: two parts of >= MIN_PER_WORKER, so the workers ran
        small = ev.losses([("b1", "b2", "b3", "b4")])  # cached: no training
        assert ev.n_trained == 31 and small.shape == (1, 10)
    finally:
        ev.close()
    np.testing.assert_array_equal(one, two)
    assert BatchedEvaluator(t, workers=0).workers >= 1  # 0 = one per usable CPU
    with pytest.raises(InputError, match="workers"):
        BatchedEvaluator(t, workers=-1)
