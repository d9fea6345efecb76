"""The ``rank`` verb: score every candidate of a pool for one or more tasks and return a :class:`Run`
(:func:`rank`), or the run with what ``modelseek rank`` explains and concludes (:func:`rank_explained`).

The ranking itself is :mod:`modelseek.retrieval.ranking` (re-exported here); this module adds the conclusions, which
replay
the funnel's history (:mod:`modelseek.retrieval.verdicts`), so it sits above :mod:`modelseek.retrieval.funnel`, which
ranks through
:mod:`modelseek.retrieval.ranking`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .data.folder import ResolvedFolder
from .data.pool import Pool
from .data.run import Run
from .data.task import Task, TaskSet
from .data.truth import GroundTruth
from .rankers import Ranker

if TYPE_CHECKING:
    from .executors import Executor
from .ranking import FolderRequest, cross_fitted, folder_request, rank, training_data
from .ranking import ranked
from .verdicts import add_verdicts


@dataclass
class RankResult:
    """What :func:`rank_explained` returns: the run; per task, the explanation of a ranker that explains itself
    (``adaptive``, the default: predicted relative F1 with intervals, criticality, regret, nearest past tasks, and
    what ``rank`` concludes from them: the regret rule's tier and the budget curve, see
    :func:`modelseek.retrieval.verdicts.with_verdicts`); and per task the layer chosen for each candidate by a ranker
    that
    chooses layers (``layer: best``)."""

    run: Run
    explanations: dict[str, dict[str, Any]] = field(default_factory=dict)
    layers: dict[str, dict[str, str]] = field(default_factory=dict)


def rank_explained(tasks: Task | Iterable[Task] | str | Path | ResolvedFolder, pool: Pool | None = None,
                   method: str | Ranker = "default", train_truth: GroundTruth | str | Path | None = None,
                   train_tasks: TaskSet | str | Path | None = None, run_id: str | None = None, progress: bool = False,
                   allow_failures: bool = False, *, split: str | None = None, train_pool: Pool | None = None,
                   train_source: str | None = None, explain: bool = True, executor: str | Executor | None = None,
                   address: str | None = None, device: str | None = None, strict_execution: bool = True,
                   **params) -> RankResult:
    """:func:`rank`, with the ranker's explanations (``explain``) and chosen layers: what ``modelseek rank`` prints
    and ``rank --json`` carries. Each explanation that predicts criticality and the top-1 regret (``adaptive``'s,
    the default's) holds the regret rule's tier and the budget curve
    (:func:`modelseek.retrieval.verdicts.with_verdicts`).

    Every other parameter is :func:`modelseek.retrieval.ranking.ranked`'s (the tasks or a folder, the training data as
    objects or paths, the pool the training truth names, the executor, ``strict_execution``)."""
    done = ranked(tasks, pool, method, train_truth=train_truth, train_tasks=train_tasks, run_id=run_id,
                  progress=progress, allow_failures=allow_failures, split=split, train_pool=train_pool,
                  train_source=train_source, executor=executor, address=address, device=device,
                  strict_execution=strict_execution, **params)
    explanations = {}
    if explain:
        explanations = {t.id: ex for t in done.tasks if (ex := done.ranker.explain(t, done.pool)) is not None}
    result = RankResult(done.run, explanations, dict(getattr(done.ranker, "chosen_layers_", {})))
    return add_verdicts(result)


__all__ = ["FolderRequest", "RankResult", "cross_fitted", "folder_request", "rank", "rank_explained", "training_data"]
