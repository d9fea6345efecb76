"""kNN leave-one-out — the kNN score on a single feature set, each example predicted by its k nearest others.

Intuition: as :mod:`knn`, without needing a separate validation split; every example is predicted by a
majority vote of its k nearest *other* examples (ties go to the smallest class index). Higher = better.
With numeric labels (``task="regression"``, a regression task) the prediction is the mean of the k
neighbours' targets and the score their Pearson correlation with the targets (``score="pearson"``, as
transformer-ranker's kNN reports) or the leave-one-out R^2 (``score="r2"``).

Neighbours are exact: they come from a float32 similarity product (the costly part, done in blocks with
BLAS, each pair of row blocks once since it is symmetric; see :func:`loo_neighbours`). Where the rounding
bound of the float32 product is smaller than the gap between a row's k-th and (k+1)-th keys, its k
neighbours are exactly the float64 ones; where it is not (near ties), its k + ``_EXTRA`` best candidates are
re-scored in float64 from their differences (no cancellation) and the k nearest kept (equal distances: the
smaller row index first), and a row still in doubt is recomputed entirely in float64. The neighbour sets are
therefore those of the float64 distances, at the float32 product's speed (issue #28: at 10,000 x 768 faster
than transformer-ranker's kNN, which ranks by float32 distances; ``benchmarks/estimators_knn.py``).

Reference: the leave-one-out nearest-neighbour error (Cover & Hart 1967) as a transferability proxy, e.g. in
Renggli et al., "Which model to transfer? Finding the needle in the growing haystack", CVPR 2022.
"""

from __future__ import annotations

import numpy as np

from ...core.errors import InputError
from ...core.kinds import register
from ._common import classes, unit_scale

_EXTRA = 8            # candidates re-scored in float64 beyond the k asked for
_U32 = 2.0 ** -24     # float32 unit round-off


@register("estimator", name="knn_loo", regression=True, scale_invariant=True)
def knn_loo(features, labels, *, k: int = 5, metric: str = "cosine", score: str | None = None,
            task: str = "classification") -> float:
    """Leave-one-out k-NN ``score``: ``macro_f1`` (default) or ``accuracy`` of the majority vote; with
    ``task="regression"`` ``pearson`` (default) or ``r2`` of the neighbours' mean target. Higher = better."""
    if task not in ("classification", "regression"):
        raise InputError(f"knn_loo: task must be classification or regression, got {task!r}", field="task")
    scores = ("macro_f1", "accuracy") if task == "classification" else ("pearson", "r2")
    score = scores[0] if score is None else score
    if score not in scores:
        raise InputError(f"knn_loo: score must be {' or '.join(scores)} for {task}, got {score!r}", field="score")
    if metric not in ("cosine", "euclidean"):
        raise InputError(f"knn_loo: metric must be cosine or euclidean, got {metric!r}", field="metric")
    if task == "classification":
        y, counts = classes(labels, name="knn_loo", min_per_class=2)
    else:
        t = np.asarray(labels, dtype=np.float64)  # numeric targets: checked by the registration
    X = features  # checked by the registration
    k = int(k)
    if not 1 <= k < X.shape[0]:
        raise InputError(f"knn_loo: k must be in 1..{X.shape[0] - 1}, got {k}", field="k")
    idx = loo_neighbours(X, k, metric)
    if task == "regression":
        pred = t[idx].mean(1)
        if score == "r2":
            return float(1.0 - ((t - pred) ** 2).sum() / ((t - t.mean()) ** 2).sum())
        if np.ptp(pred) == 0.0:
            raise InputError("knn_loo: every leave-one-out prediction is the same; Pearson's r is undefined",
                             field="features")
        return float(np.corrcoef(t, pred)[0, 1])
    votes = np.zeros((X.shape[0], counts.shape[0]))
    np.add.at(votes, (np.repeat(np.arange(X.shape[0]), k), y[idx].ravel()), 1.0)
    pred = votes.argmax(1)
    if score == "accuracy":
        return float((pred == y).mean())
    from sklearn.metrics import f1_score  # lazy: sklearn

    return float(f1_score(y, pred, average="macro"))


def _torch(n: int):
    """torch, when it is installed and worth it: already imported (a ranker extracting features), or a problem
    large enough (n >= 4,096) to repay its import (~1 s); else None and numpy does the work."""
    import sys

    if "torch" not in sys.modules and n < 4096:
        return None
    try:
        import torch  # lazy: torch
    except ImportError:  # torch is an extra; the estimators need only numpy
        return None
    return torch


