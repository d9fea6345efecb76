"""The funnel's answer: one order over the pool from the three signals.

* The estimator-scored candidates come first, by the fused score ``w_p z(prior) + w_f z(estimator)`` (``z``:
  standardised over those candidates; ``w = r / (1 - r^2)`` for each signal's assumed correlation ``r`` with
  fine-tuned F1, the weights of the posterior mean of a standard-normal truth seen through two independent noisy
  signals), then the others by the prior.
* Fine-tuning re-orders the candidates it measured among the places they held: the best by validation F1 (later
  halving rungs first) takes the highest of those places, and so on. A fine-tuned candidate never jumps over one
  that was not fine-tuned, so fine-tuning a cheap outsider that the budget happened to fit cannot push it to the
  top; the top place goes to a verified candidate whenever the top of the order was fine-tuned.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np


def weight(r: float) -> float:
    return r / (1.0 - r * r)


def _z(values: np.ndarray) -> np.ndarray:
    sd = values.std()
    return (values - values.mean()) / sd if sd > 0 else np.zeros_like(values)


def fused(prior: Mapping[str, float], feats: Mapping[str, float], r_prior: float, r_feats: float) -> dict[str, float]:
    """The fused score of every candidate in ``feats`` (see the module docstring)."""
    ids = list(feats)
    if not ids:
        return {}
    p = _z(np.array([float(prior.get(i, 0.0)) for i in ids]))
    f = _z(np.array([float(feats[i]) for i in ids]))
    s = weight(r_prior) * p + weight(r_feats) * f
    return {i: float(v) for i, v in zip(ids, s)}


def base_order(pool_ids: Sequence[str], prior: Mapping[str, float], feats: Mapping[str, float], r_prior: float,
               r_feats: float) -> list[str]:
    """Estimator-scored candidates by fused score, then the rest by the prior (pool order breaks ties)."""
    pos = {c: i for i, c in enumerate(pool_ids)}
    fz = fused(prior, feats, r_prior, r_feats)
    return sorted(pool_ids, key=lambda c: (0, -fz[c], pos[c]) if c in fz
                  else (1, -prior.get(c, float("-inf")), pos[c]))


def merge_finetuned(order: Sequence[str], finetuned: Mapping[str, tuple[float, float]]) -> list[str]:
    """``order`` with the fine-tuned candidates (id -> (rung, validation F1)) re-sorted among their own places."""
    slots = [i for i, c in enumerate(order) if c in finetuned]
    best_first = sorted((c for c in order if c in finetuned), key=lambda c: (-finetuned[c][0], -finetuned[c][1]))
    out = list(order)
    for i, c in zip(slots, best_first):
        out[i] = c
    return out
