"""Input checks and linear algebra shared by the estimators (float64 throughout)."""

from __future__ import annotations

import numpy as np

from ..errors import InputError


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
    if counts.min() < min_per_class:
        c = classes[int(np.argmin(counts))]
        c = c.item() if hasattr(c, "item") else c
        raise InputError(f"{name}: needs at least {min_per_class} examples of every class; class {c!r} has "
                         f"{int(counts.min())}", field="labels")
    return X, y, counts


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
    from scipy import sparse

    onehot = sparse.csr_matrix((np.ones_like(y, dtype=np.float64), (y, np.arange(y.shape[0]))),
                               shape=(out.shape[0], y.shape[0]))
    out += onehot @ X


def gram(X: np.ndarray) -> np.ndarray:
    """X^T X (D x D), symmetric, in float64."""
    G = X.T @ X
    return G


def sym_eig_project(G: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues ``w`` (ascending) of the symmetric ``G`` and ``V^T B`` for its eigenvectors ``V``.

    Only the projections of a few columns are needed, never ``V`` itself: this is what LogME and the
    H-scores consume.
    """
    w, V = np.linalg.eigh(G)
    return w, V.T @ B
