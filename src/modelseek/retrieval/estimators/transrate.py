"""TransRate — the mutual information between features and labels measured by coding rates.

Intuition: the coding rate R(Z, eps) = 1/2 log det(I + Z^T Z / (n eps)) is the number of bits needed to encode
the (centred) features up to distortion eps. Features that transfer well are rich overall (large R(Z)) but
compact within each class (small R(Z_c)); TransRate = R(Z) - mean_c R(Z_c) estimates I(Z; Y) without any
density model. Higher = better.

Reference: L.-K. Huang, J. Huang, Y. Rong, Q. Yang, Y. Wei. "Frustratingly Easy Transferability Estimation",
ICML 2022.

Conventions (those of the authors' code, under which the issue's iris value 0.58941 holds): features centred
once with the overall mean, eps = 1e-4, n = the number of rows of the block being coded, and the class
term is the *unweighted* mean over classes. log det(I_D + A^T A) = log det(I_n + A A^T) (Sylvester), so the
smaller side is factorised, by Cholesky (the matrix is positive definite).

Scale: eps is absolute, so TransRate depends on the feature scale. The features are divided by a power of two
(exact) and the scale carried separately: where the Gram matrix of the true-scale features would overflow
(features of magnitude 1e200) the log-determinant is taken from the eigenvalues in log space,
sum_i log1p(c l_i) = sum_i softplus(log c + log l_i), with eigenvalues below the rounding level of the largest
counted as zero; features of magnitude 1e-200 give 0, the value of the formula to double precision.
"""

from __future__ import annotations

import numpy as np

from ._common import LOG2, classes, unit_scale
from ...core.errors import InputError
from ...core.kinds import register


def coding_rate(Z: np.ndarray, eps: float = 1e-4, k: int = 0) -> float:
    """1/2 log det(I + W^T W / (n eps)) for W = Z * 2**k (n x d), via the smaller Gram matrix of Z."""
    n, d = Z.shape
    G0 = Z.T @ Z if d <= n else Z @ Z.T
    with np.errstate(over="ignore", under="ignore"):
        G = np.ldexp(G0, 2 * k) / (n * eps)
    if np.isfinite(G).all():
        G.flat[:: G.shape[0] + 1] += 1.0
        L = np.linalg.cholesky(G)
        return float(np.log(np.diagonal(L)).sum())  # 1/2 log det = sum log diag(L)
    lam = np.linalg.eigvalsh(G0)
    keep = lam > lam.max() * G0.shape[0] * np.finfo(np.float64).eps
    u = np.log(lam[keep]) + 2 * k * LOG2 - np.log(n * eps)
    return float(0.5 * np.logaddexp(0.0, u).sum())


@register("estimator", name="transrate", scale_invariant=False)
def transrate(features, labels, *, eps: float = 1e-4) -> float:
    """R(Z) - mean_c R(Z_c) on centred features. Higher = better."""
    X = features  # checked by the registration
    y, counts = classes(labels, name="transrate")
    if not eps > 0:
        raise InputError(f"transrate: eps must be > 0, got {eps}", field="eps")
    Xs, k = unit_scale(X)
    Z = Xs - Xs.mean(0)
    rz = coding_rate(Z, eps, k)
    rzy = sum(coding_rate(Z[y == c], eps, k) for c in range(counts.shape[0]))
    return rz - rzy / counts.shape[0]
