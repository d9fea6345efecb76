"""``combmnz`` — ``combsum(d) x |{r : d in r}|`` (Fox & Shaw, 1994). No weights.

Searched under each normalisation."""

from __future__ import annotations

import numpy as np

from . import FusionMethod, SearchSpace, ordered_sum
from ....core.kinds import register


def combine(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    present = ~np.isnan(values)
    return ordered_sum(np.where(present, values, 0.0)) * present.sum(axis=0)


def search(space: SearchSpace):
    return [(0, space.build("combmnz", n)) for n in space.norms]


register("fusion method",
         FusionMethod("combmnz", "sum of normalised scores times the number of runs holding the candidate",
                      uses_scores=True, takes_weights=False, combine=combine, search=search))
