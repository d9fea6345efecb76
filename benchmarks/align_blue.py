"""Blue solver on a generated CKA matrix with planted clusters, against random subsets and greedy (same run).

The matrix is a real linear-CKA matrix (``cka_matrix``) of generated representations: 100 "models" of n
stimuli, in clusters that share a latent factor (models of one cluster agree, models of different clusters do
not). Planted: one cluster of exactly 20 models with moderate agreement (the best 20-subset), a decoy cluster of
6 near-duplicates (CKA about 0.97: greedy starts from its best pair and is trapped), clusters of 8-15 models
(too small for a 20-subset) and singletons. The script checks that the planted cluster is the optimum (the
upper bound of ``blue_upper_bound`` is reached) and that the solver finds it for every seed.

A second, small instance (24 models, k = 6, C(24, 6) = 134,596 subsets) is solved exhaustively as well, to
compare the heuristic's answer and time with exact search.

Usage::

    python benchmarks/align_blue.py            # 100 models, n = 500, 5 seeds
    python benchmarks/align_blue.py --quick    # n = 200, 2 seeds (a smoke run)
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from modelseek.align.linear_cka import cka_matrix  # noqa: E402
from modelseek.align.solvers import blue_objective, blue_upper_bound, greedy_blue, optimize_blue  # noqa: E402
from modelseek.align.testing import planted_blue_features as planted_features  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--n", type=int, default=None, help="stimuli (default 500; --quick 200)")
    ap.add_argument("--seeds", type=int, default=None, help="solver seeds (default 5; --quick 2)")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()
    n = args.n or (200 if args.quick else 500)
    seeds = args.seeds or (2 if args.quick else 5)
    print(f"machine: {platform.machine()} {platform.processor() or ''} python {platform.python_version()}; "
          f"numpy {np.__version__}")

    t = time.perf_counter()
    feats, planted, labels = planted_features(n)
    C = cka_matrix(feats)
    t_matrix = time.perf_counter() - t
    M, k = C.shape[0], len(planted)
    within = C[np.ix_(planted, planted)][np.triu_indices(k, 1)]
    decoy = np.flatnonzero(labels == 1)
    print(f"\n100-model CKA matrix (n = {n} stimuli) in {t_matrix:.2f} s; planted cluster of {k}: CKA "
          f"{within.min():.3f}..{within.max():.3f}; decoy of {len(decoy)}: "
          f"{C[np.ix_(decoy, decoy)][np.triu_indices(len(decoy), 1)].mean():.3f}")

    rng = np.random.default_rng(0)
    t = time.perf_counter()
    rand = [blue_objective(C, rng.choice(M, k, replace=False)) for _ in range(1000)]
    t_rand = (time.perf_counter() - t) / 1000
    t = time.perf_counter()
    G = greedy_blue(C, k)
    t_greedy = time.perf_counter() - t
    bound = blue_upper_bound(C, k)
    planted_obj = blue_objective(C, planted)
    rows = [("random (mean of 1000)", float(np.mean(rand)), False, t_rand),
            ("random (best of 1000)", float(np.max(rand)), False, t_rand * 1000),
            ("greedy", blue_objective(C, G), sorted(G) == planted, t_greedy)]
    found = []
    for seed in range(seeds):
        t = time.perf_counter()
        res = optimize_blue(C, k, restarts=20, seed=seed)
        sec = time.perf_counter() - t
        sel = sorted(int(x) for x in res.selection)
        found.append({"seed": seed, "score": res.score, "planted": sel == planted, "seconds": sec,
                      "proved_optimal": res.meta["proved_optimal"], **{f"phase_{p}": v for p, v in
                                                                        res.baselines.items()}})
        rows.append((f"modelseek solver (seed {seed})", res.score, sel == planted, sec))
    print(f"\nk = {k} of M = {M}; planted subset objective {planted_obj:.6f}; upper bound {bound:.6f} "
          f"({'reached by the planted subset: it is the optimum' if planted_obj >= bound - 1e-9 else 'not tight'})")
    print(f"{'method':<28} {'mean pairwise CKA':>18} {'planted?':>9} {'seconds':>9}")
    for name, v, ok, sec in rows:
        print(f"{name:<28} {v:>18.6f} {('yes' if ok else 'no'):>9} {sec:>9.3f}")

    # exact search where it is feasible
    feats_s, planted_s, _ = planted_features(n, seed=1, M=24, k=6)
    Cs = cka_matrix(feats_s)
    t = time.perf_counter()
    heur = optimize_blue(Cs, 6, seed=0, exhaustive_limit=0)
    t_heur = time.perf_counter() - t
    t = time.perf_counter()
    exact = optimize_blue(Cs, 6, seed=0)
    t_exact = time.perf_counter() - t
    print(f"\nsmall instance: 24 models, k = 6 ({math.comb(24, 6):,} subsets)")
    print(f"  heuristic {heur.score:.6f} in {t_heur:.3f} s; exhaustive {exact.baselines['exhaustive']:.6f} in "
          f"{t_exact:.3f} s (including the heuristic); same subset: {heur.selection == exact.selection}; "
          f"planted found: {sorted(int(x) for x in exact.selection) == planted_s}")

    ok = all(f["planted"] for f in found) and planted_obj >= bound - 1e-9 and heur.selection == exact.selection
    ok = ok and sorted(int(x) for x in exact.selection) == planted_s
    ok = ok and all(f["score"] > rows[2][1] and f["score"] > rows[1][1] for f in found)
    out = {"n": n, "models": M, "k": k, "matrix_seconds": t_matrix, "upper_bound": bound,
           "planted_objective": planted_obj, "random_mean": rows[0][1], "random_best_of_1000": rows[1][1],
           "greedy": rows[2][1], "greedy_planted": rows[2][2], "solver": found,
           "small": {"heuristic": heur.score, "exhaustive": exact.baselines["exhaustive"],
                     "heuristic_seconds": t_heur, "exhaustive_seconds": t_exact,
                     "same": heur.selection == exact.selection}, "ok": ok}
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    print("\nall checks passed" if ok else "\nCHECK FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
