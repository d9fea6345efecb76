"""Candidate jobs with the local executor: one job per candidate kept in the job store beside the feature cache,
so that a rerun, a rerun after ``kill -9``, and two ``modelseek rank`` processes sharing one cache compute every
candidate once and write the same run."""

from __future__ import annotations

import os
import signal
import time
from collections import Counter

import pytest

from .conftest import N_MODELS, assert_each_once, rank_args, start_rank, store_of


@pytest.mark.slow(reason="8 s (setup and call) on 2 busy cores")
def test_rerun_reads_every_candidate_from_the_store(cli, job_inputs, reference, writes, tmp_path):
    cache, out = tmp_path / "cache", tmp_path / "run.txt"
    r = cli(*rank_args(job_inputs, cache, out))
    assert r.code == 0, r.err
    assert out.read_bytes() == reference
    assert_each_once(writes(), cache)
    assert "logme: candidates" in r.err  # the progress bar counts candidates
    again = cli(*rank_args(job_inputs, cache, out))
    assert again.code == 0 and out.read_bytes() == reference
    assert len(writes()) == N_MODELS * 3  # nothing recomputed
    with store_of(cache) as store:
        assert store.counts() == {"done": N_MODELS}
        assert [a["status"] for a in store.attempts()] == ["done"] * N_MODELS  # each candidate dispatched once


def test_device_and_executor_options(cli, job_inputs, reference, tmp_path):
    out = tmp_path / "run.txt"
    r = cli(*rank_args(job_inputs, tmp_path / "cache", out, "--device", "cpu", "--executor", "local"))
    assert r.code == 0 and out.read_bytes() == reference
    bad = cli(*rank_args(job_inputs, tmp_path / "cache", out, "--address", "auto"))
    assert bad.code == 1 and "address is for the ray executor" in bad.err
    learned = cli("rank", job_inputs[0], "--pool", job_inputs[1], "-m", "random", "--executor", "ray")
    assert learned.code == 1 and "runs no candidate model" in learned.err
    import torch

    if not torch.cuda.is_available():  # one error before any model is loaded, not a failure per candidate
        cuda = cli(*rank_args(job_inputs, tmp_path / "cache", out, "--device", "cuda"))
        assert cuda.code == 1 and "no CUDA device is visible" in cuda.err


@pytest.mark.slow(reason="6 s (setup and call) on 2 busy cores")
def test_kill9_mid_run_then_rerun_computes_each_candidate_once(cli, job_inputs, reference, writes, tmp_path):
    cache, out = tmp_path / "cache", tmp_path / "run.txt"
    proc = start_rank(rank_args(job_inputs, cache, out), tmp_path / "first.log")
    done_before: set[str] = set()
    while proc.poll() is None and len(done_before) < 2:  # until two candidates are stored
        if (cache / "scores.sqlite").exists():
            with store_of(cache) as store:
                done_before = set(store.statuses())
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    r = cli(*rank_args(job_inputs, cache, out))
    assert r.code == 0, r.err
    assert out.read_bytes() == reference
    assert_each_once(writes(), cache)
    with store_of(cache) as store:
        attempts, keys = store.attempts(), set(store.statuses())
        assert store.counts() == {"done": N_MODELS}
    # the candidates stored before the kill were never dispatched again; every candidate finished once
    assert done_before and all(sum(a["key"] == k for a in attempts) == 1 for k in done_before)
    assert Counter(a["key"] for a in attempts if a["status"] == "done") == {k: 1 for k in keys}


@pytest.mark.slow(reason="11 s (setup and call) on 2 busy cores")
def test_two_rank_processes_on_one_cache_split_the_candidates(job_inputs, reference, writes, tmp_path):
    cache = tmp_path / "cache"
    procs = [start_rank(rank_args(job_inputs, cache, tmp_path / f"run{i}.txt"), tmp_path / f"p{i}.log")
             for i in range(2)]
    for i, p in enumerate(procs):
        assert p.wait() == 0, (tmp_path / f"p{i}.log").read_text()
    assert (tmp_path / "run0.txt").read_bytes() == reference == (tmp_path / "run1.txt").read_bytes()
    records = writes()
    assert_each_once(records, cache)
    with store_of(cache) as store:
        attempts = store.attempts()
    assert len(attempts) == N_MODELS and {a["status"] for a in attempts} == {"done"}  # each claimed once
    print("writers:", Counter(r["pid"] for r in records))
