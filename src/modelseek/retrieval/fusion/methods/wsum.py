"""``wsum`` — weighted sum ``sum_r w_r v_r(d)`` of the normalised scores (weights default to 1, i.e. combsum).

Searched under each normalisation over the weight grid (several runs only)."""

from __future__ import annotations

import numpy as np

from . import FusionMethod, SearchSpace, ordered_sum, weighted_terms
from ....core.kinds import register


def combine(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    return ordered_sum(weighted_terms(values, weights))


def search(space: SearchSpace):
    if not space.several_runs:
        return []
    return [(1, space.build("wsum", n, w)) for n in space.norms for w in space.weights]


register("fusion method",
         FusionMethod("wsum", "weighted sum of normalised scores", uses_scores=True, takes_weights=True,
                      combine=combine, search=search))
