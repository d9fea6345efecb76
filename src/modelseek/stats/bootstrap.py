"""Percentile bootstrap over topics (Efron & Tibshirani, 1993), vectorised and seeded.

Resampling indices are drawn once as an (n_resamples x n) matrix from ``np.random.default_rng(seed)``, so
the same seed gives the same interval on any machine.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputError


@dataclass(frozen=True)
class Interval:
    mean: float
    low: float
    high: float

    def __str__(self) -> str:
        return f"{self.mean:.3f} [{self.low:.3f}, {self.high:.3f}]"


@dataclass(frozen=True)
class PairedComparison:
    mean_diff: float
    low: float
    high: float
    p_better: float  # share of resamples where A's mean exceeds B's

    def __str__(self) -> str:
        return f"{self.mean_diff:+.3f} [{self.low:+.3f}, {self.high:+.3f}] P(better)={self.p_better:.2f}"


def _indices(n: int, n_resamples: int, seed: int | np.random.Generator) -> np.ndarray:
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    return rng.integers(0, n, size=(n_resamples, n))


def _values(x) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    if a.ndim != 1 or a.size == 0:
        raise InputError("bootstrap needs a non-empty 1-D vector")
    if not np.isfinite(a).all():
        raise InputError("bootstrap values must be finite")
    return a


def bootstrap_ci(values, n_resamples: int = 1000, confidence: float = 0.95,
                 seed: int | np.random.Generator = 0) -> Interval:
    """Mean of ``values`` with a percentile bootstrap interval."""
    a = _values(values)
    means = a[_indices(a.size, n_resamples, seed)].mean(axis=1)
    tail = (1 - confidence) / 2 * 100
    lo, hi = np.percentile(means, [tail, 100 - tail])
    return Interval(float(a.mean()), float(lo), float(hi))


def paired_bootstrap(a, b, n_resamples: int = 1000, confidence: float = 0.95,
                     seed: int | np.random.Generator = 0) -> PairedComparison:
    """Paired bootstrap of mean(a - b) over the same topics."""
    x, y = _values(a), _values(b)
    if x.shape != y.shape:
        raise InputError(f"paired vectors differ in length: {x.size} vs {y.size}")
    d = x - y
    means = d[_indices(d.size, n_resamples, seed)].mean(axis=1)
    tail = (1 - confidence) / 2 * 100
    lo, hi = np.percentile(means, [tail, 100 - tail])
    return PairedComparison(float(d.mean()), float(lo), float(hi), float((means > 0).mean()))