def _top(S: np.ndarray, m: int, torch=None) -> tuple[np.ndarray, np.ndarray]:
    """(values, column indices) of each row's m largest values, in no particular order: torch's ``topk``
    (about 8x faster than numpy's ``argpartition`` on these blocks) when ``torch`` is given, else numpy's."""
    if torch is None:
        idx = np.argpartition(-S, m - 1, axis=1)[:, :m]
        return np.take_along_axis(S, idx, 1), idx
    v, i = torch.from_numpy(S).topk(m, dim=1, sorted=False)
    return v.numpy(), i.numpy().astype(np.intp, copy=False)


def _gemm(a: np.ndarray, b: np.ndarray, torch=None) -> np.ndarray:
    """a @ b.T in float32: torch's matmul when ``torch`` is given (~1.4x numpy's OpenBLAS here), else numpy."""
    if torch is None:
        return a @ b.T
    return (torch.from_numpy(a) @ torch.from_numpy(b).T).numpy()


def loo_neighbours(X: np.ndarray, k: int, metric: str = "cosine", block: int = 2048) -> np.ndarray:
    """(N, k) indices of each row's k nearest *other* rows (``cosine`` or ``euclidean`` distance): exactly the
    set of the float64 k nearest, equal distances going to the smaller row (see the module docstring); in
    the order of the float32 key within a row.

    The float32 similarity matrix is symmetric: each pair of row blocks (I < J) is multiplied once and serves
    the rows of I (its columns J) and, transposed, the rows of J (columns I). Each row keeps its best m keys:
    first those of its own (diagonal) block, by torch's ``topk``; then, from every other block, only the keys
    above its current m-th best are merged in (a comparison instead of a selection: after the diagonal block
    few keys pass)."""
    X = unit_scale(np.asarray(X, dtype=np.float64))[0]  # neighbours do not change with the scale
    n, d = X.shape
    cosine = metric == "cosine"
    if cosine:
        norms = np.sqrt((X * X).sum(1))
        A = X / np.where(norms > 0, norms, 1.0)[:, None]  # a zero row: similarity 0 to everything
        bias = np.zeros(n)                               # ranking key: A_i . A_j (larger = nearer)
        mag = (norms > 0).astype(np.float64)             # |A_j|
    else:
        A = X
        bias = -0.5 * (X * X).sum(1)                     # key: x_i . x_j - |x_j|^2 / 2 (order of -|x_i - x_j|^2)
        mag = np.sqrt((X * X).sum(1))
    A32, b32 = A.astype(np.float32), bias.astype(np.float32)
    th = _torch(n)
    m = min(n - 1, k + _EXTRA)
    starts = list(range(0, n, block))
    top_v = np.full((n, m), -np.inf, dtype=np.float32)          # each row's best m float32 keys so far
    top_i = np.zeros((n, m), dtype=np.intp)
    for lo in starts:  # diagonal blocks: each row's best m in its own block (torch's topk) set its threshold
        hi = min(n, lo + block)
        G = _gemm(A32[lo:hi], A32[lo:hi], th)
        if not cosine:
            G += b32[None, lo:hi]
        np.fill_diagonal(G, -np.inf)                               # not its own neighbour
        mm = min(m, hi - lo - 1)
        if mm > 0:
            top_v[lo:hi, :mm], i = _top(G, mm, th)
            top_i[lo:hi, :mm] = i + lo
    tau = top_v.min(1)                                             # the m-th best key so far
    for bi, lo in enumerate(starts):  # the other pairs of blocks, each once (the product is symmetric)
        hi = min(n, lo + block)
        for lo2 in starts[bi + 1:]:
            hi2 = min(n, lo2 + block)
            G = _gemm(A32[lo:hi], A32[lo2:hi2], th)                # float32, the costly part
            K = G if cosine else G + b32[None, lo2:hi2]            # rows of I, columns of J
            r, c = np.nonzero(K > tau[lo:hi, None])                # only keys above a row's threshold
            _merge(top_v, top_i, tau, r + lo, c + lo2, K[r, c])
            K = G if cosine else G + b32[lo:hi, None]              # rows of J (G's columns), columns of I
            c, r = np.nonzero(K > tau[None, lo2:hi2])
            _merge(top_v, top_i, tau, r + lo2, c + lo, K[c, r])
    v, cand = top_v, top_i
    o = np.lexsort((cand, -v), axis=1)                             # best float32 key first, then row index
    v, cand = np.take_along_axis(v, o, 1).astype(np.float64), np.take_along_axis(cand, o, 1)
    out = cand[:, :k].copy()
    if m == k:                                                     # k = N - 1: every other row
        return out
    # |fl32(a.b) - a.b| <= ((d + 2) u + O(u^2)) |a| |b| for float64 inputs rounded to float32 (Higham,
    # Accuracy and Stability, 3.1), doubled for safety, plus the rounding of the key's float32 bias
    gamma = 2.0 * (d + 2) * _U32 / (1.0 - (d + 2) * _U32)
    err = gamma * mag * float(mag.max()) + 4 * _U32 * float(np.abs(bias).max()) + 1e-12 * (1 + mag * mag)
    # the k chosen by float32 keys are the float64 k nearest when the k-th key beats the (k+1)-th (which
    # bounds every row left out) by more than the rounding of both: the neighbour *set* is then exact
    doubt = np.flatnonzero(~(v[:, k - 1] - v[:, k] > 2 * err))
    if doubt.size:  # near ties: the candidates' distances in float64, from their differences
        dist = _sq_dist(A, doubt, cand[doubt], cosine, mag)
        od = np.lexsort((cand[doubt], dist), axis=1)[:, :k]         # by distance, then row index
        out[doubt] = np.take_along_axis(cand[doubt], od, 1)
        kd = np.take_along_axis(dist, od[:, -1:], 1)[:, 0]
        kth = 1.0 - kd / 2 if cosine else (mag[doubt] ** 2) / 2 - kd / 2   # on the float32 key's scale
        rest = v[doubt, m - 1]                                     # bounds every float32 key left out
        unsure = doubt[~(rest + 2 * err[doubt] < kth)] if m < n - 1 else doubt[:0]
        rows = np.arange(n)
        for r in unsure:                                           # the whole row in float64
            dr = _sq_dist(A, np.array([r]), rows[None, :], cosine, mag)[0]
            dr[r] = np.inf
            out[r] = np.lexsort((rows, dr))[:k]
    return out


