"""Weighted Kendall tau between a run's order and the fine-tuned F1 (Vigna, WWW 2015).

Hyperbolic weights put more weight on disagreements near the top; computed with
:func:`scipy.stats.weightedtau` on (F1, -rank) over the candidates present in both. Candidates missing from
the run are placed after all ranked ones. Range [-1, 1]; 1 = same order. Fewer than 2 candidates -> NaN.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np


def weighted_tau(ranking: Sequence[str], f1: Mapping[str, float]) -> float:
    from scipy.stats import weightedtau

    docs = list(f1)
    pos = {d: i for i, d in enumerate(ranking)}
    n = len(ranking)
    order = np.array([-(pos.get(d, n)) for d in docs], dtype=float)
    truth = np.array([f1[d] for d in docs], dtype=float)
    if len(docs) < 2:
        return math.nan
    tau = weightedtau(truth, order).statistic
    return float(tau)
