"""Leave-one-out kNN at 10,000 x 768: modelseek's ``knn_loo`` against transformer-ranker's ``NearestNeighbors``
(when that package imports) and a straightforward scikit-learn baseline (``NearestNeighbors`` brute force,
the implementation ``knn_loo`` had before issue #28), on the same matrices, interleaved, best of ``--repeat``.

    python benchmarks/estimators_knn.py                  # 10,000 x 768, k = 3, best of 3
    PYTHONPATH=/tmp/trlib python benchmarks/estimators_knn.py
        # with transformer-ranker installed beside the environment, e.g.
        # pip install --no-deps --target /tmp/trlib transformer-ranker==0.2.0 torchmetrics lightning-utilities

transformer-ranker ranks by float32 Euclidean distances (``torch.cdist``) and reports micro-F1 (= accuracy
for single-label classes) or, for regression, Pearson's r of the neighbours' mean; ``knn_loo`` is run with
the same settings (``metric="euclidean"``, ``score="accuracy"``/``"pearson"``). Its cosine distance builds a
batch x N x D tensor (31 GB here), so cosine is timed for modelseek and the baseline only.

Prints a Markdown table (seconds, speed-up over each peer, the values) and the machine's load average.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from modelseek.retrieval.estimators import get  # noqa: E402


def sklearn_baseline(X: np.ndarray, y: np.ndarray, k: int, metric: str, regression: bool) -> float:
    """The plain way: scikit-learn's brute-force neighbours of every row without itself, in float64."""
    from sklearn.neighbors import NearestNeighbors

    X = np.asarray(X, dtype=np.float64)
    idx = NearestNeighbors(n_neighbors=k, metric=metric, algorithm="brute").fit(X).kneighbors(return_distance=False)
    if regression:
        return float(np.corrcoef(y, y[idx].mean(1))[0, 1])
    votes = np.zeros((len(y), int(y.max()) + 1))
    np.add.at(votes, (np.repeat(np.arange(len(y)), k), y[idx].ravel()), 1.0)
    return float((votes.argmax(1) == y).mean())


def transformer_ranker():
    """(the kNN estimator class, None) or (None, why it is not available)."""
    try:
        from transformer_ranker.estimators import NearestNeighbors
    except Exception as exc:  # noqa: BLE001 - any import failure is a reason to skip, printed
        return None, f"{type(exc).__name__}: {exc}".splitlines()[0]
    return NearestNeighbors, None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=10_000)
    ap.add_argument("-d", type=int, default=768)
    ap.add_argument("-k", type=int, default=3)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2, help="torch threads (transformer-ranker and knn_loo)")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    y = rng.integers(0, args.classes, args.n)
    noise = rng.standard_normal((args.n, args.d))
    X = (noise + 0.3 * rng.standard_normal((args.classes, args.d))[y]).astype(np.float32)
    target = X[:, :8].sum(1).astype(np.float64) + rng.standard_normal(args.n)   # a regression target
    TR, why = transformer_ranker()
    if TR is None:
        print(f"transformer-ranker skipped: it does not import here ({why}); "
              f"pip install transformer-ranker to compare", flush=True)
    E, L, T = torch.from_numpy(X), torch.from_numpy(y), torch.from_numpy(target)
    k = args.k
    cases = {
        "classes, euclidean": {
            "modelseek": lambda: get("knn_loo")(X, y, k=k, metric="euclidean", score="accuracy"),
            "transformer-ranker": (lambda: TR(k=k).fit(E, L, distance_metric="euclidean")) if TR else None,
            "sklearn baseline": lambda: sklearn_baseline(X, y, k, "euclidean", False)},
        "regression, euclidean": {
            "modelseek": lambda: get("knn_loo")(X, target, k=k, metric="euclidean", task="regression"),
            "transformer-ranker": (lambda: TR(k=k, regression=True).fit(E, T.float(), distance_metric="euclidean"))
            if TR else None,
            "sklearn baseline": lambda: sklearn_baseline(X, target, k, "euclidean", True)},
        "classes, cosine": {
            "modelseek": lambda: get("knn_loo")(X, y, k=k, metric="cosine", score="accuracy"),
            "sklearn baseline": lambda: sklearn_baseline(X, y, k, "cosine", False)},
    }
    load0 = os.getloadavg()
    times: dict = {c: {m: [] for m, f in fs.items() if f} for c, fs in cases.items()}
    values: dict = {c: {} for c in cases}
    for _ in range(args.repeat):  # interleaved: a load change hits every method alike
        for c, fs in cases.items():
            for m, f in fs.items():
                if f is None:
                    continue
                t0 = time.perf_counter()
                values[c][m] = float(f())
                times[c][m].append(time.perf_counter() - t0)
    load1 = os.getloadavg()
    print(f"\n{args.n:,} x {args.d}, k = {k}, {args.classes} classes; best of {args.repeat}, interleaved; "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, torch threads {args.threads}; "
          f"load average {load0[0]:.1f} before, {load1[0]:.1f} after\n")
    print("| case | method | best s | modelseek speed-up | value |")
    print("|---|---|---:|---:|---:|")
    for c in cases:
        ms = min(times[c]["modelseek"])
        for m, ts in times[c].items():
            print(f"| {c} | {m} | {min(ts):.2f} | {min(ts) / ms:.2f}x | {values[c][m]:.6f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
