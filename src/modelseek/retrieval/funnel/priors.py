"""The inference-free prior replay fits on a history, in one of its forms (:class:`PriorForm`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..data.truth import GroundTruth
from ...core.enums import Choice
from ...core.errors import InputError

class PriorForm(Choice):
    """The prior's form, fitted on the history.

    * ``avgrank`` — each candidate's mean fine-tuned rank over the history's tasks
      (:class:`modelseek.retrieval.rankers.avgrank.AvgRank`);
    * ``meanscore`` — its mean normalised score (its score over the task's best, averaged over the tasks it has a
      result on).
    """

    AVGRANK = "avgrank"
    MEANSCORE = "meanscore"


def avgrank_scores(history: GroundTruth, model_ids: Sequence[str], unseen_neutral: bool = False) -> np.ndarray:
    """The average-rank prior's score (minus the mean ``model_rank``) of each of ``model_ids``, fitted on
    ``history`` by :class:`modelseek.retrieval.rankers.avgrank.AvgRank`. A model the history never fine-tuned is an
    error,
    or with ``unseen_neutral`` (a cross-fitting fold whose held-out tasks were its only results) gets the mean of
    the others' scores: no evidence either way."""
    from ..rankers.avgrank import AvgRank  # lazy: start-up

    ranker = AvgRank().fit(None, history)
    by_id = dict(zip(ranker.trained_.model_ids, ranker.mean_rank_.tolist()))
    missing = [m for m in model_ids if m not in by_id]
    if missing and unseen_neutral and len(missing) < len(model_ids):
        neutral = float(np.mean([by_id[m] for m in model_ids if m in by_id]))
        by_id.update({m: neutral for m in missing})
    elif missing:
        raise InputError(f"the history has no fine-tuning result for model(s) {', '.join(missing[:5])}",
                         path=history.source or None, field="model_id")
    return -np.array([by_id[m] for m in model_ids])


def meanscore_scores(history: GroundTruth, model_ids: Sequence[str], unseen_neutral: bool = False) -> np.ndarray:
    """The mean normalised score prior (each model's score over its task's best, averaged over the history's tasks
    it has a result on) of each of ``model_ids``; unseen models as in :func:`avgrank_scores`."""
    m = history.matrix("f1")
    a = m.to_numpy(dtype=float)
    best = np.nanmax(a, axis=1, keepdims=True)
    norm = a / np.where(best > 0, best, 1.0)
    seen = (~np.isnan(norm)).sum(axis=0)
    by_id = {str(c): float(np.nanmean(norm[:, j])) for j, c in enumerate(m.columns) if seen[j]}
    missing = [x for x in model_ids if x not in by_id]
    if missing and unseen_neutral and len(missing) < len(model_ids):
        neutral = float(np.mean([by_id[x] for x in model_ids if x in by_id]))
        by_id.update({x: neutral for x in missing})
    elif missing:
        raise InputError(f"the history has no fine-tuning result for model(s) {', '.join(missing[:5])}",
                         path=history.source or None, field="model_id")
    return np.array([by_id[x] for x in model_ids])


def prior_scores(history: GroundTruth, model_ids: Sequence[str], form: PriorForm | str = PriorForm.AVGRANK,
                 unseen_neutral: bool = False) -> np.ndarray:
    """The prior of ``form`` (:class:`PriorForm`) fitted on ``history``, for ``model_ids`` (higher first)."""
    if PriorForm.parse(form) is PriorForm.MEANSCORE:
        return meanscore_scores(history, model_ids, unseen_neutral)
    return avgrank_scores(history, model_ids, unseen_neutral)
