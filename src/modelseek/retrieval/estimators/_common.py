"""Input checks and linear algebra shared by the estimators (float64 throughout)."""

from __future__ import annotations

import numpy as np

from ...core.errors import InputError


def check_inputs(features, labels, *, name: str, min_per_class: int = 1, min_classes: int = 2,
                 what: str = "features") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """-> (X float64 (N, D), y int 0..C-1 (N,), counts per class (C,)), or a clear :class:`InputError`.

    Labels may be anything ``np.unique`` orders (strings, ints); they are remapped to 0..C-1 in sorted order
    so that scores do not depend on how classes are named. Inputs are never modified.
    """
    X = np.asarray(features)
    if X.ndim != 2:
        raise InputError(f"{name}: {what} must be a 2-D array (examples x dimensions), got shape {X.shape}",
                         field=what)
    if not np.issubdtype(X.dtype, np.number) or np.issubdtype(X.dtype, np.complexfloating):
        raise InputError(f"{name}: {what} must be real numbers, got dtype {X.dtype}", field=what)
    X = np.ascontiguousarray(X, dtype=np.float64)
    y_raw = np.asarray(labels)
    if y_raw.ndim != 1:
        raise InputError(f"{name}: labels must be 1-D, got shape {y_raw.shape}", field="labels")
    if y_raw.shape[0] != X.shape[0]:
        raise InputError(f"{name}: {X.shape[0]} rows of {what} but {y_raw.shape[0]} labels", field="labels")
    if X.shape[1] == 0:
        raise InputError(f"{name}: {what} have no dimensions", field=what)
    if not np.isfinite(X).all():
        bad = int(np.argwhere(~np.isfinite(X))[0, 0])
        raise InputError(f"{name}: {what} contain NaN or infinite values (first in row {bad})", field=what)
    classes, y, counts = np.unique(y_raw, return_inverse=True, return_counts=True)
    y = y.reshape(-1).astype(np.intp)
    if len(classes) < min_classes:
        raise InputError(f"{name}: needs at least {min_classes} classes, got {len(classes)}", field="labels")
    _enough_per_class(classes, counts, name, min_per_class)
    return X, y, counts


def _enough_per_class(classes: np.ndarray, counts: np.ndarray, name: str, min_per_class: int) -> None:
    if counts.min() < min_per_class:
        c = classes[int(np.argmin(counts))]
        c = c.item() if isinstance(c, np.generic) else c  # a numpy scalar prints as its Python value
        raise InputError(f"{name}: needs at least {min_per_class} examples of every class; class {c!r} has "
                         f"{int(counts.min())}", field="labels")


