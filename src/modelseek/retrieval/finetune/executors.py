"""A fine-tuning job as a unit of :mod:`modelseek.retrieval.executors` (any registered executor runs grids: ``local``,
``ray``, or one of your own): :func:`job_unit` makes the unit, :func:`job_outcome` reads its outcome.

Executors never write to the store: the grid does, from its driver process, through the executor's two
callbacks (``on_start`` claims a job before it is dispatched, ``on_done`` records its outcome as it arrives).
"""

from __future__ import annotations

import logging
import socket
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...core.errors import ModelseekError
from ..executors import Outcome, Shared, Unit
from .jobs import Job
from . import protocol

if TYPE_CHECKING:
    from .protocol import ModelSpec, TaskData
    from .recipe import Recipe

log = logging.getLogger(__name__)

Trainer = Callable[..., Any]


@dataclass(frozen=True)
class JobOutcome:
    key: str
    status: str  # "done" | "failed"
    result: dict[str, Any] | None = None
    error: str | None = None
    host: str = ""


def run_job(job: Job, trainer: Trainer | None = None) -> JobOutcome:
    """Run one job, turning any exception into a failed outcome that names it."""
    trainer = trainer or protocol.finetune  # looked up per call: a test or a plugin may replace it
    try:
        result = trainer(job.task, job.model, job.recipe, job.seed)
    except Exception as exc:  # noqa: BLE001 - a failed job is recorded, never fatal to the grid
        if isinstance(exc, ModelseekError):
            error = str(exc)
        else:
            error = f"{type(exc).__name__}: {exc}\n" + "".join(traceback.format_exc(limit=-3))
        log.info("job %s/%s seed %s failed: %s", job.task.task_id, job.model.model_id, job.seed,
                    error.splitlines()[0] if error else "")
        return JobOutcome(job.key, "failed", error=error, host=socket.gethostname())
    return JobOutcome(job.key, "done", result=result.to_dict(), host=socket.gethostname())


def run_job_parts(task: TaskData, model: ModelSpec, recipe: Recipe, seed: int, key: str,
                  trainer: Trainer | None = None) -> JobOutcome:
    """A job's unit function (on any executor): the job rebuilt from its parts and run. On a cluster the task
    arrives through the object store, once per task; a key that changed in transit means that the driver and
    the worker run different modelseek versions."""
    job = Job(task=task, model=model, recipe=recipe, seed=seed)
    if job.key != key:
        raise RuntimeError(f"job key changed in transit ({key} -> {job.key}): driver and worker run "
                           f"different modelseek versions")
    return run_job(job, trainer)


def job_unit(job: Job, trainer: Trainer | None = None) -> Unit:
    """``job`` as an executor's unit: its task shared between the jobs that train on it, ``recipe.cpu_threads``
    CPUs (or a GPU where the cluster has them)."""
    return Unit(job.key, run_job_parts, (Shared(job.task.fingerprint, job.task), job.model, job.recipe, job.seed,
                                         job.key, trainer), cpus=job.recipe.cpu_threads or 1, item=job)


def job_outcome(unit: Unit, outcome: Outcome) -> JobOutcome:
    """The fine-tuning outcome of a unit made by :func:`job_unit` (a unit the executor gave up on is failed)."""
    return outcome.value if outcome.ok else JobOutcome(unit.key, "failed", error=outcome.error)
