"""EEVEE on the GATE table: best k = 8 subset with and without the reference's normalisation leak (and,
without the leak, with the test loss in the table's unit — the default — and in each split's training
z-units), the k = 1..25 sweep (wall time, box plot), leave-one-out importance of the best k = 8 subset.

    python benchmarks/eevee_gate.py --out docs/results/eevee_gate.json --plots docs/results
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import numpy as np  # noqa: E402

from modelseek.eevee import (BatchedEvaluator, MetaConfig, SearchConfig, importance, load_table,  # noqa: E402
                             search, sweep)
from modelseek.eevee.plots import plot_importance, plot_score_vs_k  # noqa: E402

GATE = ROOT.parent / "shared" / "data" / "gate" / "03032024-full.csv"
REFERENCE = ("acdc", "cifar100", "clevr", "coco-10k", "cubirds", "food101", "hmdb51", "iwildcam")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--table", default=str(GATE))
    ap.add_argument("--out", default="docs/results/eevee_gate.json")
    ap.add_argument("--plots", default="docs/results")
    ap.add_argument("--sweep-dir", default="out/eevee-gate-sweep")
    ap.add_argument("--ks", default="1-25")
    ap.add_argument("--skip-sweep", action="store_true")
    ap.add_argument("--workers", type=int, default=2, help="worker processes of the sweep (default 2)")
    ap.add_argument("--report-sweep", metavar="DIR",
                    help="only print the markdown table and draw the box plot of the k*.json files in DIR "
                         "(e.g. of `modelseek eevee sweep --out DIR`, finished or not)")
    args = ap.parse_args()
    if args.report_sweep:
        return report_sweep(Path(args.report_sweep), Path(args.plots))
    table = load_table(args.table)
    cfg = SearchConfig(generations=10, seed=0)
    out: dict = {"table": repr(table)}
    evs = {}
    for key, meta in (("no_leak", MetaConfig(seed=0)), ("leaky", MetaConfig(seed=0, leaky=True)),
                      ("no_leak_split_unit", MetaConfig(seed=0, loss_scale="split")),
                      ("ridge", MetaConfig(seed=0, model="ridge"))):
        ev = BatchedEvaluator(table, meta)
        evs[key] = ev
        t0, c0 = time.perf_counter(), time.process_time()
        res = search(ev, 8, cfg)
        out[key] = {"best": res.best.to_dict(), "per_split": list(res.best.per_split),
                    "top50_mean": float(np.mean([s.mean for s in res.top])),
                    "n_evaluated": res.n_evaluated, "n_trained": res.n_trained,
                    "wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0,
                    "no_input_baseline": ev.score(()).to_dict(),
                    "training_means_score": ev.baseline().to_dict(),  # the score to beat (eevee prints it)
                    "reference_subset": ev.score(REFERENCE).to_dict()}
        print(key, json.dumps(out[key]["best"]), out[key]["top50_mean"], flush=True)
    # each mode's best subset scored under the other mode
    out["cross"] = {f"{a}_best_scored_{b}": evs[b].score(out[a]["best"]["benchmarks"]).to_dict()
                    for a in evs for b in evs if a != b}
    best = out["no_leak"]["best"]["benchmarks"]
    imp = importance(evs["no_leak"], best)
    out["importance"] = [{"benchmark": b, "loss_increase": v} for b, v in imp]
    plot_importance(imp, Path(args.plots) / "eevee_importance.png",
                    title="GATE, best k=8 subset (no leak): loss increase when removed")
    imp_r = importance(evs["ridge"], out["ridge"]["best"]["benchmarks"])
    out["importance_ridge"] = [{"benchmark": b, "loss_increase": v} for b, v in imp_r]
    imp_l = importance(evs["leaky"], out["leaky"]["best"]["benchmarks"])
    out["importance_leaky"] = [{"benchmark": b, "loss_increase": v} for b, v in imp_l]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1))
    if not args.skip_sweep:
        from modelseek.eevee import parse_ks

        ks = parse_ks(args.ks, len(table.benchmark_names))
        t0, c0 = time.perf_counter(), time.process_time()
        ev = BatchedEvaluator(table, MetaConfig(seed=0), workers=args.workers)
        results = sweep(table, ks, cfg, out_dir=args.sweep_dir, progress=True, evaluator=ev)
        ev.close()
        out["sweep"] = {"wall_s": time.perf_counter() - t0, "cpu_s_main": time.process_time() - c0,
                        "workers": args.workers, "load_average": os.getloadavg(),
                        "per_k": {str(k): {"best": r.best.to_dict(),
                                           "top_mean": float(np.mean([s.mean for s in r.top])),
                                           "wall_s": r.wall_s, "n_trained": r.n_trained}
                                  for k, r in results.items()}}
        t0 = time.perf_counter()
        ridge = sweep(table, ks, cfg, meta=MetaConfig(seed=0, model="ridge"),
                      out_dir=Path(args.sweep_dir).with_name(Path(args.sweep_dir).name + "-ridge"))
        out["sweep_ridge"] = {"wall_s": time.perf_counter() - t0,
                              "per_k": {str(k): {"best": r.best.to_dict(),
                                                 "top_mean": float(np.mean([s.mean for s in r.top])),
                                                 "wall_s": r.wall_s, "n_trained": r.n_trained}
                                        for k, r in ridge.items()}}
        plot_score_vs_k(ridge, Path(args.plots) / "eevee_score_vs_k_ridge.png",
                        title="GATE table (no leak, ridge meta-model): CV loss of the top 50 subsets per k")
        plot_score_vs_k(results, Path(args.plots) / "eevee_score_vs_k.png",
                        title="GATE table (no leak): CV loss of the top 50 subsets per k")
        print("sweep", out["sweep"]["wall_s"], flush=True)
    Path(args.out).write_text(json.dumps(out, indent=1))
    return 0


def report_sweep(folder: Path, plots: Path) -> int:
    from modelseek.eevee import SearchResult

    results = {}
    for f in folder.glob("k*.json"):
        r = SearchResult.from_dict(json.loads(f.read_text())["result"])
        results[r.k] = r
    if not results:
        print(f"no k*.json in {folder}", file=sys.stderr)
        return 1
    print("| k | best CV loss | top-50 mean | trained | wall s | best subset |")
    print("|---:|---:|---:|---:|---:|---|")
    for k in sorted(results):
        r = results[k]
        print(f"| {k} | {r.best.mean:.3f} | {np.mean([s.mean for s in r.top]):.3f} | {r.n_trained} | "
              f"{r.wall_s:.0f} | {', '.join(r.best.subset)} |")
    print(f"\ntotal wall {sum(r.wall_s for r in results.values()):.0f} s over {len(results)} k")
    plot_score_vs_k(results, plots / "eevee_score_vs_k.png",
                    title="GATE table (no leak): CV loss of the top 50 subsets per k")
    return 0


if __name__ == "__main__":
    sys.exit(main())
