"""Issue #53 item 3: one chain (and seals) for everything a reader sees. A preview's stored rows are sealed and
refuse UPDATE; an edited preview is named by ``db verify`` and refused at confirmation; an altered board is not
shown by the library, whatever serves it (API, CLI, the page and its downloads over a real server); ``db verify``
runs the engine's own integrity check and refuses a path that does not exist."""

import json
import sqlite3
import uuid
from pathlib import Path

import pytest

from modelseek.duel.database import verify_database
from modelseek.duel.storage import BoardAltered, Store
from modelseek.core.errors import InputError

pytest.importorskip("sqlalchemy")


def _b(d) -> bytes:
    return json.dumps(d).encode()


def _sql(url, statements):
    if url.startswith("sqlite"):
        conn = sqlite3.connect(url.split(":///", 1)[1])
        try:
            for s in statements:
                conn.execute(s)
            conn.commit()
        finally:
            conn.close()
    else:
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            for s in statements:
                conn.execute(s)


def _staged(db_url, cfg, sub_dicts):
    """Three published models and a pre-submitted (not confirmed) weak fourth: ``(store, token)``."""
    store = Store(db_url, config=cfg)
    store.publish_many([store._load(_b(sub_dicts[k]), "<x>") for k in (0, 2, 3)])
    pv = store.presubmit(_b(sub_dicts[1]))
    assert pv.rank == 4
    store.check_every = 0
    return store, pv.token


@pytest.mark.slow(reason="2 s (setup and call) on 2 busy cores")
def test_a_preview_refuses_update_and_an_edited_one_is_found_and_refused(db_url, cfg, sub_dicts, cli):
    store, token = _staged(db_url, cfg, sub_dicts)
    assert store.verify() == []
    for stmt in ("UPDATE pending_duels SET p_win = 0.0, p_loss = 1.0",
                 "UPDATE pending_profiles SET raw = 1.0",
                 "UPDATE pending SET metadata_json = '{}'"):
        with pytest.raises(Exception, match=r"sealed|immutable"):
            _sql(db_url, [stmt])
    _sql(db_url, ["UPDATE pending SET refreshes = 0"])      # the workflow's own columns stay writable
    # the attack of the issue, by DELETE and INSERT (the app role may delete a preview): the weakest model now
    # "beats" every published model on every task (unprotected, it published at rank 1 with 100.00)
    _sql(db_url, ["CREATE TABLE saved AS SELECT * FROM pending_duels", "DELETE FROM pending_duels",
                  "INSERT INTO pending_duels (pending_id, task, opponent_id, p_win, p_loss, seal) "
                  "SELECT pending_id, task, opponent_id, 0.0, 1.0, seal FROM saved", "DROP TABLE saved"])
    problems, _, _ = verify_database(db_url)
    assert problems and "pending duel of pending submission id" in problems[0] and "altered" in problems[0]
    r = cli("duel", "db", "verify", "--db", db_url)
    assert r.code == 1 and "pending duel" in r.err and len(r.err.strip().splitlines()) == 1
    with pytest.raises(InputError, match="this preview was altered after it was computed"):
        store.confirm(token)
    assert [m for _, m in store.published()] == [sub_dicts[k]["metadata"]["model"] for k in (0, 2, 3)]
    store.close()


def test_a_dropped_seal_trigger_and_a_forged_preview_are_named(db_url, cfg, sub_dicts):
    store, token = _staged(db_url, cfg, sub_dicts)
    if db_url.startswith("sqlite"):
        _sql(db_url, ["DROP TRIGGER pending_duels_sealed"])
    else:
        _sql(db_url, ["DROP TRIGGER pending_duels_sealed ON pending_duels"])
    assert any("trigger pending_duels_sealed is missing" in p for p in store.verify())
    if db_url.startswith("sqlite"):          # (PostgreSQL's foreign key refuses the orphan itself)
        _sql(db_url, ["INSERT INTO pending_profiles (pending_id, task, n, raw, blob, seal) SELECT 999, task, n, "
                      "raw, blob, seal FROM pending_profiles"])
        assert any("names no pending submission (id 999)" in p for p in store.verify())
    with pytest.raises(InputError, match=r"the leaderboard was altered .*nothing is published on top of it"):
        store.confirm(token)
    store.close()


def _altered_board(db_url, cfg, sub_dicts):
    """Three published models, then a duel's p-value edited with the triggers switched off (an owner's edit)."""
    store = Store(db_url, config=cfg)
    store.publish_many([store._load(_b(d), "<x>") for d in sub_dicts[:3]])
    before = store.leaderboard()
    if db_url.startswith("sqlite"):
        _sql(db_url, ["DROP TRIGGER duels_no_update", "UPDATE duels SET p_value = 1e-9 WHERE b_id = 1"])
    else:
        _sql(db_url, ["ALTER TABLE duels DISABLE TRIGGER USER", "UPDATE duels SET p_value = 1e-9 WHERE b_id = 1",
                      "ALTER TABLE duels ENABLE TRIGGER USER"])
    return store, before