def _merge(top_v: np.ndarray, top_i: np.ndarray, tau: np.ndarray, rows: np.ndarray, cols: np.ndarray,
           vals: np.ndarray) -> None:
    """Merge the keys ``vals`` of (rows, cols) into each row's best m (in place) and raise its threshold."""
    if rows.size == 0:
        return
    m = top_v.shape[1]
    u = np.unique(rows)
    R = np.concatenate([np.repeat(u, m), rows])
    V = np.concatenate([top_v[u].ravel(), vals])
    C = np.concatenate([top_i[u].ravel(), cols])
    o = np.lexsort((C, -V, R))                                     # by row, best key first, then column
    R, V, C = R[o], V[o], C[o]
    first = np.searchsorted(R, u)
    pos = np.arange(R.shape[0]) - np.repeat(first, np.diff(np.append(first, R.shape[0])))
    keep = pos < m
    top_v[R[keep], pos[keep]], top_i[R[keep], pos[keep]] = V[keep], C[keep]
    tau[u] = top_v[u, m - 1]


def _sq_dist(A: np.ndarray, rows: np.ndarray, cols: np.ndarray, cosine: bool, mag: np.ndarray) -> np.ndarray:
    """Squared distances |A_r - A_c|^2 (rows x their columns ``cols``) computed from the differences, which
    separates points a rounding of the dot-product form (|a|^2 + |b|^2 - 2 a.b) would tie. Cosine: rows are
    unit (2 - 2 cos); a zero row has cosine 0 with everything (distance 2)."""
    D = np.empty((len(rows), cols.shape[1]))
    step = max(1, int(4e6 // (8 * cols.shape[1] * A.shape[1])))   # ~4 MB of differences at a time
    for lo in range(0, len(rows), step):
        diff = A[rows[lo:lo + step]][:, None, :] - A[cols[lo:lo + step]]
        D[lo:lo + step] = np.einsum("rmd,rmd->rm", diff, diff)
    if cosine:
        D = np.where((mag[rows][:, None] > 0) & (mag[cols] > 0), D, 2.0)
    return D
