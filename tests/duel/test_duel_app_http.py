"""Issue #23 through a real server (Gradio on 127.0.0.1, spoken to over HTTP as a browser or an attacker
would): a reused Gradio session hash confirms nothing, a surrogate upload is refused, and ``duel serve``
starts on a database that already holds a row it cannot show as stored (and tells the operator)."""

import json
import socket
import sqlite3
import subprocess
import sys
import uuid

import pytest

from modelseek.duel.schema import TABLES_0001, immutability_ddl
from modelseek.duel.storage import Store

httpx = pytest.importorskip("httpx")
pytest.importorskip("gradio")


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Browser:
    """An HTTP client with its own cookie jar speaking Gradio's queue protocol."""

    def __init__(self, base: str, demo, session_hash: str | None = None, headers: dict | None = None) -> None:
        self.http = httpx.Client(base_url=base, timeout=120, headers=headers or {})
        self.http.get("/")                                     # the page: the server sets the session cookie
        self.session_hash = session_hash or uuid.uuid4().hex[:11]
        self.fns = {fn.name: (i, fn.targets[0][0]) for i, fn in demo.fns.items()}

    def upload(self, data: bytes, name: str = "sub.json") -> dict:
        r = self.http.post("/gradio_api/upload", files={"files": (name, data, "application/json")})
        assert r.status_code == 200, r.text
        return {"path": r.json()[0], "orig_name": name, "meta": {"_type": "gradio.FileData"}}

    def call(self, fn: str, data: list) -> list:
        index, trigger = self.fns[fn]
        r = self.http.post("/gradio_api/queue/join", json={"data": data, "event_data": None, "fn_index": index,
                                                            "trigger_id": trigger, "session_hash": self.session_hash})
        assert r.status_code == 200, r.text
        event = r.json()["event_id"]
        with self.http.stream("GET", f"/gradio_api/queue/data?session_hash={self.session_hash}") as stream:
            for line in stream.iter_lines():
                if not line.startswith("data:"):
                    continue
                msg = json.loads(line[5:])
                if msg.get("event_id") == event and msg.get("msg") == "process_completed":
                    assert msg.get("success"), msg
                    return msg["output"]["data"]
        raise AssertionError("no result")  # pragma: no cover


@pytest.fixture
def server(tmp_path, cfg, sub_dicts):
    from modelseek.duel.app import build_app, launch

    store = Store(tmp_path / "lb.db", config=cfg)
    store.submit(json.dumps(sub_dicts[0]).encode())
    demo = build_app(store)
    port = _port()
    launch(demo, "127.0.0.1", port, prevent_thread_lock=True, quiet=True)
    yield f"http://127.0.0.1:{port}", demo, store
    demo.close()
    store.close()


