"""Paired t-test, one-tailed "A better than B" (Student, 1908), vectorised over every pair of models.

The reference leaderboard (BenCzechMark) halves scipy's two-sided p-value when A's mean is higher and
takes ``1 - p/2`` otherwise. Two identical vectors give scipy a NaN p-value, which the reference then counts
as significant; here a zero difference is never a win: ``p = 1``. A constant non-zero difference (every
sample favours A) has zero spread and an infinite t statistic: ``p = 0`` for the better model, 1 for the
other. Fewer than two samples cannot be tested: ``p = 1``.
"""

from __future__ import annotations

import numpy as np
from scipy.special import stdtr  # the t distribution without importing all of scipy.stats (start-up time)

from ..errors import InputError


def _one_tailed(mean: np.ndarray, sd: np.ndarray, n: int) -> np.ndarray:
    """One-tailed p-value of "mean difference > 0" from paired-difference means and standard deviations."""
    mean = np.asarray(mean, dtype=float)
    sd = np.asarray(sd, dtype=float)
    p = np.ones(np.broadcast(mean, sd).shape)
    if n < 2:
        return p
    with np.errstate(divide="ignore", invalid="ignore"):
        t = mean / (sd / np.sqrt(n))
    const = sd == 0
    # zero spread: a strictly positive constant difference is a certain win, anything else never is
    p = np.where(const, np.where(mean > 0, 0.0, 1.0), stdtr(n - 1, -np.where(const, 0.0, t)))
    return p


def _vector(x, name: str) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    if a.ndim != 1:
        raise InputError(f"{name} must be a 1-D vector", field=name)
    if not np.isfinite(a).all():
        raise InputError(f"{name} has non-finite values", field=name)
    return a


def paired_ttest(a, b) -> float:
    """One-tailed p-value that ``a`` has the higher mean than ``b`` (paired samples of equal length)."""
    x, y = _vector(a, "a"), _vector(b, "b")
    if x.shape != y.shape:
        raise InputError(f"paired vectors differ in length: {x.size} vs {y.size}")
    d = x - y
    if d.size < 2:
        return 1.0
    return float(_one_tailed(d.mean(), d.std(ddof=1), d.size))


def paired_ttest_matrix(X, Y=None) -> np.ndarray:
    """``P[i, j]`` = one-tailed p that row ``i`` of ``X`` (models x samples) beats row ``j`` of ``Y``.

    ``Y`` defaults to ``X`` (diagonal NaN). Differences are taken pair by pair (not from a Gram matrix) so
    that identical rows give an exactly zero difference; pairs are processed in blocks to bound memory.
    """
    X = np.asarray(X, dtype=float)
    same = Y is None
    Y = X if same else np.asarray(Y, dtype=float)
    if X.ndim != 2 or Y.ndim != 2 or X.shape[1] != Y.shape[1]:
        raise InputError("paired_ttest_matrix needs models x samples matrices with the same samples")
    m, n = X.shape
    P = np.full((m, Y.shape[0]), np.nan)
    if same:
        ii, jj = np.triu_indices(m, k=1)
    else:
        ii, jj = (a.ravel() for a in np.meshgrid(np.arange(m), np.arange(Y.shape[0]), indexing="ij"))
    block = max(1, 4_000_000 // max(n, 1))
    for s in range(0, ii.size, block):
        i, j = ii[s:s + block], jj[s:s + block]
        d = X[i] - Y[j]
        mean = d.mean(axis=1)
        sd = d.std(axis=1, ddof=1) if n > 1 else np.zeros(i.size)
        P[i, j] = _one_tailed(mean, sd, n)
        if same:
            P[j, i] = _one_tailed(-mean, sd, n)
    return P
