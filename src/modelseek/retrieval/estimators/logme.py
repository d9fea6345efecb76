"""LogME — the log of the maximum marginal evidence of a Bayesian linear model on the features.

Intuition: regress each one-hot label column on the frozen features with a Gaussian prior (precision
``alpha``) and Gaussian noise (precision ``beta``); the evidence p(y | F) integrates the weights out, so it
rewards features that explain the labels with a *simple* linear map, and it needs no training loop. The
hyper-parameters are set by MacKay's fixed-point updates; the score is the evidence per example averaged over
the classes (higher = better, typically in [-2, 2]). With numeric labels (``task="regression"``) the one
column regressed is the targets themselves: LogME's regression form (the paper's Algorithm 1 takes any
target column; the authors' code ``fit_regression``).

Reference: K. You, Y. Liu, J. Wang, M. Long. "LogME: Practical Assessment of Pre-trained Models for Transfer
Learning", ICML 2021; extended in JMLR 23 (2022) ("Ranking and Tuning Pre-trained Models").

Computation: the eigenvalues of the smaller Gram matrix (F^T F, D x D, or F F^T, N x N), then an
O(k C) fixed point per class column (alpha = beta = 1 at start, at most 11 iterations, stop when
|t_new - t| / t <= 1e-3 with t = alpha / beta). The log-determinant log|alpha I + beta F^T F| needs *all D*
eigenvalues: when N < D (or F is rank deficient) the missing D - k are zeros and contribute log(alpha) each.
The authors' public code omits them and returns nonsense for N < D (its issue 23); this implementation
keeps them.

Scale: the published fixed point starts at alpha = beta = 1 and stops after at most 11 steps, so the value
depends on the feature scale (iris x 1000 gives -0.195 against -0.160). Features whose Gram matrix would over- or
underflow float64 (largest magnitude outside 1e-150..1e150) raise InputError rather than returning NaN or -inf.
"""

from __future__ import annotations

import numpy as np

from ...core.errors import InputError
from ...core.kinds import register
from ._common import classes, one_hot, sym_eig_project, tridiagonalize

#: MacKay fixed-point safeguard added to the denominators, as in the published algorithm
_EPS = 1e-5


@register("estimator", name="logme", scale_invariant=False, regression=True)
def logme(features, labels, *, max_iter: int = 11, tol: float = 1e-3, route: str = "auto",
          task: str = "classification") -> float:
    """LogME of ``features`` (N x D) for classification ``labels`` (N,), or for numeric targets with
    ``task="regression"``. Higher = better.

    ``route``: ``auto`` (``tridiagonal`` when N > D, else ``dual``), ``tridiagonal`` or ``primal`` (D x D Gram)
    or ``dual`` (N x N Gram); all give the same value, the choice only changes the cost.
    """
    if task == "classification":
        y, counts = classes(labels, name="logme")
        Y = one_hot(y, counts.shape[0])
    elif task == "regression":
        Y = np.asarray(labels, dtype=np.float64)[:, None]  # numeric targets: checked by the registration
    else:
        raise InputError(f"logme: task must be classification or regression, got {task!r}", field="task")
    X = features  # checked by the registration
    N, D = X.shape
    top = float(np.abs(X).max())
    if top == 0.0:
        raise InputError("logme: the features are all zero", field="features")
    if not 1e-150 < top < 1e150:
        raise InputError(f"logme: features of magnitude {top:.3g} over- or underflow float64 in the Gram matrix "
                         f"(LogME computes for magnitudes between 1e-150 and 1e150); its fixed point, started at "
                         f"alpha = beta = 1, depends on the feature scale, so they are not rescaled silently: "
                         f"rescale the features", field="features")
    if route == "auto":
        route = "tridiagonal" if N > D and D > 2 else "dual"
    if route == "tridiagonal":
        return _logme_tridiagonal(X, Y, max_iter, tol)
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
        raise InputError(f"logme: route must be auto, tridiagonal, primal or dual, got {route!r}", field="route")
    x2 = x * x
    yy = (Y * Y).sum(0)
    res_x2 = np.clip(yy - x2.sum(0), 0.0, None)  # the part of y outside the span of F
    s = sigma[:, None]

    def moments(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        denom = s + t[None, :]
        m2 = (s * x2 / denom ** 2).sum(0)
        res2 = (x2 * (t[None, :] / denom) ** 2).sum(0) + res_x2
        return m2, res2

    return _fixed_point(sigma, D - sigma.shape[0], N, D, Y.shape[1], moments, max_iter, tol)


def _logme_tridiagonal(X: np.ndarray, Y: np.ndarray, max_iter: int, tol: float) -> float:
    """N > D without eigenvectors. With G = F^T F = Q T Q^T, c = F^T y, b = Q^T c, u = (T + tI)^-1 b:

    m2 = sum_i sigma_i x_i^2 / (t + sigma_i)^2 = |u|^2 and, by partial fractions,
    res2 = sum_i x_i^2 t^2 / (t + sigma_i)^2 + |y - proj y|^2 = |y|^2 - b.u - t |u|^2 (exact for any rank:
    directions with sigma_i = 0 carry no part of c). The eigenvalues (for gamma and the log-determinant)
    come from T alone, and each step costs C tridiagonal solves of O(D).
    """
    from scipy.linalg import eigvalsh_tridiagonal, solve_banded  # lazy: scipy

    N, D = X.shape
    d, e, b = tridiagonalize(X.T @ X, X.T @ Y)
    sigma = np.clip(eigvalsh_tridiagonal(d, e), 0.0, None)
    yy = (Y * Y).sum(0)
    band = np.zeros((3, D))
    band[0, 1:] = e
    band[2, :-1] = e

    def moments(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        m2 = np.empty_like(t)
        bu = np.empty_like(t)
        for j, tj in enumerate(t):
            band[1] = d + tj
            u = solve_banded((1, 1), band, b[:, j], check_finite=False)
            m2[j] = u @ u
            bu[j] = b[:, j] @ u
        return m2, np.clip(yy - bu - t * m2, 0.0, None)

    return _fixed_point(sigma, 0, N, D, Y.shape[1], moments, max_iter, tol)


def _fixed_point(sigma: np.ndarray, n_zero: int, N: int, D: int, C: int, moments, max_iter: int,
                 tol: float) -> float:
    """MacKay's updates for every class column at once; ``moments(t) -> (m2, res2)`` per column."""
    s = sigma[:, None]
    alpha = np.ones(C)
    beta = np.ones(C)
    evidence = np.zeros(C)
    active = np.ones(C, dtype=bool)
    for _ in range(max_iter):
        t = alpha / beta
        gamma = (s / (s + t[None, :])).sum(0)
        m2, res2 = moments(t)
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
