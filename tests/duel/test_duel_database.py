"""The leaderboard database on SQLite and a real PostgreSQL server: migrations applied once, published data
immutable by the database itself, concurrent clients on fresh and existing databases (0 errors, 0 lost,
0 duplicated, the board equal to an offline tournament)."""

import json
import sqlite3
import threading

import pandas as pd
import pytest

from modelseek.duel.engine import Settings
from modelseek.duel.schema import SCHEMA_VERSION
from modelseek.duel.database import upgrade_database
from modelseek.duel.storage import Store
from modelseek.duel.submission import validate_submission
from modelseek.duel.tournament import tournament
from modelseek.core.errors import InputError
from modelseek.testing.duel import make_submission_dicts, publish_like_a_user

sa = pytest.importorskip("sqlalchemy")
pytest.importorskip("alembic")


@pytest.fixture(scope="module")
def many(cfg):
    return make_submission_dicts(cfg, n_models=7, n_samples=40, seed=5)


def _b(d) -> bytes:
    return json.dumps(d).encode()


def _clients(url, cfg, uploads: list[dict]):
    """One thread per upload, each with its own Store (its own engine and connections, as another server
    process would have): open, pre-submit, confirm. Returns (published models, refusals, errors)."""
    published, refused, errors = [], [], []
    lock = threading.Lock()
    start = threading.Barrier(len(uploads))

    def client(d):
        try:
            start.wait()
            store = Store(url, config=cfg)
            try:
                model, _ = publish_like_a_user(store, _b(d))
            finally:
                store.close()
            with lock:
                published.append(model)
        except InputError as exc:      # an expected refusal (a model name published twice)
            with lock:
                refused.append(str(exc))
        except Exception as exc:  # pragma: no cover - reported by the assertion
            with lock:
                errors.append(repr(exc))

    threads = [threading.Thread(target=client, args=(d,)) for d in uploads]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return published, refused, errors


@pytest.mark.slow(reason="5 s (setup and call) on 2 busy cores")
@pytest.mark.parametrize("existing", [False, True], ids=["fresh", "existing"])
def test_concurrent_clients_equal_offline_tournament(db_url, cfg, many, existing):
    uploads = list(many)
    if existing:                                   # two models published before the clients arrive
        seed = Store(db_url, config=cfg)
        seed.submit(_b(many[0]))
        seed.submit(_b(many[1]))
        seed.close()
        uploads = many[2:]
    uploads = uploads + [many[-1]]                 # the same model twice at once: published exactly once
    published, refused, errors = _clients(db_url, cfg, uploads)
    assert errors == []
    assert len(refused) == 1 and "already published" in refused[0]
    assert sorted(published) == sorted(d["metadata"]["model"] for d in uploads[:-1])
    store = Store(db_url)
    n, T = len(many), len(cfg.task_ids)
    counts = store.counts()
    assert counts["submissions"] == n                              # none lost, none duplicated
    assert counts["duels"] == T * n * (n - 1) and counts["profiles"] == T * n
    assert counts["pending"] <= 1 and counts["pending_duels"] <= T * (n - 1)   # the refused duplicate's, if any
    assert store.schema_version == SCHEMA_VERSION
    full = tournament([validate_submission(d, cfg) for d in many], cfg, Settings())
    assert store.scores() == full.scores                           # exactly, every pair dueled once
    pd.testing.assert_frame_equal(store.leaderboard("tasks"), full.table("tasks"))
    store.close()


@pytest.mark.slow(reason="4 s (setup and call) on 2 busy cores")
def test_concurrent_processes_on_a_fresh_sqlite_file(cli_subprocess, tmp_path, sub_files, meta_file):
    """Separate processes opening one new database at once: the schema is created once, all publish."""
    import concurrent.futures as cf

    db = tmp_path / "fresh.db"
    with cf.ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda f: cli_subprocess("duel", "presubmit", f, "--db", db, "--metadata",
                                                         meta_file, "--confirm", "--json"), sub_files[:2]))
    assert [r.code for r in results] == [0, 0], [r.err for r in results]
    assert Store(db).counts()["submissions"] == 2


# ------------------------------------------------------------------------------------------ immutability
SQLITE_TAMPER = [
    "UPDATE meta SET value = 'x'", "DELETE FROM meta", "INSERT OR REPLACE INTO meta VALUES ('config', '{}')",
    "UPDATE submissions SET model = 'other'", "DELETE FROM submissions",
    "INSERT OR REPLACE INTO submissions SELECT * FROM submissions",
    "REPLACE INTO submissions (id, model, token, sha256, created_at, published_at, metadata_json, payload) "
    "SELECT id + 1000, model, 'tok', sha256, created_at, published_at, metadata_json, payload FROM submissions",
    "UPDATE OR REPLACE submissions SET id = id + 1",
    "UPDATE profiles SET raw = 0", "DELETE FROM profiles", "INSERT OR REPLACE INTO profiles SELECT * FROM profiles",
    "UPDATE duels SET p_value = 0", "DELETE FROM duels", "REPLACE INTO duels SELECT task, a_id, b_id, 0.0 FROM duels",
]
POSTGRES_TAMPER = [
    "UPDATE meta SET value = 'x'", "DELETE FROM meta", "TRUNCATE meta",
    "INSERT INTO meta VALUES ('config', '{}') ON CONFLICT (key) DO UPDATE SET value = excluded.value",
    "UPDATE submissions SET model = 'other'", "DELETE FROM submissions", "TRUNCATE submissions CASCADE",
    "UPDATE profiles SET raw = 0", "DELETE FROM profiles", "TRUNCATE profiles",
    "UPDATE duels SET p_value = 0", "DELETE FROM duels", "TRUNCATE duels",
    "INSERT INTO duels SELECT task, a_id, b_id, 0.0 FROM duels ON CONFLICT (task, a_id, b_id) "
    "DO UPDATE SET p_value = 0.0",
]


