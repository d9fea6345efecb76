"""EEVEE speed: the batched search against a loop that trains each candidate's meta-models one at a time.

Both run the same search (same seeds, same initial weights, same protocol) in this process, one after the
other; the table reports wall and CPU time, the subsets trained, and whether the top subsets agree.

    python benchmarks/eevee_speed.py                       # GATE table, k = 8, 10 generations
    python benchmarks/eevee_speed.py --generations 2       # quicker
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--table", default=str(GATE))
    ap.add_argument("-k", type=int, default=8)
    ap.add_argument("--generations", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args()
    if not Path(args.table).exists():
        print(f"table not found: {args.table} (../shared/data is absent)", file=sys.stderr)
        return 1
    table = load_table(args.table)
    cfg = SearchConfig(generations=args.generations, seed=args.seed)
    meta = MetaConfig(seed=args.seed)
    rows = {}
    for name, cls in (("batched", BatchedEvaluator), ("loop", LoopEvaluator)):
        ev = cls(table, meta)
        t0, c0 = time.perf_counter(), time.process_time()
        res = search(ev, args.k, cfg)
        rows[name] = {"wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0,
                      "n_evaluated": res.n_evaluated, "n_trained": res.n_trained,
                      "best": list(res.best.subset), "best_score": res.best.mean,
                      "top": [[list(s.subset), s.mean] for s in res.top]}
        print(f"{name}: {rows[name]['wall_s']:.1f} s wall, {rows[name]['cpu_s']:.1f} s CPU", file=sys.stderr,
              flush=True)
    b, lp = rows["batched"], rows["loop"]
    same_best = b["best"] == lp["best"]
    top_b = [tuple(s) for s, _ in b["top"]]
    top_l = [tuple(s) for s, _ in lp["top"]]
    overlap = len(set(top_b) & set(top_l))
    lsc = {tuple(s): v for s, v in lp["top"]}
    diff = max((abs(v - lsc[tuple(s)]) for s, v in b["top"] if tuple(s) in lsc), default=float("nan"))
    print(f"\nEEVEE search, k={args.k}, {args.generations} generations, seed {args.seed}; {table!r}")
    print(f"machine: {platform.machine()} {platform.processor() or ''}, python {platform.python_version()}")
    print("| method | wall s | CPU s | subsets scored | trained | best CV loss | best subset |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for name, r in rows.items():
        print(f"| {name} | {r['wall_s']:.1f} | {r['cpu_s']:.1f} | {r['n_evaluated']} | {r['n_trained']} | "
              f"{r['best_score']:.4f} | {', '.join(r['best'])} |")
    print(f"\nspeed-up: {lp['wall_s'] / b['wall_s']:.1f}x wall, {lp['cpu_s'] / b['cpu_s']:.1f}x CPU; "
          f"same top subset: {same_best}; top-{len(top_b)} overlap {overlap}/{len(top_b)}; "
          f"max |score difference| on shared top subsets {diff:.2e}")
    if args.json:
        Path(args.json).write_text(json.dumps({"k": args.k, "generations": args.generations, "rows": rows,
                                               "same_best": same_best, "overlap": overlap}, indent=1))
    return 0 if same_best else 1


if __name__ == "__main__":
    sys.exit(main())
