"""Runs over different pools are refused by ``fuse`` in one line instead of interleaved (issue #48 item 6: README's own
example fused the 20 NTCIR candidates with 4 unrelated models into one 24-candidate run)."""

from __future__ import annotations

import pytest

import modelseek as ms
from modelseek.core.errors import InputError
from modelseek.testing.cli import assert_one_error_line


def _write(path, run_id, topics, docs):
    path.write_text("".join(f"{t} Q0 {d} {i + 1} {10 - i} {run_id}\n" for t in topics for i, d in enumerate(docs)))
    return path


def test_fuse_refuses_runs_that_share_no_candidate(cli, tmp_path):
    ntcir = _write(tmp_path / "run.txt", "adaptive", ["1", "2"], [str(m) for m in range(1, 21)])
    offline = _write(tmp_path / "features.txt", "fused-rrf", ["1", "2"], ["minilm", "bge", "e5", "gte"])
    out = tmp_path / "fused.txt"
    for extra in ([], ["--method", "combsum"]):
        r = cli("fuse", ntcir, offline, "-o", out, *extra)
        assert r.code == 1 and not out.exists()
        assert_one_error_line(r)
        assert "run adaptive shares no candidate with fused-rrf on topic 1 (20 vs 4 candidates)" in r.err
        assert "features.txt" in r.err  # the inputs are named


def test_partly_shared_pools_and_topics_of_one_run_still_fuse(cli, tmp_path):
    a = _write(tmp_path / "a.txt", "a", ["1", "2"], ["x", "y", "z"])
    b = _write(tmp_path / "b.txt", "b", ["1", "3"], ["y", "w"])  # topic 3: only b ranks it
    r = cli("fuse", a, b, "-o", tmp_path / "f.txt")
    assert r.code == 0, r.err
    fused = ms.read_run(tmp_path / "f.txt")
    assert sorted(fused) == ["1", "2", "3"] and set(fused.ranking("1")) == {"w", "x", "y", "z"}


def test_the_api_refuses_them_too():
    a = ms.Run.from_scores({"t": {"x": 2.0, "y": 1.0}}, "a")
    b = ms.Run.from_scores({"t": {"p": 2.0, "q": 1.0}}, "b")
    with pytest.raises(InputError, match="shares no candidate"):
        ms.fuse([a, b])
