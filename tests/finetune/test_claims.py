"""Several workers on one job store: every job is claimed atomically, so two processes share a grid instead of
each running all of it; claims of dead workers (by pid) or silent ones (past the lease) are taken over."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from modelseek.retrieval.data.pool import Candidate, Pool
from modelseek.retrieval.finetune import JobStore, build_jobs, run_grid
from modelseek.testing import make_text_task
from modelseek.testing.finetune import FakeTrainer

ROOT = Path(__file__).resolve().parents[2]

DRIVER = '''
import json, sys, time
from pathlib import Path
from modelseek.retrieval.data.pool import Candidate, Pool
from modelseek.retrieval.finetune import run_grid
from modelseek.testing import make_text_task
from modelseek.testing.finetune import FakeTrainer

store, log, out, ready, go = sys.argv[1:6]
tasks = [make_text_task(f"t{i}", n_train=12, n_val=6, n_test=6, seed=i) for i in range(3)]
pool = Pool([Candidate(id=f"m{i}", path=f"/nonexistent/m{i}") for i in range(4)], name="fake")
Path(ready).touch()
while not Path(go).exists():  # start together (imports take longer than the grid)
    time.sleep(0.01)
g = run_grid(tasks, pool, store, seeds=[0, 1], trainer=FakeTrainer(delay=0.1, log=log), poll_s=0.05)
g.ground_truth(tasks).to_csv(out)
print(json.dumps({"ran": g.ran, "elsewhere": g.elsewhere, "skipped": g.skipped, "jobs": len(g.jobs)}))
'''


def _grid():
    tasks = [make_text_task(f"t{i}", n_train=12, n_val=6, n_test=6, seed=i) for i in range(3)]
    pool = Pool([Candidate(id=f"m{i}", path=f"/nonexistent/m{i}") for i in range(4)], name="fake")
    return tasks, pool


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=str(ROOT / "src"), HF_HUB_OFFLINE="1")


@pytest.mark.slow(reason="two fresh interpreters share a grid")
def test_two_processes_share_a_grid_and_run_every_job_once(tmp_path):
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    store, log, go = tmp_path / "jobs.sqlite", tmp_path / "runs.log", tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, str(script), str(store), str(log), str(tmp_path / f"gt{i}.csv"),
                               str(tmp_path / f"ready{i}"), str(go)], env=_env(), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for i in range(2)]
    try:
        while not all((tmp_path / f"ready{i}").exists() for i in range(2)):
            assert all(p.poll() is None for p in procs), [p.communicate() for p in procs]
            time.sleep(0.02)
        go.touch()
        outs = [p.communicate(timeout=300) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert [p.returncode for p in procs] == [0, 0], outs
    summaries = [json.loads(o.strip().splitlines()[-1]) for o, _ in outs]
    # the trainer's own record: 24 runs for 24 jobs, each job once, and both workers took a share
    runs = [tuple(line.split()) for line in log.read_text().splitlines()]
    assert len(runs) == 24 and len(set(r[:3] for r in runs)) == 24
    by_pid = Counter(r[3] for r in runs)
    assert len(by_pid) == 2 and sorted(by_pid.values()) == sorted(s["ran"] for s in summaries)
    assert all(s["ran"] + s["elsewhere"] == 24 and s["skipped"] == 0 for s in summaries)
    with JobStore(store) as s:  # the store's audit trail agrees: one finished attempt per job, no claim left
        attempts = s.attempts()
        assert len(attempts) == 24 and Counter(a["key"] for a in attempts).most_common(1)[0][1] == 1
        assert {a["status"] for a in attempts} == {"done"} and s.claims() == []
    # identical ground truth to one process alone
    tasks, pool = _grid()
    one = run_grid(tasks, pool, tmp_path / "one.sqlite", seeds=[0, 1], trainer=FakeTrainer())
    one.ground_truth(tasks).to_csv(tmp_path / "one.csv")
    assert (tmp_path / "gt0.csv").read_bytes() == (tmp_path / "gt1.csv").read_bytes() \
        == (tmp_path / "one.csv").read_bytes()


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
def test_claim_of_a_dead_worker_is_taken_over(tmp_path):
    """A worker killed mid-job leaves its claim; its pid is dead on this host, so the claim is stale at once."""
    tasks, pool = _grid()
    store = tmp_path / "jobs.sqlite"
    job = build_jobs(tasks, pool, seeds=[0])[5]
    code = (f"import os; from modelseek.retrieval.finetune import JobStore; s = JobStore({str(store)!r}); "
            f"assert s.claim({job.key!r}) is not None; print(os.getpid(), flush=True); os._exit(9)")
    dead = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True, text=True)
    assert dead.returncode == 9, dead.stderr
    with JobStore(store) as s:
        assert [(c["key"], c["pid"]) for c in s.claims()] == [(job.key, int(dead.stdout))]
    g = run_grid(tasks, pool, store, seeds=[0], trainer=FakeTrainer(), poll_s=0.01)
    assert (g.ran, g.elsewhere, g.n_done) == (12, 0, 12)
    with JobStore(store) as s:
        mine = [a for a in s.attempts() if a["key"] == job.key]
        assert [a["status"] for a in mine] == [None, "done"]  # the dead one lost in flight, then run once
        assert s.claims() == []


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
def test_claim_past_its_lease_is_taken_over_and_a_live_one_is_not(tmp_path):
    tasks, pool = _grid()
    path = tmp_path / "jobs.sqlite"
    jobs = build_jobs(tasks, pool, seeds=[0])
    other = JobStore(path, lease_s=0.5)  # another worker in this (live) process: only its lease can expire
    assert other.claim(jobs[0].key) is not None
    assert JobStore(path).claim(jobs[0].key) is None  # live and fresh: not ours to take
    g = run_grid(tasks, pool, JobStore(path, lease_s=0.5), seeds=[0], trainer=FakeTrainer(), poll_s=0.05)
    assert (g.ran, g.n_done) == (12, 12)  # waited for the silent claim to go stale, then ran it
    assert not other.finish(key=jobs[0].key, task_id="t0", model_id="m0", model_source="", recipe="r", seed=0,
                            task_fingerprint="", status="done", result={"f1": 0.0})  # too late: not overwritten
    other.close()


def test_retry_failed_runs_each_failed_job_once_more(tmp_path):
    tasks, pool = _grid()
    pool = Pool([*pool, Candidate(id="ghost", path=str(tmp_path / "nothing"))], name="fake")

    class Picky(FakeTrainer):
        def __call__(self, task, model, recipe, seed, progress=False):
            if model.model_id == "ghost":
                raise RuntimeError("no such model")
            return super().__call__(task, model, recipe, seed, progress)

    store = tmp_path / "jobs.sqlite"
    g = run_grid(tasks, pool, store, seeds=[0], trainer=Picky())
    assert (g.ran, g.n_failed) == (15, 3)
    again = run_grid(tasks, pool, store, seeds=[0], trainer=Picky(), retry_failed=True)
    assert (again.skipped, again.ran, again.n_failed) == (12, 3, 3)
    assert {r.attempts for r in again.store.records() if r.status == "failed"} == {2}


@pytest.mark.slow(reason="two CLI processes fine-tune tiny BERTs")
def test_two_finetune_commands_on_one_store(cli, tmp_path, tiny_models, fast_recipe, pool_yaml, recipe_yaml):
    """The command as users run it: two ``modelseek finetune`` processes on one store run the 8 jobs once
    between them and write the same ground truth."""
    from modelseek.testing import make_ntcir_layout

    layout = make_ntcir_layout(tmp_path / "layout", n_tasks=2, n_models=2, n_train=48, n_val=12, n_test=16)
    (layout / "ground-truth.csv").unlink()
    pool = pool_yaml(tmp_path / "pool.yaml", {k: tiny_models[k] for k in ("1", "2")})
    recipe = recipe_yaml(tmp_path / "recipe.yaml", fast_recipe.replace(max_epochs=3))
    store = tmp_path / "jobs.sqlite"
    procs = [subprocess.Popen([sys.executable, "-m", "modelseek", "finetune", "--pool", str(pool), "--tasks",
                               str(layout), "--out", str(tmp_path / f"gt{i}.csv"), "--store", str(store),
                               "--recipe", str(recipe), "--seeds", "0", "1", "--json"], env=_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(2)]
    try:
        outs = [p.communicate(timeout=600) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert [p.returncode for p in procs] == [0, 0], outs
    summaries = [json.loads(o) for o, _ in outs]
    assert sum(s["ran"] for s in summaries) == 8 and all(s["ran"] + s["elsewhere"] == 8 for s in summaries)
    with JobStore(store) as s:
        attempts = s.attempts()
        assert sorted(a["key"] for a in attempts) == sorted(r.key for r in s.records())
        assert len(attempts) == 8 and {a["status"] for a in attempts} == {"done"}
    assert (tmp_path / "gt0.csv").read_bytes() == (tmp_path / "gt1.csv").read_bytes()
