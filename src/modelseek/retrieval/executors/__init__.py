"""One executor protocol for every batch of jobs: fine-tuning grids, frozen-feature candidate jobs and the funnel.

A job is a :class:`Unit`: a key (what a job store knows it by), a picklable module-level function with its
arguments, and the resources it asks for. An :class:`Executor` runs a sequence of units and streams each
:class:`Outcome` back through a callback as soon as it arrives::

    def on_start(unit) -> int | None: ...        # claim the unit before it is dispatched: the attempt id, or
                                                 # None to skip it (finished, or another worker holds it)
    def on_done(unit, outcome, attempt): ...     # record the outcome (the driver writes the store, never a worker)
    make_executor("local").run(units, on_start, on_done)

``on_start`` is what makes a job store resumable: the caller skips the keys it already holds, the executor asks
before each dispatch and never runs a unit whose claim is refused; :func:`run_until_done` runs what is left of
a batch that several processes share on one store, waiting for the units the others hold. An exception raised by
a unit's function is its outcome's ``error`` (``"TypeError: ..."``), the same on every executor; so is a unit a
cluster gave up on after its retries (a dead worker, a lost node). Arguments wrapped in :class:`Shared` (a task's
texts read by many units) are sent once by a cluster executor and arrive as the object itself.

Executors are a registry (:data:`EXECUTORS`, the names of ``--executor`` on every command): ``local`` (in this
process, one unit after another) and ``ray`` (a Ray task per unit; see :mod:`modelseek.retrieval.executors.ray`) are
modules of
this package. A new executor is one module here whose class is decorated with ``@register("executor")``
(:func:`modelseek.core.kinds.register`), or, from another distribution, one entry point in the group
``modelseek.retrieval.executors`` naming the class.

**Concurrency** is part of the contract: every executor states its :data:`Concurrency`. One that runs several
units at once in this process (``"threads"``) is made safe by :func:`make_executor`: the first unit of each unit
function runs alone before the others are handed to it, so that the lazy imports of that function (transformers'
model classes, made on first use) are done before threads start; several threads importing the same module at
once once failed one fine-tuning job in three.
"""

from __future__ import annotations

import inspect
import logging
import time
import traceback
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol, cast, runtime_checkable

from ...core.errors import InputError
from ...core.registry import PluginRegistry
from ...core.kinds import named, takes

log = logging.getLogger(__name__)

Concurrency = Literal["serial", "threads", "processes"]
"""How an executor runs units: one after another in this process (``serial``), several at once in threads of this
process (``threads``), or in other processes or machines (``processes``: nothing they import is shared here)."""
CONCURRENCY: tuple[str, ...] = ("serial", "threads", "processes")

Gpu = Literal["none", "auto", "required"]
"""What a unit asks of GPUs: none; one where the cluster has any (``auto``); one or an error (``required``)."""


@dataclass(frozen=True, eq=False)
class Shared:
    """An argument that many units take (a task's data): ``key`` names the value, so that a cluster executor
    sends each key once (Ray: one object-store entry) and every unit's function receives ``value`` itself."""

    key: str
    value: Any


@dataclass(frozen=True)
class Outcome:
    """What became of one unit: ``value`` (the function's return) or ``error`` (why it has none)."""

    key: str
    value: Any = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True, eq=False)
class Unit:
    """One job: ``fn(*args)`` (``fn`` a module-level function or picklable callable, so that a cluster can run
    it), known by ``key``. ``cpus``: CPUs it uses; ``gpu``: see :data:`Gpu`. ``item`` is what the caller maps
    the outcome back to (a fine-tuning job, a candidate); it stays in the driver."""

    key: str
    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()
    cpus: int = 1
    gpu: Gpu = "auto"
    item: Any = None

    def call(self) -> Outcome:
        """Run the unit here: its :class:`Shared` arguments resolved, an exception turned into the error."""
        return call_unit(self.key, self.fn, *(a.value if isinstance(a, Shared) else a for a in self.args))


def call_unit(key: str, fn: Callable[..., Any], *args: Any) -> Outcome:
    """``fn(*args)`` as an :class:`Outcome` (also what a cluster worker runs)."""
    try:
        return Outcome(key, fn(*args))
    except Exception as exc:  # noqa: BLE001 - a unit's failure is its outcome, never fatal to the batch
        log.info("job %s failed:\n%s", key, traceback.format_exc(limit=-3))
        return Outcome(key, error=f"{type(exc).__name__}: {exc}")


OnStart = Callable[[Unit], "int | None"]
OnDone = Callable[[Unit, Outcome, int], None]


