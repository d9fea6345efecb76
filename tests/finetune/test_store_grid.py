"""The SQLite job store, the local grid (skip finished, failed jobs kept and retried on request, the grid
goes on past bad input), and ``modelseek finetune``."""

from __future__ import annotations

import sqlite3

import pandas as pd
import pytest

from modelseek.retrieval.data.pool import Candidate, Pool
from modelseek.retrieval.data.task import Split, Task
from modelseek.retrieval.data.truth import GroundTruth
from modelseek.core.errors import InputError
from modelseek.retrieval.finetune import JobStore, build_jobs, run_grid
from modelseek.testing import make_ntcir_layout

KW = dict(task_id="t", model_id="m", model_source="src", recipe="r", seed=0, task_fingerprint="fp")


def test_store_wal_and_one_row_per_job(tmp_path):
    path = tmp_path / "jobs.sqlite"
    with JobStore(path) as s:
        assert s._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        a = s.start("k1")
        assert s.finish(key="k1", status="failed", error="boom", attempt=a, **KW)
        assert s.finish(key="k1", status="done", result={"f1": 0.5, "epochs": 3}, attempt=s.start("k1"), **KW)
        # a finished job is never overwritten
        assert not s.finish(key="k1", status="done", result={"f1": 0.9}, attempt=s.start("k1"), **KW)
    with JobStore(path) as s:  # durable across connections
        rec = s.get("k1")
        assert (rec.status, rec.f1, rec.epochs, rec.attempts, rec.error) == ("done", 0.5, 3, 2, None)
        assert [a["status"] for a in s.attempts()] == ["failed", "done", "duplicate"]
        assert s.counts() == {"done": 1}
        with pytest.raises(ValueError):
            s.finish(key="k2", status="running", **KW)


def test_store_rejects_foreign_file(tmp_path):
    p = tmp_path / "notadb.sqlite"
    p.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(InputError, match="not a modelseek job store"):
        JobStore(p)


@pytest.mark.slow(reason="7 s (setup and call) on 2 busy cores")
def test_grid_resumes_and_keeps_failures(tmp_path, tiny_pool, tiny_tasks, fast_recipe):
    t = tiny_tasks[1]
    bad_task = Task("bad", train=t.train, val=Split(("odd one",), ("zzz",)), test=t.test)
    pool = Pool([*tiny_pool, Candidate(id="ghost", path=str(tmp_path / "no-such-model"))])
    tasks = [tiny_tasks[0], bad_task]
    store = tmp_path / "jobs.sqlite"
    g = run_grid(tasks, pool, store, recipe=fast_recipe)
    assert (len(g.jobs), g.skipped, g.ran, g.n_done, g.n_failed) == (6, 0, 6, 2, 4)
    errors = {(j.task.task_id, j.model.model_id): e for j, e in g.failed_jobs()}
    assert "no model folder" in errors[("t0", "ghost")]
    assert all("labels differ between splits" in errors[("bad", m)] for m in ("1", "2", "ghost"))
    # re-running skips everything; failed jobs are retried only on request
    again = run_grid(tasks, pool, store, recipe=fast_recipe)
    assert (again.skipped, again.ran) == (6, 0)
    retry = run_grid(tasks, pool, store, recipe=fast_recipe, retry_failed=True)
    assert (retry.skipped, retry.ran, retry.n_failed) == (2, 4, 4)
    assert {r.attempts for r in retry.store.records() if r.status == "failed"} == {2}
    # another recipe is another set of jobs
    other = run_grid([tiny_tasks[0]], tiny_pool, store, recipe=fast_recipe.replace(max_epochs=2))
    assert (other.skipped, other.ran) == (0, 2)
    truth = g.ground_truth(tasks)
    assert truth.task_ids == ["t0"] and truth.model_ids == ["1", "2"]
    stored = {r.model_id: r.f1 for r in g.store.records(j.key for j in g.jobs) if r.status == "done"}
    assert truth.f1("t0") == stored


