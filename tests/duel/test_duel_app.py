"""The web app facing the internet (without a browser): only uploaded files are read, uploads are bounded
while received and deleted after use, user strings are escaped; BenCzechMark's compiled files accepted."""

import http.client
import json
import os
import socket
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from modelseek.duel.app import EMPTY, LeaderboardApp, md_code, md_text
from modelseek.duel.storage import Store
from modelseek.duel.submission import validate_submission
from modelseek.testing.duel import bcm_compiled, recompute_results, write_harness_folder

pytest.importorskip("sqlalchemy")

_OPENED: list[str] = []
_WATCH: set[str] = set()


def _audit(event, args):
    if event == "open" and args and str(args[0]) in _WATCH:
        _OPENED.append(str(args[0]))


sys.addaudithook(_audit)   # records every open() of a watched path (audit hooks cannot be removed)


@pytest.fixture
def store(tmp_path, cfg, sub_dicts):
    s = Store(tmp_path / "lb.db", config=cfg, max_bytes=2_000_000)
    yield s
    s.close()


@pytest.fixture
def app(store, tmp_path):
    (tmp_path / "uploads").mkdir()
    return LeaderboardApp(store, uploads=tmp_path / "uploads")


def _upload(app, tmp_path, d, name="sub.json") -> Path:
    folder = app.uploads / uuid.uuid4().hex
    folder.mkdir()
    p = folder / name
    p.write_text(json.dumps(d), encoding="utf-8")
    return p


class _FileData:             # what a crafted request hands the handler: a file object naming a path
    def __init__(self, path):
        self.path = str(path)


def test_server_path_refused_without_reading_it(app, store, tmp_path, sub_dicts):
    secret = tmp_path / "server-secret.json"           # a valid submission, but not uploaded
    secret.write_text(json.dumps(sub_dicts[0]), encoding="utf-8")
    link = app.uploads / "link.json"
    link.symlink_to(secret)                            # a link from the upload folder does not help
    _WATCH.update({str(secret), str(link), str(secret.resolve())})
    for crafted in (str(secret), _FileData(secret), _FileData(link), "/etc/passwd", _FileData("../../etc/hosts")):
        status, table, token = app.presubmit(crafted)
        assert status.startswith("**Error:**") and table is None and token is None
        assert "uploaded through this page" in status or "not an upload" in status
    assert _OPENED == [] and secret.exists()            # never opened, never deleted
    assert store.counts()["pending"] == 0 and store.published() == []


def test_identical_uploads_both_work_and_files_are_swept(app, store, tmp_path, sub_dicts):
    """Gradio stores identical bytes in one file: two sessions uploading them must both pre-submit (#23), and
    uploaded files, also those never pre-submitted, are deleted once older than upload_ttl."""
    p = _upload(app, tmp_path, sub_dicts[0])
    status, table, token = app.presubmit(p)
    assert status.startswith("**Preview**") and token and list(table["model"]) == ["model-00"]
    status2, _, token2 = app.presubmit(p)             # the second session, same bytes, same file
    assert status2.startswith("**Preview**") and token2 not in (None, token)
    assert "model-00" in app.confirm(token)[0]
    bad = _upload(app, tmp_path, {"metadata": {}})
    status, _, _ = app.presubmit(bad)
    assert status.startswith("**Error:**")
    partial = app.uploads / "tmpabc123"               # what an aborted upload leaves
    partial.write_bytes(b"x" * 889)
    assert app.sweep_uploads(now=time.time() + app.upload_ttl + 1) == 3
    assert list(app.uploads.iterdir()) == []


def test_oversized_upload_file_refused_before_reading(app, store, tmp_path):
    big = app.uploads / "big.json"
    with open(big, "wb") as fh:
        fh.truncate(store.max_bytes + 1)                # sparse: no memory, no disk
    _WATCH.add(str(big))
    status, _, token = app.presubmit(big)
    assert "too large" in status and token is None and _OPENED == [] and not big.exists()   # deleted unread


