"""SFDA — Self-challenging Fisher Discriminant Analysis.

Intuition: project the features into a regularised Fisher space, where classes are as separated as a linear
map can make them, and measure how confidently a Gaussian classifier there recognises each example's class.
To tell apart models that all separate the classes well, the examples are then made harder ("self-
challenging"): each one is mixed towards the class it is most confused with, in proportion to its
uncertainty (ConfMix), and the score is the mean probability of the true class after mixing. Higher =
better (in (0, 1]).

Reference: W. Shao, X. Zhao, Y. Ge, Z. Zhang, L. Yang, X. Wang, Y. Shan, P. Luo. "Not All Models Are Equal:
Predicting Model Transferability in a Self-challenging Fisher Space", ECCV 2022.

Details of this implementation (our reading of the paper):

* within-class scatter S_W = sum_c p_c cov_c, between-class scatter S_B = sum_c p_c (mu_c - mu)(mu_c - mu)^T
  (biased covariances, class priors p_c = n_c / N);
* adaptive shrinkage S_W' = (1 - lam) S_W + lam (tr S_W / D) I with lam = exp(-a * lambda_max(S_W)), a = 5;
* Fisher directions: the C - 1 leading solutions of S_B v = l S_W' v, found from the SVD of L^-1 B (D x C)
  where S_W' = L L^T and S_B = B B^T, so the cost is one D x D Cholesky, not a generalised eigenproblem;
* in that space S_W' is the identity, so the classifier is softmax(z . m_c - |m_c|^2 / 2 + log p_c);
* ConfMix: z_i <- p_i z_i + (1 - p_i) m_{c'_i}, with p_i the probability of the true class and c'_i the most
  probable wrong class; the classifier is refitted on the mixed points and scored on them.
"""

from __future__ import annotations

import numpy as np
from scipy import linalg

from ._common import check_inputs, class_means


def _softmax(a: np.ndarray) -> np.ndarray:
    a = a - a.max(1, keepdims=True)
    np.exp(a, out=a)
    return a / a.sum(1, keepdims=True)


def _gauss_probs(Z: np.ndarray, y: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    M = class_means(Z, y, counts)
    logits = Z @ M.T - 0.5 * (M * M).sum(1)[None, :] + np.log(counts / counts.sum())[None, :]
    return _softmax(logits), M


def sfda(features, labels, *, a: float = 5.0) -> float:
    """Mean true-class probability in the self-challenged regularised Fisher space. Higher = better."""
    X, y, counts = check_inputs(features, labels, name="sfda", min_per_class=2)
    N, D = X.shape
    C = counts.shape[0]
    priors = counts / N
    mu = X.mean(0)
    M = class_means(X, y, counts)
    Xw = X - M[y]
    Sw = (Xw.T @ Xw) / N
    lam_max = float(linalg.eigh(Sw, eigvals_only=True, subset_by_index=[D - 1, D - 1])[0])
    shrink = float(np.exp(-a * lam_max))
    Sw_s = (1.0 - shrink) * Sw
    Sw_s.flat[:: D + 1] += shrink * np.trace(Sw) / D
    B = ((M - mu) * np.sqrt(priors)[:, None]).T                # S_B = B B^T
    L = linalg.cholesky(Sw_s + 1e-12 * np.trace(Sw_s) / D * np.eye(D), lower=True)
    U, s, _ = np.linalg.svd(linalg.solve_triangular(L, B, lower=True), full_matrices=False)
    k = max(1, min(C - 1, int((s > s.max() * 1e-10).sum())))
    W = linalg.solve_triangular(L.T, U[:, :k], lower=False)   # generalised eigenvectors, W^T S_W' W = I
    Z = X @ W
    P, Mz = _gauss_probs(Z, y, counts)
    p_true = P[np.arange(N), y]
    wrong = P.copy()
    wrong[np.arange(N), y] = -1.0
    confuser = wrong.argmax(1)
    Zmix = p_true[:, None] * Z + (1.0 - p_true)[:, None] * Mz[confuser]
    P2, _ = _gauss_probs(Zmix, y, counts)
    return float(P2[np.arange(N), y].mean())
