"""Executors run a list of jobs and report each outcome as soon as it arrives.

* ``local`` — sequential, in this process (the default).
* ``ray`` — each job is a Ray task (one GPU per job where the cluster has GPUs, else ``cpu_threads`` CPUs);
  ``address=None`` starts a local Ray instance, ``"auto"`` joins a running cluster. A worker that dies is
  retried by Ray (``max_retries``); a job whose retries are spent is reported failed and the grid goes on.

An executor never writes to the store: the grid does, from its driver process, through two callbacks:
``on_start(job)`` claims the job before it is dispatched (None: another worker holds it or finished it, so
the executor skips it) and ``on_done(job, outcome, attempt)`` records the outcome as soon as it arrives.
"""

from __future__ import annotations

import logging
import os
import socket
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ModelseekError
from ..registry import Registry
from .jobs import Job

log = logging.getLogger(__name__)

Trainer = Callable[..., Any]
OnStart = Callable[[Job], "int | None"]  # the attempt id, or None: claimed elsewhere, skip
OnDone = Callable[[Job, "JobOutcome", int], None]


@dataclass(frozen=True)
class JobOutcome:
    key: str
    status: str  # "done" | "failed"
    result: dict[str, Any] | None = None
    error: str | None = None
    host: str = ""


def run_job(job: Job, trainer: Trainer | None = None) -> JobOutcome:
    """Run one job, turning any exception into a failed outcome that names it."""
    from .protocol import finetune

    trainer = trainer or finetune
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


class LocalExecutor:
    """Runs jobs one after another in this process."""

    name = "local"

    def __init__(self, **_: Any) -> None:
        pass

    def run(self, jobs: Sequence[Job], on_start: OnStart, on_done: OnDone, trainer: Trainer | None = None) -> None:
        for job in jobs:
            attempt = on_start(job)
            if attempt is not None:
                on_done(job, run_job(job, trainer), attempt)


def _ray_job(task, model, recipe, seed, key, trainer):
    """The Ray task: rebuild the job on the worker and run it."""
    job = Job(task=task, model=model, recipe=recipe, seed=seed)
    if job.key != key:  # the worker's modelseek hashes jobs differently from the driver's
        raise RuntimeError(f"job key changed in transit ({key} -> {job.key}): driver and worker run "
                           f"different modelseek versions")
    return run_job(job, trainer)


def _modelseek_root() -> str | None:
    """Where this process imports modelseek from (run on a worker as a probe)."""
    import importlib.util

    # found, not imported: this module is part of the package (an import of it would be a cycle)
    spec = importlib.util.find_spec("modelseek")
    if spec is None or not spec.origin:
        return None
    return str(Path(spec.origin).resolve().parents[1])


def _package_root() -> Path:
    """The folder that holds the ``modelseek`` package this driver imported."""
    return Path(__file__).resolve().parents[2]


@contextmanager
def ray_session(address: str | None = None, num_cpus: int | None = None) -> Iterator[Any]:
    """The ``ray`` module, initialised for the block: a local instance when ``address`` is None (``num_cpus``
    CPUs), else the cluster at ``address``; shut down afterwards only if this block started it. Ray missing is
    one error naming the extra to install. Shared by every Ray executor (fine-tuning jobs, candidate jobs)."""
    try:
        import ray
    except ImportError:
        raise ModelseekError("the ray executor needs Ray: pip install 'modelseek[ray]'") from None
    started = False
    if not ray.is_initialized():
        ray.init(address=address, num_cpus=num_cpus if not address else None, include_dashboard=False,
                 logging_level=logging.WARNING)
        started = True
    try:
        yield ray
    finally:
        if started:
            ray.shutdown()


def ray_runtime_env(ray, address: str | None, ship_code: bool = True) -> dict[str, Any]:
    """What Ray workers need to import this driver's modelseek: nothing when they already do (asked with a probe
    task, so that idle workers are reused); else the package folder on PYTHONPATH (local instance) or shipped
    with ``py_modules`` (a cluster given by address)."""
    if not ship_code:
        return {}
    here = str(_package_root())
    if ray.get(ray.remote(_modelseek_root).remote()) == here:
        return {}
    if address:
        return {"py_modules": [str(_package_root() / "modelseek")]}
    path = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH", "")) if p)
    return {"env_vars": {"PYTHONPATH": path, "TOKENIZERS_PARALLELISM": "false"}}


def ray_results(ray, pending: dict[Any, tuple[Any, int]],
                max_retries: int) -> Iterator[tuple[Any, int, Any, str | None]]:
    """``(item, attempt, value, error)`` for each pending Ray reference as it finishes (``pending``: reference ->
    (item, attempt); emptied): ``value`` is the task's return and ``error`` None, or ``value`` None and ``error``
    says why Ray gave up on it after its retries (a dead worker, a lost node)."""
    from ray.exceptions import RayError

    while pending:
        done, _ = ray.wait(list(pending), num_returns=1)
        for ref in done:
            item, attempt = pending.pop(ref)
            try:
                value = ray.get(ref)
            except RayError as exc:
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
                yield item, attempt, None, f"ray: {type(exc).__name__} after {max_retries} retries: {first}"
            else:
                yield item, attempt, value, None


class RayExecutor:
    """Runs jobs as Ray tasks.

    Workers must import the same modelseek as the driver: a local instance gets the driver's package
    folder on ``PYTHONPATH``; a remote cluster (``address`` given) gets the package shipped with
    ``runtime_env={"py_modules": ...}``.
    """

    name = "ray"

    def __init__(self, address: str | None = None, num_cpus: int | None = None, max_retries: int = 3,
                 ship_code: bool = True, **_: Any) -> None:
        self.address = address
        self.num_cpus = num_cpus
        self.max_retries = max_retries
        self.ship_code = ship_code

    def run(self, jobs: Sequence[Job], on_start: OnStart, on_done: OnDone, trainer: Trainer | None = None) -> None:
        with ray_session(self.address, self.num_cpus) as ray:
            gpus = ray.cluster_resources().get("GPU", 0)
            remote = ray.remote(_ray_job)
            env = ray_runtime_env(ray, self.address, self.ship_code)
            task_refs: dict[str, Any] = {}
            pending: dict[Any, tuple[Job, int]] = {}
            for job in jobs:
                res = {"num_gpus": 1, "num_cpus": 1} if gpus else {"num_cpus": job.recipe.cpu_threads or 1}
                opts = remote.options(max_retries=self.max_retries, retry_exceptions=False,
                                      runtime_env=env or None, **res)
                fp = job.task.fingerprint
                if fp not in task_refs:  # each task's data goes to the object store once
                    task_refs[fp] = ray.put(job.task)
                attempt = on_start(job)
                if attempt is None:  # claimed by another worker of the grid
                    continue
                ref = opts.remote(task_refs[fp], job.model, job.recipe, job.seed, job.key, trainer)
                pending[ref] = (job, attempt)
            for job, attempt, outcome, error in ray_results(ray, pending, self.max_retries):
                on_done(job, outcome if error is None else JobOutcome(job.key, "failed", error=error), attempt)


EXECUTORS: Registry[type] = Registry("executor")
EXECUTORS.add("local", LocalExecutor)
EXECUTORS.add("ray", RayExecutor)


def make_executor(name: str, **options: Any):
    return EXECUTORS.get(name)(**options)

