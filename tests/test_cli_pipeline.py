"""End to end through the CLI: demo, rank -> validate -> evaluate, bench, exit codes."""

from __future__ import annotations

import json

import pytest

from modelseek.testing.cli import run_cli_subprocess
from modelseek import GroundTruth, read_runs
from modelseek.retrieval.bench import cross_validate, make_folds
from modelseek.retrieval.data.pool import load_pool
from modelseek.core.registry import Registry, UnknownNameError


@pytest.mark.slow(reason="7 s (setup and call) on 2 busy cores")
def test_demo_runs_offline_and_writes_a_valid_run(tmp_path, cli):
    r = cli("demo", "--out", tmp_path)
    assert r.code == 0, r.err
    assert "ranked 20 candidates" in r.out
    run = next(iter(read_runs(tmp_path / "demo-run.txt").values()))
    assert len(run["demo"]) == 20
    assert cli("validate", tmp_path / "demo-run.txt", "--quiet").code == 0


@pytest.mark.slow(reason="4 s (setup and call) on 2 busy cores")
def test_usage_errors_exit_2_and_user_errors_exit_1(tmp_path):
    assert run_cli_subprocess("rank").code == 2
    assert run_cli_subprocess("no-such-command").code == 2
    r = run_cli_subprocess("evaluate", tmp_path / "missing.txt", "--ground-truth", tmp_path / "gt.csv")
    assert r.code == 1 and r.err.startswith("error: ") and len(r.err.strip().splitlines()) == 1


def _bench_json(cli, root, *extra):
    r = cli("bench", root, "--json", *extra)
    assert r.code == 0, r.err
    return json.loads(r.out)


@pytest.mark.slow(reason="3 s (setup and call) on 2 busy cores")
def test_rank_validate_evaluate_reproduces_bench(tmp_path, cli, tiny_layout):
    run_path = tmp_path / "run.txt"
    r = cli("rank", tiny_layout, "--method", "avgrank", "--cv", "5", "--seed", "0", "-o", run_path)
    assert r.code == 0, r.err
    pool = tiny_layout / "models.csv"
    assert cli("validate", run_path, "--pool", pool, "--ground-truth", tiny_layout / "ground-truth.csv").code == 0
    ev = json.loads(cli("evaluate", run_path, "-g", tiny_layout / "ground-truth.csv", "--json").out)["avgrank"]
    bench = _bench_json(cli, tiny_layout, "--method", "avgrank")["methods"]["avgrank"]["tiers"]
    for tier, vals in ev["by_tier"].items():
        for metric in ("ndcg@1", "ndcg@3", "ndcg@5", "mrr"):
            assert vals[metric] == pytest.approx(bench[tier][metric]["mean"], abs=1e-12)


def test_bench_cv_never_fits_on_held_out_tasks(tiny_layout):
    truth = GroundTruth.from_csv(tiny_layout / "ground-truth.csv")
    res = cross_validate("avgrank", truth, load_pool(tiny_layout / "models.csv"), folds=4, seed=3, repeats=2)
    for folds, fitted in zip(res.folds, res.fitted):
        assert sorted(t for f in folds for t in f) == sorted(truth.task_ids)  # a partition
        for held, train in zip(folds, fitted):
            assert not set(held) & set(train)
            assert set(held) | set(train) == set(truth.task_ids)


def test_folds_are_stratified_and_seeded():
    ids = [str(i) for i in range(30)]
    tiers = ["low"] * 15 + ["medium"] * 10 + ["high"] * 5
    folds = make_folds(ids, tiers, 5, seed=0)
    assert folds == make_folds(ids, tiers, 5, seed=0) and folds != make_folds(ids, tiers, 5, seed=1)
    for f in folds:
        assert sum(int(t) >= 25 for t in f) == 1  # one high task per fold


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
def test_bench_plot(cli, tiny_layout, tmp_path):
    r = cli("bench", tiny_layout, "--method", "avgrank", "random", "--plot", tmp_path / "b.png")
    assert r.code == 0, r.err
    assert (tmp_path / "b.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_random_is_seeded_and_task_order_independent(tiny_layout, cli, tmp_path):
    a = _bench_json(cli, tiny_layout, "--method", "random", "--seed", "1")
    b = _bench_json(cli, tiny_layout, "--method", "random", "--seed", "1")
    c = _bench_json(cli, tiny_layout, "--method", "random", "--seed", "2")
    assert a == b and a != c


def test_registry_did_you_mean():
    reg: Registry = Registry("method")
    reg.register("avgrank")(object)
    reg.register_lazy("lazy", "modelseek.retrieval.rankers.random:RandomRanker")
    assert reg.names() == ["avgrank", "lazy"]
    with pytest.raises(ValueError, match="duplicate"):
        reg.register("avgrank")(object)
    with pytest.raises(UnknownNameError, match="Did you mean 'avgrank'.*Valid names: avgrank, lazy"):
        reg.get("avgrnk")
    assert reg.get("lazy").__name__ == "RandomRanker"


def test_unknown_method_on_cli(cli, tiny_layout):
    r = cli("bench", tiny_layout, "--method", "avgrnk")
    assert r.code == 1 and "did you mean 'avgrank'" in r.err.lower()


def test_bench_on_ntcir_training_tasks(cli, ntcir_a, tmp_path):
    out = _bench_json(cli, ntcir_a, "--method", "avgrank", "random", "--baseline", "avgrank",
                      "--run-out", tmp_path / "cv.txt")
    avg = out["methods"]["avgrank"]["tiers"]
    assert avg["all"]["n"] == 70 and {"low", "medium", "high"} <= set(avg)
    assert 0.55 < avg["all"]["ndcg@5"]["mean"] < 0.70
    assert out["methods"]["random"]["vs_baseline"]["all"]["mean_diff"] < 0
    assert cli("validate", tmp_path / "cv.txt", "--ground-truth", ntcir_a / "ground-truth.csv").code == 0
