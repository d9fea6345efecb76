"""Learned fusion against each input run and plain RRF, on a generated model zoo whose truth is known (or on
any runs + ground truth you give it, e.g. a published zoo's records).

    PYTHONPATH=src python benchmarks/fusion_zoo.py --tasks 100 --models 20 --zoos 3 --folds 5 --seed 0
    PYTHONPATH=src python benchmarks/fusion_zoo.py --tasks 100 --zoos 3 --size-noise --est-a-noise 1.5
    PYTHONPATH=src python benchmarks/fusion_zoo.py --ground-truth zoo.csv --any-score --runs prior.txt logme.txt

The generated zoo (``modelseek.testing.fusion_zoo``): a true score per (task, model) from a general model
quality and a task-specific fit; a noisy ``prior`` (the model's mean true score on the other tasks: knows the
quality, blind to the fit), and two noisy ``estimator`` runs on their own scales (one also failing on a few
candidates). Each zoo is cross-validated over tasks (seeded folds; every fold's fusion chosen on the other
folds' tasks only). Prints Markdown tables for docs/results/fusion.md: nDCG@5 on held-out tasks, mean
[95% bootstrap interval over tasks], and the paired difference learned − each system [95%].

Every zoo is learned twice: with the global-only grid (the same weights for every task) and with the per-task
grid (also weights gated by each run's spread and by the task size; :mod:`modelseek.retrieval.fusion.gates`); the last
table gives learned − plain RRF [95%] of both, per zoo and pooled over the zoos' tasks. The task sizes are
generated (``zoo_task_features``); with ``--size-noise`` est_a's noise is proportional to 1/sqrt(task size)
(generated, to show a zoo where the best weights depend on the task), otherwise the sizes are uninformative.
"""

from __future__ import annotations

import argparse
import platform
import time
from collections import Counter


def _table(cv, n_resamples: int, seed: int) -> list[str]:
    from modelseek.retrieval.fusion.learned import LEARNED

    summ = cv.summary(n_resamples, seed=seed)
    lines = ["| system | nDCG@5 [95%] | learned − system [95%] | P(learned better) |", "|---|---|---|---:|"]
    for name, row in summ.iterrows():
        diff = "—" if name == LEARNED else f"{row['diff']:+.3f} [{row['diff_low']:+.3f}, {row['diff_high']:+.3f}]"
        pb = "" if name == LEARNED else f"{row['p_better']:.3f}"
        label = f"**{name}**" if name == LEARNED else name
        lines.append(f"| {label} | {row['mean']:.3f} [{row['low']:.3f}, {row['high']:.3f}] | {diff} | {pb} |")
    return lines


