"""The benchmark's generated pool: signals informative in the intended order, costs growing with size,
reproducible from its seed; and the benchmark itself at a small size."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from modelseek import select
from modelseek.testing.funnel import SimulatedBackend, make_funnel_world, world_digest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "funnel.py"


def test_signals_are_informative_in_different_degrees():
    w = make_funnel_world(n_models=80, n_tasks=6, seed=1)
    c = w.correlations()
    assert 0.3 < c["prior"] < c["features"] < c["finetune"] <= 1.0
    assert c["features"] - c["prior"] > 0.1 and c["finetune"] > 0.99
    assert w.f1.shape == (6, 80) and np.all((w.f1 > 0) & (w.f1 < 1))
    # the prior is inference-free: one score per model, the same for every task
    assert np.all(w.prior == w.prior[0])


def test_costs_grow_with_size_and_seed_reproduces():
    w = make_funnel_world(n_models=30, n_tasks=2, seed=4)
    size = np.array([c.params_m for c in w.pool])
    ft = np.array([w.costs[c.id].finetune_s_per_epoch_1k for c in w.pool])
    feat = np.array([w.costs[c.id].feature_s_per_1k for c in w.pool])
    assert np.all(np.diff(ft[np.argsort(size)]) >= 0) and np.all(ft > 5 * feat)
    assert world_digest(w) == world_digest(make_funnel_world(n_models=30, n_tasks=2, seed=4))
    assert world_digest(w) != world_digest(make_funnel_world(n_models=30, n_tasks=2, seed=5))


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
def test_funnel_uses_more_of_the_pool_as_the_budget_grows(tmp_path):
    w = make_funnel_world(n_models=40, n_tasks=1, n_texts=1000, seed=2)
    seen = []
    for hours in (0.05, 1, 20):
        res = select(w.tasks[0], w.pool, hours * 3600, tmp_path / str(hours), backend=SimulatedBackend(w, 0), epochs=5)
        seen.append((res.plan.k1, len(res.finetuned)))
    assert seen[0][1] == 0 and seen[-1][1] > seen[1][1] >= 0 and seen[-1][0] >= seen[0][0]


@pytest.mark.slow(reason="3 s (setup and call) on 2 busy cores")
def test_benchmark_small(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("funnel_bench", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out_json, out_png = tmp_path / "f.json", tmp_path / "f.png"
    code = bench.main(["--models", "40", "--tasks", "4", "--budgets", "0.5", "4", "--epochs", "5",
                       "--json", str(out_json), "--plot", str(out_png)])
    printed = capsys.readouterr().out
    data = json.loads(out_json.read_text())
    assert [r["budget_h"] for r in data["rows"]] == [0.5, 4] and out_png.stat().st_size > 1000
    assert all(0 < r["spent_fraction"] <= 1 for r in data["rows"])
    # the funnel planned with reliabilities measured by replay on the world's history tasks, not assumed ones
    rel = data["measured_reliability"]
    assert rel["features"] > rel["prior"] > 0.3 and abs(rel["features"] - data["correlations"]["features"]) < 0.1
    assert [p["k"] for p in data["measured_curve"]] == [0, 1, 3, 5]
    assert "history tasks (5-fold cross-fitting): reliabilities prior" in printed and "order chosen: " in printed
    funnel_wins = all(r["funnel"]["ndcg@5"] >= r[m]["ndcg@5"] and r["funnel"]["regret@1"] <= r[m]["regret@1"]
                      for r in data["rows"] for m in ("finetune-prior-top", "estimators-on-all"))
    assert code == (0 if funnel_wins else 1)  # the script's verdict is the table's
    assert "| 0.5 h |" in printed and "| 4 h |" in printed
