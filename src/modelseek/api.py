"""The ``rank`` verb: score every candidate of a pool for one or more tasks and return a :class:`Run`."""

from __future__ import annotations

from collections.abc import Iterable

from .data.pool import Pool
from .data.run import Run
from .data.task import Task, TaskSet
from .data.truth import GroundTruth
from .rankers import Ranker
from .rankers.base import failures_allowed


def default_ranker() -> Ranker:
    """The ranker shipped inside the package, trained on the NTCIR-19 training tasks."""
    from .rankers.default import load_default

    return load_default()


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
    from .data.pool import ntcir_pool
    from .rankers.feature_jobs import with_execution
    from .rankers.resolve import resolve

    pool = pool if pool is not None else ntcir_pool()
    task_list = [tasks] if isinstance(tasks, Task) else list(tasks)
    ranker = resolve(method, params, train_truth=train_truth, train_tasks=train_tasks, pool=pool)
    ranker = with_execution(ranker, executor, address, device)
    if allow_failures:
        ranker = failures_allowed(ranker)
    return ranker.rank_tasks(task_list, pool, run_id=run_id or getattr(ranker, "name", "run"), progress=progress)
