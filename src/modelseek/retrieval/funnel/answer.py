"""The funnel's answer: the order fine-tuning walks and the final ranking, the same functions replay measures.

* The order (:func:`walk_order`) is the one replay measured and names: the prior's, or — when the frozen-feature
  estimators scored candidates — the one replay chose on a history that records the estimator's scores (the
  prior, the estimator, the reciprocal-rank fusion ``rrf``, or ``weighted``, the fusion weighted by the
  reliabilities measured there), and ``rrf`` where the history records none
  (:func:`modelseek.retrieval.funnel.replay.plain_orders`, the policies of ``modelseek replay``).
* The final ranking (:func:`final_ranking`): where replay on the history chose it, the expected-gain merge
  (:mod:`.merge`: every candidate by its expected official gain, the fine-tuned ones by their score relative to the
  best observed, the untried ones by the level of the best observed); otherwise fine-tuned first (later halving
  rungs first, then by validation score), then the others in the order walked — or, where the budget passed over a
  dear candidate for a cheaper one further down, the fine-tuned re-sorted among the places they held.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..data.run import Run
from .merge import merge_ranking
from .replay import FUSION, PRIOR, Table, plain_orders

#: the name of the estimator's signal in replay's orders (and of its run in ``--history-signals``)
ESTIMATOR = "estimator"


def walk_order(pool_ids: Sequence[str], prior: Mapping[str, float], feats: Mapping[str, float],
               order: str | None = None, reliability: Sequence[float] | None = None) -> list[str]:
    """The order of ``pool_ids`` that replay measured and named ``order`` (pool order breaking ties), exactly as
    replay orders a task: the prior's; with estimator scores ``feats`` (a signal named ``estimator``), by default
    the reciprocal-rank fusion of the prior and them, or the order replay chose on the history (``prior``,
    ``estimator``, ``rrf``, or ``weighted``: the fusion weighted by the ``reliability`` measured there, the prior's
    first)."""
    ids = list(pool_ids)
    table = Table(["task"], ids, np.full((1, len(ids)), np.nan))
    p = np.array([float(prior.get(c, -np.inf)) for c in ids])
    p = np.where(np.isfinite(p), p, (np.nanmin(p[np.isfinite(p)]) - 1.0) if np.isfinite(p).any() else 0.0)
    scored = {c: float(v) for c, v in feats.items() if c in set(ids) and np.isfinite(v)}
    signals = [Run.from_scores({"task": scored}, run_id=ESTIMATOR)] if scored else []
    orders = plain_orders(p, table, np.array([0]), signals, reliability if signals else None)
    name = (order or FUSION) if signals else PRIOR
    return [ids[i] for i in orders.get(name, orders[FUSION if signals else PRIOR])[0]]


def finetuned_first(order: Sequence[str], finetuned: Mapping[str, tuple[float, float]]) -> list[str]:
    """The fine-tuned candidates (id -> (rung, validation score)) first, later rungs first and then by score
    (the order breaking ties), then the others in ``order``."""
    pos = {c: i for i, c in enumerate(order)}
    done = sorted((c for c in order if c in finetuned), key=lambda c: (-finetuned[c][0], -finetuned[c][1], pos[c]))
    return done + [c for c in order if c not in finetuned]


def in_place(order: Sequence[str], finetuned: Mapping[str, tuple[float, float]]) -> list[str]:
    """``order`` with the fine-tuned candidates re-sorted among the places they held (later rungs first, then by
    score): a fine-tuned candidate never jumps over one that was not fine-tuned."""
    slots = [i for i, c in enumerate(order) if c in finetuned]
    best_first = sorted((c for c in order if c in finetuned), key=lambda c: (-finetuned[c][0], -finetuned[c][1]))
    out = list(order)
    for i, c in zip(slots, best_first):
        out[i] = c
    return out


def final_ranking(order: Sequence[str], finetuned: Mapping[str, tuple[float, float]], tables: Any = None
                  ) -> list[str]:
    """The funnel's final ranking (see the module docstring); ``tables``: the merge's gain tables for this many
    fine-tunes, or ``None`` for fine-tuned first. Fine-tuned first is what replay measured for the first ``k`` of
    the order; where the budget passed over a dear candidate for a cheaper one further down (not a prefix), the
    fine-tuned ones are re-sorted in place instead (:func:`in_place`), so a cheap outsider cannot jump to the top."""
    if set(order[: len(finetuned)]) != set(finetuned):  # not the order's first k: neither what replay measured
        return in_place(order, finetuned)                 # for fine-tuned first nor what the merge's tables learned
    if tables is None or not finetuned or any(r for r, _ in finetuned.values()):
        return finetuned_first(order, finetuned)
    return merge_ranking(order, {c: float(v) for c, (_, v) in finetuned.items()}, tables)
