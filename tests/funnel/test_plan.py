"""The plan fits the budget for measured costs, and what the funnel then spends does too (invariants over a
generated pool with known costs)."""

from __future__ import annotations

import numpy as np
import pytest

from modelseek import select
from modelseek.retrieval.funnel import CostTable, Reliability, plan_funnel
from modelseek.retrieval.funnel.plan import halving_rungs, k_grid
from modelseek.testing.funnel import SimulatedBackend

BUDGETS_H = [0.01, 0.05, 0.2, 0.5, 1, 2, 4, 8, 16, 64]


def _order(world, t):
    return [world.pool[int(j)] for j in np.argsort(-world.prior[t], kind="stable")]


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
@pytest.mark.parametrize("halving", [False, True])
def test_plan_fits_budget_and_grows_with_it(world, halving):
    order, costs, n = _order(world, 0), CostTable(world.costs), 1000
    last = -np.inf
    for hours in BUDGETS_H:
        b = hours * 3600
        plan = plan_funnel(order, costs, b, spent_s=1.0, n_feature_texts=n, n_finetune_texts=n, epochs=5,
                           halving=halving)
        assert plan.total_s <= b + 1e-6 or (plan.k1, plan.finetune_k) == (0, 0)
        assert list(plan.feature_ids) == [c.id for c in order[: plan.k1]]  # the prior's top K1
        assert plan.finetune_k < plan.k1 or plan.k1 == 0
        feat = sum(world.costs[c].features(n) for c in plan.feature_ids)
        assert plan.feature_cost_s == pytest.approx(feat)
        assert plan.expected_top1 >= last - 1e-9  # more budget never plans a worse search
        last = plan.expected_top1
    assert plan.finetune_k > 0 and plan.k1 > 0  # a generous budget uses every stage


def test_prior_path_costs_are_exact(world):
    order, costs = _order(world, 1), CostTable(world.costs)
    # with features made worthless the plan fine-tunes the prior's top directly, costed exactly
    plan = plan_funnel(order, costs, 20 * 3600, 1.0, 1000, 1000, 5, reliability=Reliability(prior=0.6, features=0.0))
    assert plan.k1 == 0 and plan.finetune_k >= 1 and plan.finetune_from == "prior"
    exact = sum(world.costs[c.id].finetune(1000, 5) for c in order[: plan.finetune_k])
    assert plan.finetune_cost_s == pytest.approx(exact)


def test_budget_below_prior_plans_nothing(world):
    plan = plan_funnel(_order(world, 0), CostTable(world.costs), 10.0, spent_s=20.0, n_feature_texts=1000,
                       n_finetune_texts=1000, epochs=5)
    assert (plan.k1, plan.finetune_k, plan.feature_cost_s, plan.finetune_cost_s) == (0, 0, 0.0, 0.0)


def test_grid_and_rungs():
    assert k_grid(5) == [0, 1, 2, 3, 4, 5]
    g = k_grid(500)
    assert g[:9] == list(range(9)) and g[-1] == 500 and all(b > a for a, b in zip(g, g[1:]))
    assert halving_rungs(8, 10) == [(8, 1), (4, 2), (2, 4), (1, 8)]
    assert halving_rungs(5, 3) == [(5, 1), (3, 2), (2, 3)]  # the epoch cap ends it


@pytest.mark.slow(reason="4 s (setup and call) on 2 busy cores")
@pytest.mark.parametrize("hours", [0.05, 0.5, 3, 12])
def test_run_spends_within_budget(world, tmp_path, hours):
    for t in range(len(world.tasks)):
        be = SimulatedBackend(world, t)
        res = select(world.tasks[t], world.pool, hours * 3600, tmp_path / f"{hours}-{t}", backend=be, epochs=5)
        assert res.total_spent_s <= hours * 3600 + 1e-6
        assert res.total_spent_s == pytest.approx(be.now)  # every simulated second is accounted for
        ranking = res.run.ranking(world.tasks[t].id)
        assert sorted(ranking) == sorted(world.pool.ids)  # every candidate ranked once
        fine = {r["model_id"]: r["val_f1"] for r in res.finetuned}
        if fine:  # the top is the best fine-tuned candidate when the estimators' top was fine-tuned
            placed = [c for c in ranking if c in fine]
            assert placed == sorted(fine, key=lambda c: -fine[c])


@pytest.mark.slow(reason="1.5 s in the quick loop on 2 busy cores")
def test_halving_run_fits_and_ranks_the_last_rung_first(world, tmp_path):
    be = SimulatedBackend(world, 1)
    res = select(world.tasks[1], world.pool, "12h", tmp_path / "h", backend=be, epochs=8, halving=True)
    assert res.plan.halving and res.plan.finetune_k >= 2 and res.total_spent_s <= 12 * 3600
    assert [k for k, _ in be.calls].count("halving") == 1 and "finetune" not in [k for k, _ in be.calls]
    rungs = {r["model_id"]: r["rung"] for r in res.finetuned}
    last = max(rungs.values())
    assert last >= 2 and sum(1 for r in rungs.values() if r == last) < len(rungs)  # it did halve
    winner = max((r for r in res.finetuned if r["rung"] == last), key=lambda r: r["val_f1"])["model_id"]
    ranking = res.run.ranking(world.tasks[1].id)
    placed = [c for c in ranking if c in rungs]
    assert placed[0] == winner  # the halving's winner holds the best place any of them held