def _rss() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="needs /proc to watch memory")
def test_oversized_upload_refused_while_received_with_bounded_memory(tmp_path, cfg):
    pytest.importorskip("gradio")
    from modelseek.duel.app import build_app, launch

    store = Store(tmp_path / "lb.db", config=cfg, max_bytes=500_000)
    demo = build_app(store)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    launch(demo, "127.0.0.1", port, prevent_thread_lock=True, quiet=True)
    size, chunk = 8 * 2**20, b"x" * 2**16
    peak, base, done = [0], _rss(), threading.Event()

    def watch():
        while not done.is_set():
            peak[0] = max(peak[0], _rss() - base)
            time.sleep(0.002)

    watcher = threading.Thread(target=watch)
    watcher.start()
    status = None
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        boundary = "modelseekboundary"
        head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"big.json\"\r\n"
                "Content-Type: application/json\r\n\r\n").encode()
        tail = f"\r\n--{boundary}--\r\n".encode()
        conn.putrequest("POST", "/gradio_api/upload")
        conn.putheader("Content-Type", f"multipart/form-data; boundary={boundary}")
        conn.putheader("Content-Length", str(len(head) + size + len(tail)))
        conn.endheaders()
        try:
            conn.send(head)
            for _ in range(size // len(chunk)):
                conn.send(chunk)
            conn.send(tail)
        except OSError:
            pass                                         # the server stopped reading: refused mid-way
        try:
            status = conn.getresponse().status
        except (OSError, http.client.HTTPException):
            status = "closed"
    finally:
        done.set()
        watcher.join()
        demo.close()
        store.close()
    assert status in (413, "closed")
    assert peak[0] < 4 * 2**20, f"memory grew by {peak[0] / 2**20:.1f} MB for a {size / 2**20:.0f} MB upload"


# ------------------------------------------------------------------------------------------ rendering
def test_user_strings_cannot_break_markdown():
    markdown_it = pytest.importorskip("markdown_it")
    md = markdown_it.MarkdownIt()
    for name in ("evil`` **bold** `x", "`lead", "trail`", "a```b", "<img src=x onerror=alert(1)>", "[x](http://e)"):
        html = md.render(f"Preview for {md_code(name)}: rank 1")
        assert html.count("<code>") == 1 and "<strong>" not in html and "<img" not in html
        code = html.split("<code>", 1)[1].split("</code>", 1)[0]
        assert code.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"').strip() == name.strip()
        text = md.render(md_text(name))
        assert "<code>" not in text and "<strong>" not in text and "<a " not in text and "<img" not in text


def test_status_line_escapes_a_hostile_model_name(app, store, tmp_path, sub_dicts, cfg):
    d = json.loads(json.dumps(sub_dicts[0]))
    d["metadata"]["model"] = "m`` <b>x</b> `y"
    status, _, token = app.presubmit(_upload(app, tmp_path, d))
    assert md_code("m`` <b>x</b> `y") in status
    assert md_code("m`` <b>x</b> `y") in app.confirm(token)[0]


def test_duels_tab_opens_on_the_leader_and_empty_state(app, store, sub_dicts):
    assert app.empty_note() == EMPTY and app.models() == []
    assert app.duels(None) == (None, None)
    for d in sub_dicts[:3]:
        store.submit(json.dumps(d).encode())
    assert app.empty_note() == ""
    names = app.models()
    assert names == list(store.leaderboard()["model"]) and len(names) == 3
    details, meta = app.duels(names[0])
    assert len(details) == 2 * len(store.config.task_ids) and meta["model"] == names[0]


# ------------------------------------------------------------------------------------------ BenCzechMark files
def test_benczechmark_compiled_file_accepted_as_is(tmp_path, cfg, sub_dicts, caplog):
    folders = write_harness_folder(tmp_path / "logs", sub_dicts[1], cfg, summarisation_suffix=True,
                                   prompts={"task_acc": [0.0, 0.1, -0.05]})
    obj = bcm_compiled(folders, cfg)
    assert "model" not in obj["metadata"] and obj["metadata"]["transformers_version"] == "4.44.2"
    assert obj["results"]["task_acc"]["alias"] == "  - prompt-1"
    assert "rouge_raw_r2_mid_f_without_bootstrap" in obj["predictions"]["task_rouge_raw_r2_mid_f"][0]
    obj["metadata"]["leaderboard_note"] = "extra"          # an unknown extra field: a warning, not an error
    sub = validate_submission(obj, cfg, source="bcm.json")
    assert sub.model == "model-01" and sub.provenance["git_hash"] == "a1b2c3d"
    assert any("metadata.leaderboard_note" in w for w in sub.warnings)
    assert "unknown metadata field dropped" in caplog.text
    store = Store(tmp_path / "lb.db", config=cfg)
    store.submit(json.dumps(sub_dicts[0]).encode())
    pv = store.presubmit(json.dumps(obj).encode(), source="bcm.json")
    assert pv.warnings and store.confirm(pv.token) == "model-01"
    meta = store.metadata("model-01")
    assert meta["chat_template"] is None and meta["n-shot"] == {} and meta["tokenizer_eos_token"] == ["</s>", "2"]
    # the shown metric is the predictions' own value, and a tampered self-report is refused by task and metric
    assert store.leaderboard("tasks").set_index("model").loc["model-01", "task_acc (acc)"] == \
        pytest.approx(sub.raw("task_acc"), abs=1e-4)
    obj["results"]["task_rouge_raw_r2_mid_f"]["rouge_raw_r2_mid_f_without_bootstrap"] = 0.99
    obj["metadata"]["model_name"] = "other"
    from modelseek.core.errors import InputError

    with pytest.raises(InputError, match="results.task_rouge_raw_r2_mid_f.rouge_raw_r2_mid_f.*reported"):
        store.presubmit(json.dumps(obj).encode())
    store.close()


def test_recompute_results_helper_matches_validation(cfg, sub_dicts):
    d = recompute_results(sub_dicts[2], cfg)
    assert validate_submission(d, cfg).results["task_acc"]["acc"] == d["results"]["task_acc"]["acc"]


def test_pvalues_and_numbers_shown_in_one_format(app, store, sub_dicts):
    from modelseek.duel.app import pvalue_text

    assert [pvalue_text(p) for p in (0.0, 1e-300, 1e-16, 0.0123456, 1.0)] == \
        ["< 1e-16", "< 1e-16", "1e-16", "0.0123", "1"]
    for d in sub_dicts[:3]:
        store.submit(json.dumps(d).encode())
    details, meta = app.duels("model-00")
    shown = list(details["p_value (beats opponent)"]) + list(details["p_value (opponent beats)"])
    assert all(isinstance(p, str) and (p == "< 1e-16" or float(p) >= 1e-16) for p in shown)
    assert "_published" in meta and meta["_published"].endswith(" UTC") and "_published_at" not in meta
    styled = app.shown_board("tasks")
    assert styled.modelseek_titles["Overall"].startswith("overall win score")
    html = styled.to_html()
    import re

    assert not re.search(r">\s*\d+\.\d{1}\s*<|>\s*100\s*<", html)      # every win score with two decimals


def test_duel_example_writes_valid_submissions(cli, tmp_path):
    r = cli("duel", "example", tmp_path / "ex", "--models", "3")
    assert r.code == 0
    files = sorted((tmp_path / "ex").glob("example-model-*.json"))
    meta = tmp_path / "ex" / "metadata.json"
    assert len(files) == 3 and meta.exists()
    obj = json.loads(files[0].read_text(encoding="utf-8"))
    assert obj["metadata"]["transformers_version"] and obj["predictions"]       # BenCzechMark's compiled shape
    r = cli("duel", "validate", *files, "--metadata", meta)
    assert r.code == 0 and r.out.count(": ok") == 3
    r = cli("duel", "tournament", *files, "--metadata", meta, "--json")
    assert r.code == 0 and set(json.loads(r.out)["scores"]) == {"example-model-00", "example-model-01",
                                                               "example-model-02"}
