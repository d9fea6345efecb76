"""EEVEE's honest (nested) loss beside its in-sample loss and the four cheap baselines (issue #46).

For each table, meta-model, kind of outer split (random K-fold, or the strongest models held out: the
extrapolation case) and k: the search's in-sample loss (chosen and scored on the same splits), its honest loss
(chosen on the training models of each outer split, scored on its held-out models), and the same two figures
for the median random k-subset, the best of as many random subsets as the search scored, greedy forward
selection and facility location on benchmark correlation; the paired interval of search minus each baseline
over the outer splits, and the recommended method (the cheapest within the best's standard error that beats
the training means beyond the noise, or none; :meth:`modelseek.eevee.honest.Honest.recommendation`).
One :func:`modelseek.eevee.sweep` per (table, meta-model, split): the outer splits and the score caches are shared
by the k.

    python benchmarks/eevee_honest.py --out docs/results/eevee_honest.json --md out/eevee_honest.md

Defaults keep it to minutes on a shared 2-core machine: a reduced search (300 initial subsets, keep 20,
5 children, 3 generations; about 600 subsets scored per search), 4 outer splits, 1,000 random subsets per
split for the median (doubled up to 8,000 until the median's 90% interval is within 2%). NTCIR-19 (20 models
x 70 tasks, F1) with the ridge meta-model only.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from modelseek.retrieval.data.truth import GroundTruth  # noqa: E402
from modelseek.eevee import BatchedEvaluator, MetaConfig, NestedConfig, SearchConfig, Table, load_table, sweep  # noqa: E402
from modelseek.eevee.honest import BASELINES  # noqa: E402

SHARED = ROOT.parent / "shared" / "data"
GATE = SHARED / "gate" / "03032024-full.csv"
NTCIR = SHARED / "ntcir19-mr" / "subtask-a" / "ground-truth.csv"
SHORT = {"median_random": "random (median)", "best_random": "best random", "greedy": "greedy",
         "facility_location": "facility loc."}


def machine() -> str:
    cpu = ""
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next((line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")), "")
    except OSError:
        cpu = ""
    load = os.getloadavg() if hasattr(os, "getloadavg") else ()
    return (f"{platform.machine()} {cpu}, {len(os.sched_getaffinity(0))} usable cores, "
            f"load average {', '.join(f'{x:.1f}' for x in load)}")


def run_table(name: str, table: Table, models: list[str], splits: list[str], ks: list[int], cfg: SearchConfig,
              outer: int, random_subsets: int) -> list[dict]:
    rows = []
    for model in models:
        ev = BatchedEvaluator(table, MetaConfig(model=model, seed=cfg.seed))
        base = ev.baseline().mean
        for split in splits:
            t0, c0 = time.perf_counter(), time.process_time()
            res = sweep(table, ks, cfg, evaluator=ev,
                        nested=NestedConfig(outer_splits=outer, split_by=split, random_subsets=random_subsets))
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            for k, r in res.items():
                h = r.honest
                assert h is not None, r.honest_note
                row = {"table": name, "meta_model": model, "split_by": split, "k": k, "training_means": base,
                       "in_sample": r.best.mean, "subset": list(r.best.subset), "honest": h.to_dict(),
                       "baselines": h.baselines_dict(), "recommended": h.recommended,
                       "recommendation": h.recommendation(), "random_draws": h.random_dict(),
                       "honest_training_means": float(sum(h.training_means) / len(h.training_means)),
                       "sweep_wall_s": wall, "sweep_cpu_s": cpu}
                rows.append(row)
                print(f"{name} {model} {split} k={k}: in-sample {r.best.mean:.3f} honest {h.loss:.3f} | " +
                      " ".join(f"{m} {h.methods[m].in_sample:.3f}/{h.methods[m].mean:.3f}" for m in BASELINES) +
                      f" | {h.recommended}", flush=True)
            print(f"  ({wall:.0f} s wall, {cpu:.0f} s CPU)", flush=True)
    return rows


def draws(d) -> str:
    n = d["draws"]
    return (f"{min(n):,}{'' if len(set(n)) == 1 else '-' + format(max(n), ',')}: [{d['interval'][0]:.3f}, "
            f"{d['interval'][1]:.3f}]; [{d['quartiles'][0]:.2f}, {d['quartiles'][1]:.2f}]")


def ci(c) -> str:
    return f"[{c[0]:+.2f}, {c[1]:+.2f}]" if c else "-"


def markdown(rows: list[dict]) -> str:
    out = []
    keys = sorted({(r["table"], r["meta_model"], r["split_by"]) for r in rows},
                  key=lambda t: (t[0], t[1] != "ridge", t[2] != "random"))
    for table, model, split in keys:
        sel = [r for r in rows if (r["table"], r["meta_model"], r["split_by"]) == (table, model, split)]
        out.append(f"**{table}, {model} meta-model, outer splits: {split}** (training means: in-sample "
                   f"{sel[0]['training_means']:.3f}, honest {sel[0]['honest_training_means']:.3f}; "
                   f"sweep {sel[0]['sweep_wall_s']:.0f} s wall)\n")
        out.append("| k | EEVEE in-sample | **EEVEE honest** | " +
                   " | ".join(f"{SHORT[m]} in-sample / honest" for m in BASELINES) +
                   " | search − random [90% CI] | search − best random | search − greedy | search − facility | "
                   "random draws per split: median's 90% interval; quartiles | best (its SE) | recommended |")
        out.append("|---:|---:|---:|" + "---:|" * len(BASELINES) + "---|---|---|---|---|---|---|")
        for r in sorted(sel, key=lambda r: r["k"]):
            b = r["baselines"]
            out.append(f"| {r['k']} | {r['in_sample']:.3f} | **{r['honest']['loss']:.3f}** | " +
                       " | ".join(f"{b[m]['in_sample']:.3f} / {b[m]['loss']:.3f}" for m in BASELINES) + " | " +
                       " | ".join(f"{b[m]['search_minus_baseline']['diff']:+.3f} "
                                  f"{ci(b[m]['search_minus_baseline']['interval'])}"
                                  for m in ("median_random", "best_random", "greedy", "facility_location")) +
                       f" | {draws(r['random_draws'])} | {r['recommendation']['best']} "
                       f"{r['recommendation']['best_loss']:.3f} ({r['recommendation']['margin']:.3f}) | "
                       f"**{r['recommended']}** |")
        out.append("")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gate", default=str(GATE))
    ap.add_argument("--ntcir", default=str(NTCIR))
    ap.add_argument("--ks", default="2,3,5,8")
    ap.add_argument("--models", default="ridge,mlp")
    ap.add_argument("--splits", default="random,strongest")
    ap.add_argument("--outer-splits", type=int, default=4)
    ap.add_argument("--random-subsets", type=int, default=1000)
    ap.add_argument("--population", type=int, default=300)
    ap.add_argument("--keep", type=int, default=20)
    ap.add_argument("--children", type=int, default=5)
    ap.add_argument("--generations", type=int, default=3)
    ap.add_argument("--skip-ntcir", action="store_true")
    ap.add_argument("--skip-gate", action="store_true")
    ap.add_argument("--out", default="docs/results/eevee_honest.json")
    ap.add_argument("--md", default="out/eevee_honest.md")
    args = ap.parse_args()
    cfg = SearchConfig(population=args.population, keep=args.keep, children=args.children,
                       generations=args.generations, seed=0)
    ks = [int(k) for k in args.ks.split(",")]
    t0 = time.perf_counter()
    rows = [] if args.skip_gate else run_table("GATE", load_table(args.gate), args.models.split(","),
                                               args.splits.split(","), ks, cfg, args.outer_splits,
                                               args.random_subsets)
    if not args.skip_ntcir and Path(args.ntcir).exists():
        nt = Table.from_ground_truth(GroundTruth.from_csv(args.ntcir))
        rows += run_table("NTCIR-19", nt, ["ridge"], args.splits.split(","), ks, cfg, args.outer_splits,
                          args.random_subsets)
    total = time.perf_counter() - t0
    info = {"machine": machine(), "wall_s": total, "search": cfg.__dict__, "outer_splits": args.outer_splits,
            "random_subsets": args.random_subsets, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"info": info, "rows": rows}, indent=1))
    md = markdown(rows) + f"\nMachine: {info['machine']}; total {total / 60:.1f} min wall ({info['date']}).\n"
    Path(args.md).parent.mkdir(parents=True, exist_ok=True)
    Path(args.md).write_text(md)
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
