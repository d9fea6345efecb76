"""Learned fusion against plain RRF on the NTCIR-19 Subtask A training tasks: the avgrank prior fused with a
frozen-feature-like run, with the global-only grid and with the per-task grid.

    python benchmarks/fusion_ntcir.py ../shared/data/ntcir19-mr/subtask-a [--noise 0.03] [--seeds 0 1 2]
    python benchmarks/fusion_ntcir.py ../shared/data/ntcir19-mr/subtask-a --noise-by size --noise 0.05
    python benchmarks/fusion_ntcir.py ../shared/data/ntcir19-mr/subtask-a --noise-by classes --noise 0.05

Runs (every one cross-fitted: a task's scores never come from its own ground truth):
- ``avgrank``: the organisers' prior, from ``modelseek bench``'s 5-fold CV (the held-out rankings);
- ``estimator``: a generated frozen-feature score per (task, model): the model's normalized F1 plus seeded
  Gaussian noise of SD ``--noise`` (the candidates' weights cannot be loaded offline, so real LogME scores are not
  available; the noise sets how informative the run is; 0.03 gives a run a little better than the prior alone).
  With ``--noise-by size`` (generated, not measured) the noise at task ``t`` is
  ``noise * sqrt(median size / size_t)`` -- an estimator less reliable on small tasks, as one fitted on the
  task's training rows would be; with ``--noise-by classes`` it is ``noise * sqrt(classes_t / median classes)``
  -- less reliable the more classes the task has. (The NTCIR-19 training tasks all have 788-800 training rows,
  so their size cannot tell them apart; their number of classes runs from 2 to 17.)
Task features are real: ``size`` (training rows) and ``classes`` (number of classes) read from the task folders
(``task-data/train-tasks``) by :func:`modelseek.retrieval.fusion.features.task_features_from_tasks`.

Each seed draws a new estimator run and new folds. Learned fusion (default selection ``vs-rrf``) is
cross-validated over tasks by :func:`modelseek.retrieval.fusion.optimize_fusion`, once with the global-only grid
(``per_task=False``) and once with the per-task grid (weights gated by each run's spread, the task size and the
number of classes); the table gives nDCG@5 on held-out tasks and learned − plain RRF with its 95% bootstrap
interval, per seed and pooled (per task, the mean over seeds; bootstrap over tasks).
"""

from __future__ import annotations

import argparse
import time

import numpy as np


NOISE_POWER = {"size": -0.5, "classes": 0.5}   # sd = noise * (x / median x) ** power


def _estimator(truth, nf1, noise: float, feature: dict | None, power: float, seed: int):
    from modelseek.retrieval.data.run import Run

    rng = np.random.default_rng(seed)
    sd = np.full((len(nf1.index), 1), noise)
    if feature is not None:
        x = np.array([feature.get(str(t), np.nan) for t in nf1.index])
        med = np.nanmedian(x)
        sd = noise * (np.where(np.isnan(x), med, x) / med)[:, None] ** power
    noisy = nf1 + rng.normal(0.0, 1.0, nf1.shape) * sd
    return Run.from_scores({str(t): {str(m): float(noisy.loc[t, m]) for m in nf1.columns} for t in nf1.index},
                           "estimator")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root")
    ap.add_argument("--noise", type=float, default=0.03)
    ap.add_argument("--noise-by", choices=sorted(NOISE_POWER),
                    help="the estimator's noise follows 1/sqrt(task size) or sqrt(number of classes)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--selection", default="vs-rrf")
    args = ap.parse_args()

    from modelseek.retrieval.bench import cross_validate
    from modelseek.retrieval.data.pool import load_pool
    from modelseek.retrieval.data.truth import GroundTruth
    from modelseek.retrieval.fusion import optimize_fusion
    from modelseek.retrieval.fusion.features import task_features_from_tasks
    from modelseek.retrieval.fusion.learned import LEARNED, PLAIN_RRF
    from modelseek.core.stats.bootstrap import paired_bootstrap

    truth = GroundTruth.from_csv(f"{args.root}/ground-truth.csv")
    pool = load_pool(f"{args.root}/models.csv")
    t0 = time.perf_counter()
    feats = task_features_from_tasks(args.root)
    summary = ", ".join(f"{k} on {len(v)} tasks (median {np.median(list(v.values())):g})"
                        for k, v in feats.values.items())
    print(f"task features from {args.root}: {summary} ({time.perf_counter() - t0:.1f} s)")
    prior = cross_validate("avgrank", truth, pool, folds=5, seed=0).runs[0].with_id("avgrank")
    nf1 = truth.matrix("normalized_f1")
    diffs: dict[str, list] = {"global": [], "per-task": []}
    print(f"{len(truth.task_ids)} tasks; estimator = normalized F1 + N(0, {args.noise}^2)"
          f"{f' x ({args.noise_by} / median)^{NOISE_POWER[args.noise_by]:g}' if args.noise_by else ''}; "
          f"selection {args.selection}\n")
    print("| seed | grid | learned | plain RRF | avgrank | estimator | learned − plain RRF [95%] | final fusion | "
          "fold choices |")
    print("|---|---|---|---|---|---|---|---|---|")
    for seed in args.seeds:
        est = _estimator(truth, nf1, args.noise, feats.values[args.noise_by] if args.noise_by else None,
                         NOISE_POWER.get(args.noise_by or "", 0.0), seed)
        for grid, per_task in (("global", False), ("per-task", True)):
            t = time.perf_counter()
            lf = optimize_fusion([prior, est], truth, folds=5, seed=seed, selection=args.selection, features=feats,
                                 per_task=per_task)
            wall = time.perf_counter() - t
            pt = lf.cv.per_topic
            c = paired_bootstrap(pt[LEARNED].to_numpy(float), pt[PLAIN_RRF].to_numpy(float), 1000, seed=seed)
            diffs[grid].append((pt[LEARNED] - pt[PLAIN_RRF]).to_numpy(float))
            chosen = "; ".join(f.fusion.describe() for f in lf.cv.folds)
            print(f"| {seed} | {grid} ({lf.info['grid_size']} fusions, {wall:.0f} s) | {pt[LEARNED].mean():.3f} | "
                  f"{pt[PLAIN_RRF].mean():.3f} | {pt['avgrank'].mean():.3f} | {pt['estimator'].mean():.3f} | "
                  f"{c.mean_diff:+.4f} [{c.low:+.4f}, {c.high:+.4f}] | {lf.fusion.describe()} | {chosen} |")
    print()
    for grid, ds in diffs.items():
        d = np.mean(ds, axis=0)
        boot = np.random.default_rng(0)
        bs = [d[boot.integers(0, len(d), len(d))].mean() for _ in range(1000)]
        print(f"pooled over seeds, {grid} grid, learned − plain RRF: {d.mean():+.4f} "
              f"[{np.percentile(bs, 2.5):+.4f}, {np.percentile(bs, 97.5):+.4f}]")


if __name__ == "__main__":
    main()
