"""The ``rank`` verb: score every candidate of a pool for one or more tasks and return a :class:`Run`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .data.pool import Pool, ntcir_pool
from .data.run import Run
from .data.task import Task, TaskSet
from .data.truth import GroundTruth
from .rankers import Ranker
from .rankers.base import failures_allowed


def rank(tasks: Task | Iterable[Task], pool: Pool | None = None, method: str | Ranker = "default",
         train_truth: GroundTruth | None = None, train_tasks: TaskSet | None = None, run_id: str | None = None,
         progress: bool = False, allow_failures: bool = False, executor: str | None = None,
         address: str | None = None, device: str | None = None, **params) -> Run:
    """Rank ``pool`` (default: the 20 NTCIR-19 candidates) for ``tasks`` with ``method``.

    ``method`` is a registered name, a :class:`Ranker` instance, ``"default"`` (the shipped, pre-trained
    ranker), the name of a shipped artifact (``"ltr-ntcir19"``) or the path of a saved ranker artifact (``.json``,
    from ``modelseek train-ranker``); see :func:`modelseek.rankers.resolve.resolve`. A method that learns from
    past tasks is fitted on ``train_truth`` (and ``train_tasks``, for methods that read the tasks' text); its
    candidates are matched to ``pool`` by Hugging Face id. ``params`` are the method's declared parameters.

    A candidate that cannot be downloaded, loaded or featurised makes the call raise
    :class:`~modelseek.rankers.features.CandidateFailures` naming every failure; with ``allow_failures=True``
    the failed candidates are absent from the run instead (never given placeholder scores).

    ``executor`` (``"local"`` | ``"ray"``, at ``address``) runs a feature method's candidates as one job each;
    finished candidates are kept beside the feature cache and never computed twice (see
    :mod:`modelseek.rankers.feature_jobs`). ``device`` (``"auto"`` | ``"cpu"`` | ``"cuda"``) is where features are
    computed, for every method that runs models.
    """
    return rank_explained(tasks, pool, method, train_truth=train_truth, train_tasks=train_tasks, run_id=run_id,
                          progress=progress, allow_failures=allow_failures, explain=False, executor=executor,
                          address=address, device=device, **params).run


@dataclass
class RankResult:
    """What :func:`rank_explained` returns: the run; per task, the explanation of a ranker that explains itself
    (``adaptive``, the default: predicted relative F1 with intervals, criticality, regret, nearest past tasks);
    and per task the layer chosen for each candidate by a ranker that chooses layers (``layer: best``)."""

    run: Run
    explanations: dict[str, dict[str, Any]] = field(default_factory=dict)
    layers: dict[str, dict[str, str]] = field(default_factory=dict)


def rank_explained(tasks: Task | Iterable[Task], pool: Pool | None = None, method: str | Ranker = "default",
                   train_truth: GroundTruth | None = None, train_tasks: TaskSet | None = None,
                   run_id: str | None = None, progress: bool = False, allow_failures: bool = False, *,
                   train_pool: Pool | None = None, train_source: str | None = None, explain: bool = True,
                   executor: str | None = None, address: str | None = None, device: str | None = None,
                   strict_execution: bool = True, **params) -> RankResult:
    """:func:`rank`, with the ranker's explanations (``explain``) and chosen layers.

    ``train_pool`` is the pool whose ids the training truth uses (default ``pool``); ``train_source`` the file
    that names the training models, named by the error when a candidate to rank is not among them.
    ``executor``, ``address`` and ``device`` as for :func:`rank`; ``strict_execution=False`` accepts ``ray`` for a
    method that runs no candidate model (``rank --verify-top`` uses the executor for fine-tuning).
    """
    from .rankers.feature_jobs import with_execution  # lazy: start-up
    from .rankers.resolve import resolve  # lazy: start-up

    pool = pool if pool is not None else ntcir_pool()
    task_list = [tasks] if isinstance(tasks, Task) else list(tasks)
    ranker = resolve(method, params, train_truth=train_truth, train_tasks=train_tasks,
                     pool=train_pool if train_pool is not None else pool, progress=progress)
    ranker = with_execution(ranker, executor, address, device, strict=strict_execution)
    if train_source and not ranker.artifact_:
        ranker.artifact_ = train_source  # a candidate it was not trained on: the error names this file
    if allow_failures:
        ranker = failures_allowed(ranker)
    run = ranker.rank_tasks(task_list, pool, run_id=run_id or getattr(ranker, "name", "run"), progress=progress)
    explanations = {}
    if explain:
        explanations = {t.id: ex for t in task_list if (ex := ranker.explain(t, pool)) is not None}
    return RankResult(run, explanations, dict(getattr(ranker, "chosen_layers_", {})))
