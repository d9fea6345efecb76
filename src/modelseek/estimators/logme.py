"""LogME — the log of the maximum marginal evidence of a Bayesian linear model on the features.

Intuition: regress each one-hot label column on the frozen features with a Gaussian prior (precision
``alpha``) and Gaussian noise (precision ``beta``); the evidence p(y | F) integrates the weights out, so it
rewards features that explain the labels with a *simple* linear map, and it needs no training loop. The
hyper-parameters are set by MacKay's fixed-point updates; the score is the evidence per example averaged over
the classes (higher = better, typically in [-2, 2]).

Reference: K. You, Y. Liu, J. Wang, M. Long. "LogME: Practical Assessment of Pre-trained Models for Transfer
Learning", ICML 2021; extended in JMLR 23 (2022) ("Ranking and Tuning Pre-trained Models").

Computation: one eigendecomposition of the smaller Gram matrix (F^T F, D x D, or F F^T, N x N), then an
O(k C) fixed point per class column (alpha = beta = 1 at start, at most 11 iterations, stop when
|t_new - t| / t <= 1e-3 with t = alpha / beta). The log-determinant log|alpha I + beta F^T F| needs *all D*
eigenvalues: when N < D (or F is rank deficient) the missing D - k are zeros and contribute log(alpha) each.
The authors' public code omits them and returns nonsense for N < D (its issue 23); this implementation
keeps them.
"""

from __future__ import annotations

import numpy as np

from ._common import check_inputs, one_hot, sym_eig_project

#: MacKay fixed-point safeguard added to the denominators, as in the published algorithm
_EPS = 1e-5


def logme(features, labels, *, max_iter: int = 11, tol: float = 1e-3, route: str = "auto") -> float:
    """LogME of ``features`` (N x D) for classification ``labels`` (N,). Higher = better.

    ``route``: ``auto`` (the smaller Gram matrix), ``primal`` (D x D) or ``dual`` (N x N); all give the
    same value, the choice only changes the cost.
    """
    X, y, counts = check_inputs(features, labels, name="logme")
    N, D = X.shape
    Y = one_hot(y, counts.shape[0])
    if route == "auto":
        route = "primal" if N > D else "dual"
    if route == "primal":
        sigma, P = sym_eig_project(X.T @ X, X.T @ Y)      # P = V^T F^T Y
        sigma = np.clip(sigma, 0.0, None)
        keep = sigma > sigma.max() * max(N, D) * np.finfo(np.float64).eps
        sigma = sigma[keep]
        x = P[keep] / np.sqrt(sigma)[:, None]             # u_i^T y for the left singular vectors u_i
    elif route == "dual":
        sigma, x = sym_eig_project(X @ X.T, Y)            # u_i^T y directly
        sigma = np.clip(sigma, 0.0, None)
    else:
        raise ValueError(f"route must be auto, primal or dual, got {route!r}")
    x2 = x * x
    res_x2 = np.clip((Y * Y).sum(0) - x2.sum(0), 0.0, None)  # the part of y outside the span of F
    n_zero = D - sigma.shape[0]                                # eigenvalues of F^T F that are exactly 0
    s = sigma[:, None]
    C = Y.shape[1]
    alpha = np.ones(C)
    beta = np.ones(C)
    evidence = np.zeros(C)
    active = np.ones(C, dtype=bool)
    for _ in range(max_iter):
        t = alpha / beta
        denom = s + t[None, :]
        gamma = (s / denom).sum(0)
        m2 = (s * x2 / denom ** 2).sum(0)
        res2 = (x2 * (t[None, :] / denom) ** 2).sum(0) + res_x2
        a_new = gamma / (m2 + _EPS)
        b_new = (N - gamma) / (res2 + _EPS)
        logdet = np.log(a_new[None, :] + b_new[None, :] * s).sum(0) + n_zero * np.log(a_new)
        ev = (D / 2.0 * np.log(a_new) + N / 2.0 * np.log(b_new) - a_new / 2.0 * m2 - b_new / 2.0 * res2
              - 0.5 * logdet - N / 2.0 * np.log(2 * np.pi)) / N
        alpha = np.where(active, a_new, alpha)
        beta = np.where(active, b_new, beta)
        evidence = np.where(active, ev, evidence)
        active &= ~(np.abs(a_new / b_new - t) / t <= tol)
        if not active.any():
            break
    return float(evidence.mean())
