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
"""

from __future__ import annotations

import numpy as np

from ._common import check_inputs


def coding_rate(Z: np.ndarray, eps: float = 1e-4) -> float:
    """1/2 log det(I + Z^T Z / (n eps)) for Z (n x d), via the smaller Gram matrix."""
    n, d = Z.shape
    G = Z.T @ Z if d <= n else Z @ Z.T
    G /= n * eps
    G.flat[:: G.shape[0] + 1] += 1.0
    L = np.linalg.cholesky(G)
    return float(np.log(np.diagonal(L)).sum())  # 1/2 log det = sum log diag(L)


def transrate(features, labels, *, eps: float = 1e-4) -> float:
    """R(Z) - mean_c R(Z_c) on centred features. Higher = better."""
    X, y, counts = check_inputs(features, labels, name="transrate")
    if eps <= 0:
        raise ValueError(f"eps must be > 0, got {eps}")
    Z = X - X.mean(0)
    rz = coding_rate(Z, eps)
    rzy = sum(coding_rate(Z[y == c], eps) for c in range(counts.shape[0]))
    return rz - rzy / counts.shape[0]
