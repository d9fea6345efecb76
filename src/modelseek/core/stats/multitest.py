"""Benjamini-Hochberg false-discovery-rate correction (Benjamini & Hochberg, 1995), vectorised.

Adjusted p-values: sort the m p-values, ``q_(k) = min_{l >= k} m p_(l) / l``, capped at 1; a hypothesis is
rejected at level alpha when its adjusted p-value is <= alpha (the step-up procedure). NaNs are left out
of m and stay NaN.
"""

from __future__ import annotations

import numpy as np


def benjamini_hochberg(p, axis: int = -1) -> np.ndarray:
    """BH-adjusted p-values along ``axis`` (each slice along the axis is one family of hypotheses)."""
    p = np.asarray(p, dtype=float)
    moved = np.moveaxis(p, axis, -1)
    flat = moved.reshape(-1, moved.shape[-1]) if moved.ndim else moved.reshape(1, 1)
    out = np.full(flat.shape, np.nan)
    for r in range(flat.shape[0]):
        row = flat[r]
        ok = np.flatnonzero(np.isfinite(row))
        m = ok.size
        if m == 0:
            continue
        order = ok[np.argsort(row[ok], kind="stable")]
        scaled = row[order] * m / np.arange(1, m + 1)
        adj = np.minimum.accumulate(scaled[::-1])[::-1]
        out[r, order] = np.minimum(adj, 1.0)
    return np.moveaxis(out.reshape(moved.shape), -1, axis) if p.ndim else out.reshape(())


def holm(p) -> np.ndarray:
    """Holm's step-down adjusted p-values (Holm, 1979) of one family: sort the m p-values ascending,
    ``q_(k) = max_{l <= k} min(1, (m - l + 1) p_(l))``. Controls the family-wise error rate; NaNs stay NaN and
    are left out of m."""
    p = np.asarray(p, dtype=float)
    out = np.full(p.shape, np.nan)
    flat = p.ravel()
    ok = np.flatnonzero(np.isfinite(flat))
    m = ok.size
    if m:
        order = ok[np.argsort(flat[ok], kind="stable")]
        scaled = np.minimum(1.0, flat[order] * (m - np.arange(m)))
        res = out.ravel()
        res[order] = np.maximum.accumulate(scaled)
        out = res.reshape(p.shape)
    return out
