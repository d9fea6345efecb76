"""Regret at k: how much F1 the best of the top-k picks loses against the best candidate.

    regret@k = 1 - max_{d in top k} F1(d) / max_d F1(d)

0 when the best model is among the top k; lower is better. Missing candidates are not picks; a topic with no
pick (or whose best F1 is not positive) has regret 1.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from .base import Batch, Judgments, Metric
from ...core.kinds import register


def regret_at_k(ranking: Sequence[str], f1: Mapping[str, float], k: int = 1) -> float:
    best = max(f1.values())
    picks = [f1[d] for d in ranking[:k] if d in f1]
    if not picks or best <= 0:
        return 1.0
    return float(1.0 - max(picks) / best)


@register("metric", name="regret")
class Regret(Metric):
    """``regret@k`` (``regret`` is ``regret@1``): per list, :func:`regret_at_k`; vectorised, one maximum per
    topic over its top-k judged rows."""

    higher_is_better = False
    missing = 1.0

    def per_list(self, ranking: Sequence[str], j: Judgments, k: int | None) -> float:
        return regret_at_k(ranking, j.f1, k or 1)

    def vectorised(self, b: Batch, k: int | None) -> np.ndarray:
        ta = b.truth
        best_task = np.maximum.reduceat(ta.f1, ta.offsets[:-1]) if ta.f1.size else np.zeros(0)
        best = best_task[b.t_of_w]
        picks = b.matched & (b.pos < (k or 1))
        top = np.full(b.W, -np.inf)
        np.maximum.at(top, b.seg[picks], b.f1[picks])
        out = np.ones(b.W)
        ok = np.isfinite(top) & (best > 0)
        out[ok] = 1.0 - top[ok] / best[ok]
        return out
