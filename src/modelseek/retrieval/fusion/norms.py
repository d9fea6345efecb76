"""Score normalisations, applied to each run per topic before score-based fusion.

Names follow ranx (``min-max``, ``zmuv``, ``rank``, ``sum``) plus ``none``. Each acts on the scores of the
candidates a run holds for one topic (the *present* candidates; a failed candidate -- a non-finite score or
the ``±1e308`` a run file uses for one -- is not present). With ``x`` those scores in run order (Rank, then
line order) and ``n`` their number:

* ``none``    -- ``x`` unchanged;
* ``min-max`` -- ``(x - min x) / (max x - min x)``: best 1, worst 0; all equal -> 0;
* ``zmuv``    -- zero mean, unit variance: ``(x - mean x) / std x`` (population std); all equal -> 0;
* ``rank``    -- ``1 - (p - 1) / n`` for the 1-based position ``p`` in run order: best 1, last ``1/n``
  (uses the ranking only, never the scores);
* ``sum``     -- ``(x - min x) / sum(x - min x)``: shifted to start at 0, then shares of the total
  (ranx's sum normalisation); all equal -> 0.

Every normalisation but ``none`` is invariant to a positive rescaling of the run's scores; scores are
divided by their largest magnitude first, so runs with scores near the float range (1e200) normalise
without overflow. Everything is vectorised along the last axis with NaN marking an absent candidate, so
one call normalises a whole ``runs x topics x candidates`` block.
"""

from __future__ import annotations

import numpy as np

from ...core.enums import Choice
from ...core.errors import InputError


class Norm(Choice):
    """A score normalisation (see :mod:`modelseek.retrieval.fusion.norms`)."""

    NONE = "none"
    MIN_MAX = "min-max"
    ZMUV = "zmuv"
    RANK = "rank"
    SUM = "sum"

    @classmethod
    def _normalise(cls, text: str) -> str:
        t = text.strip().lower().replace("_", "-")
        return _ALIASES.get(t, t)


# other spellings people use for the same normalisations
_ALIASES = {"minmax": "min-max", "max-min": "min-max", "z-score": "zmuv", "zscore": "zmuv", "z": "zmuv",
            "identity": "none", "raw": "none", "borda": "rank"}


def _masked(x: np.ndarray, present: np.ndarray, fill: float) -> np.ndarray:
    return np.where(present, x, fill)


def normalize_block(scores: np.ndarray, positions: np.ndarray, norm: Norm | str) -> np.ndarray:
    """Normalise ``scores`` along the last axis; NaN marks an absent candidate and stays NaN.

    ``positions`` holds the 1-based position of each present candidate in its run's order (NaN where
    absent); only ``rank`` uses it.
    """
    norm = Norm.parse(norm, field="norm")
    x = np.asarray(scores, dtype=float)
    present = ~np.isnan(x)
    if norm is Norm.NONE:
        return x.copy()
    n = present.sum(axis=-1, keepdims=True)
    if norm is Norm.RANK:
        with np.errstate(invalid="ignore", divide="ignore"):
            out = 1.0 - (np.asarray(positions, dtype=float) - 1.0) / n
        return np.where(present, out, np.nan)
    # divide by the largest magnitude first: the normalisations below are scale-free, and this keeps
    # differences and squares of scores near 1e308 finite
    scale = _masked(np.abs(x), present, 0.0).max(axis=-1, keepdims=True, initial=0.0)
    s = np.where(present, x / np.where(scale > 0, scale, 1.0), 0.0)
    lo = _masked(s, present, np.inf).min(axis=-1, keepdims=True, initial=np.inf)
    if norm is Norm.MIN_MAX:
        hi = _masked(s, present, -np.inf).max(axis=-1, keepdims=True, initial=-np.inf)
        span = hi - lo
        ok = np.isfinite(span) & (span > 0)
        out = np.where(ok, (s - np.where(np.isfinite(lo), lo, 0.0)) / np.where(ok, span, 1.0), 0.0)
    elif norm is Norm.ZMUV:
        safe_n = np.maximum(n, 1)
        mean = s.sum(axis=-1, keepdims=True) / safe_n
        dev = np.where(present, s - mean, 0.0)
        std = np.sqrt((dev * dev).sum(axis=-1, keepdims=True) / safe_n)
        out = np.where(std > 0, dev / np.where(std > 0, std, 1.0), 0.0)
    elif norm is Norm.SUM:
        t = np.where(present, s - np.where(np.isfinite(lo), lo, 0.0), 0.0)
        tot = t.sum(axis=-1, keepdims=True)
        out = np.where(tot > 0, t / np.where(tot > 0, tot, 1.0), 0.0)
    else:  # pragma: no cover - every member is handled above
        raise InputError(f"unhandled normalisation {norm.value!r}")
    return np.where(present, out, np.nan)
