"""``modelseek bench``: task-level k-fold cross-validation of ranking methods on a task set."""

from __future__ import annotations

import argparse

from ..core import FOLDER_READS, parse_overrides
from ..retrieval import describe_methods, write_runs
from ._common import declare_paths
from ._common import OUTPUT_FILE, POSITIVE_INT, SAMPLE_COUNT, SEED, add_scheme, int_at_least, print_json


def register(sub) -> None:
    p = sub.add_parser("bench", help="cross-validate ranking methods on a task set with ground truth",
                       description="Task-level k-fold CV (folds stratified by criticality, seeded): each method "
                                   "is fitted on the training folds only and ranks the held-out tasks. Prints "
                                   "per-tier nDCG@1/3/5 and MRR with bootstrap intervals.")
    p.add_argument("path", help="the data to cross-validate on: the organisers' Subtask A repository root, its data/ "
                                "folder, a generated layout (ground-truth.csv, tasks.csv, task-data/) or the "
                                "ground-truth CSV itself")
    p.add_argument("-m", "--method", nargs="+", default=["avgrank"],
                   help="method name(s); an artifact is refitted on each fold with its parameters. "
                        f"{describe_methods()}")
    p.add_argument("--ground-truth", "-g", help="ground-truth CSV (default: ground-truth.csv in PATH or PATH/data)")
    p.add_argument("--pool", help="pool the ground truth's models come from (default: PATH/models.csv or ntcir19)")
    p.add_argument("--folds", type=int_at_least(2), default=5)
    p.add_argument("--seed", type=SEED, default=0)
    p.add_argument("--repeats", type=POSITIVE_INT, default=1,
                   help="repeated CV with seeds seed..seed+repeats-1")
    p.add_argument("--baseline", help="paired bootstrap of each method against this one (e.g. avgrank)")
    p.add_argument("--bootstrap", type=SAMPLE_COUNT, default=1000,
                   help="bootstrap resamples for intervals")
    add_scheme(p)
    p.add_argument("--run-out", type=OUTPUT_FILE, help="write the cross-fitted run(s) of the first repeat to this file")
    p.add_argument("--plot", type=OUTPUT_FILE, help="write a PNG of nDCG@5 per tier with intervals for every method")
    p.add_argument("-p", "--param", action="append", metavar="KEY=VALUE",
                   help="parameter for every method that accepts it, e.g. -p encoder=hashing (repeatable)")
    p.add_argument("--allow-failures", action="store_true",
                   help="frozen-feature methods: leave candidates that cannot be downloaded, loaded or featurised "
                        "out of the held-out rankings (they count as not retrieved) instead of stopping with "
                        "exit 1 naming every failure")
    p.add_argument("--json", action="store_true")
    declare_paths(p, inputs={"path": FOLDER_READS, "ground_truth": FOLDER_READS, "pool": (), "method": ()})
    p.set_defaults(func=run, map_params=True)  # library errors name parameters: shown as flags


def run(args: argparse.Namespace) -> int:
    from ..retrieval import bench as library  # lazy: pandas  (the module: its function has the module's name)

    # the library's bench: PATH read by resolve_folder (ROOT, ROOT/data, a layout or the CSV), its pool, the
    # card pool of a card-reading method, the baseline's comparison
    res = library.bench(args.path, args.method, ground_truth=args.ground_truth, pool=args.pool, folds=args.folds,
                seed=args.seed, repeats=args.repeats, baseline=args.baseline, n_resamples=args.bootstrap,
                scheme=args.scheme, params=parse_overrides(args.param or [], "--param"),
                allow_failures=args.allow_failures, progress=not args.json)
    if args.run_out:
        write_runs(args.run_out, [res.results[m].runs[0] for m in res.methods])
    if args.plot:
        from ..core import plot_tier_intervals  # lazy: pandas

        plot_tier_intervals(res.summaries, "ndcg@5", args.plot)
    doc = res.to_json()
    out = doc["methods"]
    if args.json:
        print_json(doc)
        return 0
    metrics = res.results[res.methods[0]].metrics
    print(f"{len(res.truth.task_ids)} tasks, {len(res.pool)} candidates, {args.folds}-fold CV, seed {args.seed}, "
          f"repeats {args.repeats}, grading {args.scheme}; mean [95% bootstrap interval]")
    header = f"{'method':<12} {'tier':<7} {'n':>3}  " + "  ".join(f"{m:<21}" for m in metrics)
    print(header)
    print("-" * len(header))
    for m, entry in out.items():
        for tier, vals in entry["tiers"].items():
            cells = "  ".join(f"{vals[k]['mean']:.3f} [{vals[k]['low']:.3f},{vals[k]['high']:.3f}]".ljust(21)
                              for k in metrics)
            print(f"{m:<12} {tier:<7} {vals['n']:>3}  {cells}")
        if entry["dropped_tasks"]:
            d = entry["dropped_tasks"]
            print(f"{'':<12} note: {len(d)} task(s) left out, no candidate could be scored: {', '.join(d[:10])}"
                  f"{' ...' if len(d) > 10 else ''}")
        if "vs_baseline" in entry:
            a = entry["vs_baseline"]["all"]
            print(f"{'':<12} vs {args.baseline} nDCG@5: {a['mean_diff']:+.3f} [{a['low']:+.3f}, {a['high']:+.3f}] "
                  f"P(better)={a['p_better']:.2f}")
    if args.run_out:
        print(f"wrote cross-fitted run(s) to {args.run_out}")
    if args.plot:
        print(f"wrote plot to {args.plot}")
    return 0
