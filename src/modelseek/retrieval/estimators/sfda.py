"""SFDA — Self-challenging Fisher Discriminant Analysis.

Intuition: project the features into a regularised Fisher space, where classes are as separated as a linear
map can make them, and measure how confidently a Gaussian classifier there recognises each example's class.
To tell apart models that all separate the classes well, the examples are then made harder ("self-
challenging"): each one is mixed towards the class it is most confused with, in proportion to its
uncertainty (ConfMix), and the score is the mean probability of the true class after mixing. Higher =
better (in (0, 1]).

Reference: W. Shao, X. Zhao, Y. Ge, Z. Zhang, L. Yang, X. Wang, Y. Shan, P. Luo. "Not All Models Are Equal:
Predicting Model Transferability in a Self-challenging Fisher Space", ECCV 2022.

Two readings, by ``variant``:

``released`` (default) — the authors' released code (TencentARC/SFDA, ``SFDA_Score``), step by step; on
sklearn's iris (raw X, labels 0..2) it gives 0.8764934, as theirs does:

1. within-class scatter S_W = sum_c p_c cov_c and total scatter S_T = cov(X) (biased covariances, class
   priors p_c = n_c / N);
2. lambda_max of S_W by 3 power iterations started from the row sums (their ``iterative_A``), shrinkage
   lam = max(exp(-5 lambda_max), 1e-10), applied to both: S' = (1 - lam) S + lam (tr S / D) I;
3. Fisher directions V from the generalised symmetric eigenproblem (S_T' - S_W') v = l S_W' v, all D kept,
   and a linear-discriminant classifier in the original space: coef = M V V^T, intercept
   -1/2 diag(M coef^T) + log p. With every eigenvector kept V^T S_W' V = I makes V V^T = S_W'^-1, so
   coef = M S_W'^-1 exactly: we solve with S_W''s Cholesky factor (the factorisation LAPACK's generalised
   eigensolver starts from) instead of forming V — the same classifier at a fraction of the cost; the test
   suite checks it against a literal eigh(S_B, S_W') implementation;
4. the first pass's probabilities are softened by a second softmax, q = softmax(p);
5. ConfMix, in the original feature space: x_i <- q_i x_i + (1 - q_i) m_{-y_i}, with q_i the softened
   probability of the true class and m_{-c} the mean of the other classes' means;
6. a second classifier fitted on the mixed features with the first pass's shrinkage; the score is the mean
   probability of the true class (no log).

``fisher`` — our earlier reading of the paper: shrinkage towards (tr S_W / D) I of the within-class scatter
only, the C - 1 leading Fisher directions, a Gaussian classifier *in* the Fisher space, and ConfMix towards
the most-confused class's mean in that space without softening (iris: 0.9380).

Scale: the shrinkage depends on lambda_max, so SFDA is not scale-invariant. Both variants compute on the
features divided by a power of two (exact) and carry the scale into lambda_max in log space, so features of
magnitude 1e200 or 1e-200 give the value the formulas define (shrinkage 1e-10 resp. 1) instead of an
overflow.
"""

from __future__ import annotations

import numpy as np

from ...core.enums import Choice
from ...core.errors import InputError
from ._common import class_means, classes, unit_scale
from ...core.kinds import register



class SfdaVariant(Choice):
    RELEASED = "released"  # the authors' released SFDA_Score (default)
    FISHER = "fisher"      # our earlier reading of the paper


def _softmax(a: np.ndarray) -> np.ndarray:
    a = a - a.max(1, keepdims=True)
    np.exp(a, out=a)
    return a / a.sum(1, keepdims=True)


def power_lambda_max(A: np.ndarray, iterations: int = 3) -> float:
    """The released code's ``iterative_A``: x = row sums of A; ``iterations`` times y = Ax/|Ax|,
    x = Ay/|Ay|; returns x^T A y. Falls back to the exact largest eigenvalue where the iteration divides
    by zero (row sums that vanish), which the released code would turn into NaN."""
    x = A.sum(1)
    y = x
    for _ in range(iterations):
        t = A @ x
        n = float(np.linalg.norm(t))
        if not n > 0 or not np.isfinite(n):
            return float(np.linalg.eigvalsh(A)[-1])
        y = t / n
        t = A @ y
        n = float(np.linalg.norm(t))
        if not n > 0 or not np.isfinite(n):
            return float(np.linalg.eigvalsh(A)[-1])
        x = t / n
    return float(x @ A @ y)


def _zero_scatter(Xs: np.ndarray) -> float:
    """A within-class scatter trace at or below this is rounding noise: every class is constant."""
    return float((64 * np.finfo(np.float64).eps * np.abs(Xs).max()) ** 2 * Xs.shape[1])


def _shrink(S: np.ndarray, lam: float) -> np.ndarray:
    D = S.shape[0]
    out = (1.0 - lam) * S
    out.flat[:: D + 1] += lam * np.trace(S) / D
    return out