@pytest.mark.slow(reason="4 s (setup and call) on 2 busy cores")
def test_ground_truth_averages_seeds(tmp_path, tiny_pool, tiny_tasks, fast_recipe):
    g = run_grid([tiny_tasks[1]], tiny_pool, tmp_path / "s.sqlite", recipe=fast_recipe.replace(max_epochs=2),
                 seeds=[0, 1])
    assert g.n_done == 4
    per = {}
    for r in g.store.records():
        per.setdefault(r.model_id, []).append(r.f1)
    truth = g.ground_truth()
    for m, v in per.items():
        assert truth.f1("t1")[m] == pytest.approx(sum(v) / 2)


def test_duplicate_jobs_rejected(tiny_pool, tiny_tasks, fast_recipe, tmp_path):
    with pytest.raises(InputError, match="duplicate"):
        run_grid([tiny_tasks[0], tiny_tasks[0]], tiny_pool, tmp_path / "d.sqlite", recipe=fast_recipe)
    assert len({j.key for j in build_jobs(tiny_tasks, tiny_pool, fast_recipe, seeds=[0, 1])}) == 8


@pytest.mark.slow(reason="5 s (setup and call) on 2 busy cores")
def test_cli_finetune_official_format(cli, tmp_path, tiny_models, fast_recipe, pool_yaml, recipe_yaml):
    layout = make_ntcir_layout(tmp_path / "layout", n_tasks=2, n_models=2, n_train=48, n_val=12, n_test=16)
    (layout / "ground-truth.csv").unlink()
    pool = pool_yaml(tmp_path / "pool.yaml", {k: tiny_models[k] for k in ("1", "2")},
                           extra={"9": str(tmp_path / "missing-model")})
    recipe = recipe_yaml(tmp_path / "recipe.yaml", fast_recipe.replace(max_epochs=3))
    out = tmp_path / "gt.csv"
    r = cli("finetune", "--pool", pool, "--tasks", layout, "--out", out, "--recipe", recipe)
    assert r.code == 1  # the missing candidate failed; the grid went on with the others
    assert "6 job(s)" in r.out and "4 done, 2 failed" in r.out
    assert r.err.count("no model folder") == 2 and "--retry-failed" in r.err
    df = pd.read_csv(out, dtype={"task_id": str, "model_id": str})
    assert list(df.columns) == ["task_id", "model_id", "f1", "model_rank", "normalized_f1", "relevance_score",
                                "criticality"]
    assert len(df) == 4 and set(df["model_id"]) == {"1", "2"}
    truth = GroundTruth.from_csv(out)  # reads back; criticality comes from the tasks
    assert truth.task_ids == ["1001", "1002"]
    for t in truth.task_ids:
        sub = df[df.task_id == t]
        assert sub["normalized_f1"].max() == 1.0
        assert sub.loc[sub.f1.idxmax(), "model_rank"] == 1
    store = out.with_suffix(".jobs.sqlite")
    with sqlite3.connect(store) as db:
        assert db.execute("SELECT COUNT(*) FROM jobs WHERE status='done'").fetchone()[0] == 4
    again = cli("finetune", "--pool", pool, "--tasks", layout, "--out", out, "--recipe", recipe, "--json",
                "--plot", tmp_path / "curves.png")
    assert again.code == 1 and '"skipped": 6' in again.out and '"ran": 0' in again.out
    assert (tmp_path / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_finetune_bad_recipe(cli, tmp_path, tiny_models, pool_yaml):
    pool = pool_yaml(tmp_path / "pool.yaml", {"1": tiny_models["1"]})
    bad = tmp_path / "bad.yaml"
    bad.write_text("lr: 0.01\nmax_epoch: 3\n", encoding="utf-8")
    r = cli("finetune", "--pool", pool, "--tasks", tmp_path, "--out", tmp_path / "gt.csv", "--recipe", bad)
    assert r.code == 1 and "bad.yaml" in r.err and "max_epoch" in r.err and "did you mean 'max_epochs'" in r.err
    r = cli("finetune", "--pool", pool, "--tasks", tmp_path, "--out", tmp_path / "gt.csv", "--set", "lr=-1")
    assert r.code == 1 and "field 'lr'" in r.err
