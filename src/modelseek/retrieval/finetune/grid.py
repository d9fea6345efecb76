"""Pool x task grids: build the jobs, skip the finished ones, run the rest, collect the ground truth."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..data.pool import Candidate
from ..data.task import Criticality, Task
from ..data.truth import GroundTruth
from ...core.errors import InputError
from ..executors import Executor, Outcome, Unit, make_executor, run_until_done, runs_in_process
from ...core.progress import progress_counter
from .executors import job_outcome, job_unit
from .jobs import Job, build_jobs
from .protocol import ModelSpec, TaskData, resolve_device
from .recipe import PROTOCOL, Device, Recipe
from .store import JobStore
from ..features.sources import hub_offline_reason, in_hub_cache, is_hub_source
from ..profiles import hf_cache_dir

log = logging.getLogger(__name__)


@dataclass
class GridResult:
    """What a grid run did; :meth:`ground_truth` reads the results back from the store."""

    jobs: list[Job]
    store: JobStore
    skipped: int = 0
    ran: int = 0              # jobs this process ran
    elsewhere: int = 0        # jobs of this run's share that other workers on the store ran meanwhile
    failures: list[tuple[Job, str]] = field(default_factory=list)

    @property
    def statuses(self) -> dict[str, str]:
        return self.store.statuses(j.key for j in self.jobs)

    @property
    def n_done(self) -> int:
        return sum(1 for s in self.statuses.values() if s == "done")

    @property
    def n_failed(self) -> int:
        return sum(1 for s in self.statuses.values() if s == "failed")

    def failed_jobs(self) -> list[tuple[Job, str]]:
        """Every job of the grid whose stored status is failed, with its error (this run's or earlier)."""
        recs = {r.key: r for r in self.store.records(j.key for j in self.jobs)}
        return [(j, recs[j.key].error or "") for j in self.jobs if j.key in recs and recs[j.key].status == "failed"]

    def ground_truth(self, tasks: Iterable[Task] | None = None) -> GroundTruth:
        return collect_ground_truth(self.store, self.jobs, tasks)


def _check_options(recipe: Recipe, executor: str | Executor, poll_s: float) -> None:
    """What fails before a store is opened or a job built: an unknown executor, a device this process cannot use
    (an in-process executor; once, not once per job — a cluster resolves it per task, where its GPU is), a bad
    poll interval."""
    if runs_in_process(executor) and recipe.device is Device.CUDA:  # only an asked-for device can be missing (and auto
        # or cpu would import torch for nothing)
        resolve_device(recipe)
    if not poll_s > 0:
        raise InputError(f"poll_s must be > 0, got {poll_s}", field="poll_s")


def _check_jobs(jobs: Sequence[Job], need_test: bool) -> None:
    """Every job can give a ground-truth row (a test split when ``need_test``) and none is listed twice."""
    if need_test:  # a ground truth is test F1: a task without a test split is refused before any job runs
        bare = next((j.task.task_id for j in jobs if j.task.test is None or len(j.task.test) == 0), None)
        if bare is not None:
            raise InputError(f"task {bare!r} has no test split: the ground truth scores each fine-tuned model on it",
                             field="test")
    keys = [j.key for j in jobs]
    if len(set(keys)) != len(keys):
        raise InputError("the grid has duplicate jobs (a task or candidate listed twice?)")


def run_grid(tasks: Iterable[Task | TaskData], pool: Iterable[Candidate | ModelSpec], store: JobStore | str | Path,
             recipe: Recipe = PROTOCOL, seeds: Sequence[int] = (0,), executor: str | Executor = "local",
             address: str | None = None, retry_failed: bool = False, trainer=None, progress: bool = False,
             poll_s: float = 1.0, need_test: bool = True, check_offline: bool = True,
             **executor_options: Any) -> GridResult:
    """Fine-tune every candidate of ``pool`` on every task with every seed; results go to ``store``.

    Finished jobs are skipped; failed ones too unless ``retry_failed``. Each outcome is written to the
    store as soon as it arrives, so an interrupted grid resumes where it stopped. Several processes may run
    the same grid on one store: each job is claimed before it runs (see :class:`JobStore`), so every job runs
    once; a process that has no job left to claim waits (polling every ``poll_s`` seconds) for those that
    other workers hold, taking over any whose worker died, and returns when the whole grid is finished.

    ``executor`` is a name of :data:`modelseek.retrieval.executors.EXECUTORS` (made with ``address`` and
    ``executor_options``) or an executor instance. ``check_offline``: with the Hub offline, refuse before any job
    a grid whose Hub candidates are not in the local cache (one line naming them); False lets each such job fail on
    its own (the verification of a ranking reports them per candidate).
    """
    _check_options(recipe, executor, poll_s)
    store = store if isinstance(store, JobStore) else JobStore(store)
    jobs = build_jobs(tasks, pool, recipe, seeds)
    _check_jobs(jobs, need_test)
    keys = [j.key for j in jobs]
    store.add_recipe(recipe.digest, recipe.to_dict())
    known = store.states(keys)
    # a failed job is retried once per run asked for: while its stored attempts are those seen now
    retry = {k: a for k, (s, a) in known.items() if s == "failed"} if retry_failed else {}
    todo = [j for j in jobs if j.key not in known or j.key in retry]
    if todo and check_offline and trainer is None and executor == "local":  # a Ray worker has its own cache
        _check_offline(todo, getattr(pool, "file", None))
    result = GridResult(jobs=jobs, store=store, skipped=len(jobs) - len(todo))
    if result.skipped:
        log.info("skipping %d finished job(s) of %d", result.skipped, len(jobs))
    bar = progress_counter(len(todo), desc="fine-tuning", disable=not progress or not todo)
    ran_here: set[str] = set()

    def on_start(unit: Unit) -> int | None:
        return store.claim(unit.key, retry.get(unit.key))

    def on_done(unit: Unit, done: Outcome, attempt: int) -> None:
        job, outcome = unit.item, job_outcome(unit, done)
        store.finish(key=job.key, task_id=job.task.task_id, model_id=job.model.model_id,
                     model_source=job.model.source, recipe=job.recipe.digest, seed=job.seed,
                     task_fingerprint=job.task.fingerprint, status=outcome.status, result=outcome.result,
                     error=outcome.error, attempt=attempt, host=outcome.host)
        result.ran += 1
        ran_here.add(job.key)
        if outcome.status == "failed":
            result.failures.append((job, outcome.error or ""))
        bar.update(1)

    def pending() -> list[Job]:
        """Jobs of ``todo`` that nobody has finished (or, for a retry, re-run) yet."""
        now = store.states(j.key for j in todo)
        return [j for j in todo if j.key not in ran_here
                and (j.key not in now or (j.key in retry and now[j.key] == ("failed", retry[j.key])))]

    if todo:
        ex = make_executor(executor, address=address, **executor_options)
        try:
            run_until_done(ex, lambda: [job_unit(j, trainer) for j in pending()], on_start, on_done, store, poll_s,
                           "start a new one (another `store`)")
        finally:
            bar.close()
    result.elsewhere = len(todo) - result.ran
    return result


def _check_offline(jobs: Sequence[Job], pool_file: str | None = None) -> None:
    """Before any job runs: with the Hub offline, every Hub candidate of ``jobs`` must be in the local Hugging Face
    cache. Else one line naming them (and the pool's file) and what to do (transformers would fail each job with
    its own OSError)."""

    models = list({j.model.model_id: j.model for j in jobs}.values())
    hub = [m for m in models if is_hub_source(m.source)]
    reason = hub_offline_reason() if hub else None
    if not reason:
        return
    missing = [m for m in hub if not in_hub_cache(m.source, m.revision)]
    if missing:
        named = ", ".join(f"{m.model_id!r} ({m.source})" for m in missing[:5]) + (
            f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise InputError(f"{len(missing)} candidate(s) not in the local Hugging Face cache ({hf_cache_dir()}) and the "
                         f"Hub is offline ({reason}): {named}; download them where the Hub is reachable "
                         f"(huggingface-cli download {missing[0].source}) or give the pool local model folders "
                         f"(its path column)", path=pool_file, field="pool")


def collect_ground_truth(store: JobStore, jobs: Sequence[Job], tasks: Iterable[Task] | None = None) -> GroundTruth:
    """The ground truth of ``jobs`` from ``store``: F1 per (task, model), the mean over the seeds that
    finished. Rows follow the jobs' order (task-major, pool order), whatever order jobs finished in.
    Criticality is the task's own where it has one, else derived from regret. Tasks on which no model
    finished, or every model scored 0, are left out (logged)."""
    recs = {r.key: r for r in store.records(j.key for j in jobs)}
    f1s: dict[tuple[str, str], list[float]] = {}
    for j in jobs:
        r = recs.get(j.key)
        if r is not None and r.status == "done" and r.f1 is not None:
            f1s.setdefault((j.task.task_id, j.model.model_id), []).append(float(r.f1))
    rows = [(t, m, sum(v) / len(v)) for (t, m), v in f1s.items()]
    frame = pd.DataFrame(rows, columns=["task_id", "model_id", "f1"])
    if frame.empty:
        raise InputError("no finished jobs: nothing to write as ground truth")
    best = frame.groupby("task_id")["f1"].transform("max")
    dropped = sorted(set(frame.loc[best <= 0, "task_id"]))
    if dropped:
        log.warning("left out task(s) where every model scored F1 = 0: %s", ", ".join(dropped))
        frame = frame[best > 0]
        if frame.empty:
            raise InputError("every task has F1 = 0 for every model: nothing to write as ground truth")
    crit: dict[str, Criticality] = {}
    for t in tasks or ():
        c = getattr(t, "criticality", None)
        if c is not None:
            crit[t.id] = c
    present = set(frame["task_id"])
    return GroundTruth(frame.reset_index(drop=True), criticality={k: v for k, v in crit.items() if k in present},
                       source=str(store.path))