@pytest.mark.slow(reason="2 s (setup and call) on 2 busy cores")
def test_a_reused_session_hash_confirms_nothing(server, sub_dicts):
    base, demo, store = server
    victim = Browser(base, demo)
    file = victim.upload(json.dumps(sub_dicts[1]).encode())
    status = victim.call("presubmit", [file])[0]
    assert "Preview" in status
    attacker = Browser(base, demo, session_hash=victim.session_hash)   # the same Gradio session, its own cookie
    out = attacker.call("confirm", [None, "overall", None])
    assert "another browser session" in out[0] and "Published" not in out[0]
    assert [m for _, m in store.published()] == ["model-00"]
    out = victim.call("confirm", [None, "overall", None])
    assert out[0].startswith("**Published**") and "model-01" in out[0]
    assert out[1]["visible"] is False                     # no table titled "Preview" after publishing
    assert store.verify() == []


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
def test_identity_from_the_proxy_header_owns_the_presubmission(tmp_path, cfg, sub_dicts):
    from modelseek.duel.app import build_app, launch

    store = Store(tmp_path / "lb.db", config=cfg)
    demo = build_app(store, identity_header="X-Forwarded-User")
    port = _port()
    launch(demo, "127.0.0.1", port, prevent_thread_lock=True, quiet=True)
    base = f"http://127.0.0.1:{port}"
    try:
        anonymous = Browser(base, demo)
        status = anonymous.call("presubmit", [anonymous.upload(json.dumps(sub_dicts[0]).encode())])[0]
        assert "sign in" in status and store.counts()["pending"] == 0
        alice = Browser(base, demo, headers={"X-Forwarded-User": "alice"})
        assert "Preview" in alice.call("presubmit", [alice.upload(json.dumps(sub_dicts[0]).encode())])[0]
        mallory = Browser(base, demo, session_hash=alice.session_hash, headers={"X-Forwarded-User": "mallory"})
        mallory.http.cookies = alice.http.cookies                    # even with alice's cookie
        out = mallory.call("confirm", [None, "overall", None])
        assert "another signed\\-in user" in out[0] and store.published() == []
        assert alice.call("confirm", [None, "overall", None])[0].startswith("**Published**")
    finally:
        demo.close()
        store.close()


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
def test_two_browsers_uploading_identical_bytes_both_presubmit(server, sub_dicts):
    base, demo, store = server
    data = json.dumps(sub_dicts[2]).encode()
    a, b = Browser(base, demo), Browser(base, demo)
    fa, fb = a.upload(data), b.upload(data)
    assert fa["path"] == fb["path"]                       # Gradio stores identical bytes once
    assert "Preview" in a.call("presubmit", [fa])[0]
    assert "Preview" in b.call("presubmit", [fb])[0]
    assert store.counts()["pending"] == 2


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
def test_surrogate_upload_is_refused(server, sub_dicts):
    base, demo, store = server
    text = json.dumps(sub_dicts[1]).replace('"precision": "bf16"', '"precision": "bf16", "team": "\\udc80"')
    browser = Browser(base, demo)
    status = browser.call("presubmit", [browser.upload(text.encode())])[0]
    assert status.startswith("**Error:**") and "surrogate" in status
    assert store.counts()["pending"] == 0


def _legacy_database_with_unrenderable_rows(path, cfg, sub_dicts):
    """A database as an older modelseek left it (schema 0001, no chain) whose published rows hold what this
    version refuses at upload: a lone surrogate in the metadata, a bidi override in a model name."""
    store = Store(path, config=cfg)
    for d in sub_dicts[:3]:
        store.submit(json.dumps(d).encode())
    store.close()
    conn = sqlite3.connect(path)
    for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
        conn.execute(f"DROP TRIGGER {name}")
    conn.execute("DROP TABLE chain")
    conn.execute("DROP TABLE task_ids")
    conn.execute("UPDATE alembic_version SET version_num = '0001'")
    conn.execute("""UPDATE submissions SET metadata_json = '{"model": "model-00", "team": "\\udc80"}' WHERE id = 1""")
    conn.execute("UPDATE submissions SET model = 'evil\u202etxt.exe' WHERE id = 2")
    for stmt in immutability_ddl("sqlite", TABLES_0001):
        conn.execute(stmt)
    conn.commit()
    conn.close()


@pytest.mark.slow(reason="7 s (setup and call) on 2 busy cores")
def test_serve_starts_on_a_database_holding_an_unrenderable_row(tmp_path, cfg, sub_dicts, meta_file):
    db = tmp_path / "legacy.db"
    _legacy_database_with_unrenderable_rows(db, cfg, sub_dicts)
    port = _port()
    proc = subprocess.Popen([sys.executable, "-m", "modelseek", "duel", "serve", "--db", str(db), "--port",
                             str(port), "--metadata", str(meta_file)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    import threading

    guard = threading.Timer(300, proc.kill)               # never hang the suite if the server does not start
    guard.start()
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line)
            if "serving the leaderboard" in line or len(lines) > 200:
                break
        out = "".join(lines)
        assert f"serving the leaderboard on http://127.0.0.1:{port}/" in out, out
        assert "submission 1" in out and "metadata cannot be shown" in out          # the operator is told
        assert "submission 2" in out and "not printable" in out
        assert "share=True" not in out and "Traceback" not in out
        page = httpx.get(f"http://127.0.0.1:{port}/", timeout=60)
        assert page.status_code == 200
        from modelseek.duel.app import LeaderboardApp

        store = Store(db)
        details, meta = LeaderboardApp(store, uploads=tmp_path).duels("model-00")
        assert meta["team"] == "\\udc80" and json.dumps(meta, ensure_ascii=False).encode("utf-8")
        assert store.verify() == []                          # migrated: the old rows are chained as they are
        store.close()
    finally:
        guard.cancel()
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:  # pragma: no cover
            proc.kill()
