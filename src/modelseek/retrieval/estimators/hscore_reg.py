"""Regularised H-score — the H-score with a Ledoit-Wolf shrunk feature covariance.

Intuition: with many dimensions and few examples the sample covariance is ill conditioned and the H-score's
pseudo-inverse amplifies noise (scores grow with D regardless of quality). Shrinking the covariance towards a
scaled identity with the Ledoit-Wolf optimal intensity alpha stabilises it:
H_alpha = tr(Sigma_alpha^+ (1 - alpha) cov(E[f|y])), Sigma_alpha = (1 - alpha) S + alpha (tr S / D) I, with S
the (biased, 1/N) sample covariance as Ledoit-Wolf defines it. Higher = better.

Reference: S. Ibrahim, N. Ponomareva, R. Mazumder. "Newer is not always better: Rethinking transferability
metrics, their peculiarities, stability and performance", ECML-PKDD 2022. Shrinkage: O. Ledoit, M. Wolf,
"A well-conditioned estimator for large-dimensional covariance matrices", J. Multivariate Anal. 2004.

Computation: as for the H-score, tr(Sigma_alpha^+ B B^T) with cov(E[f|y]) = B B^T of rank <= C, by a
Cholesky solve (Sigma_alpha is positive definite whenever alpha > 0). The Ledoit-Wolf intensity is computed
in O(N D) from the same Gram matrix (sum_ij ((X^2)^T X^2)_ij = sum_k ||x_k||^4), where scikit-learn's
``ledoit_wolf_shrinkage`` builds another D x D product; the tests check both agree.
"""

from __future__ import annotations

import numpy as np

from ...core.kinds import register
from ._common import classes, unit_scale
from .hscore import between_class_factor, trace_pinv_quadratic


def ledoit_wolf_shrinkage_from_gram(Xc: np.ndarray, G: np.ndarray) -> float:
    """Ledoit-Wolf shrinkage intensity of centred ``Xc`` (N x D) given G = Xc^T Xc."""
    n, p = Xc.shape
    S = G / n
    mu = np.trace(S) / p
    sq_norms = np.einsum("ij,ij->i", Xc, Xc)
    beta_ = (sq_norms ** 2).sum() / n - (S * S).sum()    # = sum_k ||x_k x_k^T - S||_F^2 / n
    delta_ = (S * S).sum() - 2.0 * mu * np.trace(S) + p * mu * mu   # ||S - mu I||_F^2
    beta = min(beta_ / n, delta_)
    return 0.0 if delta_ == 0 else float(beta / delta_)


@register("estimator", name="hscore_reg", scale_invariant=True)
def hscore_reg(features, labels) -> float:
    """tr(pinv(Sigma_LW) (1 - alpha) cov(E[f|y])). Higher = better."""
    X = features  # checked by the registration
    y, counts = classes(labels, name="hscore_reg")
    X = unit_scale(X)[0]  # scale-invariant (so is the Ledoit-Wolf intensity): exact power-of-two rescale
    N, D = X.shape
    Xc, B = between_class_factor(X, y, counts)
    G = Xc.T @ Xc
    alpha = ledoit_wolf_shrinkage_from_gram(Xc, G)
    S = G / N
    shrunk = (1.0 - alpha) * S
    shrunk.flat[:: D + 1] += alpha * np.trace(S) / D
    return (1.0 - alpha) * trace_pinv_quadratic(shrunk, B)
