"""Reciprocal rank of the first relevant item (Voorhees, TREC-8 QA, 1999); MRR is its mean over topics.

A candidate is relevant when its grade is at least ``min_grade`` (default 1: normalized F1 above 0.90 under
the official scheme; for Subtask B the one true LoRA has grade 1). No relevant item in the ranking -> 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def reciprocal_rank(ranking: Sequence[str], grades: Mapping[str, float], min_grade: float = 1) -> float:
    for i, d in enumerate(ranking, start=1):
        if grades.get(d, 0) >= min_grade:
            return 1.0 / i
    return 0.0
