"""Regenerate docs/leaderboard.png: a synthetic 10-model BenCzechMark leaderboard in the web app, captured in
headless Chromium (Debian's /usr/bin/chromium driven by Playwright).

    python docs/leaderboard_screenshot.py [--out docs/leaderboard.png]
"""

from __future__ import annotations

import argparse
import socket
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "docs" / "leaderboard.png"))
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    args = ap.parse_args()
    from playwright.sync_api import expect, sync_playwright

    from modelseek.duel.app import build_app, launch
    from modelseek.duel.config import LeaderboardConfig
    from modelseek.duel.storage import Store
    from modelseek.testing.duel import make_submissions

    cfg = LeaderboardConfig.load()
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "lb.db", config=cfg)
        store.publish_many(make_submissions(cfg, n_models=10, n_samples=(150, 300), seed=4, prefix="czech-llm"))
        demo = build_app(store, title="BenCzechMark-style duel leaderboard (synthetic models)")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        launch(demo, "127.0.0.1", port, prevent_thread_lock=True, quiet=True)   # with the app's cookie, CSS, titles
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=args.chromium, args=ARGS, headless=True)
                page = browser.new_page(viewport={"width": 1500, "height": 900})
                page.goto(f"http://127.0.0.1:{port}/", wait_until="domcontentloaded")
                page.wait_for_timeout(2000)
                page.wait_for_function("() => !document.body.innerText.includes('processing |')", timeout=120_000)
                expect(page.locator("#leaderboard")).to_contain_text("czech-llm-00", timeout=60_000)
                page.wait_for_timeout(1000)
                page.screenshot(path=args.out, full_page=True)
                browser.close()
        finally:
            demo.close()
            store.close()
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
