"""Ranking tasks with a method, below the public API: :func:`rank` (a :class:`Run`), :func:`ranked` (the run and the
fitted ranker), and what ranking a folder or training on paths means (:func:`folder_request`, :func:`training_data`).
:mod:`modelseek.retrieval.api` re-exports them and adds :func:`~modelseek.retrieval.api.rank_explained` (the ranker's
explanations with
``rank``'s verdicts, which replay the funnel's history); the funnel ranks through this module, so that the API can
sit above the funnel without an import cycle."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .data.folder import ResolvedFolder, resolve_folder
from .data.pool import Pool, ntcir_pool
from .data.run import Run
from .data.task import Task, TaskSet
from .data.truth import GroundTruth
from ..core.errors import InputError
from .rankers import Ranker

if TYPE_CHECKING:
    from .executors import Executor
from .rankers.base import failures_allowed
from .rankers._registry import RANKERS
from .data.folder import _near
from .data.loaders import load_ntcir_tasks
from .data.pool import load_pool


def rank(tasks: Task | Iterable[Task] | str | Path | ResolvedFolder, pool: Pool | None = None,
         method: str | Ranker = "default", train_truth: GroundTruth | str | Path | None = None,
         train_tasks: TaskSet | str | Path | None = None,
         run_id: str | None = None, progress: bool = False, allow_failures: bool = False,
         executor: str | Executor | None = None, address: str | None = None, device: str | None = None,
         split: str | None = None, cv: int | None = None, **params) -> Run:
    """Rank ``pool`` (default: the 20 NTCIR-19 candidates) for ``tasks`` with ``method``.

    ``tasks`` may be a folder (a path, or :func:`~modelseek.retrieval.data.folder.resolve_folder`'s result): the
    organisers'
    layout (``split``: ``test`` | ``train``, the only one present by default), a generated layout or a folder of
    task folders, read as ``modelseek rank FOLDER`` reads it — its tasks, its pool (the ``models.csv`` beside them,
    else the built-in ntcir19) and, for a method that learns given no ``train_truth``, the ground truth found there
    without the tasks being ranked (see :func:`folder_request`).

    ``method`` is a registered name, a :class:`Ranker` instance, ``"default"`` (the shipped, pre-trained
    ranker), the name of a shipped artifact (``"ltr-ntcir19"``) or the path of a saved ranker artifact (``.json``,
    from ``modelseek train-ranker``); see :func:`modelseek.retrieval.rankers.resolve.resolve`. A method that learns from
    past tasks is fitted on ``train_truth`` (and ``train_tasks``, for methods that read the tasks' text); its
    candidates are matched to ``pool`` by Hugging Face id. ``params`` are the method's declared parameters.

    A candidate that cannot be downloaded, loaded or featurised makes the call raise
    :class:`~modelseek.retrieval.rankers.features.CandidateFailures` naming every failure; with ``allow_failures=True``
    the failed candidates are absent from the run instead (never given placeholder scores).

    ``executor`` (``"local"`` | ``"ray"``, at ``address``) runs a feature method's candidates as one job each;
    finished candidates are kept beside the feature cache and never computed twice (see
    :mod:`modelseek.retrieval.rankers.feature_jobs`). ``device`` (``"auto"`` | ``"cpu"`` | ``"cuda"``) is where
    features are
    computed, for every method that runs models. :func:`modelseek.retrieval.api.rank_explained` also returns what
    ``rank``
    explains and concludes.

    ``cv=K`` makes the cross-fitted run of ``modelseek rank PATH --cv K`` instead (:func:`cross_fitted`: each task
    ranked by the method fitted on the other folds; ``seed`` seeds the folds).
    """
    if cv is not None:
        return cross_fitted(tasks, pool, method, cv, train_truth=train_truth, train_tasks=train_tasks, run_id=run_id,
                            allow_failures=allow_failures, executor=executor, address=address, device=device,
                            split=split, **params)
    return ranked(tasks, pool, method, train_truth=train_truth, train_tasks=train_tasks, run_id=run_id,
                  progress=progress, allow_failures=allow_failures, executor=executor, address=address,
                  device=device, split=split, **params).run


def cross_fitted(tasks: Task | Iterable[Task] | str | Path | ResolvedFolder, pool: Pool | None = None,
                 method: str | Ranker = "default", folds: int = 5, *,
                 train_truth: GroundTruth | str | Path | ResolvedFolder | None = None,
                 train_tasks: TaskSet | str | Path | None = None, seed: int = 0, run_id: str | None = None,
                 allow_failures: bool = False, executor: str | Executor | None = None, address: str | None = None,
                 device: str | None = None, split: str | None = None, **params) -> Run:
    """The run ``modelseek rank PATH --cv K`` makes (the whole rule here, the command only parses): every task
    ranked by ``method`` fitted on the tasks of the other ``folds`` (task-level k-fold drawn with ``seed``,
    :func:`modelseek.retrieval.bench.cross_validate`), so that a learned method is scored on tasks it never saw.

    ``tasks`` as for :func:`rank`: a folder gives its tasks, its pool and its ground truth (found by the one
    resolver, :meth:`~modelseek.retrieval.data.folder.ResolvedFolder.truth`); ``train_truth`` (a ground truth, its file
    or
    folder) is the ground truth of tasks given otherwise, or replaces the folder's. ``seed`` also seeds a method
    that declares one; ``device`` goes to a method that takes one. It fits on the tasks' own folds, so it takes no
    ``train_tasks``, and runs in this process (no executor but ``local``)."""
    from .bench import cross_validate  # lazy: pandas
    from .rankers.resolve import ranker_class, split_params  # lazy: start-up

    if train_tasks is not None:
        raise InputError("`cv` fits on the other folds of the tasks ranked; it takes no `train_tasks`", field="cv")
    if executor not in (None, "local") or address:
        raise InputError(f"`cv` runs in this process; it takes no `executor` {executor or address}", field="executor")
    truth = train_truth
    if isinstance(tasks, (str, Path, ResolvedFolder)):
        req = folder_request(tasks, [], split=split, pool=pool)
        task_list, pool = req.tasks, req.pool
        truth = req.folder.truth() if truth is None else truth
    else:
        if split is not None:
            raise InputError("`split` takes a folder (the organisers' layout), not tasks already read", field="split")
        task_list = [tasks] if isinstance(tasks, Task) else list(tasks)
    if truth is None:
        raise InputError("`cv` needs the ground truth of the tasks ranked: give `train_truth`", field="train_truth")
    if isinstance(truth, (str, Path)):
        truth = resolve_folder(truth).truth() if Path(truth).is_dir() else GroundTruth.from_csv(truth)
    elif isinstance(truth, ResolvedFolder):
        truth = truth.truth()
    if isinstance(method, str):
        params = split_params([method], params, seed)[method]
        if device and "device" in ranker_class(method).param_names():
            params = {**params, "device": device}
    res = cross_validate(method, truth, pool if pool is not None else ntcir_pool(), tasks=TaskSet(task_list),
                         folds=folds, seed=seed, method_params=params, allow_failures=allow_failures)
    run = res.runs[0]
    return run.with_id(run_id) if run_id else run


@dataclass
class Ranked:
    """What :func:`ranked` did: the run, the ranker that made it (fitted), and the tasks and pool it ranked."""

    run: Run
    ranker: Ranker
    tasks: list[Task]
    pool: Pool


def ranked(tasks: Task | Iterable[Task] | str | Path | ResolvedFolder, pool: Pool | None = None,
           method: str | Ranker = "default", train_truth: GroundTruth | str | Path | None = None,
           train_tasks: TaskSet | str | Path | None = None, run_id: str | None = None, progress: bool = False,
           allow_failures: bool = False, *, split: str | None = None, train_pool: Pool | None = None,
           train_source: str | None = None, executor: str | Executor | None = None, address: str | None = None,
           device: str | None = None, strict_execution: bool = True, **params) -> Ranked:
    """:func:`rank`, keeping the fitted ranker (its explanations and chosen layers are read by
    :func:`modelseek.retrieval.api.rank_explained`, the public entry; the funnel ranks through this module, below the
    API).

    ``tasks`` and ``split`` as for :func:`rank` (a folder is read by :func:`folder_request`).

    ``train_truth`` and ``train_tasks`` may be paths, read by :func:`training_data` as ``rank --train-truth`` and
    ``--train-tasks`` read them. ``train_pool`` is the pool whose ids the training truth uses (default ``pool``);
    ``train_source`` the file that names the training models, named by the error when a candidate to rank is not
    among them.
    ``executor``, ``address`` and ``device`` as for :func:`rank`; ``strict_execution=False`` accepts ``ray`` for a
    method that runs no candidate model (``rank --verify-top`` uses the executor for fine-tuning).
    """
    from .rankers.feature_jobs import with_execution  # lazy: start-up
    from .rankers.resolve import resolve  # lazy: start-up

    if isinstance(tasks, (str, Path, ResolvedFolder)):
        learns = train_truth is None and train_tasks is None  # else the training data given is used
        req = folder_request(tasks, [method] if learns else [], split=split, pool=pool)
        task_list, pool = req.tasks, req.pool
        if train_truth is None and train_tasks is None and req.train_truth is not None:
            train_truth, train_tasks, train_pool, train_source = (req.train_truth, req.train_tasks, req.train_pool,
                                                                  req.train_source)
    if isinstance(train_truth, (str, Path)) or isinstance(train_tasks, (str, Path)):  # paths, read as rank reads them
        if isinstance(train_truth, GroundTruth) or isinstance(train_tasks, TaskSet):
            raise InputError("give `train_truth` and `train_tasks` both as paths or both as loaded data",
                             field="train_tasks")
        train_truth, train_tasks, train_pool, train_source = training_data(
            [method], pool if pool is not None else ntcir_pool(), train_truth, train_tasks)
    if not isinstance(tasks, (str, Path, ResolvedFolder)):
        if split is not None:
            raise InputError("`split` takes a folder (the organisers' layout), not tasks already read", field="split")
        task_list = [tasks] if isinstance(tasks, Task) else list(tasks)
    pool = pool if pool is not None else ntcir_pool()
    ranker = resolve(method, params, train_truth=train_truth, train_tasks=train_tasks,
                     pool=train_pool if train_pool is not None else pool, progress=progress)
    ranker = with_execution(ranker, executor, address, device, strict=strict_execution)
    if train_source and not ranker.artifact_:
        ranker.artifact_ = train_source  # a candidate it was not trained on: the error names this file
    if allow_failures:
        ranker = failures_allowed(ranker)
    run = ranker.rank_tasks(task_list, pool, run_id=run_id or getattr(ranker, "name", "run"), progress=progress)
    return Ranked(run, ranker, task_list, pool)


@dataclass
class FolderRequest:
    """What a ``rank`` of a folder ranks and learns from, read once for the CLI and :func:`rank` alike: the tasks
    (``found``: which split, the test topics not downloaded), the pool, and for methods that learn given no training
    data, the ground truth found in the folder without the tasks being ranked (``learners``: the methods fitted on
    it; ``train_source``: the file it came from)."""

    folder: ResolvedFolder
    found: Any  # data.folder.RankingTasks
    tasks: list[Task]
    pool: Pool
    train_truth: GroundTruth | None = None
    train_tasks: TaskSet | None = None
    train_pool: Pool | None = None
    train_source: str | None = None
    learners: list[str] = field(default_factory=list)


def folder_request(path: str | Path | ResolvedFolder, methods: Sequence[str | Ranker], *, split: str | None = None,
                   pool: Pool | str | Path | None = None) -> FolderRequest:
    """Resolve ``path`` (:func:`~modelseek.retrieval.data.folder.resolve_folder`) into what ranking it with ``methods``
    needs
    (see :class:`FolderRequest`); ``pool`` (a pool, a file or a name) replaces the one beside the tasks. A method
    that learns from past tasks is fitted on the folder's ground truth without the tasks being ranked; a ground
    truth that holds only those tasks is an error (cross-fit them instead)."""
    from .rankers.resolve import ranker_class  # lazy: start-up

    folder = path if isinstance(path, ResolvedFolder) else resolve_folder(path)
    found = folder.ranking_tasks(split)
    the_pool = pool if isinstance(pool, Pool) else folder.pool(pool)
    req = FolderRequest(folder, found, list(found.tasks), the_pool)
    learners = [str(m) for m in methods if isinstance(m, str) and m in RANKERS and ranker_class(m).needs_fit]
    if not learners or folder.ground_truth is None:
        return req
    truth = folder.truth()
    ranked = {t.id for t in req.tasks}
    keep = [t for t in truth.task_ids if t not in ranked]  # never learn from a task being ranked
    if not keep:
        raise InputError(f"the ground truth {folder.ground_truth} holds only the tasks being ranked; {learners[0]} "
                         f"learns from other tasks: cross-fit them (`cv`) or give `train_truth`", field="train_truth")
    truth = truth.subset(keep) if len(keep) < len(truth.task_ids) else truth
    learn_text = any(ranker_class(m).needs_text for m in learners)
    req.train_truth, req.train_tasks = truth, folder.training_tasks(keep) if learn_text else None
    req.train_pool, req.train_source, req.learners = folder.pool(), str(folder.ground_truth), learners
    return req


def training_data(methods: Sequence[str | Ranker], pool: Pool, train_truth: str | Path | None = None,
                  train_tasks: str | Path | None = None
                  ) -> tuple[GroundTruth | None, TaskSet | None, Pool, str | None]:
    """(training truth, training tasks, the pool that names the truth's models, the file that named them) from
    paths, as ``rank --train-truth/--train-tasks`` reads them: ``train_truth`` a folder (read by
    :func:`~modelseek.retrieval.data.folder.resolve_folder`: its ground truth, its task folders when a method reads
    text,
    its pool) or a CSV (default with ``train_tasks``: the ground truth beside those tasks); the pool is the
    ``models.csv`` beside them where there is one, else ``pool``."""
    from .rankers.resolve import ranker_class  # lazy: start-up

    if train_truth is not None and train_tasks is None and Path(train_truth).is_dir():
        folder = resolve_folder(train_truth)
        truth = folder.truth()
        learn_text = any(ranker_class(m).needs_text and ranker_class(m).needs_fit for m in methods)
        return (truth, folder.training_tasks(truth.task_ids) if learn_text else None, folder.pool(),
                str(folder.models_csv or folder.ground_truth))
    if train_truth is None and train_tasks is None:
        return None, None, pool, None
    where = Path(train_tasks) if train_tasks is not None else Path(str(train_truth)).parent
    models = _near(where, "models.csv") if where.is_dir() else None
    train_pool = load_pool(models) if models is not None else pool
    if train_truth is None:
        found = _near(where, "ground-truth.csv")
        if found is None:
            raise InputError("no training ground truth given and none found beside the training tasks",
                             path=where, field="train_truth")
        train_truth = found
    truth = GroundTruth.from_csv(train_truth)
    tasks = load_ntcir_tasks(where, ids=truth.task_ids) if train_tasks is not None else None
    return truth, tasks, train_pool, str(models) if models is not None else truth.source