def classes(labels, *, name: str, min_per_class: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """-> (y int 0..C-1 (N,), counts per class (C,)) of labels the registration has checked already
    (:func:`check_inputs`, applied to every registered estimator: one label per row, at least two classes), in
    sorted order of the labels; an estimator's own need of ``min_per_class`` examples of every class is an
    :class:`InputError` as there."""
    found, y, counts = np.unique(np.asarray(labels), return_inverse=True, return_counts=True)
    _enough_per_class(found, counts, name, min_per_class)
    return y.reshape(-1).astype(np.intp), counts


def check_targets(features, labels, *, name: str, min_examples: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """-> (X float64 (N, D), targets float64 (N,)) for a regression task, or a clear :class:`InputError`:
    the features as :func:`check_inputs` checks them, the labels finite numbers (strings such as ``"3.5"``
    are read as numbers) that are not all equal."""
    X, _, _ = check_inputs(features, np.zeros(np.asarray(labels).shape[0] if np.ndim(labels) else 0),
                           name=name, min_classes=1)
    raw = np.asarray(labels)
    if raw.ndim != 1:
        raise InputError(f"{name}: labels must be 1-D, got shape {raw.shape}", field="labels")
    try:
        t = raw.astype(np.float64)
    except (TypeError, ValueError):
        bad = next((v for v in raw.tolist() if not _is_number(v)), raw.tolist()[0])
        raise InputError(f"{name}: a regression task needs numeric labels, got {bad!r}", field="labels") from None
    if not np.isfinite(t).all():
        raise InputError(f"{name}: labels must be finite numbers (first bad in row "
                         f"{int(np.argwhere(~np.isfinite(t))[0, 0])})", field="labels")
    if t.shape[0] < min_examples:
        raise InputError(f"{name}: a regression task needs at least {min_examples} examples, got {t.shape[0]}",
                         field="labels")
    if np.ptp(t) == 0.0:
        raise InputError(f"{name}: every label is {t[0]:g}; a regression task needs targets that vary",
                         field="labels")
    return X, t


def _is_number(v) -> bool:
    try:
        float(v)
        return True
    except (TypeError, ValueError):
        return False


def one_hot(y: np.ndarray, n_classes: int) -> np.ndarray:
    out = np.zeros((y.shape[0], n_classes), dtype=np.float64)
    out[np.arange(y.shape[0]), y] = 1.0
    return out


def class_means(X: np.ndarray, y: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """(C, D) means, by one scatter-add (no Python loop over classes)."""
    sums = np.zeros((counts.shape[0], X.shape[1]), dtype=np.float64)
    np.add.at(sums, y, X) if X.shape[0] < 2048 else _scatter_sum(sums, X, y)
    return sums / counts[:, None]


def _scatter_sum(out: np.ndarray, X: np.ndarray, y: np.ndarray) -> None:
    # np.add.at is slow on large arrays; a sparse one-hot product is one BLAS-like pass
    from scipy import sparse  # lazy: scipy

    onehot = sparse.csr_matrix((np.ones_like(y, dtype=np.float64), (y, np.arange(y.shape[0]))),
                               shape=(out.shape[0], y.shape[0]))
    out += onehot @ X


def tridiagonalize(G: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """G = Q T Q^T (LAPACK ``dsytrd``) -> (diagonal d, off-diagonal e of T, Q^T B).

    Q is never formed: the C columns of B are carried through its Householder reflectors (O(n^2 C)).
    NumPy/SciPy offer no routine that applies the reduction to a few vectors, hence this composition of
    LAPACK calls (the tests check it against ``eigh``).
    """
    from scipy.linalg import lapack  # lazy: scipy

    n = G.shape[0]
    QB = np.array(B, dtype=np.float64, order="C", copy=True)
    lwork = int(lapack.dsytrd_lwork(n, lower=1)[0])
    c, d, e, tau, info = lapack.dsytrd(np.asfortranarray(G), lower=1, lwork=max(lwork, n))
    if info != 0:  # pragma: no cover - LAPACK argument error
        raise RuntimeError(f"dsytrd failed (info={info})")
    for i in range(n - 1):  # Q^T B = H(n-1) ... H(1) B, H(i) = I - tau_i v_i v_i^T
        t = tau[i]
        if t == 0.0:
            continue
        v = c[i + 1:, i].copy()
        v[0] = 1.0
        blk = QB[i + 1:]
        blk -= np.outer(t * v, v @ blk)
    return d, e, QB


def sym_eig_project(G: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues ``w`` (ascending) of the symmetric ``G`` and ``V^T B`` for its eigenvectors ``V``.

    Only the projections of a few columns are needed, never ``V``: a full ``eigh`` spends most of its time
    accumulating V (~2 n^3 flops); here G is tridiagonalised (:func:`tridiagonalize`) and T's eigenvectors Z
    come from ``dstemr`` (O(n^2)), so that V^T B = Z^T (Q^T B).
    """
    from scipy.linalg import eigh_tridiagonal  # lazy: scipy

    if G.shape[0] <= 2:
        w, V = np.linalg.eigh(G)
        return w, V.T @ np.asarray(B, dtype=np.float64)
    d, e, QB = tridiagonalize(G, B)
    w, Z = eigh_tridiagonal(d, e, lapack_driver="stemr")
    return w, Z.T @ QB


def spd_solve(A: np.ndarray, B: np.ndarray, min_rcond: float = 1e-8) -> np.ndarray | None:
    """A^-1 B by Cholesky when A is safely positive definite (LAPACK's reciprocal condition estimate above
    ``min_rcond``), else None (the caller then uses the spectral pseudo-inverse). For such A the
    pseudo-inverse *is* the inverse, and a Cholesky solve costs n^3/3 flops against ~9 n^3 for an eigh."""
    from scipy.linalg import lapack  # lazy: scipy

    anorm = float(np.abs(A).sum(0).max())
    if not np.isfinite(anorm) or anorm == 0.0:
        return None
    L, info = lapack.dpotrf(A, lower=1, clean=1)
    if info != 0:
        return None
    rcond, info = lapack.dpocon(L, anorm, uplo="L")
    if info != 0 or not rcond > min_rcond:
        return None
    X, info = lapack.dpotrs(L, np.asarray(B, dtype=np.float64), lower=1)
    return X if info == 0 else None


def unit_scale(X: np.ndarray) -> tuple[np.ndarray, int]:
    """(X / 2**k, k) with k chosen so that max |X / 2**k| lies in [0.5, 1); k = 0 for an all-zero X.

    Multiplying by a power of two is exact in floating point, so an estimator whose math is scale-invariant
    computes the same value on the rescaled copy, and one that is not can carry the scale as ``k`` (in
    log space) instead of squaring features of magnitude 1e200 into an overflow or 1e-200 into zero.
    """
    top = float(np.abs(X).max()) if X.size else 0.0
    if top == 0.0:
        return X, 0
    k = int(np.frexp(top)[1])
    return np.ldexp(X, -k), k


LOG2 = float(np.log(2.0))
