"""Issue #23 through a real server (Gradio on 127.0.0.1, spoken to over HTTP as a browser or an attacker
would): a reused Gradio session hash confirms nothing, a surrogate upload is refused, and ``duel serve``
starts on a database that already holds a row it cannot show as stored (and tells the operator)."""

import json
import time
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


def _stop(proc, guard) -> None:
    """End a server started by a test: its watchdog first, then the process (killed if it does not stop)."""
    guard.cancel()
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:  # pragma: no cover
        proc.kill()


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
    out = attacker.call("confirm", [None, "overall", "", None])
    assert "another browser session" in out[0] and "Published" not in out[0]
    assert [m for _, m in store.published()] == ["model-00"]
    out = victim.call("confirm", [None, "overall", "", None])
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
        out = mallory.call("confirm", [None, "overall", "", None])
        assert "another signed\\-in user" in out[0] and store.published() == []
        assert alice.call("confirm", [None, "overall", "", None])[0].startswith("**Published**")
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
    version refuses at upload: a lone surrogate in the metadata, a bidi override in a model name (a demo board:
    ``duel serve`` refuses a board without the operator's reference otherwise)."""
    store = Store(path, config=cfg, demo=True)
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
        _stop(proc, guard)


# ---------------------------------------------------------------------------------------- issue #35: identity
def test_a_client_chosen_session_cookie_is_replaced_and_confirms_nothing(server, sub_dicts):
    from modelseek.duel.app import COOKIE

    base, demo, store = server
    chosen = "A" * 43 + "." + "0" * 32                    # the shape of a real one, not signed by this server
    page = httpx.get(f"{base}/", headers={"Cookie": f"{COOKIE}={chosen}"}, timeout=60)
    issued = page.headers["set-cookie"]
    assert issued.startswith(f"{COOKIE}=") and chosen not in issued
    assert "HttpOnly" in issued and "SameSite=Lax" in issued
    # a victim fixated on the chosen value (its client even ignores Set-Cookie) pre-submits ...
    victim = Browser(base, demo, headers={"Cookie": f"{COOKIE}={chosen}"})
    victim.http.cookies.clear()
    assert "Preview" in victim.call("presubmit", [victim.upload(json.dumps(sub_dicts[3]).encode())])[0]
    # ... and the attacker who chose the value, in the victim's Gradio session, cannot confirm it
    attacker = Browser(base, demo, session_hash=victim.session_hash, headers={"Cookie": f"{COOKIE}={chosen}"})
    attacker.http.cookies.clear()
    out = attacker.call("confirm", [None, "overall", "", None])
    assert "another browser session" in out[0] and [m for _, m in store.published()] == ["model-00"]


def _quota_server(tmp_path, cfg, sub_dicts, trusted):
    from modelseek.duel.app import build_app, launch
    from modelseek.duel.publish import _payload
    from modelseek.duel.submission import validate_submission

    store = Store(tmp_path / "lb.db", config=cfg)
    size = _payload(validate_submission(sub_dicts[0], cfg))[2]
    store.max_daily_bytes = int(size * 1.5)              # one submission per uploader per day
    demo = build_app(store)
    port = _port()
    launch(demo, "127.0.0.1", port, prevent_thread_lock=True, quiet=True, trusted_proxies=trusted)
    return f"http://127.0.0.1:{port}", demo, store


@pytest.mark.parametrize("trusted", [(), ("127.0.0.1",)])
def test_forwarded_headers_count_only_from_a_trusted_proxy(tmp_path, cfg, sub_dicts, trusted):
    base, demo, store = _quota_server(tmp_path, cfg, sub_dicts, trusted)
    try:
        first = Browser(base, demo)
        assert "Preview" in first.call("presubmit", [first.upload(json.dumps(sub_dicts[0]).encode())])[0]
        statuses = []
        for k in range(1, 7):                              # the issue's six uploads from "other" clients
            b = Browser(base, demo, headers={"X-Forwarded-For": f"10.0.0.{k}"})
            r = b.http.post("/gradio_api/upload", files={"files": ("s.json", json.dumps(sub_dicts[k % 5]).encode(),
                                                                   "application/json")})
            if r.status_code == 429:                       # the quota is spent: the body is refused unread
                statuses.append(r.text)
                continue
            up = {"path": r.json()[0], "orig_name": "s.json", "meta": {"_type": "gradio.FileData"}}
            statuses.append(b.call("presubmit", [up])[0])
        if trusted:     # behind the trusted proxy each forwarded client has its own quota
            assert all("Preview" in s for s in statuses), statuses
            assert store.counts()["pending"] == 7
        else:           # a client-supplied header changes nothing: one client, over its quota
            assert all("daily storage limit" in s or "daily upload limit" in s for s in statuses), statuses
            assert store.counts()["pending"] == 1
    finally:
        demo.close()
        store.close()


def test_session_signature_is_checked():
    from modelseek.duel.app import sign_session, valid_session

    secret = b"k" * 32
    good = sign_session(secret, "t" * 43)
    assert valid_session(secret, good)
    assert not valid_session(b"j" * 32, good)                      # another server's
    assert not valid_session(secret, good[:-1] + ("0" if good[-1] != "0" else "1"))
    assert not valid_session(secret, "x" * 60) and not valid_session(secret, None)


def test_review_board_over_http_awaiting_then_reviewed(tmp_path, cfg, sub_dicts):
    from modelseek.duel.app import LeaderboardApp, build_app, launch
    from modelseek.duel.reference import Reference
    from modelseek.duel.storage import create_board
    from modelseek.duel.submission import validate_submission

    store = create_board(tmp_path / "rv.db", cfg, Reference.from_submission(validate_submission(sub_dicts[0], cfg)),
                         review=True)
    demo = build_app(store)
    port = _port()
    launch(demo, "127.0.0.1", port, prevent_thread_lock=True, quiet=True)
    try:
        b = Browser(f"http://127.0.0.1:{port}", demo)
        assert "Preview" in b.call("presubmit", [b.upload(json.dumps(sub_dicts[1]).encode())])[0]
        out = b.call("confirm", [None, "overall", "", None])
        assert out[0].startswith("**Awaiting review:**") and store.published() == []
        assert "1 confirmed submission(s) await the operator's review" in out[4]       # the board's note
        store.approve("model-01", "carol")
        board = LeaderboardApp(store, uploads=tmp_path).board()
        assert board.loc[0, "model"] == "model-01" and board.loc[0, "reviewed"].startswith("carol, ")
        assert list(board.columns[:7]) == ["rank", "model", "type", "params", "precision", "link", "reviewed"]
    finally:
        demo.close()
        store.close()


def test_provenance_table_has_human_dates():
    from modelseek.duel.app import provenance_table

    t = provenance_table({"model": "m", "date": 1764000000.0, "start_time": 1234.5, "end_time": 1764000100.0,
                          "total_evaluation_time_seconds": 600.0, "n_params": 7.2e9,
                          "config": {"batch_size": 8}, "_published": "2025-11-24 16:00:00 UTC"})
    rows = dict(zip(t["field"], t["value"]))
    assert rows["date"] == "2025-11-24 16:00:00 UTC" and rows["end_time"] == "2025-11-24 16:01:40 UTC"
    assert rows["start_time"] == "1234.5 s on the evaluation's process clock"
    assert rows["total_evaluation_time_seconds"] == "600 s (10.0 min)" and rows["n_params"] == "7.2B"
    assert rows["config"] == '{"batch_size": 8}' and rows["published"] == "2025-11-24 16:00:00 UTC"


def test_forwarded_and_identity_headers_only_through_a_trusted_proxy():
    """The ASGI layer itself: behind the trusted proxy the client is the forwarded one and the identity header
    is kept; from any other address both are removed and the client is the address that connected."""
    import asyncio

    from modelseek.duel.app import SessionCookie

    seen = []

    async def app(scope, receive, send):
        seen.append(scope)

    mw = SessionCookie(app, secret=b"s" * 32, trusted=("10.0.0.1",), identity_header="X-Forwarded-User")
    headers = [(b"x-forwarded-for", b"6.6.6.6, 203.0.113.7"), (b"x-forwarded-user", b"alice")]
    for peer in ("10.0.0.1", "198.51.100.2"):
        asyncio.run(mw({"type": "http", "client": (peer, 5555), "headers": list(headers)}, None, None))
    via_proxy, direct = seen
    assert via_proxy["client"][0] == "203.0.113.7" and (b"x-forwarded-user", b"alice") in via_proxy["headers"]
    assert direct["client"] == ("198.51.100.2", 5555)
    assert not [k for k, _ in direct["headers"] if k in (b"x-forwarded-for", b"x-forwarded-user")]


@pytest.mark.slow(reason="starts the web server in a subprocess (about 5 s)")
def test_duel_serve_on_a_board_with_a_reference_issues_signed_cookies(tmp_path, cfg, sub_dicts, meta_file):
    import re
    import threading

    ref = tmp_path / "ref.json"
    ref.write_text(json.dumps(sub_dicts[0]), encoding="utf-8")
    db = tmp_path / "board.db"
    init = subprocess.run([sys.executable, "-m", "modelseek", "duel", "db", "init", "--db", str(db), "--metadata",
                           str(meta_file), "--reference", str(ref)], capture_output=True, text=True, timeout=300)
    assert init.returncode == 0, init.stderr
    port = _port()
    proc = subprocess.Popen([sys.executable, "-m", "modelseek", "duel", "serve", "--db", str(db), "--port", str(port),
                             "--trusted-proxy", "10.0.0.1"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    guard = threading.Timer(300, proc.kill)
    guard.start()
    try:
        for line in proc.stdout:
            if "serving the leaderboard" in line:
                break
        page = httpx.get(f"http://127.0.0.1:{port}/", timeout=60,
                         headers={"X-Forwarded-For": "10.9.9.9", "Cookie": "modelseek_session=" + "x" * 40})
        assert page.status_code == 200
        assert re.match(r"modelseek_session=[A-Za-z0-9_-]{43}\.[0-9a-f]{32}; Path=/; HttpOnly; SameSite=Lax",
                        page.headers["set-cookie"])
    finally:
        _stop(proc, guard)


@pytest.mark.slow(reason="2 s: waits out the stall timeout in the quick loop on 2 busy cores")
def test_a_stalled_upload_is_dropped_and_its_bytes_freed(tmp_path, cfg, sub_dicts):
    """Issue #44: an upload whose bytes stop arriving is dropped after the stall time-out and its partial file
    deleted (10 stalled 60 MB uploads held 576 MB with no time-out)."""
    import socket
    import time

    from modelseek.duel.app import build_app, launch, upload_root
    from modelseek.duel.storage import Store

    store = Store(tmp_path / "st.db", config=cfg)
    store.submit(json.dumps(sub_dicts[0]).encode())
    demo = build_app(store)
    port = _port()
    launch(demo, "127.0.0.1", port, prevent_thread_lock=True, quiet=True, upload_stall=1.5)
    root = upload_root()
    try:
        before = set(root.glob("tmp*")) if root.is_dir() else set()
        boundary = "----stall44"
        head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"big.json\"\r\n"
                "Content-Type: application/json\r\n\r\n").encode()
        chunk = b"[" + b"0," * 1_000_000                  # 2 MB sent, 50 MB announced, then nothing
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall((f"POST /gradio_api/upload HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                      f"Content-Type: multipart/form-data; boundary={boundary}\r\n"
                      f"Content-Length: {50_000_000}\r\n\r\n").encode() + head + chunk)
        partial = []
        for _ in range(40):                               # the partial file appears while bytes arrive
            partial = [p for p in root.glob("tmp*") if p not in before and p.stat().st_size > 1_000_000]
            if partial:
                break
            time.sleep(0.05)
        assert partial, "no partial upload file seen"
        t0 = time.perf_counter()
        sock.settimeout(20)
        reply = sock.recv(65536)                          # the server answers (or closes) once the upload stalls
        waited = time.perf_counter() - t0
        sock.close()
        assert waited < 10, waited
        assert reply == b"" or reply.startswith(b"HTTP/1.1"), reply[:80]
        for _ in range(40):
            if not any(p.exists() for p in partial):
                break
            time.sleep(0.05)
        assert not any(p.exists() for p in partial)       # its bytes are freed
    finally:
        demo.close()
        store.close()


# ------------------------------------------------------------------------------ issue #44: the operator's page
HOSTILE = "<b>bold</b> <img src=x onerror=alert(1)> `tick` ' \" &amp;"


def _review_server(tmp_path, cfg, sub_dicts, trusted=("127.0.0.1",)):
    """A review board served behind a "proxy" at 127.0.0.1 (the tests' own address) naming users in
    X-Forwarded-User; carol is the operator. Alice has queued model-01 and mallory a hostile name, both under team
    OpenAI; bob a copy of the published model-00."""
    from modelseek.duel.app import build_app, launch
    from modelseek.duel.reference import Reference
    from modelseek.duel.storage import create_board
    from modelseek.duel.submission import validate_submission

    store = create_board(tmp_path / "rv.db", cfg, Reference.from_submission(validate_submission(sub_dicts[0], cfg)),
                         review=True)
    store.submit(json.dumps(sub_dicts[0]).encode())
    store.approve("model-00", "carol")
    tokens = {}
    def named(d, model, team=None):
        return {**d, "metadata": {**d["metadata"], "model": model, **({"team": team} if team else {})}}

    for who, d in (("alice", named(sub_dicts[1], "model-01", "OpenAI")), ("mallory", named(sub_dicts[2], HOSTILE,
                                                                                         "OpenAI")),
                   ("bob", named(sub_dicts[0], "copycat"))):              # model-00's predictions: a copy
        pv = store.presubmit(json.dumps(d).encode(), session=who * 40, identity=who)
        store.confirm(pv.token, session=who * 40, identity=who)
        tokens[who] = pv.token
    demo = build_app(store, identity_header="X-Forwarded-User", operators=("carol",))
    port = _port()
    launch(demo, "127.0.0.1", port, prevent_thread_lock=True, quiet=True, trusted_proxies=trusted)
    return f"http://127.0.0.1:{port}", demo, store, tokens


def _csrf(page: str) -> str:
    import re

    return re.search(r"name='csrf' value='([0-9a-f]{64})'", page).group(1)


@pytest.mark.slow(reason="starts a server, several requests (about 3 s)")
def test_the_review_page_is_absent_for_uploaders_and_decides_for_the_operator(tmp_path, cfg, sub_dicts):
    base, demo, store, tokens = _review_server(tmp_path, cfg, sub_dicts)
    try:
        ids = {q["identity"]: q["id"] for q in store.review_queue()}
        absent = httpx.get(f"{base}/no-such-page", timeout=60)
        # an uploader (signed in), an anonymous client: /review is a path the server does not have
        for headers in ({"X-Forwarded-User": "mallory"}, {"X-Forwarded-User": "alice"}, {},
                        {"X-Forwarded-User": "Carol"}, {"X-Forwarded-User": "carol2"}):
            client = httpx.Client(base_url=base, timeout=60, headers=headers)
            client.get("/")
            page = client.get("/review")
            assert (page.status_code, page.content) == (absent.status_code, absent.content) == (404, page.content)
            assert {k: v for k, v in page.headers.items() if k not in ("date", "set-cookie")} == \
                {k: v for k, v in absent.headers.items() if k not in ("date", "set-cookie")}
            assert "model-01" not in page.text and "alice" not in page.text
            for action in ("approve", "reject", "withdraw"):
                r = client.post("/review", data={"action": action, "id": str(ids["alice"]), "why": "x",
                                                 "csrf": "0" * 64})
                assert r.status_code == 404, r.status_code
            assert client.post("/review/", data={"action": "approve", "id": "1"}).status_code == 404
        assert [m for _, m in store.published()] == ["model-00"] and len(store.review_queue()) == 3
        # the app registers no review function an uploader could call through Gradio's API
        assert not any(n in fn.name for fn in demo.fns.values() for n in ("approve", "reject", "withdraw", "review"))
        # the operator: the queue with ids, uploaders, metrics and flags; every field escaped
        carol = httpx.Client(base_url=base, timeout=120, headers={"X-Forwarded-User": "carol"})
        carol.get("/")
        page = carol.get("/review")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert "script-src" not in page.headers["content-security-policy"]       # default-src 'none': no script
        text = page.text
        assert f"<td>{ids['alice']}</td><td class='model'>model-01</td>" in text and "alice" in text
        assert "task_acc" in text and "Signed in as <b>carol</b>" in text
        assert "near-copy of the published &#x27;model-00&#x27;" in text                  # the flags
        assert text.count("team &#x27;OpenAI&#x27; is claimed by 2 identities") == 2
        assert "<b>bold" not in text and "<img" not in text and "&lt;b&gt;bold&lt;/b&gt;" in text
        assert "&#x27; &quot; &amp;amp;" in text
        # a decision without the page's token (another site posting through carol's browser) does nothing
        for forged in ({}, {"csrf": "é" * 64}, {"csrf": "0" * 64}):
            r = carol.post("/review", data={"action": "approve", "id": str(ids["alice"]), **forged})
            assert r.status_code == 403 and store.published()[-1][1] == "model-00"
        other = httpx.Client(base_url=base, timeout=60, headers={"X-Forwarded-User": "carol"})
        other.get("/")
        r = other.post("/review", data={"action": "approve", "id": str(ids["alice"]), "csrf": _csrf(text)})
        assert r.status_code == 403                                    # a token of another session
        # approve by id: published, reviewed by the signed-in operator
        r = carol.post("/review", data={"action": "approve", "id": str(ids["alice"]), "why": "checked the logs",
                                        "csrf": _csrf(text)})
        assert r.status_code == 303 and r.headers["location"] == "review"
        assert [m for _, m in store.published()] == ["model-00", "model-01"]
        v = store.verdict(tokens["alice"])
        assert (v["status"], v["by"], v["why"]) == ("approved", "carol", "checked the logs")
        page = carol.get("/review").text
        assert "Approved and published &#x27;model-01&#x27;" in page
        # reject needs a reason, which the uploader reads
        carol.post("/review", data={"action": "reject", "id": str(ids["mallory"]), "why": " ", "csrf": _csrf(page)})
        page = carol.get("/review").text
        assert "Error: field &#x27;why&#x27;: say why" in page and len(store.review_queue()) == 2
        carol.post("/review", data={"action": "reject", "id": str(ids["mallory"]), "why": "<i>fabricated</i>",
                                    "csrf": _csrf(page)})
        v = store.verdict(tokens["mallory"])
        assert (v["status"], v["why"], v["by"]) == ("rejected", "<i>fabricated</i>", "carol")
        # withdraw a published entry by id, with a reason: chained, the board recomputed
        sid = dict((m, i) for i, m in store.published())["model-00"]
        page = carol.get("/review").text
        carol.post("/review", data={"action": "withdraw", "id": str(sid), "why": "squatted", "csrf": _csrf(page)})
        assert store.leaderboard()["model"].tolist() == ["model-01"] and store.withdrawn()[0]["by"] == "carol"
        page = carol.get("/review").text
        assert "Withdrew &#x27;model-00&#x27;" in page and "squatted" in page and store.verify() == []
        r = carol.post("/review", data={"action": "approve", "id": "999", "csrf": _csrf(page)})
        assert r.status_code == 303 and "no submission with id 999 awaits review" in carol.get("/review").text
    finally:
        demo.close()
        store.close()


def test_the_review_page_honours_operators_only_through_the_trusted_proxy(tmp_path, cfg, sub_dicts):
    """The ASGI layers alone: "carol" in the identity header from an address that is not the trusted proxy is
    removed before the review page sees it (404); through the proxy the page is served."""
    import asyncio

    from modelseek.duel.app import SessionCookie
    from modelseek.duel.review_page import ReviewPage

    store = Store(tmp_path / "p.db", config=cfg)
    store.submit(json.dumps(sub_dicts[0]).encode())
    reached = []

    async def gradio(scope, receive, send):
        reached.append(scope["path"])

    secret = b"s" * 32
    page = ReviewPage(gradio, store, secret, "X-Forwarded-User", ("carol",))
    mw = SessionCookie(page, secret=secret, trusted=("10.0.0.1",), identity_header="X-Forwarded-User")

    def get(peer, path="/review"):
        sent = []

        async def send(message):
            sent.append(message)

        async def receive():
            return {"type": "http.request", "body": b"", "more_body": False}

        scope = {"type": "http", "method": "GET", "path": path, "client": (peer, 1234),
                 "headers": [(b"x-forwarded-user", b"carol")]}
        asyncio.run(mw(scope, receive, send))
        return sent

    assert get("198.51.100.2") == [] and reached == ["/review"]        # not the operator: on to the app
    ok = get("10.0.0.1")
    assert ok[0]["status"] == 200 and b"model-00" in ok[1]["body"]
    assert get("10.0.0.1", "/") == [] and reached == ["/review", "/"]  # everything else goes to the app
    with pytest.raises(Exception, match="identity header"):
        from modelseek.duel.app import LeaderboardApp

        LeaderboardApp(store, uploads=tmp_path, operators=("carol",))
    store.close()


def test_serve_refuses_an_operator_without_the_proxy(tmp_path, cfg, sub_dicts, meta_file, cli):
    ref = tmp_path / "ref.json"
    ref.write_text(json.dumps(sub_dicts[0]), encoding="utf-8")
    db = tmp_path / "board.db"
    assert cli("duel", "db", "init", "--db", str(db), "--metadata", str(meta_file), "--reference", str(ref)).code == 0
    r = cli("duel", "serve", "--db", str(db), "--operator", "carol", "--identity-header", "X-Forwarded-User")
    assert r.code != 0 and "--trusted-proxy" in r.err and "Traceback" not in r.err and len(r.err.splitlines()) == 1


@pytest.mark.slow(reason="starts the web server in a subprocess (about 5 s)")
def test_duel_serve_with_an_operator_serves_the_review_page_to_them_only(tmp_path, cfg, sub_dicts, meta_file):
    import threading

    ref = tmp_path / "ref.json"
    ref.write_text(json.dumps(sub_dicts[0]), encoding="utf-8")
    db = tmp_path / "board.db"
    init = subprocess.run([sys.executable, "-m", "modelseek", "duel", "db", "init", "--db", str(db), "--metadata",
                           str(meta_file), "--reference", str(ref), "--review"], capture_output=True, text=True,
                          timeout=300)
    assert init.returncode == 0, init.stderr
    store = Store(db)
    pv = store.presubmit(json.dumps(sub_dicts[1]).encode(), session="a" * 40, identity="alice")
    store.confirm(pv.token, session="a" * 40, identity="alice")
    store.close()
    port = _port()
    proc = subprocess.Popen([sys.executable, "-m", "modelseek", "duel", "serve", "--db", str(db), "--port", str(port),
                             "--identity-header", "X-Forwarded-User", "--trusted-proxy", "127.0.0.1",
                             "--operator", "carol", "--operator", "dave"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    guard = threading.Timer(300, proc.kill)
    guard.start()
    try:
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if "serving the leaderboard" in line or len(lines) > 200:
                break
        assert f"the review page: http://127.0.0.1:{port}/review for carol, dave" in "".join(lines), lines
        for who, status in (("alice", 404), ("carol", 200), ("dave", 200)):
            client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60,
                                  headers={"X-Forwarded-User": who})
            client.get("/")
            page = client.get("/review")
            assert page.status_code == status and ("model-01" in page.text) == (status == 200)
    finally:
        _stop(proc, guard)


def _raw_upload(port: int, boundary: str, announced: int):
    """A raw socket that has sent the headers of a multipart upload of ``announced`` bytes and its part header."""
    import socket

    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"slow.json\"\r\n"
            "Content-Type: application/json\r\n\r\n").encode()
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall((f"POST /gradio_api/upload HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                  f"Content-Type: multipart/form-data; boundary={boundary}\r\n"
                  f"Content-Length: {announced}\r\n\r\n").encode() + head)
    return sock, len(head)


@pytest.mark.slow(reason="2.4 s (a real server, a 1.5 s deadline) on 2 busy cores")
def test_a_trickled_upload_is_dropped_by_its_deadline_and_its_bytes_charged(tmp_path, cfg, sub_dicts, caplog):
    """Issue #53: 1 KB now and then, each within the stall limit, never ended (300 such uploads held 600 MB). The
    deadline drops it with a 408 and one log line (no HTTP 500, no traceback), its partial file is deleted, every
    byte the server received is charged, and with the quota spent the next body is refused unread (429)."""
    import logging

    from modelseek.duel.app import build_app, launch, upload_root

    store = Store(tmp_path / "tr.db", config=cfg)
    store.max_daily_bytes = 4096
    demo = build_app(store)
    port = _port()
    launch(demo, "127.0.0.1", port, prevent_thread_lock=True, quiet=True, upload_stall=2.0, upload_deadline=1.5)
    root = upload_root()
    before = set(root.glob("tmp*")) if root.is_dir() else set()
    caplog.set_level(logging.WARNING)
    try:
        sock, sent = _raw_upload(port, "----trickle53", 50_000_000)
        sock.settimeout(0.25)                             # a chunk every 0.25 s: far within the stall limit
        reply = b""
        for _ in range(400):                              # (a bound: the deadline ends it long before)
            try:
                sock.sendall(b"0," * 512)
                sent += 1024
            except OSError:
                break
            try:
                reply = sock.recv(65536)
            except TimeoutError:
                continue
            break
        sock.settimeout(10)
        while reply and not reply.endswith(b"received)\n"):  # the rest of the answer (the server closes after)
            more = sock.recv(65536)
            if not more:
                break
            reply += more
        sock.close()
        assert reply.startswith(b"HTTP/1.1 408") and b"past its deadline" in reply, reply[:200]
        for _ in range(100):      # the server logs after its answer is on the wire: wait for the line (bounded)
            dropped = [r for r in caplog.records if "dropped a /gradio_api/upload upload" in r.getMessage()]
            if dropped and not [p for p in root.glob("tmp*") if p not in before]:
                break
            time.sleep(0.05)
        assert len(dropped) == 1 and "past its deadline" in dropped[0].getMessage()
        assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
        assert not [p for p in root.glob("tmp*") if p not in before]      # its partial file is gone
        charged = store.received_today("ip:127.0.0.1")
        assert 1024 < charged <= sent                     # what the server received, refused or not
        assert charged > store.max_daily_bytes
        r = httpx.post(f"http://127.0.0.1:{port}/gradio_api/upload", files={"files": ("s.json", b"{}")})
        assert r.status_code == 429 and "daily upload limit" in r.text
    finally:
        demo.close()
        store.close()


def test_the_taken_name_check_does_not_depend_on_key_order(tmp_path, cfg, sub_dicts):
    """Issue #53: "metadata" last was parsed whole before the taken name was refused; it is found wherever it
    stands (the peek never parses the predictions)."""
    from modelseek.duel import publish

    store = Store(tmp_path / "k.db", config=cfg)
    store.submit(json.dumps(sub_dicts[0]).encode())
    last = json.dumps({"predictions": sub_dicts[1]["predictions"], "metadata": sub_dicts[0]["metadata"]}).encode()
    assert publish.peek_model_name(last) == sub_dicts[0]["metadata"]["model"]
    calls = []
    real = publish.PublishWorkflow._load
    publish.PublishWorkflow._load = lambda self, *a: calls.append(a) or real(self, *a)
    try:
        with pytest.raises(Exception, match="already published"):
            store.presubmit(last, uploader="ip:10.0.0.9")
    finally:
        publish.PublishWorkflow._load = real
    assert calls == []                                    # refused before the full parse
    assert store.received_today("ip:10.0.0.9") == len(last)
    store.close()