@runtime_checkable
class Executor(Protocol):
    """The contract of an executor (checked when it registers).

    ``name`` is its registered name; ``in_process`` says whether units run in this process (then a device is
    checked here and progress bars are shown; a cluster checks the device where each unit runs); ``concurrency``
    (:data:`Concurrency`) how units run: ``serial`` and ``threads`` executors are in process, ``processes`` ones
    are not (a threads executor is given each unit function's first unit alone, see the module docstring). ``run`` calls
    ``on_start(unit)`` before dispatching each unit, skips the unit when it returns None, and calls
    ``on_done(unit, outcome, attempt)`` in this thread as each outcome arrives; it returns when every dispatched
    unit has an outcome. Options (``address``, ``max_retries`` ...) are the constructor's keyword parameters."""

    name: ClassVar[str]
    in_process: ClassVar[bool]
    concurrency: ClassVar[Concurrency]

    def run(self, units: Sequence[Unit], on_start: OnStart, on_done: OnDone) -> None: ...


class ClaimStore(Protocol):
    """What :func:`run_until_done` needs of a job store (:class:`modelseek.retrieval.finetune.store.JobStore` has it):
    the
    live claims (``{"key", "owner", ...}``), this process's owner id, a heartbeat that keeps its claims alive."""

    owner: str
    path: Path

    def claims(self) -> list[dict[str, Any]]: ...

    def heartbeat(self) -> AbstractContextManager[Any]: ...


def run_until_done(executor: Executor, pending: Callable[[], list[Unit]], on_start: OnStart, on_done: OnDone,
                   store: ClaimStore, poll_s: float, remedy: str) -> None:
    """Resume a batch on a shared job store: run the ``pending()`` units (those nobody has finished) with
    ``executor`` until none is left, under ``store``'s heartbeat. Units that other processes on ``store`` hold are
    waited for, polled every ``poll_s`` seconds (a dead holder's claim is taken over by ``on_start``). Nothing run
    here and nothing held elsewhere, twice running, means a store that contradicts itself (a job neither finished
    nor claimable), where waiting would never end: an :class:`InputError` that ends with ``remedy``."""
    ran = 0

    def done(unit: Unit, outcome: Outcome, attempt: int) -> None:
        nonlocal ran
        ran += 1
        on_done(unit, outcome, attempt)

    with store.heartbeat():
        left, idle = pending(), 0
        while left:
            before = ran
            executor.run(left, on_start, done)
            left = pending()
            if left:  # held by other workers: wait for them (or for their claims to go stale)
                held = {c["key"] for c in store.claims() if c["owner"] != store.owner}
                idle = idle + 1 if ran == before and not any(u.key in held for u in left) else 0
                if idle >= 2:
                    raise InputError(f"{len(left)} job(s) are neither finished nor claimable: the job store is "
                                     f"inconsistent; {remedy}", path=store.path)
                time.sleep(poll_s)
                left = pending()




def check_executor(name: str, obj: Any) -> type[Executor]:
    """The executor kind's one check (:data:`modelseek.core.kinds.KINDS`), run when it registers and on every plugin:
    a class whose ``name`` is ``name``, with a boolean ``in_process``, a ``concurrency`` of :data:`CONCURRENCY`
    that agrees with it, and ``run(units, on_start, on_done)``."""

    if not (isinstance(obj, type) and callable(getattr(obj, "run", None))):
        raise TypeError(f"an executor is a class with a run(units, on_start, on_done) method, got {obj!r}")
    klass: Any = obj
    for attr, kind in (("name", str), ("in_process", bool)):
        if not isinstance(getattr(obj, attr, None), kind):
            raise TypeError(f"executor class {obj.__name__} needs a class attribute {attr!r} ({kind.__name__})")
    concurrency = getattr(obj, "concurrency", None)
    if concurrency not in CONCURRENCY:
        raise TypeError(f"executor class {obj.__name__} needs a class attribute 'concurrency': one of "
                        f"{', '.join(CONCURRENCY)} (how it runs units), got {concurrency!r}")
    if klass.in_process != (concurrency != "processes"):
        raise TypeError(f"executor class {obj.__name__}: in_process={klass.in_process} contradicts "
                        f"concurrency={concurrency!r} (serial and threads run in this process)")
    cls: type[Executor] = obj
    named(f"executor class {obj.__name__}", cls.name, name)
    takes(f"{obj.__name__}.run", klass.run, ("units", "on_start", "on_done"))
    return cls


EXECUTORS: PluginRegistry[type[Executor]] = PluginRegistry("executor", __name__)
"""Every executor: this package's modules, then the entry points of the group ``modelseek.retrieval.executors``."""


