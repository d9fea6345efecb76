"""``combsum`` — ``sum_r v_r(d)`` of the normalised scores (Fox & Shaw, TREC-2, 1994). No weights.

Searched under each normalisation."""

from __future__ import annotations

import numpy as np

from . import FusionMethod, SearchSpace, ordered_sum
from ....core.kinds import register


def combine(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    return ordered_sum(np.where(np.isnan(values), 0.0, values))


def search(space: SearchSpace):
    return [(0, space.build("combsum", n)) for n in space.norms]


register("fusion method",
         FusionMethod("combsum", "sum of normalised scores", uses_scores=True, takes_weights=False,
                      combine=combine, search=search))