def test_an_altered_board_is_refused_by_the_api_and_the_cli(db_url, cfg, sub_dicts, cli):
    store, before = _altered_board(db_url, cfg, sub_dicts)
    assert len(before) == 3
    store.check_every = 0
    for read in (store.leaderboard, store.scores, lambda: store.duel_details(sub_dicts[0]["metadata"]["model"]),
                 store.review_queue):
        with pytest.raises(BoardAltered, match="the leaderboard was altered: chain row"):
            read()
    r = cli("duel", "leaderboard", "--db", db_url)
    assert r.code == 1 and "the leaderboard was altered" in r.err and r.out == ""
    r = cli("duel", "leaderboard", "--db", db_url, "--json")
    assert r.code == 1 and r.out == ""
    store.close()


@pytest.mark.slow(reason="3.4 s (a real server) on 2 busy cores")
def test_the_page_and_its_downloads_of_an_altered_board_say_so(tmp_path, cfg, sub_dicts):
    pytest.importorskip("gradio")
    from tests.duel.test_duel_app_http import Browser, _port

    from modelseek.duel.app import build_app, launch

    url = f"sqlite:///{tmp_path / 'lb.db'}"
    store, _ = _altered_board(url, cfg, sub_dicts)
    store.check_every = 0
    demo = build_app(store)
    port = _port()
    launch(demo, "127.0.0.1", port, prevent_thread_lock=True, quiet=True)
    try:
        page = Browser(f"http://127.0.0.1:{port}", demo)
        out = page.call("first_open", ["overall", ""])
        table = out[0]["value"]
        assert table["headers"] == ["warning"] and "the leaderboard was altered" in table["data"][0][0]
        assert "**Warning:** the leaderboard was altered" in out[4]
        csv_file, json_file = (Path(f["path"]) for f in out[2:4])
        assert csv_file.read_text().splitlines()[0] == "warning"
        assert "the leaderboard was altered" in csv_file.read_text()
        rows = json.loads(json_file.read_text())
        assert list(rows[0]) == ["warning"] and "chain row" in rows[0]["warning"]
    finally:
        demo.close()
        store.close()


def test_db_verify_runs_the_engines_check_and_refuses_a_missing_path(tmp_path, cfg, sub_dicts, cli):
    missing = tmp_path / f"{uuid.uuid4().hex}.db"
    r = cli("duel", "db", "verify", "--db", str(missing))
    assert r.code == 1 and "no such database file" in r.err and not missing.exists()
    path = tmp_path / "lb.db"
    store = Store(path, config=cfg)
    store.publish_many([store._load(_b(d), "<x>") for d in sub_dicts[:3]])
    store.close()
    r = cli("duel", "db", "verify", "--db", str(path))
    assert r.code == 0 and "ok: 3 published models" in r.out
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    with open(path, "r+b") as f:                        # a b-tree page header overwritten: a malformed file
        f.seek(4096)
        f.write(b"\x0d\x00\x00\xff\xff\x00")
    r = cli("duel", "db", "verify", "--db", str(path))
    assert r.code == 1 and "SQLite's integrity check" in r.err and "malformed" in r.err


def test_db_verify_runs_postgresqls_amcheck_where_installed(pg_server, cfg, sub_dicts):
    """With the amcheck extension installed (as the owner), every B-tree index of the board is checked; intact here
    (what a damaged index reports is amcheck's own line)."""
    from modelseek.duel.database import open_engine, storage_check

    url = pg_server.url(f"a_{uuid.uuid4().hex[:10]}")
    store = Store(url, config=cfg)
    store.publish_many([store._load(_b(d), "<x>") for d in sub_dicts[:2]])
    store.close()
    _sql(url, ["CREATE EXTENSION IF NOT EXISTS amcheck"])
    engine = open_engine(store.url)
    try:
        assert storage_check(engine) == []
        _sql(url, ["ALTER EXTENSION amcheck DROP FUNCTION bt_index_check(regclass)",   # a stand-in that fails
                   "DROP FUNCTION bt_index_check(regclass)",
                   "CREATE FUNCTION bt_index_check(regclass) RETURNS void AS $$ BEGIN RAISE EXCEPTION "
                   "'index is corrupt (test)'; END; $$ LANGUAGE plpgsql"])
        found = storage_check(engine)
        assert found and all(p.startswith("PostgreSQL's amcheck: index ") for p in found)
        assert any("index is corrupt (test)" in p for p in found)
    finally:
        engine.dispose()


def test_the_review_queue_refuses_an_edited_queued_preview(tmp_path, cfg, sub_dicts):
    from modelseek.duel.reference import Reference
    from modelseek.duel.storage import create_board
    from modelseek.duel.submission import validate_submission

    url = f"sqlite:///{tmp_path / 'r.db'}"
    store = create_board(url, cfg, Reference.from_submission(validate_submission(sub_dicts[0], cfg)), review=True)
    store.check_every = 0
    pv = store.presubmit(_b(sub_dicts[1]))
    store.confirm(pv.token)
    assert [q["model"] for q in store.review_queue()] == ["model-01"]
    _sql(url, ["CREATE TABLE saved AS SELECT * FROM pending_profiles", "DELETE FROM pending_profiles",
               "INSERT INTO pending_profiles (pending_id, task, n, raw, blob, seal) "
               "SELECT pending_id, task, n, 0.999, blob, seal FROM saved", "DROP TABLE saved"])
    with pytest.raises(BoardAltered, match="pending profile of pending submission id"):
        store.review_queue()
    with pytest.raises(InputError, match="this preview was altered"):
        store.approve(pv.model, "carol")
    store.close()
