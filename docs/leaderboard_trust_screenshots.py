"""Regenerate the screenshots of docs/leaderboard-trust.md: a board created with the operator's reference and
``--review`` (synthetic models), in the web app, captured in headless Chromium (Debian's /usr/bin/chromium
driven by Playwright):

* ``leaderboard-reviewed.png``: the board with its Type, Params, Precision, Link and Reviewed columns and the
  note that a confirmed submission awaits review;
* ``leaderboard-provenance.png``: the Duels tab with a model's details and provenance as a table;
* ``leaderboard-staged.png``: the Submit tab after a pre-submission (the staged file stays visible).

    python docs/leaderboard_trust_screenshots.py [--out-dir docs]
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

IDLE = "() => !/\\d+\\.\\ds/.test(document.body.innerText) && !document.querySelector('.eta-bar')"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
TYPES = ["pretrained", "fine-tuned", "chat"]


def _board(tmp: Path):
    from modelseek.duel.examples import LM_EVAL_HEADER
    from modelseek.duel.reference import Reference
    from modelseek.duel.storage import create_board
    from modelseek.duel.submission import validate_submission
    from modelseek.testing.duel import make_submission_dicts, small_config

    cfg = small_config()
    dicts = make_submission_dicts(cfg, n_models=7, n_samples=120, seed=4, prefix="czech-llm")
    for k, d in enumerate(dicts):
        d["metadata"] = {**{x: v for x, v in LM_EVAL_HEADER.items() if x != "model_name"}, **d["metadata"],
                         "type": TYPES[k % 3], "n_params": [1.1e9, 7.2e9, 13e9, 350e6][k % 4]}
    store = create_board(tmp / "lb.db", cfg, Reference.from_submission(validate_submission(dicts[0], cfg)),
                         review=True)
    for d in dicts[:5]:
        pv = store.presubmit(json.dumps(d).encode())
        store.confirm(pv.token)
        store.approve(d["metadata"]["model"], "carol")
    pv = store.presubmit(json.dumps(dicts[5]).encode())         # confirmed, awaiting review
    store.confirm(pv.token)
    upload = tmp / "czech-llm-06.json"
    upload.write_text(json.dumps(dicts[6]), encoding="utf-8")
    return store, upload


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out-dir", default=str(ROOT / "docs"))
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    args = ap.parse_args()
    from playwright.sync_api import expect, sync_playwright

    from modelseek.duel.app import build_app, launch

    out = Path(args.out_dir)
    with tempfile.TemporaryDirectory() as tmp:
        store, upload = _board(Path(tmp))
        demo = build_app(store, title="Duel leaderboard with the operator's reference and review (synthetic models)")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        launch(demo, "127.0.0.1", port, prevent_thread_lock=True, quiet=True)
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=args.chromium, args=ARGS, headless=True)
                page = browser.new_page(viewport={"width": 1500, "height": 900})
                page.goto(f"http://127.0.0.1:{port}/", wait_until="domcontentloaded")
                expect(page.locator("#leaderboard")).to_contain_text("czech-llm-00", timeout=60_000)
                expect(page.locator("#empty")).to_contain_text("await", timeout=60_000)
                page.wait_for_function(IDLE, timeout=120_000)
                page.wait_for_timeout(1500)
                page.screenshot(path=str(out / "leaderboard-reviewed.png"), full_page=True)
                page.get_by_role("tab", name="Duels").click()
                expect(page.locator("#model-details")).to_contain_text("czech-llm", timeout=60_000)
                page.wait_for_function(IDLE, timeout=120_000)
                page.wait_for_timeout(1500)
                page.screenshot(path=str(out / "leaderboard-provenance.png"), full_page=True)
                page.get_by_role("tab", name="Submit").click()
                page.locator("#upload input[type=file]").set_input_files(str(upload))
                page.locator("#presubmit").click()
                expect(page.locator("#status")).to_contain_text("Preview", timeout=120_000)
                page.wait_for_function(IDLE, timeout=120_000)
                page.wait_for_timeout(1500)
                page.screenshot(path=str(out / "leaderboard-staged.png"), full_page=True)
                browser.close()
        finally:
            demo.close()
            store.close()
    print(f"wrote {out}/leaderboard-reviewed.png, leaderboard-provenance.png, leaderboard-staged.png")


if __name__ == "__main__":
    main()
