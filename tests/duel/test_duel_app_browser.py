"""End to end in headless Chromium (Debian's chromium driven by Playwright): load the leaderboard, upload a
submission, pre-submit, see the preview, confirm, see the model in the table, open its duels."""

import json
import os
import re
import socket
from contextlib import contextmanager
from pathlib import Path

import pytest

CHROMIUM = Path(os.environ.get("MODELSEEK_CHROMIUM", "/usr/bin/chromium"))
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


HOSTILE = "<b>bold</b> `tick` <img src=x>"


def _chromium():
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright missing: pip install 'modelseek[web]'")
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} not installed; enable this test with: apt-get install -y chromium")
    return sync_api


@contextmanager
def _serve(tmp_path, cfg, subs):
    """A board holding ``subs``, served on a free port: (its URL, its store); stopped afterwards."""
    pytest.importorskip("gradio")
    from modelseek.duel.app import build_app, launch
    from modelseek.duel.storage import Store

    store = Store(tmp_path / "lb.db", config=cfg)
    for d in subs:
        store.submit(json.dumps(d).encode())
    demo = build_app(store)
    port = _free_port()
    launch(demo, "127.0.0.1", port, prevent_thread_lock=True, quiet=True)
    try:
        yield f"http://127.0.0.1:{port}/", store
    finally:
        demo.close()
        store.close()


@contextmanager
def _page(sync_api, url: str, width: int, height: int):
    """A Chromium page opened on ``url``; the browser is closed afterwards."""
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.goto(url, wait_until="domcontentloaded")
            yield page
        finally:
            browser.close()


@pytest.fixture
def app_url(tmp_path, cfg, sub_dicts):
    hostile = {**sub_dicts[4], "metadata": {**sub_dicts[4]["metadata"], "model": HOSTILE}}
    with _serve(tmp_path, cfg, [*sub_dicts[:3], hostile]) as served:
        yield served