@pytest.mark.slow(reason="6 s (setup and call) on 2 busy cores")
def test_every_tamper_statement_fails_in_the_database(db_url, cfg, sub_dicts):
    store = Store(db_url, config=cfg)
    for d in sub_dicts[:3]:
        store.submit(_b(d))
    pv = store.presubmit(_b(sub_dicts[3]))          # a pending one: still discardable
    before, scores = store.counts(), store.scores()
    sqlite = db_url.startswith("sqlite")
    for stmt in SQLITE_TAMPER if sqlite else POSTGRES_TAMPER:
        # the statements run on a plain driver connection: the database refuses them, not modelseek
        if sqlite:
            conn = sqlite3.connect(db_url.split(":///", 1)[1])
            with pytest.raises(sqlite3.DatabaseError, match="published data are immutable"):
                conn.execute(stmt)
        else:
            import psycopg

            conn = psycopg.connect(db_url.replace("postgresql://", "postgresql://", 1))
            with pytest.raises(psycopg.Error, match="published data are immutable"):
                conn.execute(stmt)
        conn.rollback()
        conn.close()
    assert store.counts() == before and store.scores() == scores
    store.discard(pv.token)
    assert store.counts()["pending"] == 0


# ------------------------------------------------------------------------------------------ migrations
def test_schema_migrated_once_and_versioned(cli, tmp_path, cfg):
    db = tmp_path / "lb.db"
    r = cli("duel", "db", "upgrade", "--db", db)
    assert r.code == 0 and f"schema {SCHEMA_VERSION} (was empty)" in r.out
    r = cli("duel", "db", "upgrade", "--db", db)
    assert r.code == 0 and "already up to date" in r.out
    assert upgrade_database(db) == (SCHEMA_VERSION, SCHEMA_VERSION)
    s = Store(db, config=cfg)
    assert (s.schema_before, s.schema_version) == (SCHEMA_VERSION, SCHEMA_VERSION)
    s.close()


def test_database_from_a_newer_modelseek_is_refused(tmp_path, cfg):
    db = tmp_path / "lb.db"
    Store(db, config=cfg).close()
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE alembic_version SET version_num = '9999'")
    with pytest.raises(InputError, match="newer than this modelseek"):
        Store(db)


# ------------------------------------------------------------------------------------------ bad --db (CLI)
@pytest.mark.parametrize("case", ["missing folder", "not a database", "unknown scheme", "folder"])
def test_bad_db_is_one_line(cli, tmp_path, sub_files, meta_file, case):
    db = {"missing folder": tmp_path / "nope" / "lb.db", "unknown scheme": "mysql://u@h/db",
          "folder": tmp_path}.get(case)
    if case == "not a database":
        db = tmp_path / "junk.db"
        db.write_bytes(b"this is not a database, just some bytes" * 100)
    r = cli("duel", "presubmit", sub_files[0], "--db", db, "--metadata", meta_file)
    assert r.code == 1 and len(r.err.strip().splitlines()) == 1, r.err
    assert {"missing folder": "does not exist", "not a database": "file is not a database",
            "unknown scheme": "unknown database URL scheme 'mysql'", "folder": "is a folder"}[case] in r.err
    r = cli("duel", "leaderboard", "--db", db)
    assert r.code == 1 and len(r.err.strip().splitlines()) == 1


def test_serve_refuses_to_start_on_a_bad_db(cli, tmp_path):
    r = cli("duel", "serve", "--db", tmp_path / "missing" / "lb.db", "--port", "7861")
    assert r.code == 1 and "does not exist" in r.err and len(r.err.strip().splitlines()) == 1
    r = cli("duel", "serve", "--db", tmp_path / "lb.db", "--port", "-1")
    assert r.code == 2 and "--port" in r.err and "-1" in r.err and "Traceback" not in r.err


@pytest.mark.parametrize("args, where", [
    (["--alpha", "5"], "--alpha"), (["--alpha", "nan"], "--alpha"), (["--alpha", "0"], "--alpha"),
    (["--draws", "0"], "--draws"), (["--resamples", "-3"], "--resamples"), (["--seed", "-1"], "--seed"),
])
def test_tournament_options_are_checked(cli, sub_files, meta_file, args, where):
    r = cli("duel", "tournament", *sub_files[:2], "--metadata", meta_file, *args)
    assert r.code == 2 and where in r.err and "Traceback" not in r.err


def test_api_rejects_meaningless_settings(cfg, sub_dicts):
    subs = [validate_submission(d, cfg) for d in sub_dicts[:2]]
    with pytest.raises(InputError, match="significance level"):
        tournament(subs, cfg, alpha=5)
    with pytest.raises(InputError, match="n_draws"):
        Settings(n_draws=0)


def test_runs_on_a_non_utf8_file(cli, tmp_path):
    bad = tmp_path / "bad.run"
    bad.write_bytes(b"q1 Q0 m1 1 0.9 r\nq1 Q0 m\xff 2 0.5 r\n")
    r = cli("duel", "runs", bad)
    assert r.code == 1 and f"{bad}:2: not UTF-8 text" in r.err and len(r.err.strip().splitlines()) == 1
