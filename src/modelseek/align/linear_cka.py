"""Linear CKA (centred kernel alignment), done in float64 and without O(n^3) work.

For representations X [n, p] and Y [n, q] of the same n stimuli (Kornblith et al., ICML 2019)::

    CKA(X, Y) = HSIC(K, L) / sqrt(HSIC(K, K) HSIC(L, L)),   K = X X^T,  L = Y Y^T  (linear kernels)

**Biased HSIC** (Gretton et al. 2005) is ``tr(K H L H) / (n-1)^2`` with the centring matrix H. We never form
H nor multiply n x n matrices: centring the features centres the Gram (``H K H = Xc Xc^T``), so

- *Gram route*: ``Kc = Xc Xc^T``, ``Lc = Yc Yc^T``; ``HSIC ~ sum(Kc * Lc)`` — O(n^2 (p + q));
- *feature route*: ``sum(Kc * Lc) = ||Yc^T Xc||_F^2`` — O(n p q), no n x n matrix at all.

The route is chosen by comparing n^2 (p + q) with n (pq + p^2 + q^2) (``route="auto"``); both give the same
value (tests check 1e-10).

**Unbiased HSIC** (Song et al., JMLR 2012), with K~ and L~ the Grams with zeroed diagonals::

    HSIC_u = [tr(K~ L~) + (1'K~1)(1'L~1) / ((n-1)(n-2)) - 2/(n-2) 1'K~L~1] / (n (n-3))

needs n >= 4 (an InputError below). Every term reduces to feature-space quantities (row norms, column sums),
so the unbiased estimator also has a Gram and a feature route. Unbiased CKA of independent data is near 0;
the biased one is not when the dimension is large relative to n (about 0.2 for n = 32, 256 Gaussian features).

**Minibatch CKA** (Nguyen, Raghu & Kornblith, ICLR 2021): sum HSIC over minibatches before normalising,
``CKA_mb = sum_b HSIC(K_b, L_b) / sqrt(sum_b HSIC(K_b, K_b) sum_b HSIC(L_b, L_b))`` — memory of one batch.

**eps convention**: a representation whose centred features have (squared Frobenius) norm at most
``EPS * ||X||_F^2`` (or exactly 0) is *constant*: it carries no information about the stimuli, and its CKA
with anything is defined as **0.0** (never NaN). The same holds when a denominator HSIC is <= 0 (possible for
the unbiased estimator on degenerate data). ``EPS = 1e-24`` (relative, on squared norms) treats float64
rounding residue of a constant column as constant, while any real variation is far above it.

**All pairs at once** (:func:`cka_matrix`): with the feature matrices stacked side by side as Z = [X_1 ... X_m],
one product Z^T Z holds every cross-covariance X_i^T X_j, whose block norms are all pairwise HSICs; when the
total width exceeds n, the centred Grams are stacked as rows of one matrix instead (streamed in row blocks),
and one product gives every <K_i, K_j>.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

import numpy as np

from ..core.errors import InputError

EPS = 1e-24


class Route(str, Enum):
    AUTO = "auto"
    GRAM = "gram"
    FEATURE = "feature"


def _as2d(X, name: str) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2:
        raise InputError(f"{name} must be a 2-D [n, dim] array, got shape {X.shape}")
    if X.shape[0] < 2:
        raise InputError(f"{name} needs at least 2 stimuli (rows), got {X.shape[0]}")
    if not np.all(np.isfinite(X)):
        raise InputError(f"{name} contains NaN or infinite values")
    return X


def _unit_scale(X: np.ndarray) -> np.ndarray:
    """X divided by its largest absolute entry (CKA is invariant to scaling each representation, HSIC is not).

    Without this, features of size 1e80 overflow float64 in the fourth powers inside HSIC (inf / inf = NaN) and
    features of size 1e-80 underflow to a 'constant' representation; after it every entry lies in [-1, 1]."""
    m = float(np.max(np.abs(X))) if X.size else 0.0
    return X / m if m > 0 else X


def _center(X: np.ndarray) -> tuple[np.ndarray, bool]:
    """Centred copy and whether the representation is constant (see the eps convention)."""
    Xc = X - X.mean(axis=0, keepdims=True)
    total = float(np.einsum("ij,ij->", X, X))
    var = float(np.einsum("ij,ij->", Xc, Xc))
    return Xc, var <= EPS * total or var == 0.0


def choose_route(n: int, dims: Sequence[int]) -> Route:
    """Gram route when building the Grams and their inner products, n^2 (sum(dims) + m^2), is cheaper than
    the cross-covariances of the feature route, n (sum(dims))^2."""
    d = np.asarray(dims, dtype=np.float64)
    gram = n * n * (d.sum() + len(d) ** 2)
    feature = n * d.sum() ** 2
    return Route.GRAM if gram < feature else Route.FEATURE


@dataclass(frozen=True)
class _Stats:
    """Feature-space sufficient statistics of one centred representation for (un)biased HSIC."""

    Xc: np.ndarray
    constant: bool
    diag: np.ndarray  # diag(K) = squared row norms
    k1: np.ndarray    # K~ 1 = K 1 - diag(K)
    sum_k: float      # 1' K~ 1


def _stats(X: np.ndarray) -> _Stats:
    Xc, const = _center(X)
    diag = np.einsum("ij,ij->i", Xc, Xc)
    colsum = Xc.sum(axis=0)
    k1 = Xc @ colsum - diag
    return _Stats(Xc, const, diag, k1, float(colsum @ colsum - diag.sum()))


def _hsic_from(sxy: float, a: _Stats, b: _Stats, n: int, unbiased: bool) -> float:
    """HSIC from <K, L>_F (of the centred Grams) and the statistics (scale: sum form, no 1/(n-1)^2)."""
    if not unbiased:
        return sxy / (n - 1) ** 2
    tr = sxy - float(a.diag @ b.diag)
    return (tr + a.sum_k * b.sum_k / ((n - 1) * (n - 2)) - 2.0 / (n - 2) * float(a.k1 @ b.k1)) / (n * (n - 3))


def _frob_inner(a: _Stats, b: _Stats, route: Route) -> float:
    if route is Route.GRAM:
        K = a.Xc @ a.Xc.T
        L = K if b is a else b.Xc @ b.Xc.T
        return float(np.einsum("ij,ij->", K, L))
    C = b.Xc.T @ a.Xc
    return float(np.einsum("ij,ij->", C, C))


def _check_n(n: int, unbiased: bool) -> None:
    if unbiased and n < 4:
        raise InputError(f"unbiased HSIC needs at least 4 stimuli, got {n}")


def hsic(X, Y, unbiased: bool = False, route: str | Route = "auto") -> float:
    """Linear-kernel HSIC of two representations (biased: tr(KHLH)/(n-1)^2; unbiased: Song et al. 2012)."""
    a, b, n, r = _prepare(X, Y, unbiased, route)
    return _hsic_from(_frob_inner(a, b, r), a, b, n, unbiased)


def _prepare(X, Y, unbiased: bool, route):
    """Validate a pair of representations; return their centred statistics, n and the route."""
    X, Y = _as2d(X, "X"), _as2d(Y, "Y")
    if X.shape[0] != Y.shape[0]:
        raise InputError(f"X and Y have different numbers of stimuli: {X.shape[0]} vs {Y.shape[0]}")
    n = X.shape[0]
    _check_n(n, unbiased)
    r = _route(route, n, [X.shape[1], Y.shape[1]])
    return _stats(X), _stats(Y), n, r


def _route(route, n, dims) -> Route:
    try:
        r = Route(route)
    except ValueError:
        raise InputError(f"route {route!r} is not one of auto, gram, feature") from None
    return choose_route(n, dims) if r is Route.AUTO else r


def cka(X, Y, unbiased: bool = False, route: str | Route = "auto") -> float:
    """Linear CKA of X [n, p] and Y [n, q] in float64 (see the module docstring for routes and eps)."""
    a, b, n, r = _prepare(_unit_scale(_as2d(X, "X")), _unit_scale(_as2d(Y, "Y")), unbiased, route)
    if a.constant or b.constant:
        return 0.0
    hxy = _hsic_from(_frob_inner(a, b, r), a, b, n, unbiased)
    hxx = _hsic_from(_frob_inner(a, a, r), a, a, n, unbiased)
    hyy = _hsic_from(_frob_inner(b, b, r), b, b, n, unbiased)
    if hxx <= 0 or hyy <= 0:
        return 0.0
    return float(hxy / (np.sqrt(hxx) * np.sqrt(hyy)))


# ------------------------------------------------------------------ all pairs


def _pairwise_frob(stats: list[_Stats], route: Route, block_bytes: int) -> np.ndarray:
    """S[i, j] = <Kc_i, Kc_j>_F for all pairs, by stacked products."""
    n = stats[0].Xc.shape[0]
    m = len(stats)
    dims = [s.Xc.shape[1] for s in stats]
    if route is Route.FEATURE:
        Z = np.concatenate([s.Xc for s in stats], axis=1)
        edges = np.concatenate([[0], np.cumsum(dims)])
        D = Z.shape[1]
        S = np.empty((m, m))
        if D * D * 8 <= block_bytes * 4:
            G = Z.T @ Z  # every cross-covariance X_i^T X_j in one product
            for i in range(m):
                for j in range(i, m):
                    blk = G[edges[i]:edges[i + 1], edges[j]:edges[j + 1]]
                    S[i, j] = S[j, i] = np.einsum("ij,ij->", blk, blk)
        else:  # too wide for one D x D product in memory: one product per model against all others
            for i in range(m):
                G = stats[i].Xc.T @ Z[:, edges[i]:]
                for j in range(i, m):
                    blk = G[:, edges[j] - edges[i]:edges[j + 1] - edges[i]]
                    S[i, j] = S[j, i] = np.einsum("ij,ij->", blk, blk)
        return S
    # Gram route: rows of the m centred Grams, stacked as an [m, rows * n] matrix, one product per row block
    rows = max(1, int(block_bytes // (8 * n * m)))
    S = np.zeros((m, m))
    for a in range(0, n, rows):
        b = min(n, a + rows)
        M = np.stack([s.Xc[a:b] @ s.Xc.T for s in stats]).reshape(m, -1)
        S += M @ M.T
    return S


def cka_matrix(features: Sequence, unbiased: bool = False, route: str | Route = "auto",
               block_bytes: int = 1 << 30) -> np.ndarray:
    """Symmetric [m, m] matrix of linear CKA between all pairs of representations of the same n stimuli.

    All pairwise HSICs come from stacked matrix products (see the module docstring); constant
    representations give 0 off the diagonal and 1 on it (by the eps convention their self-CKA would be 0;
    we report 1 on the diagonal only for non-constant ones, 0 otherwise).
    """
    feats = [_unit_scale(_as2d(F, f"features[{i}]")) for i, F in enumerate(features)]
    if not feats:
        raise InputError("cka_matrix needs at least one representation")
    n = feats[0].shape[0]
    for i, F in enumerate(feats):
        if F.shape[0] != n:
            raise InputError(f"features[{i}] has {F.shape[0]} stimuli, features[0] has {n}")
    _check_n(n, unbiased)
    r = _route(route, n, [F.shape[1] for F in feats])
    stats = [_stats(F) for F in feats]
    S = _pairwise_frob(stats, r, block_bytes)
    H = _hsic_matrix(stats, S, n, unbiased)
    d = np.diag(H).copy()
    ok = (d > 0) & ~np.array([s.constant for s in stats])
    safe = np.where(ok, d, 1.0)
    C = H / np.sqrt(np.outer(safe, safe))
    C[~ok, :] = 0.0
    C[:, ~ok] = 0.0
    C = (C + C.T) / 2
    np.fill_diagonal(C, np.where(ok, 1.0, 0.0))
    return C


def _hsic_matrix(stats, S: np.ndarray, n: int, unbiased: bool) -> np.ndarray:
    """All pairwise HSICs from the pairwise Frobenius inner products ``S`` of the centred Grams."""
    if not unbiased:
        return S / (n - 1) ** 2
    D = np.stack([s.diag for s in stats], axis=1)
    K1 = np.stack([s.k1 for s in stats], axis=1)
    sk = np.array([s.sum_k for s in stats])
    return ((S - D.T @ D) + np.outer(sk, sk) / ((n - 1) * (n - 2)) - 2.0 / (n - 2) * (K1.T @ K1)) / (n * (n - 3))


# ------------------------------------------------------------------ minibatch CKA


class MinibatchCKA:
    """Accumulate minibatch HSICs of m representations (Nguyen et al. 2021) for data too large for memory.

    ``update([X_1_batch, ..., X_m_batch])`` with the same stimuli in each; ``result()`` gives the [m, m] CKA.
    Unbiased HSIC by default (as in the paper); each batch needs >= 4 stimuli then.
    """

    def __init__(self, n_models: int, unbiased: bool = True) -> None:
        self.m = int(n_models)
        self.unbiased = unbiased
        self.H = np.zeros((self.m, self.m))
        self.batches = 0
        # one scale per representation, fixed at its first batch: the same for every batch, so the sum of
        # minibatch HSICs is that of the unscaled data times a constant per model (which CKA cancels)
        self.scale: np.ndarray | None = None

    def update(self, batch: Sequence) -> MinibatchCKA:
        if len(batch) != self.m:
            raise InputError(f"expected {self.m} representations, got {len(batch)}")
        feats = [_as2d(F, f"batch[{i}]") for i, F in enumerate(batch)]
        n = feats[0].shape[0]
        if any(F.shape[0] != n for F in feats):
            raise InputError("all representations of a batch need the same stimuli")
        _check_n(n, self.unbiased)
        if self.scale is None:
            self.scale = np.array([float(np.max(np.abs(F))) or 1.0 for F in feats])
        feats = [F / s for F, s in zip(feats, self.scale)]
        if not all(np.all(np.isfinite(F)) for F in feats):
            raise InputError("a batch is too large relative to the first batch of the same model for float64")
        stats = [_stats(F) for F in feats]
        S = _pairwise_frob(stats, choose_route(n, [F.shape[1] for F in feats]), 1 << 28)
        H = _hsic_matrix(stats, S, n, self.unbiased)
        if not np.all(np.isfinite(H)):
            raise InputError("HSIC overflowed float64 in this batch: the features are too large relative to the "
                             "first batch of the same model; rescale them (CKA does not change)")
        self.H += H
        self.batches += 1
        return self

    def result(self) -> np.ndarray:
        if not self.batches:
            raise InputError("no batches accumulated")
        d = np.diag(self.H).copy()
        ok = d > 0
        safe = np.where(ok, d, 1.0)
        C = self.H / np.sqrt(np.outer(safe, safe))
        C[~ok, :] = 0.0
        C[:, ~ok] = 0.0
        np.fill_diagonal(C, np.where(ok, 1.0, 0.0))
        return (C + C.T) / 2


def minibatch_cka(X, Y, batch_size: int = 256, unbiased: bool = True,
                  rng: np.random.Generator | int | None = 0) -> float:
    """Minibatch CKA of two representations: stimuli shuffled by ``rng`` (a Generator or seed) and split into
    batches of ``batch_size`` (a last batch smaller than 4 joins the previous one)."""
    X, Y = _as2d(X, "X"), _as2d(Y, "Y")
    if X.shape[0] != Y.shape[0]:
        raise InputError(f"X and Y have different numbers of stimuli: {X.shape[0]} vs {Y.shape[0]}")
    n = X.shape[0]
    if batch_size < 4:
        raise InputError(f"batch_size must be >= 4, got {batch_size}")
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    order = gen.permutation(n)
    starts = list(range(0, n, batch_size))
    if len(starts) > 1 and n - starts[-1] < 4:
        starts.pop()
    acc = MinibatchCKA(2, unbiased=unbiased)
    for k, a in enumerate(starts):
        b = starts[k + 1] if k + 1 < len(starts) else n
        idx = order[a:b]
        acc.update([X[idx], Y[idx]])
    return float(acc.result()[0, 1])
