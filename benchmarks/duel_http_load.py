"""50 concurrent HTTP clients publishing on one leaderboard server backed by PostgreSQL (issue #35).

A real PostgreSQL server is started on 127.0.0.1 in a temporary folder; a board is created on it with the
operator's reference (``create_board``); the web app (Gradio, as ``modelseek duel serve`` runs it) serves it
on 127.0.0.1. Each client is a thread with its own HTTP connection and cookie jar speaking Gradio's queue
protocol as a browser does: upload, pre-submit, confirm; when the page says the board changed since the
preview, it confirms again (one *recomputation*). Reported: how many published, the most recomputations
any client needed (issue #35: at most twice; the app recomputes a preview at most once), the time to the
last publication, and the machine's load. The server runs in this process (the clients mostly wait on the
network), as one ``duel serve`` process would.

Baseline in the same run: the same uploads pre-submitted and confirmed one after the other by one client.

    python benchmarks/duel_http_load.py [--clients 50] [--samples 200]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import httpx  # noqa: E402

from modelseek.duel.app import build_app, launch  # noqa: E402
from modelseek.duel.reference import Reference  # noqa: E402
from modelseek.duel.storage import create_board  # noqa: E402
from modelseek.duel.submission import validate_submission  # noqa: E402
from modelseek.testing.duel import PostgresServer, make_submission_dicts, postgres_binaries, small_config  # noqa: E402


class Client:
    """One browser: its own cookie jar and Gradio session."""

    def __init__(self, base: str, fns: dict) -> None:
        self.http = httpx.Client(base_url=base, timeout=600)
        self.http.get("/")
        self.session_hash = uuid.uuid4().hex[:11]
        self.fns = fns

    def call(self, fn: str, data: list) -> list:
        index, trigger = self.fns[fn]
        r = self.http.post("/gradio_api/queue/join", json={"data": data, "event_data": None, "fn_index": index,
                                                            "trigger_id": trigger, "session_hash": self.session_hash})
        r.raise_for_status()
        event = r.json()["event_id"]
        with self.http.stream("GET", f"/gradio_api/queue/data?session_hash={self.session_hash}") as stream:
            for line in stream.iter_lines():
                if line.startswith("data:"):
                    msg = json.loads(line[5:])
                    if msg.get("event_id") == event and msg.get("msg") == "process_completed":
                        if not msg.get("success"):
                            raise RuntimeError(str(msg)[:300])
                        return msg["output"]["data"]
        raise RuntimeError("no result")

    def publish(self, data: bytes) -> tuple[bool, int, str]:
        """``(published, recomputations, last status)``."""
        r = self.http.post("/gradio_api/upload", files={"files": ("sub.json", data, "application/json")})
        r.raise_for_status()
        file = {"path": r.json()[0], "orig_name": "sub.json", "meta": {"_type": "gradio.FileData"}}
        status = self.call("presubmit", [file])[0]
        if "Preview" not in status:
            return False, 0, status
        recomputed = 0
        for _ in range(100):
            status = self.call("confirm", [None, "overall", "", None])[0]
            if status.startswith("**Published**"):
                return True, recomputed, status
            if "changed since your preview" not in status:
                return False, recomputed, status
            recomputed += 1
        return False, recomputed, status


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(url: str, cfg, ref: Reference):
    store = create_board(url, cfg, ref)
    demo = build_app(store)
    port = _port()
    launch(demo, "127.0.0.1", port, prevent_thread_lock=True, quiet=True)
    fns = {fn.name: (i, fn.targets[0][0]) for i, fn in demo.fns.items()}
    return f"http://127.0.0.1:{port}", fns, demo, store


def concurrent(url: str, cfg, ref: Reference, uploads: list[bytes]) -> dict:
    base, fns, demo, store = serve(url, cfg, ref)
    results: list = [None] * len(uploads)
    start = threading.Barrier(len(uploads) + 1)

    def one(k: int) -> None:
        c = Client(base, fns)
        start.wait()
        try:
            results[k] = (*c.publish(uploads[k]), time.perf_counter())
        except Exception as exc:  # noqa: BLE001 - reported in the table
            results[k] = (False, 0, repr(exc), time.perf_counter())

    threads = [threading.Thread(target=one, args=(k,)) for k in range(len(uploads))]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    published = sum(1 for r in results if r[0])
    out = {"published": published, "clients": len(uploads), "max_recomputations": max(r[1] for r in results),
           "mean_recomputations": sum(r[1] for r in results) / len(results),
           "seconds": max(r[3] for r in results) - t0, "on_board": len(store.published()),
           "verify": store.verify(), "failures": [r[2][:200] for r in results if not r[0]][:3]}
    demo.close()
    store.close()
    return out


def serial(url: str, cfg, ref: Reference, uploads: list[bytes]) -> float:
    base, fns, demo, store = serve(url, cfg, ref)
    c = Client(base, fns)
    t0 = time.perf_counter()
    for data in uploads:
        ok, _, status = c.publish(data)
        if not ok:
            raise RuntimeError(status)
    seconds = time.perf_counter() - t0
    demo.close()
    store.close()
    return seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--samples", type=int, default=200)
    args = ap.parse_args()
    if postgres_binaries() is None:
        sys.exit("PostgreSQL server binaries (initdb, pg_ctl) not found")
    cfg = small_config()
    dicts = make_submission_dicts(cfg, n_models=args.clients + 1, n_samples=args.samples, seed=0)
    ref = Reference.from_submission(validate_submission(dicts[0], cfg))
    uploads = [json.dumps(d).encode() for d in dicts[1:]]
    print(f"load average before (1, 5, 15 min): {os.getloadavg()}, {os.cpu_count()} CPUs")
    with PostgresServer() as pg:
        res = concurrent(pg.url("concurrent"), cfg, ref, uploads)
        load = os.getloadavg()
        base = serial(pg.url("serial"), cfg, ref, uploads)
    print(f"{res['clients']} concurrent HTTP clients on PostgreSQL: {res['published']} published "
          f"({res['on_board']} on the board), recomputations per client: max {res['max_recomputations']}, "
          f"mean {res['mean_recomputations']:.2f}; all published after {res['seconds']:.1f} s; chain "
          f"{'intact' if not res['verify'] else res['verify'][:1]}")
    if res["failures"]:
        print(f"failures: {res['failures']}")
    print(f"baseline, one client publishing the same {len(uploads)} uploads one after the other: {base:.1f} s")
    print(f"load average at the end of the concurrent run: {load}; after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