def _versus(versus: dict, n_resamples: int, seed: int) -> None:
    """learned − plain RRF [95%] of the global-only and the per-task grid, per case and pooled over their tasks."""
    import numpy as np

    from modelseek.retrieval.fusion.learned import LEARNED, PLAIN_RRF
    from modelseek.core.stats.bootstrap import paired_bootstrap

    print("## learned − plain RRF: global-only grid vs per-task grid\n")
    print("| data | grid | learned | plain RRF | learned − plain RRF [95%] | final fusion |\n"
          "|---|---|---:|---:|---|---|")
    pooled: dict[str, tuple[list, list]] = {}
    for grid, results in versus.items():
        for title, lf in results:
            pt = lf.cv.per_topic
            a, b = pt[LEARNED].to_numpy(float), pt[PLAIN_RRF].to_numpy(float)
            c = paired_bootstrap(a, b, n_resamples, seed=seed)
            print(f"| {title} | {grid} | {a.mean():.3f} | {b.mean():.3f} | {c.mean_diff:+.4f} [{c.low:+.4f}, "
                  f"{c.high:+.4f}] | {lf.fusion.describe()} |")
            pooled.setdefault(grid, ([], []))[0].append(a)
            pooled[grid][1].append(b)
    if len(next(iter(versus.values()))) > 1:
        for grid, (a, b) in pooled.items():
            x, y = np.concatenate(a), np.concatenate(b)
            c = paired_bootstrap(x, y, n_resamples, seed=seed)
            print(f"| pooled ({len(x)} tasks) | {grid} | {x.mean():.3f} | {y.mean():.3f} | "
                  f"{c.mean_diff:+.4f} [{c.low:+.4f}, {c.high:+.4f}] | |")
    print()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=100)
    ap.add_argument("--models", type=int, default=20)
    ap.add_argument("--zoos", type=int, default=3, help="generated zoos (seeds seed, seed+1, ...)")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--step", type=float, default=0.1)
    ap.add_argument("--resamples", type=int, default=2000)
    ap.add_argument("--selection", default="vs-rrf", choices=["vs-rrf", "1se", "best"],
                    help="how a fold chooses its fusion")
    ap.add_argument("--ground-truth", help="use these runs and this ground truth instead of generated zoos")
    ap.add_argument("--any-score", action="store_true", help="the ground truth holds any higher-is-better score")
    ap.add_argument("--runs", nargs="+", help="run files (with --ground-truth)")
    ap.add_argument("--plot", help="bar chart of the first zoo's figures (PNG)")
    ap.add_argument("--size-noise", action="store_true",
                    help="generated zoo whose est_a noise is proportional to 1/sqrt(task size)")
    ap.add_argument("--est-a-noise", type=float, default=0.8, help="est_a's noise (at the median task size)")
    args = ap.parse_args()

    import numpy as np

    from modelseek.retrieval.data.run import read_runs
    from modelseek.retrieval.data.truth import GroundTruth
    from modelseek.retrieval.fusion import optimize_fusion
    from modelseek.retrieval.fusion.learned import LEARNED
    from modelseek.testing.fusion_zoo import make_fusion_zoo, zoo_task_features

    print(f"machine: {platform.machine()} {platform.processor() or ''}, python {platform.python_version()}\n")
    cases = []
    if args.ground_truth:
        if not args.runs:
            ap.error("--ground-truth needs --runs")
        truth = GroundTruth.from_csv(args.ground_truth, any_score=args.any_score)
        runs = [r for p in args.runs for r in read_runs(p).values()]
        cases.append((f"{args.ground_truth}", truth, runs, None))
    else:
        for z in range(args.zoos):
            truth, runs = make_fusion_zoo(args.tasks, args.models, args.seed + z, est_a_noise=args.est_a_noise,
                                          size_noise=args.size_noise)
            cases.append((f"generated zoo seed {args.seed + z} ({args.tasks} tasks x {args.models} models"
                          f"{', est_a noise ∝ 1/sqrt(size)' if args.size_noise else ''})",
                          truth, list(runs.values()), zoo_task_features(args.tasks, args.seed + z)))
    diffs: dict[str, list[float]] = {}
    chosen = Counter()
    first = None
    versus: dict[str, list[tuple[str, object]]] = {"global": [], "per-task": []}
    for title, truth, runs, feats in cases:
        t = time.perf_counter()
        glob = optimize_fusion(runs, truth, folds=args.folds, seed=args.seed, step=args.step,
                               selection=args.selection, features=feats, per_task=False)
        versus["global"].append((title, glob))
        learned = optimize_fusion(runs, truth, folds=args.folds, seed=args.seed, step=args.step,
                                  selection=args.selection, features=feats)
        versus["per-task"].append((title, learned))
        wall = time.perf_counter() - t
        cv = learned.cv
        first = first or (title, cv)
        print(f"## {title}\n")
        print(f"{args.folds}-fold CV over tasks, seed {args.seed}, selection {args.selection}; per-task grid of "
              f"{learned.info['grid_size']} fusions (global-only: {glob.info['grid_size']}; step {args.step}); "
              f"both searches + CVs {wall:.1f} s\n")
        print("\n".join(_table(cv, args.resamples, args.seed)))
        print("\nper fold (nDCG@5 on its held-out tasks; the fusion chosen on the other folds):\n")
        pf = cv.per_fold()
        print("| fold | n | " + " | ".join(cv.systems) + " | chosen |")
        print("|---:|---:|" + "---:|" * len(cv.systems) + "---|")
        for f in cv.folds:
            row = pf.loc[f.fold]
            print(f"| {f.fold} | {int(row['n'])} | " + " | ".join(f"{row[s]:.3f}" for s in cv.systems) +
                  f" | {f.fusion.describe()} |")
            chosen[f.fusion.method.value + "/" + f.fusion.norm.value] += 1
        print(f"\nfinal fusion (chosen on all {len(learned.fitted_topics)} tasks): {learned.fusion.describe()}\n")
        summ = cv.summary(args.resamples, seed=args.seed)
        for name in cv.systems:
            if name != LEARNED:
                diffs.setdefault(name, []).append(float(summ.loc[name, "diff"]))
    if len(cases) > 1:
        print(f"## over {len(cases)} zoos\n")
        print("| learned − | mean of the zoos' differences | min | max |\n|---|---:|---:|---:|")
        for name, d in diffs.items():
            print(f"| {name} | {np.mean(d):+.3f} | {min(d):+.3f} | {max(d):+.3f} |")
        print("\nfold choices (method/normalisation): " + ", ".join(f"{k} {v}" for k, v in chosen.most_common()))
    _versus(versus, args.resamples, args.seed)
    if args.plot and first is not None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        title, cv = first
        summ = cv.summary(args.resamples, seed=args.seed)
        fig, ax = plt.subplots(figsize=(6.4, 3.2))
        y = np.arange(len(summ))
        ax.barh(y, summ["mean"], xerr=[summ["mean"] - summ["low"], summ["high"] - summ["mean"]],
                color=["tab:green" if n == LEARNED else "tab:gray" for n in summ.index], capsize=3)
        ax.set_yticks(y, summ.index)
        ax.invert_yaxis()
        ax.set_xlabel("nDCG@5 on held-out tasks [95% bootstrap interval]")
        ax.set_title(title, fontsize=9)
        fig.tight_layout()
        fig.savefig(args.plot, dpi=120)
        print(f"\nwrote {args.plot}")


if __name__ == "__main__":
    main()
