"""Normalised discounted cumulative gain at cut-off k.

    DCG@k  = sum_{i=1..k} gain(rel_i) / log2(i + 1)
    nDCG@k = DCG@k / IDCG@k

as in Järvelin & Kekäläinen (2002), with the NTCIR-19 Model Retrieval conventions: gain 2^rel - 1 under the
official grading (``rel`` under the paper's), the ideal ranking built from the grades of *all* candidates of
the topic (not only those in the run), documents missing from the run contribute nothing, and a topic whose
ideal DCG is 0 scores 0.
"""

from __future__ import annotations

import math
from typing import Callable, Mapping, Sequence


def dcg(gains: Sequence[float], k: int) -> float:
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains[:k]))


def ndcg_at_k(ranking: Sequence[str], grades: Mapping[str, float], k: int,
              gain: Callable[[float], float]) -> float:
    if k < 1:
        raise ValueError("k must be >= 1")
    run_gains = [gain(grades.get(d, 0)) for d in ranking]
    ideal = sorted((gain(g) for g in grades.values()), reverse=True)
    idcg = dcg(ideal, k)
    if idcg <= 0:
        return 0.0
    return dcg(run_gains, k) / idcg
