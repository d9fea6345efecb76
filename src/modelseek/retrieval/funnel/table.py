"""The recorded task x model table replay walks, its task-level splits and the small index helpers every
policy shares (ranks of an order, unscored candidates last)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..data.run import Run
from ..data.truth import GroundTruth
from ...core.errors import InputError

@dataclass(frozen=True)
class Table:
    """A task x model table of recorded scores (higher is better), NaN where a model has no result on a task (a
    published zoo rarely fine-tuned every model everywhere): such a candidate is not in that task's pool — no
    policy can fine-tune it, every ranking puts it last, and it has no gain."""

    task_ids: list[str]
    model_ids: list[str]
    score: np.ndarray

    @property
    def scored(self) -> np.ndarray:
        return ~np.isnan(self.score)

    def filled(self) -> np.ndarray:
        """The scores, ``-inf`` where there is none (below every score, so never the best)."""
        return np.where(self.scored, self.score, -np.inf)

    def imputed(self) -> np.ndarray:
        """The scores, holes filled by the two-way additive fit (task mean + model mean - grand mean, each over
        the recorded scores): what the joint model is fitted on."""
        if self.scored.all():
            return self.score
        grand = np.nanmean(self.score)
        row = np.nanmean(self.score, axis=1, keepdims=True)  # every task has 2 scores or more (from_truth)
        seen = self.scored.sum(axis=0, keepdims=True)
        col = np.where(seen > 0, np.nansum(self.score, axis=0, keepdims=True) / np.maximum(seen, 1), np.nan)
        fill = row + np.where(np.isnan(col), grand, col) - grand
        return np.where(self.scored, self.score, fill)

    @classmethod
    def from_truth(cls, truth: GroundTruth, model_ids: Sequence[str] | None = None, what: str = "ground truth",
                   unseen: bool = False) -> Table:
        """The table of ``truth`` over ``model_ids``; a model it never scored is an error, or with ``unseen`` a
        column of holes."""
        m = truth.matrix("f1")
        models = list(model_ids) if model_ids is not None else [str(c) for c in m.columns]
        missing = [c for c in models if c not in m.columns]
        if missing and unseen:
            m = m.reindex(columns=[*m.columns, *missing])
        elif missing:
            raise InputError(f"the {what} has no score for model(s) {', '.join(missing[:5])}",
                             path=truth.source or None, field="model_id")
        a = m[models].to_numpy(dtype=float)
        few = np.flatnonzero((~np.isnan(a)).sum(axis=1) < 2)
        if len(few):
            t = few[0]
            raise InputError(f"task {m.index[t]!r} has {int((~np.isnan(a[t])).sum())} scored model(s); replay needs "
                             f"at least 2 per task", path=truth.source or None, field="f1")
        return cls([str(t) for t in m.index], models, a)


@dataclass(frozen=True)
class Split:
    test: np.ndarray             # row indices of the replayed table
    history: GroundTruth         # what the policies learn from
    cross_fitted: bool = False   # the history is the other folds of the replayed truth


def splits(truth: GroundTruth, table: Table, history: GroundTruth | None, folds: int, seed: int) -> list[Split]:
    """Task-level cross-fitting within ``truth`` (``folds`` folds), or one split: every task against
    ``history`` (without any task of ``truth``, so no task is replayed on its own result)."""
    pos = {t: i for i, t in enumerate(table.task_ids)}
    if history is not None:
        keep = [t for t in history.task_ids if t not in pos]
        if len(keep) < 2:
            raise InputError(f"the history holds {len(keep)} task(s) besides the replayed ones; at least 2 needed",
                             path=history.source or None)
        return [Split(np.arange(len(table.task_ids)), history.subset(keep))]
    from ..data.folds import make_folds  # lazy: start-up

    held = make_folds(table.task_ids, truth.tiers(table.task_ids), folds=folds, seed=seed)
    return [Split(np.array(sorted(pos[t] for t in fold)), truth.subset([t for t in table.task_ids if t not in fold]),
                  cross_fitted=True) for fold in held]


def check_covers(run: Run, task_ids: Sequence[str], path: str | None = None) -> None:
    """A signal run must score every replayed task: the first one it lacks is a located error."""
    missing = [t for t in task_ids if t not in run]
    if missing:
        raise InputError(f"signal run {run.run_id!r} has no topic {missing[0]!r} ({len(missing)} of "
                         f"{len(task_ids)} tasks missing; replay needs every task scored)", path=path, field="topic")


def _signal_matrix(run: Run, table: Table, rows: np.ndarray) -> np.ndarray:
    """The run's scores as a (tasks x models) matrix; a candidate missing from a topic scores -inf (it then
    follows the others, in the prior's order)."""
    out = np.full((len(rows), len(table.model_ids)), -np.inf)
    col = {m: j for j, m in enumerate(table.model_ids)}
    for i, r in enumerate(rows):
        for m, s in run.scores(table.task_ids[r]).items():
            if m in col and np.isfinite(s):
                out[i, col[m]] = s
    return out


def _scored_first(order: np.ndarray, scored: np.ndarray) -> np.ndarray:
    """Each row of ``order`` with the candidates that have no result on that task moved to its end (stably)."""
    if scored.all():
        return order
    missing = ~np.take_along_axis(scored, order, axis=1)
    return np.take_along_axis(order, np.argsort(missing, axis=1, kind="stable"), axis=1)


def _ranks_of(order: np.ndarray) -> np.ndarray:
    r = np.empty_like(order)
    r[np.arange(len(order))[:, None], order] = np.arange(order.shape[1])[None, :]
    return r
