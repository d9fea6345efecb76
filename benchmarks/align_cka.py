"""Benchmarks of modelseek.align, each against a baseline measured in the same run.

1. CKA matrix of many models: ``cka_matrix`` (stacked products) versus computing every pair separately with
   n x n Gram matrices (K = X X^T, L = Y Y^T, centre both, <Kc, Lc> / (||Kc|| ||Lc||): the common public
   approach). Same values to 1e-8 is checked on every pair.
2. Red solver on a generated catalog: random selections vs screening top-m vs greedy vs annealing; and the
   cost of one incremental swap evaluation vs a fresh evaluation of the same set.

Usage::

    python benchmarks/align_cka.py                 # full: 20 models, n = 10,000 (the baseline takes minutes)
    python benchmarks/align_cka.py --quick         # smaller sizes, for a smoke run
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from modelseek.align.linear_cka import choose_route, cka_matrix  # noqa: E402
from modelseek.align.solvers import RedState, _GramSource, optimize_red, red_objective  # noqa: E402
from modelseek.align.testing import make_features  # noqa: E402


def pairwise_gram_baseline(feats: list[np.ndarray], pairs: list[tuple[int, int]] | None = None) -> np.ndarray:
    """The per-pair approach: for each pair build both n x n Grams, centre them, take the normalised inner
    product (written here from the formula; every pair recomputes its Grams, as per-pair code does).
    ``pairs``: only these (others stay NaN)."""
    m = len(feats)
    C = np.full((m, m), np.nan)
    np.fill_diagonal(C, 1.0)
    todo = pairs if pairs is not None else [(i, j) for i in range(m) for j in range(i + 1, m)]
    for k, (i, j) in enumerate(todo):
        print(f"\r  baseline pair {k + 1}/{len(todo)}", end="", file=sys.stderr, flush=True)
        K = feats[i] @ feats[i].T
        L = feats[j] @ feats[j].T
        K -= K.mean(0, keepdims=True)
        K -= K.mean(1, keepdims=True)
        L -= L.mean(0, keepdims=True)
        L -= L.mean(1, keepdims=True)
        C[i, j] = C[j, i] = float(np.vdot(K, L) / (np.linalg.norm(K) * np.linalg.norm(L)))
    return C


def model_features(n: int, dims: list[int], seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n, 32))
    out = []
    for d in dims:
        W = rng.normal(size=(32, d))
        out.append(np.maximum(Z @ W + rng.normal(scale=rng.uniform(0.5, 4), size=(n, d)), 0))
    return out


def bench_matrix(n: int, dims: list[int], label: str, baseline_pairs: int | None = None) -> dict:
    """Time both; with ``baseline_pairs`` the baseline runs on that many seeded random pairs and its time is
    scaled to all pairs (marked 'est.')."""
    feats = model_features(n, dims)
    route = choose_route(n, dims).value
    t = time.perf_counter()
    fast = cka_matrix(feats)
    t_fast = time.perf_counter() - t
    m = len(dims)
    allpairs = [(i, j) for i in range(m) for j in range(i + 1, m)]
    pairs = None
    if baseline_pairs is not None and baseline_pairs < len(allpairs):
        rng = np.random.default_rng(0)
        pairs = [allpairs[k] for k in sorted(rng.choice(len(allpairs), baseline_pairs, replace=False))]
    t = time.perf_counter()
    base = pairwise_gram_baseline(feats, pairs)
    t_base = (time.perf_counter() - t) * (len(allpairs) / len(pairs) if pairs else 1)
    print(file=sys.stderr)
    done = ~np.isnan(base)
    diff = float(np.max(np.abs(fast[done] - base[done])))
    label += f" (baseline on {len(pairs)} pairs, time scaled to {len(allpairs)}: est.)" if pairs else ""
    return {"label": label, "models": len(dims), "n": n, "dims": f"{min(dims)}-{max(dims)} (sum {sum(dims)})",
            "route": route, "fast_s": t_fast, "base_s": t_base, "speedup": t_base / t_fast, "max_diff": diff}


def bench_solver(n: int, dims, m: int, steps: int, seeds: list[int]) -> list[dict]:
    rows = []
    for seed in seeds:
        feats = make_features(n, dims=dims, seed=seed)
        t = time.perf_counter()
        res = optimize_red(feats, m, steps=steps, seed=seed)
        rows.append({"seed": seed, **res.baselines, "seconds": time.perf_counter() - t,
                     "accepted": res.meta["accepted"]})
    return rows


def bench_step(n: int, dims, m: int, reps: int = 200) -> dict:
    feats = make_features(n, dims=dims, seed=0)
    src = _GramSource([F - F.mean(0) for F in feats], 1 << 30)
    rng = np.random.default_rng(0)
    st = RedState(src, rng.choice(n, m, replace=False))
    free = np.setdiff1d(np.arange(n), st.S)
    t = time.perf_counter()
    for _ in range(reps):
        st.swap_delta(int(rng.integers(m)), int(free[rng.integers(len(free))]))
    inc = (time.perf_counter() - t) / reps
    t = time.perf_counter()
    for _ in range(max(5, reps // 20)):
        S = st.S.copy()
        S[int(rng.integers(m))] = int(free[rng.integers(len(free))])
        red_objective(feats, S)
    fresh = (time.perf_counter() - t) / max(5, reps // 20)
    return {"m": m, "models": len(dims), "incremental_ms": inc * 1e3, "fresh_ms": fresh * 1e3,
            "speedup": fresh / inc}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--baseline-pairs", type=int, help="run the per-pair baseline on this many random pairs and "
                                                        "scale its time (default: all pairs)")
    args = ap.parse_args()
    print(f"# machine: {platform.machine()} {platform.processor() or ''}, python {platform.python_version()}, "
          f"numpy {np.__version__}")
    base_dims = [64, 128, 192, 256, 384, 512]
    if args.quick:
        cases = [(2000, [base_dims[i % 6] for i in range(8)], "8 models, n=2,000"),
                 (300, [768 + 64 * (i % 5) for i in range(8)], "8 wide models, n=300")]
    else:
        cases = [(10_000, [base_dims[i % 6] for i in range(20)], "20 models, n=10,000"),
                 (1_000, [768 + 256 * (i % 6) for i in range(20)], "20 wide models, n=1,000")]
    print("\n## CKA matrix: stacked products vs per-pair Gram matrices\n")
    print("| case | feature dims | route | cka_matrix (s) | per-pair Grams (s) | speed-up | max abs diff |")
    print("|---|---|---|---:|---:|---:|---:|")
    for n, dims, label in cases:
        r = bench_matrix(n, dims, label, args.baseline_pairs)
        print(f"| {r['label']} | {r['dims']} | {r['route']} | {r['fast_s']:.2f} | {r['base_s']:.1f} | "
              f"{r['speedup']:.0f}x | {r['max_diff']:.1e} |", flush=True)

    n, m, steps = (1500, 60, 1500) if args.quick else (5000, 200, 10000)
    dims = (8, 16, 32, 12, 20, 10, 24, 6, 14, 18)
    print(f"\n## Red solver: {len(dims)} models, catalog of {n} generated stimuli, choose m = {m} "
          f"({steps} annealing steps)\n")
    print("| seed | random | screening top-m | greedy | annealing | time (s) |")
    print("|---:|---:|---:|---:|---:|---:|")
    rows = bench_solver(n, dims, m, steps, [0, 1, 2])
    for r in rows:
        print(f"| {r['seed']} | {r['random']:.4f} | {r['screening_top']:.4f} | {r['greedy']:.4f} | "
              f"{r['annealing']:.4f} | {r['seconds']:.1f} |")
    mean = {k: np.mean([r[k] for r in rows]) for k in ("random", "screening_top", "greedy", "annealing")}
    print(f"| mean | {mean['random']:.4f} | {mean['screening_top']:.4f} | {mean['greedy']:.4f} | "
          f"{mean['annealing']:.4f} | |")

    print("\n## One swap evaluation: incremental update vs fresh CKA of the set\n")
    print("| m | models | incremental (ms) | fresh (ms) | speed-up |")
    print("|---:|---:|---:|---:|---:|")
    for mm in ((100, 400) if args.quick else (200, 1000)):
        r = bench_step(max(2 * mm, n), dims, mm)
        print(f"| {r['m']} | {r['models']} | {r['incremental_ms']:.2f} | {r['fresh_ms']:.2f} | {r['speedup']:.0f}x |")


if __name__ == "__main__":
    main()
