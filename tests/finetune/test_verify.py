"""``modelseek rank --verify-top K`` and ``--halving`` (successive halving)."""

from __future__ import annotations

import math

import pytest

from modelseek.retrieval.data.pool import Candidate
from modelseek.core.errors import InputError
from modelseek.retrieval.finetune import JobStore
from modelseek.retrieval.finetune.verify import successive_halving, verify_top
from modelseek.testing import write_task_table


@pytest.mark.slow(reason="7 s (setup and call) on 2 busy cores")
def test_rank_verify_top(cli, tmp_path, tiny_models, tiny_tasks, pool_yaml, fast_recipe):
    data = write_task_table(tiny_tasks[0], tmp_path / "task.csv")
    pool = pool_yaml(tmp_path / "pool.yaml", tiny_models)
    store = tmp_path / "verify.sqlite"
    r = cli("rank", data, "--pool", pool, "-m", "random", "--verify-top", "2", "--finetune-store", store,
            "--set", "lr=0.005", "--set", "max_epochs=4", "--set", "cpu_threads=1")
    assert r.code == 0, r.err
    assert "fine-tuned top 2 of run random" in r.out
    ranking = [line.split()[1] for line in r.out.splitlines() if line[:4].strip().isdigit()][:3]
    with JobStore(store) as s:
        recs = {rec.model_id: rec for rec in s.records()}
    assert set(recs) == set(ranking[:2])  # exactly the top 2 were fine-tuned
    for m, rec in recs.items():
        assert rec.status == "done" and f"{rec.f1:.6f}"[:6] in r.out
    # the table in the output lists them in rank order with the stored F1
    from modelseek.retrieval.data.loaders import load_table_task

    # the task as the CLI read it (a user's table is read in a canonical row order): the same stored jobs
    table = verify_top(load_table_task(data), [Candidate(id=m, path=str(tiny_models[m])) for m in ranking[:2]], store,
                       recipe=fast_recipe.replace(max_epochs=4))
    assert list(table["model_id"]) == ranking[:2] and list(table["rank"]) == [1, 2]
    assert table["f1"].tolist() == [recs[m].f1 for m in ranking[:2]]
    bad = cli("rank", data, "--pool", pool, "-m", "random", "--verify-top", "2", "--json")
    assert bad.code == 1 and "without --json" in bad.err


@pytest.mark.slow(reason="7 s (setup and call) on 2 busy cores")
def test_successive_halving(tmp_path, tiny_models, tiny_tasks, fast_recipe):
    # four candidates (two share weights under other ids), eta 2: budgets 1, 2, 4 epochs; 4 -> 2 -> 1
    cands = [Candidate(id=f"c{i}", path=str(tiny_models[m])) for i, m in enumerate(["1", "2", "3", "2"])]
    recipe = fast_recipe.replace(max_epochs=4, patience=4)
    res = successive_halving(tiny_tasks[1], cands, tmp_path / "h.sqlite", recipe=recipe, eta=2)
    assert [r.epochs for r in res.rungs] == [1, 2, 4]
    assert [len(r.rows) for r in res.rungs] == [4, 2, 1]
    assert [len(r.survivors) for r in res.rungs] == [2, 1, 1]
    for rung, nxt in zip(res.rungs, res.rungs[1:]):
        ranked = sorted(rung.rows, key=lambda row: (-row["val_f1"], row["best_val_loss"]))
        assert rung.survivors == [row["model_id"] for row in ranked[: len(rung.survivors)]]
        assert [row["model_id"] for row in nxt.rows] == [c.id for c in cands if c.id in rung.survivors]
    assert res.winner == res.rungs[-1].survivors[0] and 0 <= res.winner_f1 <= 1
    assert res.total_epochs <= 4 * 1 + 2 * 2 + 1 * 4 < 4 * 4  # cheaper than full training of all four
    table = res.table()
    assert len(table) == 7 and table["kept"].sum() == 4
    again = successive_halving(tiny_tasks[1], cands, tmp_path / "h.sqlite", recipe=recipe, eta=2)
    assert again.winner == res.winner  # resumed from the store, same answer
    assert not math.isnan(again.winner_f1)
    with pytest.raises(InputError):
        successive_halving(tiny_tasks[1], cands, tmp_path / "h.sqlite", recipe=recipe, eta=1)


@pytest.mark.slow(reason="4 s (setup and call) on 2 busy cores")
def test_rank_halving_cli(cli, tmp_path, tiny_models, tiny_tasks, pool_yaml):
    data = write_task_table(tiny_tasks[1], tmp_path / "task.csv")
    pool = pool_yaml(tmp_path / "pool.yaml", tiny_models)
    r = cli("rank", data, "--pool", pool, "-m", "random", "--halving", "--finetune-store", tmp_path / "h.sqlite",
            "--set", "lr=0.005", "--set", "max_epochs=2", "--set", "cpu_threads=1")
    assert r.code == 0, r.err
    assert "successive halving over 3 candidate(s)" in r.out and "winner:" in r.out
