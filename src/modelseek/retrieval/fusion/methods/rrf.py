"""``rrf`` — reciprocal-rank fusion, ``sum_r w_r / (k + p_r(d))`` (Cormack, Clarke & Buettcher, SIGIR 2009;
``k = 60``, ``w_r = 1`` unless given). Uses ranks only: a normalisation does not apply.

Searched as plain RRF (equal weights) for each ``k`` first, and weighted over the weight grid last."""

from __future__ import annotations

import numpy as np

from . import FusionMethod, SearchSpace, ordered_sum, weighted_terms
from ....core.kinds import register


def combine(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    return ordered_sum(weighted_terms(values, weights))


def search(space: SearchSpace):
    plain = [(0, space.build("rrf", None, None, k)) for k in space.rrf_ks]
    weighted = [(2, space.build("rrf", None, w, k)) for k in space.rrf_ks for w in space.weights
                if w != space.equal] if space.several_runs else []
    return plain + weighted


register("fusion method",
         FusionMethod("rrf", "reciprocal-rank fusion", uses_scores=False, takes_weights=True, combine=combine,
                      search=search))
