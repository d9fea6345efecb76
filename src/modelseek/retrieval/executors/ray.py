"""``ray``: each unit is a Ray task.

``address=None`` starts a local Ray instance for the call (``num_cpus`` CPUs), ``"auto"`` or ``HOST:PORT`` joins a
running cluster. A unit gets one GPU where the cluster has GPUs (unless it asks for none; one that requires a GPU
on a cluster without any is an :class:`~modelseek.core.errors.InputError` before anything runs), else its ``cpus``. A
worker that dies is retried by Ray (``max_retries``); a unit whose retries are spent has an error outcome and the
batch goes on. Workers import the same modelseek as the driver: a local instance gets the driver's package folder
on ``PYTHONPATH``; a cluster given by address gets the package shipped with ``runtime_env={"py_modules": ...}``
(``ship_code=False``: neither, the workers' own install is used).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

from ...core.errors import InputError, ModelseekError
from . import OnDone, OnStart, Outcome, Shared, Unit, call_unit
from ...core.kinds import register


@register("executor")
class RayExecutor:
    """Runs units as Ray tasks (see the module's docstring)."""

    name: ClassVar[str] = "ray"
    in_process: ClassVar[bool] = False
    concurrency: ClassVar[str] = "processes"

    def __init__(self, address: str | None = None, num_cpus: int | None = None, max_retries: int = 3,
                 ship_code: bool = True) -> None:
        self.address = address
        self.num_cpus = num_cpus
        self.max_retries = max_retries
        self.ship_code = ship_code

    def run(self, units: Sequence[Unit], on_start: OnStart, on_done: OnDone) -> None:
        with ray_session(self.address, self.num_cpus) as ray:
            gpus = ray.cluster_resources().get("GPU", 0)
            if not gpus and any(u.gpu == "required" for u in units):
                raise InputError("device cuda asked for, but the Ray cluster has no GPU", field="device")
            remote = ray.remote(call_unit)
            env = ray_runtime_env(ray, self.address, self.ship_code)
            shared: dict[str, Any] = {}
            pending: dict[Any, tuple[Unit, int]] = {}
            for unit in units:
                res = {"num_gpus": 1, "num_cpus": 1} if gpus and unit.gpu != "none" else {"num_cpus": unit.cpus}
                opts = remote.options(max_retries=self.max_retries, retry_exceptions=False,
                                      runtime_env=env or None, **res)
                for a in unit.args:  # each shared value goes to the object store once
                    if isinstance(a, Shared) and a.key not in shared:
                        shared[a.key] = ray.put(a.value)
                attempt = on_start(unit)
                if attempt is None:  # finished, or held by another worker
                    continue
                args = [shared[a.key] if isinstance(a, Shared) else a for a in unit.args]
                pending[opts.remote(unit.key, unit.fn, *args)] = (unit, attempt)
            for unit, attempt, value, error in ray_results(ray, pending, self.max_retries):
                on_done(unit, value if error is None else Outcome(unit.key, error=error), attempt)


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
    return Path(__file__).resolve().parents[3]


@contextmanager
def ray_session(address: str | None = None, num_cpus: int | None = None) -> Iterator[Any]:
    """The ``ray`` module, initialised for the block: a local instance when ``address`` is None (``num_cpus``
    CPUs), else the cluster at ``address``; shut down afterwards only if this block started it. Ray missing is
    one error naming the extra to install."""
    try:
        import ray  # lazy: ray (an optional extra)
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
    from ray.exceptions import RayError  # lazy: ray (an optional extra)

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


__all__ = ["RayExecutor", "ray_runtime_env", "ray_session"]