#: unit functions that have run to success in this process (their lazy imports are done)
_WARM: set[Any] = set()


class FirstUnitAlone:
    """A ``threads`` executor made safe: of each unit function, units run alone (here, in this thread) until one
    succeeds in this process, so the function's lazy imports are done; the rest go to the wrapped executor.
    Everything else is the wrapped executor's."""

    def __init__(self, inner: Executor) -> None:
        self.inner = inner
        self.name, self.in_process, self.concurrency = inner.name, inner.in_process, inner.concurrency

    def run(self, units: Sequence[Unit], on_start: OnStart, on_done: OnDone) -> None:
        warm = _WARM  # imports are the process's: a function that succeeded once in it is warm for every batch
        rest: list[Unit] = []
        for unit in units:
            fn = getattr(unit.fn, "__func__", unit.fn)
            if fn in warm:
                rest.append(unit)
                continue
            attempt = on_start(unit)
            if attempt is None:
                continue
            outcome = unit.call()
            on_done(unit, outcome, attempt)
            if outcome.ok:
                warm.add(fn)
        if rest:
            self.inner.run(rest, on_start, on_done)

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.inner, attr)


def executor_class(executor: str | Executor) -> type[Executor] | Executor:
    """The class registered as ``executor`` (an instance is returned as it is)."""
    return EXECUTORS.get(executor) if isinstance(executor, str) else executor


def runs_in_process(executor: str | Executor) -> bool:
    """Whether ``executor`` runs its units in this process (see :class:`Executor`)."""
    return bool(executor_class(executor).in_process)


def make_executor(executor: str | Executor, address: str | None = None, **options: Any) -> Executor:
    """The executor registered as ``executor`` (an unknown name raises with a did-you-mean and the valid names),
    made with ``address`` and ``options`` (None values are left to its defaults); an instance is returned as
    it is (a ``threads`` one made safe, see :class:`FirstUnitAlone`). An option its constructor does not take is an
    :class:`InputError`."""
    if not isinstance(executor, str):
        if address or options:
            raise InputError("an executor instance takes no address or options", field="executor")
        return _safe(executor)
    cls = EXECUTORS.get(executor)
    given = {k: v for k, v in {"address": address, **options}.items() if v is not None}
    params = inspect.signature(cls).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        for k in given:
            if k not in params:
                if k == "address":
                    raise InputError(f"an address is for the ray executor (executor='ray'); {executor!r} takes "
                                     f"none", field="address")
                raise InputError(f"executor {executor!r} takes no option {k!r} (it takes: "
                                 f"{', '.join(params) or 'none'})", field=k)
    with EXECUTORS.calling(executor, "construction"):
        made = cls(**given)
    if EXECUTORS.distribution(executor) is not None:
        made = cast(Executor, Bounded(made, executor))  # a plugin's: behind the kind's call boundary
    return _safe(made)


class Bounded:
    """A plugin's executor whose ``run`` goes through the kind's call boundary
    (:meth:`modelseek.core.registry.Registry.calling`): what it raises is one line naming the distribution, except what
    the caller's own ``on_start``/``on_done`` raised through it (the caller's errors keep their meaning).
    Everything else is the executor's."""

    def __init__(self, inner: Executor, name: str) -> None:
        self.inner, self.registered = inner, name
        self.name, self.in_process, self.concurrency = inner.name, inner.in_process, inner.concurrency

    def run(self, units: Sequence[Unit], on_start: OnStart, on_done: OnDone) -> None:
        ours: list[BaseException] = []

        def start(unit: Unit) -> int | None:
            try:
                return on_start(unit)
            except BaseException as exc:
                ours.append(exc)
                raise

        def done(unit: Unit, outcome: Outcome, attempt: int) -> None:
            try:
                on_done(unit, outcome, attempt)
            except BaseException as exc:
                ours.append(exc)
                raise

        try:
            self.inner.run(units, start, done)
        except Exception as exc:
            if any(exc is e for e in ours):
                raise
            raise EXECUTORS.failure(self.registered, "run", exc) from None

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.inner, attr)


def _safe(executor: Executor) -> Executor:
    if getattr(executor, "concurrency", None) == "threads" and not isinstance(executor, FirstUnitAlone):
        return FirstUnitAlone(executor)  # type: ignore[return-value]
    return executor


__all__ = ["CONCURRENCY", "EXECUTORS", "ClaimStore", "Concurrency", "Executor", "FirstUnitAlone", "Gpu", "OnDone",
           "OnStart", "Outcome", "Shared", "Unit", "call_unit", "check_executor", "executor_class", "make_executor",
           "run_until_done", "runs_in_process"]
