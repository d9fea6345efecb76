"""Speed of the LogME and H-score estimators against straightforward reference-style implementations.

The baselines below follow the structure of the authors' public code (written here from the published
algorithms, not copied): LogME takes a truncated SVD through ``np.linalg.svd`` of F^T F, forms the left
singular vectors U = F V / s (a second N x D x D product), and runs the fixed point class by class; the
H-score builds the N x D matrix of class means, both covariances, and ``np.linalg.pinv`` of cov(f).

    python benchmarks/estimators_speed.py            # the three cases of the issue
    python benchmarks/estimators_speed.py --quick    # smaller cases (a smoke run)

Prints a Markdown table: case, estimator, baseline seconds, modelseek seconds, speed-up, relative difference.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from modelseek.retrieval.estimators import get  # noqa: E402


# ------------------------------------------------------------------------------------------- baselines
def baseline_logme(f: np.ndarray, y: np.ndarray) -> float:
    f = f.astype(np.float64)
    N, D = f.shape
    if N > D:
        _, s2, vh = np.linalg.svd(f.T @ f)
        s = np.sqrt(s2)
        k = int((s > 1e-10).sum())
        s, vh = s[:k], vh[:k]
        u = (f @ vh.T) / s[None, :]
    else:
        u, s, vh = np.linalg.svd(f, full_matrices=False)
        k = s.shape[0]
    sigma = (s ** 2).reshape(-1, 1)
    evidences = []
    for c in range(int(y.max()) + 1):
        y_ = (y == c).astype(np.float64)
        x = u.T @ y_
        x2 = (x ** 2).reshape(-1, 1)
        res_x2 = (y_ ** 2).sum() - x2.sum()
        alpha, beta = 1.0, 1.0
        for _ in range(11):
            t = alpha / beta
            gamma = (sigma / (sigma + t)).sum()
            m2 = (sigma * x2 / ((t + sigma) ** 2)).sum()
            res2 = (x2 / ((1 + sigma / t) ** 2)).sum() + res_x2
            alpha = gamma / (m2 + 1e-5)
            beta = (N - gamma) / (res2 + 1e-5)
            t_ = alpha / beta
            ev = (D / 2.0 * np.log(alpha) + N / 2.0 * np.log(beta) - alpha / 2.0 * m2 - beta / 2.0 * res2
                  - 0.5 * np.sum(np.log(alpha + beta * sigma)) - N / 2.0 * np.log(2 * np.pi)) / N
            if abs(t_ - t) / t <= 1e-3:
                break
        evidences.append(ev)
    return float(np.mean(evidences))


def _cov(x: np.ndarray) -> np.ndarray:
    xc = x - x.mean(0, keepdims=True)
    return (xc.T @ xc) / (len(x) - 1)


def baseline_hscore(f: np.ndarray, y: np.ndarray) -> float:
    f = f.astype(np.float64)
    cov_f = _cov(f)
    g = np.zeros_like(f)
    for c in np.unique(y):
        g[y == c] = f[y == c].mean(0)
    cov_g = _cov(g)
    return float(np.trace(np.linalg.pinv(cov_f, rcond=1e-15) @ cov_g))


BASELINES = {"logme": baseline_logme, "hscore": baseline_hscore}


def _time(fn, *args, repeat: int = 1) -> tuple[float, float]:
    best, value = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        value = fn(*args)
        best = min(best, time.perf_counter() - t)
    return best, value


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small cases only")
    ap.add_argument("--repeat", type=int, default=1, help="best of this many runs per measurement")
    ap.add_argument("--others", action="store_true", help="also time the other estimators (modelseek only)")
    ap.add_argument("--cases", help="comma-separated NxDxC, e.g. 10000x768x10,5000x4096x10")
    args = ap.parse_args()
    cases = [(2000, 256, 10), (3000, 512, 10)] if args.quick else \
        [(10_000, 768, 10), (50_000, 1_024, 10), (5_000, 4_096, 10)]
    if args.cases:
        cases = [tuple(int(v) for v in c.lower().split("x")) for c in args.cases.split(",")]
    rng = np.random.default_rng(0)
    warm_y = np.arange(300) % 3
    warm = np.random.default_rng(1).standard_normal((300, 40)) + warm_y[:, None]
    for name, base in BASELINES.items():  # imports and first-call costs out of the timings
        base(warm, warm_y), get(name)(warm, warm_y)
    print(f"machine: {platform.machine()}, {platform.processor() or 'cpu'}; numpy {np.__version__}")
    print()
    print("| N x D x C | estimator | baseline (s) | modelseek (s) | speed-up | relative difference |")
    print("|---|---|---:|---:|---:|---:|")
    rows = []
    for N, D, C in cases:
        y = rng.integers(0, C, N)
        means = rng.standard_normal((C, D))
        F = (rng.standard_normal((N, D)) + 0.3 * means[y]).astype(np.float64)
        for name, base in BASELINES.items():
            tb, vb = _time(base, F, y, repeat=args.repeat)
            tm, vm = _time(get(name), F, y, repeat=args.repeat)
            rel = abs(vm - vb) / max(abs(vb), 1e-300)
            rows.append((N, D, C, name, tb, tm, rel))
            print(f"| {N:,} x {D:,} x {C} | {name} | {tb:.2f} | {tm:.2f} | {tb / tm:.1f}x | {rel:.1e} |", flush=True)
        if args.others:
            for name in ("hscore_reg", "transrate", "gbc", "sfda", "knn_loo"):
                tm, _ = _time(get(name), F, y)
                print(f"| {N:,} x {D:,} x {C} | {name} | – | {tm:.2f} | – | – |", flush=True)


if __name__ == "__main__":
    main()
