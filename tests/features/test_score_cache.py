"""The score cache (``scores.sqlite`` beside the feature cache) is verified like the feature files (issue #36):
each stored outcome carries a checksum over its key and values; a row edited by hand, or a store that is not a
store at all, is reported once, kept aside for inspection and recomputed; a full disk is named as such."""

from __future__ import annotations

import json
import logging
import sqlite3

import pytest
import yaml

from modelseek.core.errors import OutputError
from modelseek.retrieval.finetune.store import JobStore


@pytest.fixture
def rank_args(tiny_layout, tiny_bert, tiny_roberta, tmp_path):
    pool_file = tmp_path / "pool.yaml"
    pool_file.write_text(yaml.safe_dump({"name": "tiny", "candidates": [
        {"id": "1", "path": str(tiny_bert)}, {"id": "2", "path": str(tiny_roberta)}]}))
    cache = tmp_path / "c"
    return cache, ["rank", tiny_layout, "--pool", pool_file, "-m", "logme", "-o", tmp_path / "run.txt",
                   "--param", f"cache_dir={cache}", "--param", "max_examples=40"]


def _edit_one_score(store, value: float) -> str:
    """What the issue did by hand: one candidate's stored score replaced in the result JSON."""
    db = sqlite3.connect(store)
    try:
        key, text = db.execute("SELECT key, result FROM jobs WHERE model_id='1'").fetchone()
        result = json.loads(text)
        task = sorted(result["scores"]["logme"])[0]
        result["scores"]["logme"][task] = value
        db.execute("UPDATE jobs SET result=? WHERE key=?", (json.dumps(result), key))
        db.commit()
    finally:
        db.close()
    return task


def _scores(run_file) -> dict[tuple[str, str], float]:
    return {(ln.split()[0], ln.split()[2]): float(ln.split()[4]) for ln in run_file.read_text().splitlines()}


def test_a_score_edited_by_hand_is_detected_and_recomputed(cli, rank_args, tmp_path, caplog):
    cache, args = rank_args
    assert cli(*args).code == 0
    first = (tmp_path / "run.txt").read_text()
    store = cache / "scores.sqlite"
    rows = sqlite3.connect(store).execute("SELECT result FROM jobs WHERE model_id='1'").fetchone()
    assert "scores" in json.loads(rows[0])
    task = _edit_one_score(store, 99.0)
    with caplog.at_level(logging.WARNING):
        r = cli(*args)
    assert r.code == 0, r.err
    assert "1 stored result(s) fail their checksum" in caplog.text, caplog.text
    assert caplog.text.count("fail their checksum") == 1  # reported once
    assert (tmp_path / "run.txt").read_text() == first  # recomputed: 99.0 is nowhere
    assert _scores(tmp_path / "run.txt")[(task, "1")] != 99.0
    kept = list(cache.glob("scores.sqlite.damaged-*"))
    assert len(kept) == 1 and "99.0" in sqlite3.connect(kept[0]).execute("SELECT group_concat(result) FROM jobs"
                                                                          ).fetchone()[0]
    caplog.clear()
    with caplog.at_level(logging.WARNING):  # the recomputed row is sound: nothing reported again
        assert cli(*args).code == 0
    assert "checksum" not in caplog.text


def test_a_garbage_score_store_is_moved_aside_and_rebuilt(cli, rank_args, tmp_path, caplog):
    cache, args = rank_args
    assert cli(*args).code == 0
    first = (tmp_path / "run.txt").read_text()
    for f in cache.glob("scores.sqlite-*"):
        f.unlink()
    garbage = b"this is not sqlite at all" * 100
    (cache / "scores.sqlite").write_bytes(garbage)
    with caplog.at_level(logging.WARNING):
        r = cli(*args)
    assert r.code == 0, r.err
    assert "not a modelseek job store" in caplog.text and "moved aside" in caplog.text
    assert (tmp_path / "run.txt").read_text() == first
    kept = list(cache.glob("scores.sqlite.damaged-*"))
    assert [k.read_bytes() for k in kept if not k.name.endswith(("-wal", "-shm"))] == [garbage]
    with JobStore(cache / "scores.sqlite") as s:  # rebuilt: a sound store with both candidates
        assert sorted(r.model_id for r in s.records()) == ["1", "2"]


_KW = dict(task_id="t", model_id="m", model_source="s", recipe="r", seed=0, task_fingerprint="fp")


def test_every_stored_value_is_covered_by_the_checksum(tmp_path):
    path = tmp_path / "s.sqlite"
    with JobStore(path) as s:
        for i in range(4):
            s.finish(key=f"k{i}", status="done", result={"f1": 0.5 + i / 10, "epochs": 3}, **_KW)
    for column, value in (("f1", 0.99), ("status", "failed"), ("model_id", "other"), ("result", '{"f1": 0.99}')):
        db = sqlite3.connect(path)
        db.execute(f"UPDATE jobs SET {column}=? WHERE key='k1'", (value,))
        db.commit()
        db.close()
        with JobStore(path) as s:
            assert s.recomputed == ["k1"] and s.set_aside is not None and s.set_aside.exists()
            assert sorted(s.statuses()) == ["k0", "k2", "k3"]
            s.finish(key="k1", status="done", result={"f1": 0.6, "epochs": 3}, **_KW)
        with JobStore(path) as s:
            assert s.recomputed == [] and s.get("k1").f1 == 0.6


def test_a_schema_1_store_is_migrated_once(tmp_path):
    path = tmp_path / "old.sqlite"
    with JobStore(path) as s:
        s.finish(key="k", status="done", result={"f1": 0.5}, **_KW)
    db = sqlite3.connect(path)  # the store as version 1 wrote it: no checksums
    db.execute("UPDATE jobs SET checksum=NULL")
    db.execute("UPDATE meta SET value='1' WHERE key='schema'")
    db.commit()
    db.close()
    with JobStore(path) as s:
        assert s.recomputed == [] and s.get("k").f1 == 0.5
    assert sqlite3.connect(path).execute("SELECT value FROM meta WHERE key='schema'").fetchone() == ("2",)


def test_a_full_disk_is_named_as_such(tmp_path, monkeypatch):
    path = tmp_path / "s.sqlite"
    with JobStore(path) as s:
        s.finish(key="k0", status="done", result={"f1": 0.5}, **_KW)
    real = sqlite3.connect

    def full(*a, **k):  # the disk fills up: SQLite may not grow the file by one page more
        db = real(*a, **k)
        db.execute("PRAGMA max_page_count = 1")  # clamps to the pages the file holds now
        return db

    monkeypatch.setattr(sqlite3, "connect", full)
    with JobStore(path) as s, pytest.raises(OutputError, match="no space left on device") as exc:
        s.finish(key="k1", status="done", result={"f1": 0.5, "log": "x" * 200_000}, **_KW)
    assert str(exc.value).startswith(f"{path}: cannot write the job store: no space left on device")
    monkeypatch.undo()
    with JobStore(path) as s:  # nothing half-written
        assert sorted(s.statuses()) == ["k0"] and s.recomputed == []
