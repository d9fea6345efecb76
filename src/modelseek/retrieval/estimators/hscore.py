"""H-score — how much of the feature covariance is explained by the class-conditional means.

Intuition: a feature map transfers well when the class means are far apart relative to the spread of the
features; H(f) = tr(cov(f)^+ cov(E[f | y])) is the optimal value of the "H-score" objective of the
softmax-regression maximal-correlation problem, i.e. an estimate of the asymptotic log-loss gain of a linear
classifier. Higher = better (at most C - 1).

Reference: Y. Bao, Y. Li, S.-L. Huang, L. Zhang, L. Zheng, A. Zamir, L. Guibas. "An Information-Theoretic
Approach to Transferability in Task Transfer Learning", ICIP 2019.

Computation: cov(E[f | y]) = sum_c (n_c / (N - 1)) d_c d_c^T with d_c = mu_c - mu has rank <= C, so
tr(cov(f)^+ cov(E[f|y])) = sum_c (n_c / (N - 1)) d_c^T cov(f)^+ d_c needs the eigenvalues of cov(f) and the
projections of the C vectors d_c only (never an explicit pseudo-inverse). When cov(f) is safely positive
definite its pseudo-inverse is its inverse and a Cholesky solve suffices; otherwise the eigenvalues are cut at
the usual rcond = 1e-15 relative to the largest. The H-score is scale-invariant; features are first divided by a
power of two (exact) so that any scale computes without overflow.
"""

from __future__ import annotations

import numpy as np

from ...core.kinds import register
from ._common import class_means, classes, spd_solve, sym_eig_project, unit_scale

RCOND = 1e-15


def between_class_factor(X: np.ndarray, y: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(centred X, B) with B B^T = cov(E[f|y]) (unbiased, N - 1): columns sqrt(n_c/(N-1)) (mu_c - mu)."""
    N = X.shape[0]
    mu = X.mean(0)
    Xc = X - mu
    M = class_means(X, y, counts) - mu
    return Xc, (M * np.sqrt(counts / (N - 1.0))[:, None]).T


def pinv_quadratic(w: np.ndarray, P: np.ndarray, rcond: float = RCOND) -> float:
    """sum_i [w_i > rcond * max w] ||P_i||^2 / w_i — the trace tr(A^+ B B^T) from A's spectrum."""
    keep = w > rcond * w.max()
    return float(((P[keep] ** 2).sum(1) / w[keep]).sum())


@register("estimator", name="hscore", scale_invariant=True)
def hscore(features, labels) -> float:
    """H-score tr(pinv(cov f) cov(E[f|y])) with unbiased covariances. Higher = better."""
    X = features  # checked by the registration
    y, counts = classes(labels, name="hscore")
    X = unit_scale(X)[0]  # scale-invariant: an exact power-of-two rescale keeps 1e200-scaled features finite
    N = X.shape[0]
    Xc, B = between_class_factor(X, y, counts)
    return trace_pinv_quadratic((Xc.T @ Xc) / (N - 1.0), B)


def trace_pinv_quadratic(A: np.ndarray, B: np.ndarray) -> float:
    """tr(A^+ B B^T): a Cholesky solve when A is well conditioned, else the spectral pseudo-inverse."""
    sol = spd_solve(A, B)
    if sol is not None:
        return float((B * sol).sum())
    w, P = sym_eig_project(A, B)
    return pinv_quadratic(w, P)
