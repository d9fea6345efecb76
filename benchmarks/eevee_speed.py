"""EEVEE speed: the batched search against a loop that trains each candidate's meta-models one at a time.

Both run the same search (same seeds, same initial weights, same protocol) in this process, one after the
other; the table reports wall and CPU time, the subsets trained, and whether the top subsets agree.

    python benchmarks/eevee_speed.py                       # GATE table, k = 8, 10 generations
    python benchmarks/eevee_speed.py --generations 2       # quicker
    python benchmarks/eevee_speed.py --loop-sample 200     # loop on 200 of the subsets only (see below)
    python benchmarks/eevee_speed.py --workers 1           # the batched search in one process only

``--loop-sample N``: the batched search runs in full; the loop then trains only N of the subsets the
search trained (a seeded sample) plus the final top 50, and its full-search time is extrapolated from its
per-subset time (reported as such). The search's choices depend only on the subsets' scores, so equal
scores on the sample and the same order of the top 50 mean the same top subset.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from modelseek.eevee import BatchedEvaluator, LoopEvaluator, MetaConfig, SearchConfig, load_table, search  # noqa: E402

GATE = ROOT.parent / "shared" / "data" / "gate" / "03032024-full.csv"


def _row(res, wall: float, cpu: float) -> dict:
    return {"wall_s": wall, "cpu_s": cpu, "n_evaluated": res.n_evaluated, "n_trained": res.n_trained,
            "best": list(res.best.subset), "best_score": res.best.mean,
            "top": [[list(s.subset), s.mean] for s in res.top]}


def _cpu_with_children() -> float:
    import resource

    return sum(resource.getrusage(w).ru_utime + resource.getrusage(w).ru_stime
               for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--table", default=str(GATE))
    ap.add_argument("-k", type=int, default=8)
    ap.add_argument("--generations", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--loop-sample", type=int, help="time the loop on this many sampled subsets only")
    ap.add_argument("--workers", type=int, default=2,
                    help="worker processes of the second batched run (default 2: both cores of the 2-core "
                         "machine; 1 skips that run)")
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args()
    if not Path(args.table).exists():
        print(f"table not found: {args.table} (../shared/data is absent)", file=sys.stderr)
        return 1
    table = load_table(args.table)
    cfg = SearchConfig(generations=args.generations, seed=args.seed)
    meta = MetaConfig(seed=args.seed)
    rows = {}
    for cls in (BatchedEvaluator, LoopEvaluator):  # warm-up (imports, first-call allocations), not timed
        cls(table, meta).losses([table.benchmark_names[:1]])
    ev = BatchedEvaluator(table, meta)
    t0, c0 = time.perf_counter(), time.process_time()
    res = search(ev, args.k, cfg)
    rows["batched"] = _row(res, time.perf_counter() - t0, time.process_time() - c0)
    print(f"batched: {rows['batched']['wall_s']:.1f} s wall, {rows['batched']['cpu_s']:.1f} s CPU", file=sys.stderr,
          flush=True)
    if args.workers > 1:
        # the same search with the batch of each generation split between worker processes; their start
        # (spawn + import torch) is inside the timing. CPU s: this process and its (finished) children.
        evw = BatchedEvaluator(table, meta, workers=args.workers)
        t0, c0 = time.perf_counter(), _cpu_with_children()
        resw = search(evw, args.k, cfg)
        evw.close()
        name = f"batched, {args.workers} worker processes"
        rows[name] = _row(resw, time.perf_counter() - t0, _cpu_with_children() - c0)
        assert [s.subset for s in resw.top] == [s.subset for s in res.top]
        print(f"{name}: {rows[name]['wall_s']:.1f} s wall", file=sys.stderr, flush=True)
    loop = LoopEvaluator(table, meta)
    if args.loop_sample:
        import numpy as np

        trained = list(ev.cache)
        rng = np.random.default_rng(0)
        sample = [trained[i] for i in rng.choice(len(trained), size=min(args.loop_sample, len(trained)),
                                                 replace=False)]
        t0, c0 = time.perf_counter(), time.process_time()
        ls = loop.scores(sample)
        per_wall, per_cpu = (time.perf_counter() - t0) / len(sample), (time.process_time() - c0) / len(sample)
        bs = ev.scores(sample)
        top_loop = sorted(loop.scores([s.subset for s in res.top]), key=lambda s: (s.mean, s.subset))
        rows["loop (extrapolated)"] = {
            "wall_s": per_wall * res.n_trained, "cpu_s": per_cpu * res.n_trained,
            "n_evaluated": res.n_evaluated, "n_trained": res.n_trained, "sampled": len(sample),
            "best": list(top_loop[0].subset), "best_score": top_loop[0].mean,
            "top": [[list(s.subset), s.mean] for s in top_loop],
            "max_abs_diff_sample": max(abs(a.mean - b.mean) for a, b in zip(ls, bs))}
        lp = rows["loop (extrapolated)"]
    else:
        t0, c0 = time.perf_counter(), time.process_time()
        lres = search(loop, args.k, cfg)
        rows["loop"] = _row(lres, time.perf_counter() - t0, time.process_time() - c0)
        lp = rows["loop"]
    b = rows["batched"]
    same_best = b["best"] == lp["best"]
    top_b = [tuple(s) for s, _ in b["top"]]
    top_l = [tuple(s) for s, _ in lp["top"]]
    overlap = len(set(top_b) & set(top_l))
    lsc = {tuple(s): v for s, v in lp["top"]}
    diff = max((abs(v - lsc[tuple(s)]) for s, v in b["top"] if tuple(s) in lsc), default=float("nan"))
    if "max_abs_diff_sample" in lp:
        diff = max(diff, lp["max_abs_diff_sample"])
    import os

    print(f"\nEEVEE search, k={args.k}, {args.generations} generations, seed {args.seed}; {table!r}")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; "
          f"one torch thread each")
    print("| method | wall s | CPU s | subsets scored | trained | best CV loss | best subset |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for name, r in rows.items():
        print(f"| {name} | {r['wall_s']:.1f} | {r['cpu_s']:.1f} | {r['n_evaluated']} | {r['n_trained']} | "
              f"{r['best_score']:.4f} | {', '.join(r['best'])} |")
    print()
    speedups = {}
    for name, r in rows.items():
        if name.startswith("batched"):
            speedups[name] = {"wall": lp["wall_s"] / r["wall_s"], "cpu": lp["cpu_s"] / r["cpu_s"]}
            print(f"speed-up of {name} over the loop: {speedups[name]['wall']:.1f}x wall, "
                  f"{speedups[name]['cpu']:.1f}x CPU")
    print(f"same top subset: {same_best}; top-{len(top_b)} overlap {overlap}/{len(top_b)}; "
          f"max |score difference| {diff:.2e}")
    best_wall = max(v["wall"] for v in speedups.values())
    goal = best_wall >= 30.0 and same_best
    print(f"goal (same top subset, >= 30x the loop's wall time): {'met' if goal else 'NOT met'} "
          f"({best_wall:.1f}x)")
    if args.json:
        Path(args.json).write_text(json.dumps({"k": args.k, "generations": args.generations, "rows": rows, "diff": diff, "speedups": speedups,
                                               "load_average": os.getloadavg(),
                                               "same_best": same_best, "overlap": overlap,
                                               "goal_met": goal}, indent=1))
    return 0 if goal else 1


if __name__ == "__main__":
    sys.exit(main())
