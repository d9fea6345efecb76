"""Two-sided paired tests for comparing runs topic by topic (as ``modelseek compare`` and ranx's ``compare``).

* :func:`ttest_rel` — Student's paired t-test: ``t = mean(d) / (sd(d) / sqrt(n))`` with ``n - 1`` degrees of
  freedom, two-sided p; the same numbers as :func:`scipy.stats.ttest_rel` (tested), without importing
  scipy.stats.
* :func:`randomization_test` — Fisher's paired randomisation (permutation) test (Smucker, Allan & Carterette,
  CIKM 2007): under the null hypothesis the sign of every topic's difference is arbitrary; p is the share of
  sign assignments whose mean difference is at least as far from 0 as the observed one. With ``2^n <=
  n_permutations`` every assignment is enumerated (the exact p); otherwise ``n_permutations`` random ones are
  drawn from ``seed`` and ``p = (hits + 1) / (n_permutations + 1)`` (the observed assignment counts as one).
"""

from __future__ import annotations

import numpy as np
from scipy.special import stdtr

from ..errors import InputError


def _pair(a, b) -> np.ndarray:
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.ndim != 1 or x.shape != y.shape:
        raise InputError(f"paired vectors differ in shape: {x.shape} vs {y.shape}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise InputError("paired values must be finite")
    return x - y


def ttest_rel(a, b) -> tuple[float, float]:
    """``(t, p)``: two-sided paired t-test of mean(a - b) = 0. Identical vectors give ``(nan, nan)`` as in
    SciPy; fewer than two pairs cannot be tested (``(nan, nan)``)."""
    d = _pair(a, b)
    n = d.size
    if n < 2:
        return float("nan"), float("nan")
    mean = d.mean()
    sd = d.std(ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = mean / (sd / np.sqrt(n))
    if np.isnan(t):
        return float("nan"), float("nan")
    p = 2.0 * stdtr(n - 1, -abs(t))
    return float(t), float(min(p, 1.0))


def randomization_test(a, b, n_permutations: int = 10_000, seed: int | np.random.Generator = 0) -> tuple[float, bool]:
    """``(p, exact)``: two-sided paired randomisation test of mean(a - b) = 0 (see the module docstring)."""
    d = _pair(a, b)
    n = d.size
    if n == 0:
        return float("nan"), True
    obs = abs(d.mean())
    tol = 1e-12 * max(1.0, float(np.abs(d).max()))
    if n <= 20 and 2 ** n <= n_permutations:
        # every sign assignment: bit j of row i flips topic j
        idx = np.arange(2 ** n, dtype=np.int64)[:, None]
        signs = 1.0 - 2.0 * ((idx >> np.arange(n)) & 1)
        means = np.abs(signs @ d) / n
        return float((means >= obs - tol).mean()), True
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    hits = 0
    block = max(1, 2_000_000 // max(n, 1))
    done = 0
    while done < n_permutations:
        m = min(block, n_permutations - done)
        flips = rng.integers(0, 2, size=(m, n), dtype=np.int8) * 2 - 1
        hits += int((np.abs(flips @ d) / n >= obs - tol).sum())
        done += m
    return float((hits + 1) / (n_permutations + 1)), False
