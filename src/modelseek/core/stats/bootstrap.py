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


# ----------------------------------------------------------------------------- significance tests
# Paired bootstrap test (Efron & Tibshirani, 1993; in NLP: Berg-Kirkpatrick, Burkett & Klein, 2012,
# "An empirical investigation of statistical significance in NLP"): resample the samples with replacement,
# recompute the difference delta* = stat(A) - stat(B) (oriented so that positive means A is better), and
# take p = share of resamples with delta* > 2 * delta_observed (the bootstrap distribution is centred on
# delta_observed; shifting it to the null hypothesis's zero gives the factor 2). One-tailed: when A is not
# observed to be better (delta_observed <= 0) there is no win and p = 1 -- this also keeps identical
# vectors (delta* = 0 on every resample) from counting as significant. A single sample cannot be tested
# (every resample repeats it, so any difference would look certain): p = 1, as for the t-test.
#
# All models of a task share one resampling plan (a resamples x samples matrix of counts), so a model's
# resampled statistic is computed once (one matrix product for all models) and every duel is a vector
# comparison; pairing is preserved because A and B always use the same rows.

def resample_counts(n: int, n_resamples: int = 1000, seed: int | np.random.Generator = 0) -> np.ndarray:
    """``(n_resamples, n)`` matrix: how many times each sample is drawn in each bootstrap resample."""
    if n < 1:
        raise InputError("bootstrap needs at least one sample")
    idx = _indices(n, n_resamples, seed)
    flat = (idx + n * np.arange(n_resamples)[:, None]).ravel()
    return np.bincount(flat, minlength=n * n_resamples).reshape(n_resamples, n)


def _apply(counts: np.ndarray, values) -> np.ndarray:
    """``sum_i counts[r, i] * values[..., i]`` for every resample: (resamples,) or (models, resamples).

    Computed as ``counts @ values.T`` (a C-ordered matrix-vector product); a float plan, which callers may
    cache, avoids converting the counts on every call."""
    x = np.asarray(values, dtype=float)
    c = counts if counts.dtype == np.float64 else counts.astype(np.float64)
    return (c @ x.T).T


def resampled_mean(values, counts: np.ndarray) -> np.ndarray:
    """Mean of ``values`` (samples,) or (models, samples) on each resample: shape (resamples,) or
    (models, resamples)."""
    return _apply(counts, values) / counts.shape[1]


def perplexity(loglik, words) -> float | np.ndarray:
    """Word perplexity ``exp(-sum log-likelihood / sum words)`` over the last axis."""
    ll = np.asarray(loglik, dtype=float)
    w = np.asarray(words, dtype=float)
    return np.exp(-ll.sum(axis=-1) / w.sum(axis=-1))


def resampled_perplexity(loglik, words, counts: np.ndarray) -> np.ndarray:
    """Word perplexity on each resample (documents resampled): shape (resamples,) or (models, resamples)."""
    return np.exp(-_apply(counts, loglik) / _apply(counts, words))


def bootstrap_pvalue_matrix(resampled, observed, higher_is_better: bool = True,
                            others_resampled=None, others_observed=None) -> np.ndarray:
    """``P[i, j]``: paired bootstrap p that model ``i`` beats model ``j`` from their resampled statistics.

    ``resampled`` is (models, resamples) computed on one shared resampling plan, ``observed`` (models,).
    ``others_*`` give the column models (default: the same models; diagonal NaN).
    """
    S = np.asarray(resampled, dtype=float)
    o = np.asarray(observed, dtype=float)
    T = S if others_resampled is None else np.asarray(others_resampled, dtype=float)
    u = o if others_observed is None else np.asarray(others_observed, dtype=float)
    sign = 1.0 if higher_is_better else -1.0
    P = np.empty((S.shape[0], T.shape[0]))
    for i in range(S.shape[0]):
        obs = sign * (o[i] - u)                      # (others,)
        star = sign * (S[i][None, :] - T)            # (others, resamples)
        p = (star > 2.0 * obs[:, None]).mean(axis=1)
        P[i] = np.where(obs > 0, p, 1.0)
    if others_resampled is None:
        np.fill_diagonal(P, np.nan)
    return P


def paired_bootstrap_test(a, b, n_resamples: int = 1000, seed: int | np.random.Generator = 0) -> float:
    """One-tailed paired bootstrap p that mean(a) > mean(b) (e.g. per-sample ROUGE)."""
    x, y = _values(a), _values(b)
    if x.shape != y.shape:
        raise InputError(f"paired vectors differ in length: {x.size} vs {y.size}")
    if x.size < 2:
        return 1.0
    counts = resample_counts(x.size, n_resamples, seed)
    S = resampled_mean(np.stack([x, y]), counts)
    return float(bootstrap_pvalue_matrix(S, [x.mean(), y.mean()])[0, 1])


def paired_bootstrap_perplexity_test(loglik_a, words_a, loglik_b, words_b, n_resamples: int = 1000,
                                     seed: int | np.random.Generator = 0) -> float:
    """One-tailed paired bootstrap p that A's word perplexity is lower than B's (documents resampled)."""
    la, wa, lb, wb = (_values(v) for v in (loglik_a, words_a, loglik_b, words_b))
    if not (la.shape == wa.shape == lb.shape == wb.shape):
        raise InputError("perplexity vectors differ in length")
    if (wa <= 0).any() or (wb <= 0).any():
        raise InputError("word counts must be positive")
    if la.size < 2:
        return 1.0
    counts = resample_counts(la.size, n_resamples, seed)
    S = resampled_perplexity(np.stack([la, lb]), np.stack([wa, wb]), counts)
    return float(bootstrap_pvalue_matrix(S, [perplexity(la, wa), perplexity(lb, wb)], higher_is_better=False)[0, 1])
