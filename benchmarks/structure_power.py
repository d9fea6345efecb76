"""How large must per-task structure be for ``modelseek structure`` to see it, and what does a learner gain from it?

    python benchmarks/structure_power.py ../shared/data/ntcir19-mr/subtask-a [--trials 8] [--permutations 400]

Starts from the real ground truth (normalized F1 of the 70 NTCIR-19 training tasks) and plants a structure of
known size: ``y[t, m] += a * u_t * v_m`` (then every task is normalised to its best model again), where ``u`` is a
seeded standard-normal task feature and ``v`` is either *dense* (every model; centred, largest |v| = 1) or
*sparse* (two models: a domain specialist that gains where ``u`` is high and one that loses, or gains half as
much). Ranks and NTCIR grades are recomputed from the planted table. For each (kind, a) and each trial:

- the test: :func:`modelseek.core.stats.structure.residual_structure` on the planted ranks; "detected" = the first
  residual component's permutation p < 0.05;
- the learner: told the true feature ``u`` (the best case for any method that reads the task), it moves each
  model by its least-squares slope of utility (minus rank) on ``u`` over the training folds -- the form of the
  default's domain term -- and is scored in 5-fold task-level CV (3 fold seeds) by nDCG@5 against the avgrank
  prior of the same folds; "interval > 0" = the 95% bootstrap interval over tasks of the paired difference lies
  above 0, the acceptance rule of issue #21.

The first row is the real table (a = 0, nothing planted). A row where the learner's interval is often above 0
while the test rarely detects would mean the test misses learnable structure; the table shows where that
happens (sparse structure), which is why ``modelseek structure`` says so in its verdict.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np


def _grades(y, scheme):
    return scheme.gain_array(scheme.grade_array(y.ravel())).reshape(y.shape)


def _learner_gain(ranks, gains, feat, ids, tiers, seeds=(0, 1, 2), boot=1000):
    from modelseek.retrieval.data.folds import make_folds
    from modelseek.retrieval.metrics.ndcg import ideal_dcg, ndcg
    from modelseek.core.stats import paired_bootstrap

    n = len(ids)
    pos = {t: i for i, t in enumerate(ids)}
    idcg = ideal_dcg(gains, 5)
    u = -ranks
    out = np.zeros((len(seeds), n, 2))
    for r, sd in enumerate(seeds):
        for held in make_folds(ids, tiers, 5, sd):
            te = np.array([pos[t] for t in held])
            tr = np.setdiff1d(np.arange(n), te)
            prior = u[tr].mean(0)
            x = feat[tr] - feat[tr].mean()
            b = x @ (u[tr] - prior) / (x @ x)
            base = np.tile(prior, (len(te), 1))
            moved = base + (feat[te] - feat[tr].mean())[:, None] * b[None, :]
            out[r, te, 0] = ndcg(base, gains[te], 5, idcg[te])
            out[r, te, 1] = ndcg(moved, gains[te], 5, idcg[te])
    d = out.mean(0)
    cmp = paired_bootstrap(d[:, 1], d[:, 0], n_resamples=boot, seed=0)
    return cmp.mean_diff, cmp.low


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", help="NTCIR-19 subtask-a folder (ground-truth.csv)")
    ap.add_argument("--trials", type=int, default=8)
    ap.add_argument("--permutations", type=int, default=400)
    ap.add_argument("--sizes", type=float, nargs="+", default=[0.001, 0.002, 0.005, 0.01])
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    path = Path(args.root) / "ground-truth.csv"
    if not path.exists():
        print(f"skipped: {path} not found (the NTCIR-19 training ground truth lives in ../shared/data)",
              file=sys.stderr)
        return 1
    from scipy.stats import rankdata

    from modelseek.retrieval.data.truth import GradingScheme, GroundTruth
    from modelseek.core.stats.structure import residual_structure

    t0 = time.perf_counter()
    truth = GroundTruth.from_csv(path)
    ids = truth.task_ids
    tiers = [truth.criticality(t).value for t in ids]
    y0 = truth.matrix("normalized_f1").to_numpy(dtype=float)
    scheme = GradingScheme.NTCIR
    n, m = y0.shape
    rng = np.random.default_rng(args.seed)

    print(f"{n} tasks x {m} models; {args.trials} trials per row, {args.permutations} permutations per test")
    print("| structure | a | learner's nDCG@5 gain | learner's interval > 0 | test detects (p < 0.05) | median p |")
    print("|---|---|---|---|---|---|")
    s0 = residual_structure(y0, permutations=args.permutations, seed=0)
    print(f"| real table (nothing planted) | 0 | | | p = {s0.p_values[0]:.3f} | |")
    for kind in ("dense", "sparse"):
        for a in args.sizes:
            rows = []
            for trial in range(args.trials):
                u = rng.standard_normal(n)
                if kind == "dense":
                    v = rng.standard_normal(m)
                    v -= v.mean()
                    v /= np.abs(v).max()
                else:
                    v = np.zeros(m)
                    v[rng.choice(m, 2, replace=False)] = (1.0, -1.0) if trial % 2 else (1.0, 0.5)
                y = y0 + a * u[:, None] * v[None, :]
                y = y / y.max(axis=1, keepdims=True)
                ranks = rankdata(-y, axis=1, method="min").astype(float)
                s = residual_structure(y, permutations=args.permutations, seed=trial)
                gain, low = _learner_gain(ranks, _grades(y, scheme), u, ids, tiers)
                rows.append((gain, low > 0, s.p_values[0] < 0.05, s.p_values[0]))
            r = np.array(rows, dtype=float)
            print(f"| {kind} | {a:g} | {r[:, 0].mean():+.4f} | {r[:, 1].mean():.0%} | {r[:, 2].mean():.0%} | "
                  f"{np.median(r[:, 3]):.3f} |", flush=True)
    print(f"({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
