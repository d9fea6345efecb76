"""Reciprocal rank of the first relevant item (Voorhees, TREC-8 QA, 1999); MRR is its mean over topics.

A candidate is relevant when its grade is at least ``min_grade`` (default 1: normalized F1 above 0.90 under
the official scheme; for Subtask B the one true LoRA has grade 1). No relevant item in the ranking -> 0.
``mrr@k`` looks at the first k items only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from .base import Batch, Judgments, Metric
from ...core.kinds import register


def reciprocal_rank(ranking: Sequence[str], grades: Mapping[str, float], min_grade: float = 1) -> float:
    for i, d in enumerate(ranking, start=1):
        if grades.get(d, 0) >= min_grade:
            return 1.0 / i
    return 0.0


@register("metric", name="mrr")
class MRR(Metric):
    """``mrr`` / ``mrr@k``: per list, :func:`reciprocal_rank`; vectorised, the first relevant row of each topic."""

    def per_list(self, ranking: Sequence[str], j: Judgments, k: int | None) -> float:
        return reciprocal_rank(ranking[:k] if k else ranking, j.grades, j.relevance_level)

    def vectorised(self, b: Batch, k: int | None) -> np.ndarray:
        rel = b.matched & (b.grade >= b.relevance_level)
        if k is not None:
            rel &= b.pos < k
        out = np.zeros(b.W)
        idx = np.flatnonzero(rel)
        if idx.size:  # rows are grouped by topic in order: the first relevant row of each topic
            first = idx[np.r_[True, b.seg[idx][1:] != b.seg[idx][:-1]]]
            out[b.seg[first]] = 1.0 / (b.pos[first] + 1.0)
        return out

    def trec_name(self, k: int | None) -> str:
        return "recip_rank" if k is None else f"recip_rank_cut_{k}"
