"""Fixtures for candidate jobs: 8 tiny random BERTs (save_pretrained), 3 small NTCIR-layout tasks, a pool file,
and the feature cache's write audit log (one JSON line per feature matrix computed, by any process)."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("transformers")

WRITE_LOG = "MODELSEEK_FEATURE_WRITE_LOG"
N_MODELS, N_TASKS = 8, 3


@pytest.fixture(scope="session")
def job_inputs(tmp_path_factory):
    """(task folder, pool file) for 8 models x 3 tasks."""
    from modelseek.testing import make_ntcir_layout
    from modelseek.testing.tiny_models import make_tiny_bert

    root = tmp_path_factory.mktemp("candidate-jobs")
    layout = make_ntcir_layout(root / "tasks", n_tasks=N_TASKS, n_models=2, n_train=16, n_val=8, n_test=4)
    lines = ["name: tiny8", "candidates:"]
    for i in range(N_MODELS):
        folder = make_tiny_bert(root / f"m{i}", seed=i, hidden_size=16, num_layers=1 + i % 2)
        lines.append(f'  - {{id: "{i + 1}", path: "{folder}"}}')
    pool = root / "pool.yaml"
    pool.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return layout, pool


@pytest.fixture(scope="session")
def audit_log(tmp_path_factory) -> Path:
    """The write audit log, set in this process's environment for the whole session (so that the Ray workers
    and the ``modelseek`` subprocesses started by these tests inherit it); emptied by :func:`writes`."""
    path = tmp_path_factory.mktemp("audit") / "writes.jsonl"
    os.environ[WRITE_LOG] = str(path)
    return path


@pytest.fixture
def writes(audit_log):
    """Empty the audit log; returns a function reading it back as [records]."""
    audit_log.write_text("", encoding="utf-8")

    def read() -> list[dict]:
        return [json.loads(line) for line in audit_log.read_text(encoding="utf-8").splitlines() if line]

    return read


def rank_args(job_inputs, cache: Path, out: Path, *extra) -> list:
    layout, pool = job_inputs
    return ["rank", layout, "--pool", pool, "-m", "logme", "-o", out, "--param", f"cache_dir={cache}",
            "--param", "batch_size=8", *extra]


def assert_each_once(records: list[dict], cache: Path) -> None:
    """Every feature matrix of the call computed exactly once: 8 x 3 entries in the cache, each written once."""
    counts = Counter(r["key"] for r in records)
    assert sorted(set(counts.values())) == [1], {k: n for k, n in counts.items() if n != 1}
    assert set(counts) == {p.stem for p in cache.rglob("*.feat")}
    assert len(counts) == N_MODELS * N_TASKS


@pytest.fixture(scope="session")
def reference(job_inputs, audit_log, tmp_path_factory) -> bytes:
    """The run file of the local executor, in this process, on a cache of its own."""
    from modelseek.testing.cli import run_cli

    root = tmp_path_factory.mktemp("reference")
    r = run_cli(*rank_args(job_inputs, root / "cache", root / "run.txt"))
    assert r.code == 0, r.err
    return (root / "run.txt").read_bytes()


def start_rank(args: list, log_to: Path):
    """``python -m modelseek ARGS`` in a fresh process importing this checkout (stdout and stderr to ``log_to``)."""
    import subprocess
    import sys

    src = str(Path(__file__).resolve().parents[2] / "src")
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    with open(log_to, "wb") as fh:
        return subprocess.Popen([sys.executable, "-m", "modelseek", *map(str, args)], stdout=fh,
                                stderr=subprocess.STDOUT, env=env)


def store_of(cache: Path):
    from modelseek.retrieval.finetune.store import JobStore

    return JobStore(cache / "scores.sqlite")
