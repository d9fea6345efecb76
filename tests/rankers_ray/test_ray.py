"""Candidate jobs on a local Ray cluster of two worker processes (started here, stopped after): the same run
file as the local executor, and a worker killed with SIGKILL mid-run leaves every candidate computed once."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from modelseek.retrieval.finetune.store import pid_alive
from modelseek.testing.ray_local import local_ray

from .conftest import N_MODELS, assert_each_once, rank_args, store_of

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def ray_instance(audit_log):
    """A local Ray instance with 2 CPUs. Its workers inherit PYTHONPATH (this checkout's sources, so the executor
    ships nothing) and the audit log's variable; idle workers are kept (each start imports torch)."""
    with local_ray(num_cpus=2, src=Path(__file__).resolve().parents[2] / "src"):
        yield


@pytest.mark.slow(reason="20 s (setup and call) on 2 busy cores")
def test_ray_ranks_like_the_local_executor(ray_instance, cli, job_inputs, reference, writes, tmp_path):
    cache, out = tmp_path / "cache", tmp_path / "run.txt"
    r = cli(*rank_args(job_inputs, cache, out, "--executor", "ray"))
    assert r.code == 0, r.err
    assert out.read_bytes() == reference
    records = writes()
    assert_each_once(records, cache)
    assert os.getpid() not in {rec["pid"] for rec in records}  # every feature was computed on a Ray worker
    with store_of(cache) as store:
        assert store.counts() == {"done": N_MODELS}


@pytest.mark.slow(reason="14 s (setup and call) on 2 busy cores")
def test_worker_killed_mid_run(ray_instance, cli, job_inputs, reference, writes, tmp_path):
    cache, out = tmp_path / "cache", tmp_path / "run.txt"
    result = {}
    driver = threading.Thread(target=lambda: result.update(r=cli(*rank_args(job_inputs, cache, out, "--executor",
                                                                              "ray"))))
    driver.start()
    victim = None
    while driver.is_alive() and victim is None:  # the first worker to write a feature matrix
        records = writes()
        if records:
            victim = records[0]["pid"]
            os.kill(victim, signal.SIGKILL)
        time.sleep(0.01)
    driver.join()
    assert victim is not None and not pid_alive(victim)
    assert result["r"].code == 0, result["r"].err
    assert out.read_bytes() == reference  # Ray retried the killed worker's candidate
    assert_each_once(writes(), cache)
    n = len(writes())
    again = cli(*rank_args(job_inputs, cache, out, "--executor", "ray"))  # the rerun computes nothing
    assert again.code == 0 and out.read_bytes() == reference and len(writes()) == n
    with store_of(cache) as store:
        assert store.counts() == {"done": N_MODELS}
        assert len(store.attempts()) == N_MODELS


@pytest.mark.slow(reason="5 s (setup and call) on 2 busy cores")
def test_api_executor_ray_scores_like_the_local_run(ray_instance, job_inputs, reference, tmp_path):
    """``modelseek.rank(..., executor="ray")`` on one task: each candidate's score equals the local run's for that
    task (the task's inputs do not depend on the other tasks of the call)."""
    import modelseek

    layout, pool_file = job_inputs
    tasks = list(modelseek.load_ntcir_tasks(layout))
    run = modelseek.rank(tasks[:1], modelseek.load_pool(pool_file), "logme", executor="ray", device="cpu",
                         cache_dir=str(tmp_path / "cache"), batch_size=8)
    modelseek.write_runs(tmp_path / "api.txt", [run])
    lines = (tmp_path / "api.txt").read_text().splitlines()
    assert len(lines) == N_MODELS
    assert lines == [ln for ln in reference.decode().splitlines() if ln.split()[0] == tasks[0].id]
