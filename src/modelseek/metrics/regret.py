"""Regret at k: how much F1 the best of the top-k picks loses against the best candidate.

    regret@k = 1 - max_{d in top k} F1(d) / max_d F1(d)

0 when the best model is among the top k; lower is better. Missing candidates are not picks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def regret_at_k(ranking: Sequence[str], f1: Mapping[str, float], k: int = 1) -> float:
    best = max(f1.values())
    picks = [f1[d] for d in ranking[:k] if d in f1]
    if not picks or best <= 0:
        return 1.0
    return float(1.0 - max(picks) / best)