def _within(X: np.ndarray, y: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    M = class_means(X, y, counts)
    Xw = X - M[y]
    return M, (Xw.T @ Xw) / X.shape[0]


def _shrinkage(Sw: np.ndarray, k: int, a: float) -> float:
    """max(exp(-a lambda_max), 1e-10) for the scatter of the features *times 2**k* (``Sw`` is the scatter of
    the rescaled features, so the true lambda_max is 4**k times its own)."""
    lam_s = power_lambda_max(Sw)
    with np.errstate(over="ignore", under="ignore"):
        lam = float(np.ldexp(lam_s, 2 * k))
    return max(float(np.exp(-a * lam)), 1e-10)


def _lda_probs(X: np.ndarray, y: np.ndarray, counts: np.ndarray, lam: float, M: np.ndarray,
               Sw: np.ndarray) -> np.ndarray:
    """Class probabilities of the shrunk linear discriminant: softmax(x S_W'^-1 m_c - 1/2 m_c S_W'^-1 m_c
    + log p_c). S_W'^-1 = V V^T for the eigenvectors V of eigh(S_B, S_W') (see the module notes)."""
    from scipy import linalg  # lazy: scipy

    S = _shrink(Sw, lam)
    try:
        coef = linalg.cho_solve(linalg.cho_factor(S, lower=True), M.T).T            # M S_W'^-1, (C, D)
    except linalg.LinAlgError:
        # S_W' not numerically positive definite (a near-singular scatter with lam ~ 1e-10): the spectral
        # pseudo-inverse, which is what V V^T amounts to on the well-determined directions
        w, U = np.linalg.eigh(S)
        keep = w > w.max() * S.shape[0] * np.finfo(np.float64).eps
        coef = (M @ U[:, keep]) / w[keep] @ U[:, keep].T
    intercept = -0.5 * (M * coef).sum(1) + np.log(counts / counts.sum())
    return _softmax(X @ coef.T + intercept)


def _released(X: np.ndarray, y: np.ndarray, counts: np.ndarray, a: float) -> float:
    N = X.shape[0]
    C = counts.shape[0]
    Xs, k = unit_scale(X)
    M, Sw = _within(Xs, y, counts)
    if not np.trace(Sw) > _zero_scatter(Xs):
        raise InputError("sfda: every class holds identical examples (zero within-class scatter)",
                         field="features")
    lam = _shrinkage(Sw, k, a)
    P = _lda_probs(Xs, y, counts, lam, M, Sw)
    Q = _softmax(P)                                            # the released code's second softmax
    q = Q[np.arange(N), y][:, None]
    others = (M.sum(0)[None, :] - M) / (C - 1)                 # mean of the other classes' means
    Xmix = q * Xs + (1.0 - q) * others[y]
    M2, Sw2 = _within(Xmix, y, counts)
    P2 = _lda_probs(Xmix, y, counts, lam, M2, Sw2)
    return float(P2[np.arange(N), y].mean())


def _gauss_probs(Z: np.ndarray, y: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    M = class_means(Z, y, counts)
    logits = Z @ M.T - 0.5 * (M * M).sum(1)[None, :] + np.log(counts / counts.sum())[None, :]
    return _softmax(logits), M


def _fisher(X: np.ndarray, y: np.ndarray, counts: np.ndarray, a: float) -> float:
    from scipy import linalg  # lazy: scipy

    N, D = X.shape
    C = counts.shape[0]
    Xs, k = unit_scale(X)
    priors = counts / N
    mu = Xs.mean(0)
    M, Sw = _within(Xs, y, counts)
    if not np.trace(Sw) > _zero_scatter(Xs):
        raise InputError("sfda: every class holds identical examples (zero within-class scatter)",
                         field="features")
    lam_s = float(linalg.eigh(Sw, eigvals_only=True, subset_by_index=[D - 1, D - 1])[0])
    with np.errstate(over="ignore", under="ignore"):
        shrink = float(np.exp(-a * float(np.ldexp(lam_s, 2 * k))))
    Sw_s = _shrink(Sw, shrink)
    B = ((M - mu) * np.sqrt(priors)[:, None]).T                # S_B = B B^T
    L = linalg.cholesky(Sw_s + 1e-12 * np.trace(Sw_s) / D * np.eye(D), lower=True)
    U, s, _ = np.linalg.svd(linalg.solve_triangular(L, B, lower=True), full_matrices=False)
    kk = max(1, min(C - 1, int((s > s.max() * 1e-10).sum())))
    W = linalg.solve_triangular(L.T, U[:, :kk], lower=False)  # generalised eigenvectors, W^T S_W' W = I
    Z = Xs @ W
    P, Mz = _gauss_probs(Z, y, counts)
    p_true = P[np.arange(N), y]
    wrong = P.copy()
    wrong[np.arange(N), y] = -1.0
    confuser = wrong.argmax(1)
    Zmix = p_true[:, None] * Z + (1.0 - p_true)[:, None] * Mz[confuser]
    P2, _ = _gauss_probs(Zmix, y, counts)
    return float(P2[np.arange(N), y].mean())


@register("estimator", name="sfda", scale_invariant=False)
def sfda(features, labels, *, a: float = 5.0, variant: str = "released") -> float:
    """Mean true-class probability after self-challenging ConfMix (authors' released code by default)."""
    kind = SfdaVariant.parse(variant, "variant")
    X = features  # checked by the registration
    y, counts = classes(labels, name="sfda", min_per_class=2)
    return (_released if kind is SfdaVariant.RELEASED else _fisher)(X, y, counts, float(a))