@pytest.mark.slow(reason="9 s (setup and call) on 2 busy cores")
def test_upload_presubmit_confirm_in_chromium(app_url, tmp_path, sub_dicts):
    sync_api = _chromium()
    url, store = app_url
    upload = tmp_path / "new-model.json"
    d = dict(sub_dicts[3])
    d["metadata"] = {**d["metadata"], "model": "brand-new-model"}
    upload.write_text(json.dumps(d), encoding="utf-8")
    with _page(sync_api, url, 1400, 1000) as page:
        board = page.locator("#leaderboard")
        sync_api.expect(board).to_contain_text("model-00", timeout=30_000)
        assert "brand-new-model" not in board.inner_text()
        # a hostile model name is shown as text, not rendered as HTML
        sync_api.expect(board).to_contain_text(HOSTILE, timeout=30_000)
        assert page.locator("#leaderboard b").count() == 0 and page.locator("#leaderboard img").count() == 0
        # the Duels tab is filled on first open: the leader's duels, with its details
        leader = store.leaderboard()["model"].iloc[0]
        page.get_by_role("tab", name="Duels").click()
        sync_api.expect(page.locator("#duels")).to_contain_text("task_acc", timeout=30_000)
        sync_api.expect(page.locator("#duel-model input")).to_have_value(leader, timeout=30_000)
        sync_api.expect(page.locator("#model-details")).to_contain_text("example.org", timeout=30_000)
        page.get_by_role("tab", name="Submit").click()
        page.locator("#upload input[type=file]").set_input_files(str(upload))
        # the file's link, not its cell's text: Gradio writes the name as stem and suffix in two spans, and their
        # rendered text holds a space when the page is laid out under load ("new-model .json")
        sync_api.expect(page.locator("#upload a[href$='/new-model.json']")).to_have_count(1, timeout=30_000)
        page.locator("#presubmit").click()
        sync_api.expect(page.locator("#status")).to_contain_text("Preview", timeout=60_000)
        sync_api.expect(page.locator("#preview")).to_contain_text("brand-new-model", timeout=30_000)
        assert "brand-new-model" not in {m for _, m in store.published()}   # not yet published
        page.locator("#confirm").click()
        sync_api.expect(page.locator("#status")).to_contain_text("Published", timeout=60_000)
        sync_api.expect(page.locator("#preview")).to_be_hidden(timeout=30_000)   # no "Preview" once published
        page.get_by_role("tab", name="Leaderboard").click()
        sync_api.expect(page.locator("#leaderboard")).to_contain_text("brand-new-model", timeout=30_000)
        # the new model's duels: whom it beat on each task, with p-values
        page.get_by_role("tab", name="Duels").click()
        box = page.locator("#duel-model input")
        box.click()
        box.fill("brand-new-model")
        page.get_by_role("option", name="brand-new-model").click()
        sync_api.expect(page.locator("#duels")).to_contain_text("task_acc", timeout=30_000)
        sync_api.expect(page.locator("#duels")).to_contain_text("model-00", timeout=30_000)
        details = page.locator("#model-details").inner_text()
        assert re.search(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC", details)     # a readable date
        page.get_by_role("tab", name="Leaderboard").click()
        # short headers that do not wrap inside a word, the full name on hover, one number format
        heads = page.locator("#leaderboard th")
        sync_api.expect(heads.first).to_be_visible(timeout=30_000)
        texts = [t.strip() for t in heads.all_inner_texts()]
        assert "Overall" in " ".join(texts) and all("\n" not in t for t in texts if t)
        sync_api.expect(page.locator("#leaderboard th[title*='overall win score']").first).to_be_attached(
            timeout=30_000)
        board_text = page.locator("#leaderboard").inner_text()
        numbers = re.findall(r"(?<![\w.-])\d+\.\d+(?![\w.])", board_text)
        assert numbers and all(re.fullmatch(r"\d+\.\d{2}", x) for x in numbers), numbers
        assert "100.00" in numbers or "0.00" in numbers          # not "100" beside "62.39"
    assert "brand-new-model" in {m for _, m in store.published()}


@pytest.mark.slow(reason="5 s (setup and call) on 2 busy cores")
def test_empty_board_in_chromium(tmp_path, cfg):
    sync_api = _chromium()
    with _serve(tmp_path, cfg, []) as (url, _), _page(sync_api, url, 1200, 900) as page:
        sync_api.expect(page.locator("#empty")).to_contain_text("No model is published yet", timeout=30_000)
        page.get_by_role("tab", name="Duels").click()
        sync_api.expect(page.locator("#duels-empty")).to_contain_text("No model is published yet",
                                                                        timeout=30_000)


@pytest.mark.slow(reason="drives chromium against a running server (about 4 s)")
def test_publications_from_an_empty_board_in_chromium(tmp_path, cfg, sub_dicts):
    """Issue #35's page: the staged file stays visible until confirmed, the Duels tab is current after every
    publication (no reload), the model columns and the search by name."""
    sync_api = _chromium()
    files = []
    for d in sub_dicts[1:3]:
        files.append(tmp_path / f"upload-{d['metadata']['model']}.json")
        files[-1].write_text(json.dumps(d), encoding="utf-8")
    with _serve(tmp_path, cfg, []) as (url, _), _page(sync_api, url, 1400, 1000) as page:
        sync_api.expect(page.locator("#empty")).to_contain_text("No model is published yet", timeout=30_000)
        page.get_by_role("tab", name="Submit").click()
        for k, f in enumerate(files):
            page.locator("#upload input[type=file]").set_input_files(str(f))
            sync_api.expect(page.locator("#upload")).to_contain_text(f.stem, timeout=30_000)
            page.locator("#presubmit").click()
            sync_api.expect(page.locator("#status")).to_contain_text("Preview", timeout=60_000)
            # the staged file is still shown, by name, until confirm or discard
            sync_api.expect(page.locator("#upload")).to_contain_text(f.stem, timeout=30_000)
            sync_api.expect(page.locator("#status")).to_contain_text(f.name, timeout=30_000)
            page.locator("#confirm").click()
            sync_api.expect(page.locator("#status")).to_contain_text("Published", timeout=60_000)
            sync_api.expect(page.locator("#upload")).not_to_contain_text(f.stem, timeout=30_000)
            # the Duels tab is current without a reload
            page.get_by_role("tab", name="Duels").click()
            sync_api.expect(page.locator("#model-details")).to_contain_text("example.org", timeout=30_000)
            if k:
                sync_api.expect(page.locator("#duels")).to_contain_text("task_acc", timeout=30_000)
            page.get_by_role("tab", name="Submit").click()
        page.get_by_role("tab", name="Leaderboard").click()
        board = page.locator("#leaderboard")
        sync_api.expect(board).to_contain_text("model-02", timeout=30_000)
        heads = " ".join(page.locator("#leaderboard th").all_inner_texts())
        assert all(h in heads for h in ("Type", "Params", "Precision", "Link")), heads
        sync_api.expect(board).to_contain_text("2.0B", timeout=30_000)          # n_params 2e9
        page.locator("#search textarea, #search input").first.fill("MODEL-01")
        sync_api.expect(board).not_to_contain_text("model-02", timeout=30_000)
        sync_api.expect(board).to_contain_text("model-01", timeout=30_000)


@pytest.mark.slow(reason="drives chromium against a running server (about 6 s)")
def test_downloads_are_formula_safe_and_model_names_link_in_chromium(tmp_path, cfg, sub_dicts):
    """Issue #44's page: CSV and JSON downloads of the board (a model named like a spreadsheet formula is escaped),
    a click on a model's name opens its page, the preview highlights the new row."""
    import csv
    import io

    sync_api = _chromium()
    formula = "=HYPERLINK(\"http://evil.example\",\"x\")"
    evil = {**sub_dicts[1], "metadata": {**sub_dicts[1]["metadata"], "model": formula,
                                         "source": "https://example.org/evil-model"}}
    linked = {**sub_dicts[0], "metadata": {**sub_dicts[0]["metadata"], "model": "linked-model",
                                           "source": "https://example.org/linked-model"}}
    upload = tmp_path / "fresh-upload.json"
    upload.write_text(json.dumps({**sub_dicts[2], "metadata": {**sub_dicts[2]["metadata"], "model": "fresh-one"}}),
                      encoding="utf-8")
    with _serve(tmp_path, cfg, [linked, evil]) as (url, _), _page(sync_api, url, 1400, 1000) as page:
        board = page.locator("#leaderboard")
        sync_api.expect(board).to_contain_text("linked-model", timeout=30_000)
        sync_api.expect(board).to_contain_text(formula, timeout=30_000)     # shown as text
        got = {}
        for kind in ("csv", "json"):
            with page.expect_download(timeout=30_000) as info:
                page.locator(f"#download-{kind}").click()
            got[kind] = Path(info.value.path()).read_text(encoding="utf-8")
        rows = list(csv.DictReader(io.StringIO(got["csv"])))
        assert {r["model"] for r in rows} == {"linked-model", "'" + formula}
        assert {r["model"] for r in json.loads(got["json"])} == {"linked-model", "'" + formula}
        assert all(r["rank"].isdigit() for r in rows)
        link = page.locator("#leaderboard a:visible", has_text=re.compile(r"^\s*linked-model\s*$")).first
        sync_api.expect(link).to_have_attribute("href", "https://example.org/linked-model", timeout=30_000)
        page.context.route("https://example.org/**",                 # no network: the link's page is served here
                           lambda route: route.fulfill(status=200, body="<title>its page</title>",
                                                       content_type="text/html"))
        with page.context.expect_page(timeout=30_000) as opened:
            link.click()
        opened.value.wait_for_load_state()
        assert opened.value.url == "https://example.org/linked-model" and opened.value.title() == "its page"
        # sorting as the page says: the header's menu, Sort ascending
        sync_api.expect(page.locator("body")).to_contain_text("open the ⋮ menu of its header", timeout=30_000)
        head = page.locator("#leaderboard th", has_text="Overall").first
        first_row = page.locator("#leaderboard [role=row]").nth(1)
        firsts = []
        for order in ("Sort ascending", "Sort descending"):
            head.hover()
            head.locator("button[aria-label='Open cell menu']").click()
            page.locator("[role=menuitem]", has_text=order).first.click()
            page.wait_for_timeout(500)
            firsts.append("linked-model" in first_row.inner_text())
        assert firsts[0] != firsts[1]                 # the two orders put different models first
        page.get_by_role("tab", name="Submit").click()
        page.locator("#upload input[type=file]").set_input_files(str(upload))
        sync_api.expect(page.locator("#upload")).to_contain_text("fresh-upload", timeout=30_000)
        page.locator("#presubmit").click()
        sync_api.expect(page.locator("#preview")).to_contain_text("fresh-one", timeout=60_000)
        row = page.locator("#preview [role=row]", has_text="fresh-one").first
        other = page.locator("#preview [role=row]", has_text="linked-model").first
        color = "e => getComputedStyle(e).backgroundColor"
        assert row.locator("[role=gridcell]").first.evaluate(color) == "rgb(255, 243, 191)"      # highlighted
        assert other.locator("[role=gridcell]").first.evaluate(color) != "rgb(255, 243, 191)"
        page.locator("#confirm").click()                                     # one click publishes
        sync_api.expect(page.locator("#status")).to_contain_text("Published", timeout=60_000)


@pytest.mark.slow(reason="drives chromium against a running server (about 6 s)")
def test_the_operator_approves_by_id_on_the_review_page_in_chromium(tmp_path, cfg, sub_dicts):
    """Issue #44: the operator (signed in through the trusted proxy) opens /review, approves a queued entry by its
    id and it appears on the board; hostile names stay text; an uploader gets 404 and no link to it."""
    sync_api = _chromium()
    pytest.importorskip("gradio")
    from modelseek.duel.app import build_app, launch
    from modelseek.duel.reference import Reference
    from modelseek.duel.storage import create_board
    from modelseek.duel.submission import validate_submission

    store = create_board(tmp_path / "rv.db", cfg, Reference.from_submission(validate_submission(sub_dicts[0], cfg)),
                         review=True)
    store.submit(json.dumps(sub_dicts[0]).encode())
    store.approve("model-00", "carol")
    for who, d, name in (("alice", sub_dicts[1], "queued-model"), ("mallory", sub_dicts[2], HOSTILE)):
        pv = store.presubmit(json.dumps({**d, "metadata": {**d["metadata"], "model": name}}).encode(),
                             session=who * 40, identity=who)
        store.confirm(pv.token, session=who * 40, identity=who)
    wanted = next(q["id"] for q in store.review_queue() if q["model"] == "queued-model")
    demo = build_app(store, identity_header="X-Forwarded-User", operators=("carol",))
    port = _free_port()
    launch(demo, "127.0.0.1", port, prevent_thread_lock=True, quiet=True, trusted_proxies=("127.0.0.1",))
    url = f"http://127.0.0.1:{port}/"
    try:
        with sync_api.sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
            try:
                uploader = browser.new_context(extra_http_headers={"X-Forwarded-User": "mallory"}).new_page()
                assert uploader.goto(url + "review").status == 404
                assert "queued-model" not in uploader.content()
                uploader.goto(url)
                sync_api.expect(uploader.locator("#leaderboard")).to_contain_text("model-00", timeout=30_000)
                assert "review queue" not in uploader.locator("#operator-link").inner_text()

                page = browser.new_context(extra_http_headers={"X-Forwarded-User": "carol"}).new_page()
                page.goto(url)
                sync_api.expect(page.locator("#operator-link")).to_contain_text("review queue", timeout=30_000)
                sync_api.expect(page.locator("#operator-link a")).to_have_attribute("href", "review")
                page.goto(url + "review")
                queue = page.locator("#queue")
                sync_api.expect(queue).to_contain_text("queued-model", timeout=30_000)
                sync_api.expect(queue).to_contain_text(HOSTILE, timeout=30_000)           # shown as text
                assert queue.locator("b").count() == 0 and queue.locator("img").count() == 0
                row = page.locator(f"#queue tr[data-id='{wanted}']")
                sync_api.expect(row).to_contain_text("alice", timeout=30_000)
                row.locator("form.approve button").click()
                sync_api.expect(page.locator("#status")).to_contain_text("Approved and published 'queued-model'",
                                                                         timeout=60_000)
                sync_api.expect(page.locator(f"#queue tr[data-id='{wanted}']")).to_have_count(0, timeout=30_000)
                sync_api.expect(page.locator("#published")).to_contain_text("queued-model", timeout=30_000)
                page.goto(url)
                sync_api.expect(page.locator("#leaderboard")).to_contain_text("queued-model", timeout=30_000)
                assert HOSTILE not in page.locator("#leaderboard").inner_text()         # still queued
            finally:
                browser.close()
        assert "queued-model" in {m for _, m in store.published()}
    finally:
        demo.close()
        store.close()
