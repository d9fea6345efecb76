"""A grid killed with SIGKILL mid-run and restarted finishes with every job run to completion exactly once,
and its ground truth equals that of an uninterrupted grid."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from modelseek.testing import make_ntcir_layout

ROOT = Path(__file__).resolve().parents[2]


def _done(store: Path) -> int:
    if not store.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=5) as db:
            return db.execute("SELECT COUNT(*) FROM jobs WHERE status='done'").fetchone()[0]
    except sqlite3.OperationalError:  # tables not created yet
        return 0


@pytest.mark.slow(reason="41 s (setup and call) on 2 busy cores")
def test_sigkill_then_resume_runs_each_job_once(cli, tmp_path, tiny_models, fast_recipe, pool_yaml, recipe_yaml):
    layout = make_ntcir_layout(tmp_path / "layout", n_tasks=2, n_models=2, n_train=48, n_val=12, n_test=16)
    (layout / "ground-truth.csv").unlink()
    pool = pool_yaml(tmp_path / "pool.yaml", {k: tiny_models[k] for k in ("1", "2")})
    recipe = recipe_yaml(tmp_path / "recipe.yaml", fast_recipe.replace(max_epochs=8, patience=8))
    out, store = tmp_path / "gt.csv", tmp_path / "jobs.sqlite"
    args = ["finetune", "--pool", pool, "--tasks", layout, "--out", out, "--store", store, "--recipe", recipe,
            "--seeds", "0", "1", "--json"]
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), HF_HUB_OFFLINE="1")
    proc = subprocess.Popen([sys.executable, "-m", "modelseek", *map(str, args)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300
        while _done(store) < 2 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    assert proc.returncode == -signal.SIGKILL  # killed, not finished
    first = _done(store)
    assert 2 <= first < 8 and not out.exists()

    r = cli(*args)  # restart: finishes the grid
    assert r.code == 0, r.err
    assert f'"skipped": {first}' in r.out and f'"ran": {8 - first}' in r.out

    with sqlite3.connect(store) as db:
        statuses = dict(db.execute("SELECT key, status FROM jobs").fetchall())
        attempts = db.execute("SELECT key, pid, finished_at, status FROM attempts ORDER BY id").fetchall()
    assert len(statuses) == 8 and set(statuses.values()) == {"done"}
    completed = [k for k, _, fin, st in attempts if st == "done"]
    assert sorted(completed) == sorted(statuses)  # every job ran to completion exactly once
    assert not [a for a in attempts if a[3] == "duplicate"]
    lost = [a for a in attempts if a[2] is None]
    assert len(lost) <= 1 and all(a[1] == proc.pid for a in lost)  # at most the job in flight was lost
    first_run = {k for k, pid, _, st in attempts if pid == proc.pid and st == "done"}
    assert len(first_run) == first
    assert not {k for k, pid, _, _ in attempts if pid != proc.pid} & first_run  # finished jobs not rerun

    fresh = tmp_path / "fresh.csv"
    r = cli("finetune", "--pool", pool, "--tasks", layout, "--out", fresh, "--store", tmp_path / "fresh.sqlite",
            "--recipe", recipe, "--seeds", "0", "1")
    assert r.code == 0, r.err
    assert fresh.read_bytes() == out.read_bytes()  # interrupted + resumed = uninterrupted
