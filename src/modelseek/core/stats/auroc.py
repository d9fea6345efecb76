"""Bayesian AUROC test, in the spirit of Goutte & Gaussier (2005), vectorised and seeded.

Goutte, C. & Gaussier, E. (2005). A probabilistic interpretation of precision, recall and F-score, with
implication for evaluation. ECIR. Their idea: a rate estimated from counts has a Beta posterior. Here, for
each class (one-vs-rest) and each ROC threshold, the true-positive rate is drawn from
``Beta(TP + 1, FN + 1)`` while the false-positive rate stays at its observed value; each draw gives one ROC
curve and its trapezoid AUC; the class AUCs are averaged (macro AUROC). ``n_draws`` (1,000) draws per model
form the model's posterior; ``p = P(AUC_A <= AUC_B)`` over all pairs of draws of A and B.

Why written by hand: the reference loops thresholds in Python and calls ``sklearn.metrics.auc`` once per
draw. The trapezoid AUC is linear in the TPRs, ``AUC = sum_k w_k TPR_k`` with
``w_k = (FPR_{k+1} - FPR_{k-1}) / 2``, so a whole posterior is one matrix-vector product; points with
``w_k = 0`` (inside vertical ROC segments) do not change the AUC and are not drawn. Draws depend only on
the model's own predictions and its named random stream, so they are computed once per model and task,
and every duel is then a sorted-array count.

Thresholds: the distinct scores of the class when there are at most ``n_thresholds`` (100) of them, else
``n_thresholds`` score quantiles. The posterior treats thresholds as independent, so a fixed grid keeps the
test's spread from shrinking with the number of samples; ``n_thresholds=None`` uses every distinct score.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from .seeding import derive_rng

N_DRAWS = 1000
N_THRESHOLDS = 100


def roc_points(scores: np.ndarray, positive: np.ndarray, n_thresholds: int | None = N_THRESHOLDS):
    """``(tp, fp, n_pos, n_neg)`` at each threshold, from the strictest (nothing predicted positive) down."""
    scores = np.asarray(scores, dtype=float)
    positive = np.asarray(positive, dtype=bool)
    thr = np.unique(scores)[::-1]
    if n_thresholds is not None and thr.size > n_thresholds:
        thr = np.unique(np.quantile(scores, np.linspace(0.0, 1.0, n_thresholds)))[::-1]
    pos = np.sort(scores[positive])
    neg = np.sort(scores[~positive])
    # number of scores >= t, for every threshold t
    tp = pos.size - np.searchsorted(pos, thr, side="left")
    fp = neg.size - np.searchsorted(neg, thr, side="left")
    tp = np.concatenate([[0], tp])
    fp = np.concatenate([[0], fp])
    return tp, fp, pos.size, neg.size


def _trapezoid_weights(fpr: np.ndarray) -> np.ndarray:
    left = np.concatenate([fpr[:1], fpr[:-1]])
    right = np.concatenate([fpr[1:], fpr[-1:]])
    return (right - left) / 2.0


def check_predictions(gold, probs, where: str = "") -> tuple[np.ndarray, np.ndarray]:
    g = np.asarray(gold)
    p = np.asarray(probs, dtype=float)
    if p.ndim != 2 or g.ndim != 1 or g.shape[0] != p.shape[0]:
        raise InputError(f"{where}AUROC needs gold labels (n) and class probabilities (n x classes)")
    if p.shape[1] < 2:
        raise InputError(f"{where}AUROC needs at least two classes")
    if not np.isfinite(p).all():
        raise InputError(f"{where}class probabilities must be finite")
    if not np.issubdtype(g.dtype, np.integer):
        if not np.all(np.asarray(g, dtype=float) == np.round(np.asarray(g, dtype=float))):
            raise InputError(f"{where}gold labels must be class indices")
        g = np.asarray(g, dtype=float).astype(int)
    if g.size and (g.min() < 0 or g.max() >= p.shape[1]):
        raise InputError(f"{where}gold label outside 0..{p.shape[1] - 1}")
    return g, p


def auroc(gold, probs) -> float:
    """Observed macro one-vs-rest AUROC over the classes that have both positives and negatives."""
    g, p = check_predictions(gold, probs)
    vals = []
    for c in range(p.shape[1]):
        positive = g == c
        if positive.all() or not positive.any():
            continue
        tp, fp, n_pos, n_neg = roc_points(p[:, c], positive, n_thresholds=None)
        vals.append(float(np.dot(_trapezoid_weights(fp / n_neg), tp / n_pos)))
    if not vals:
        raise InputError("AUROC is undefined: no class has both positive and negative samples")
    return float(np.mean(vals))


def auroc_draws(gold, probs, rng: np.random.Generator, n_draws: int = N_DRAWS,
                n_thresholds: int | None = N_THRESHOLDS) -> np.ndarray:
    """``n_draws`` posterior draws of the macro AUROC of one model (sorted ascending)."""
    g, p = check_predictions(gold, probs)
    total = np.zeros(n_draws)
    used = 0
    for c in range(p.shape[1]):
        positive = g == c
        if positive.all() or not positive.any():
            continue
        tp, fp, n_pos, n_neg = roc_points(p[:, c], positive, n_thresholds)
        w = _trapezoid_weights(fp / n_neg)
        keep = w != 0
        tpr = rng.beta(tp[keep] + 1.0, (n_pos - tp[keep]) + 1.0, size=(n_draws, int(keep.sum())))
        total += tpr @ w[keep]
        used += 1
    if used == 0:
        raise InputError("AUROC is undefined: no class has both positive and negative samples")
    return np.sort(total / used)


def auroc_pvalue(draws_a, draws_b) -> float:
    """``P(AUC_A <= AUC_B)`` over all pairs of draws."""
    a = np.asarray(draws_a, dtype=float)
    b = np.sort(np.asarray(draws_b, dtype=float))
    return float((b.size - np.searchsorted(b, a, side="left")).sum() / (a.size * b.size))


def auroc_pvalue_matrix(D, others=None) -> np.ndarray:
    """``P[i, j] = P(AUC_i <= AUC_j)`` for models x draws matrices of posterior draws.

    ``others`` (default: ``D`` itself, diagonal NaN) gives the columns. One ``searchsorted`` per column
    model, exact (no shifting tricks), so a pair gets the same p-value in any tournament it appears in.
    """
    A = np.asarray(D, dtype=float)
    B = np.sort(A if others is None else np.asarray(others, dtype=float), axis=1)
    m, k = A.shape
    P = np.empty((m, B.shape[0]))
    flat = A.ravel()
    for j in range(B.shape[0]):
        pos = np.searchsorted(B[j], flat, side="left").reshape(m, k)
        P[:, j] = (B.shape[1] - pos).sum(axis=1) / (k * B.shape[1])
    if others is None:
        np.fill_diagonal(P, np.nan)
    return P


def bayesian_auroc_test(gold_a, probs_a, gold_b, probs_b, seed: int = 0, n_draws: int = N_DRAWS,
                        n_thresholds: int | None = N_THRESHOLDS) -> float:
    """One duel: p-value that model A's AUROC is higher than B's (A and B drawn from separate streams)."""
    da = auroc_draws(gold_a, probs_a, derive_rng(seed, "A"), n_draws, n_thresholds)
    db = auroc_draws(gold_b, probs_b, derive_rng(seed, "B"), n_draws, n_thresholds)
    return auroc_pvalue(da, db)
