"""The ``rank`` verb: score every candidate of a pool for one or more tasks and return a :class:`Run`."""

from __future__ import annotations

from typing import Iterable

from .data.pool import Pool
from .data.run import Run
from .data.task import Task, TaskSet
from .data.truth import GroundTruth
from .errors import InputError
from .rankers import Ranker, make


def default_ranker() -> Ranker:
    """The ranker shipped inside the package, trained on the NTCIR-19 training tasks."""
    from .rankers.default import load_default

    return load_default()


def _builtin(name: str) -> bool:
    from .rankers import RANKERS
    from .rankers.default import builtin_artifact

    return name not in RANKERS and builtin_artifact(name) is not None


def rank(tasks: Task | Iterable[Task], pool: Pool | None = None, method: str | Ranker = "default",
         train_truth: GroundTruth | None = None, train_tasks: TaskSet | None = None, run_id: str | None = None,
         progress: bool = False, allow_failures: bool = False, **params) -> Run:
    """Rank ``pool`` (default: the 20 NTCIR-19 candidates) for ``tasks`` with ``method``.

    ``method`` is a registered name, a :class:`Ranker` instance, ``"default"`` (the shipped, pre-trained
    ranker) or the path of a saved ranker artifact (``.json``, from ``modelseek train-ranker``). A method that learns from past tasks is fitted on ``train_truth`` (and ``train_tasks``).

    A candidate that cannot be downloaded, loaded or featurised makes the call raise
    :class:`~modelseek.rankers.features.CandidateFailures` naming every failure; with ``allow_failures=True``
    the failed candidates are absent from the run instead (never given placeholder scores).
    """
    from .data.pool import ntcir_pool

    pool = pool if pool is not None else ntcir_pool()
    task_list = [tasks] if isinstance(tasks, Task) else list(tasks)
    if isinstance(method, Ranker):
        ranker = method
    elif method == "default":
        ranker = default_ranker()
    elif str(method).endswith(".json") or _builtin(str(method)):  # a saved ranker artifact
        from .rankers.default import builtin_artifact, load_artifact

        ranker = load_artifact(builtin_artifact(str(method)) or method)
    else:
        ranker = make(method, **params)
        if ranker.needs_fit:
            if train_truth is None:
                raise InputError(f"method {method!r} learns from past tasks: give their ground truth "
                                 f"(train_truth / --train-truth)")
            ranker.fit(train_tasks, train_truth)
    if allow_failures and getattr(ranker, "allow_failures", True) is False:
        import copy

        ranker = copy.copy(ranker)  # the caller's instance is not modified
        ranker.allow_failures = True
    return ranker.rank_tasks(task_list, pool, run_id=run_id or getattr(ranker, "name", "run"), progress=progress)
