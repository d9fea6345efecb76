"""Load test of a stored leaderboard: many clients pre-submit and confirm at once, on SQLite and on a real
PostgreSQL server started here on 127.0.0.1 (in a temporary folder, stopped afterwards).

Each client is a separate process with its own :class:`~modelseek.duel.storage.Store` (as separate server
workers would be): it opens the database, pre-submits one model and confirms it. Two scenarios per
dialect: a *fresh* database (every client's opening races to create the schema) and an *existing* one
(10 models published before). One extra client submits a model name that another client also submits: it
must be refused ("already published"), the rest published. Checked after each run: 0 errors, 0 lost
(every model published), 0 duplicated (one row per model and per duel, no pending rows left but the
refused one's), and the stored board equal to an offline tournament of the same submissions, exactly.

Baseline in the same run: the same submissions published one after the other by one client (serial).

    python benchmarks/duel_load.py [--clients 50] [--tasks 10] [--samples 200] [--dialects sqlite postgresql]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from modelseek.duel.config import LeaderboardConfig  # noqa: E402
from modelseek.duel.engine import Settings  # noqa: E402
from modelseek.duel.storage import Store  # noqa: E402
from modelseek.duel.submission import validate_submission  # noqa: E402
from modelseek.duel.tournament import tournament  # noqa: E402
from modelseek.core.errors import InputError  # noqa: E402
from modelseek.testing.duel import (PostgresServer, make_submission_dicts, postgres_binaries,  # noqa: E402
                                    publish_like_a_user)


def client(args) -> tuple[str, str, float, int]:
    """One process: open, pre-submit, confirm as a person in the app does (a preview made stale by others'
    publications is recomputed, then confirmed again). Returns (outcome, detail, seconds, recomputations)."""
    url, cfg_dict, payload, go = args
    go.wait()
    t0 = time.perf_counter()
    try:
        store = Store(url, config=LeaderboardConfig.from_dict(cfg_dict))
        try:
            model, rounds = publish_like_a_user(store, payload)
        finally:
            store.close()
        return "published", model, time.perf_counter() - t0, rounds
    except InputError as exc:
        return "refused", str(exc), time.perf_counter() - t0, 0
    except Exception as exc:  # noqa: BLE001 - an error is what this benchmark counts
        return "error", repr(exc), time.perf_counter() - t0, 0


def run(url: str, cfg: LeaderboardConfig, subs: list[dict], pre: int, clients: int) -> dict:
    if pre:
        s = Store(url, config=cfg)
        for d in subs[:pre]:
            s.submit(json.dumps(d).encode())
        s.close()
    uploads = [json.dumps(d).encode() for d in subs[pre:]] + [json.dumps(subs[-1]).encode()]   # one twice
    ctx = mp.get_context("fork")
    with ctx.Manager() as manager:
        go = manager.Event()
        with ctx.Pool(min(clients + 1, len(uploads))) as pool:
            res = pool.map_async(client, [(url, cfg.to_dict(), u, go) for u in uploads], chunksize=1)
            time.sleep(1.0)                       # every worker is waiting on the start signal
            t0 = time.perf_counter()
            go.set()
            out = res.get()
            wall = time.perf_counter() - t0
    store = Store(url)
    counts = store.counts()
    full = tournament([validate_submission(d, cfg) for d in subs], cfg, Settings())
    n, T = len(subs), len(cfg.task_ids)
    published = sorted(m for o, m, _, _ in out if o == "published")
    result = {
        "clients": len(uploads), "wall_s": wall,
        "errors": sum(o == "error" for o, _, _, _ in out),
        "refused": sum(o == "refused" for o, _, _, _ in out),
        "lost": len(set(d["metadata"]["model"] for d in subs[pre:]) - set(published)),
        "duplicated": (counts["submissions"] - n) + (counts["duels"] - T * n * (n - 1)) + (counts["profiles"] - T * n),
        "board_equals_offline": store.scores() == full.scores,
        "client_p50_s": sorted(s for _, _, s, _ in out)[len(out) // 2], "client_max_s": max(s for _, _, s, _ in out),
        "error_samples": [m for o, m, _, _ in out if o == "error"][:3],
        "refusals": [m for o, m, _, _ in out if o == "refused"][:3],
        "recomputed": sum(r for _, _, _, r in out),
        "verify": store.verify(),
    }
    store.close()
    return result


def serial(url: str, cfg: LeaderboardConfig, subs: list[dict]) -> float:
    s = Store(url, config=cfg)
    t0 = time.perf_counter()
    for d in subs:
        s.submit(json.dumps(d).encode())
    wall = time.perf_counter() - t0
    s.close()
    return wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--tasks", type=int, default=10, help="tasks (the first N of BenCzechMark's 50)")
    ap.add_argument("--samples", type=int, default=200)
    ap.add_argument("--dialects", nargs="+", default=["sqlite", "postgresql"])
    args = ap.parse_args()
    full_cfg = LeaderboardConfig.load()
    cfg = LeaderboardConfig(full_cfg.tasks[:args.tasks])
    pre_n = 10
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores; {args.clients} clients, {args.tasks} tasks, "
          f"{args.samples} samples per task")
    with tempfile.TemporaryDirectory() as tmp:    # warm the lazy imports (SQLAlchemy, Alembic) before forking
        Store(Path(tmp) / "warm.db", config=cfg).close()
    pg = None
    rows = []
    try:
        for dialect in args.dialects:
            if dialect == "postgresql":
                if postgres_binaries() is None:
                    print("postgresql: skipped (no initdb/pg_ctl: apt-get install -y postgresql)")
                    continue
                pg = pg or PostgresServer()
            for scenario, pre in (("fresh", 0), ("existing", pre_n)):
                subs = make_submission_dicts(cfg, n_models=args.clients + pre, n_samples=args.samples, seed=1)
                with tempfile.TemporaryDirectory() as tmp:
                    def url():
                        if dialect == "sqlite":
                            return f"sqlite:///{Path(tmp) / (uuid.uuid4().hex + '.db')}"
                        return pg.url(f"b_{uuid.uuid4().hex[:12]}")
                    r = run(url(), cfg, subs, pre, args.clients)
                    r["serial_s"] = serial(url(), cfg, subs[pre:]) if pre == 0 else float("nan")
                rows.append((dialect, scenario, r))
                print(f"{dialect:10s} {scenario:8s} clients {r['clients']:3d}  wall {r['wall_s']:6.1f} s  "
                      f"(serial {r['serial_s']:6.1f} s)  errors {r['errors']}  refused {r['refused']}  "
                      f"lost {r['lost']}  duplicated {r['duplicated']}  board == offline: "
                      f"{r['board_equals_offline']}  chain verified: {not r['verify']}  previews recomputed "
                      f"{r['recomputed']}  client p50 {r['client_p50_s']:.1f} s, max {r['client_max_s']:.1f} s"
                      + (f"  e.g. {r['error_samples']}" if r["error_samples"] else "")
                      + (f"  refusals: {r['refusals']}" if r["refused"] != 1 else ""), flush=True)
    finally:
        if pg is not None:
            pg.stop()
    bad = [(d, s) for d, s, r in rows if r["errors"] or r["lost"] or r["duplicated"] or r["refused"] != 1
           or not r["board_equals_offline"] or r["verify"]]
    print("OK: 0 errors, 0 lost, 0 duplicated, boards equal the offline tournament" if not bad else f"FAILED: {bad}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
