"""The up-front cost of a submission's runs, from a probe of one candidate on one test task (issue #55).

Before the runs start, :func:`probe` times what one candidate costs on one test task: loading it, the forward
passes over the task's texts, each estimator on its features, and reading features back from the feature cache.
:func:`estimate` scales that to every run: the first frozen-feature run computes every candidate's features on
every task (loads + forward passes, in proportion to each task's texts) and its estimators; the later ones read the
features back from the cache and run their estimators (LogME half in proportion to texts, half to classes; kNN
to texts to the power 1.5 — rules of thumb checked by ``benchmarks/bench_submission.py``), the candidates shared
among the parallel workers (:func:`parallel_workers`). The inference-free runs are timed on a second task (the
first pays their set-up) and scaled by the number of tasks.

The figures are estimates: the candidates differ in size (the probe is the first one), and a shared machine runs
slower than an idle one. :func:`advice` names the cheap alternative when a run is estimated to take long.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import ClassVar

from .data.pool import Pool
from .data.task import Task
from .funnel import format_seconds
from .rankers.feature_jobs import FeatureJobConfig, estimator_score, prepare_tasks
from .executors import Concurrency, OnDone, OnStart, Outcome, Unit

#: a run estimated to take longer than this (seconds) is said with its cheap alternative
LONG_S = 600.0
#: the runs that read no model: seconds whatever the pool
INFERENCE_FREE = ("default", "avgrank")


@dataclass(frozen=True)
class Probe:
    """What one candidate cost on one task (seconds), and the task's size."""

    candidate: str
    task: str
    texts: int
    classes: int
    workers: int
    load_s: float
    forward_s: float
    read_s: float
    job_s: float  # a candidate job's bookkeeping (its claim and its outcome written to the job store)
    estimator_s: Mapping[str, float] = field(default_factory=dict)
    #: inference-free runs: (the first task's seconds less a later one's: set-up, a later task's seconds)
    method_s: Mapping[str, tuple[float, float]] = field(default_factory=dict)


def _scale(name: str, texts: int, classes: int, probe: Probe) -> float:
    """How much more ``name`` costs on a task of ``texts`` texts and ``classes`` classes than on the probe's."""
    n = texts / max(probe.texts, 1)
    c = max(classes, 1) / max(probe.classes, 1)
    if name == "knn":  # pairwise distances grow with texts squared, but small tasks are all overhead: between
        return n ** 1.5
    # LogME: an SVD in proportion to the texts, then a fixed point per class
    return (n + c) / 2


def probe(task: Task, pool: Pool, estimators: Sequence[str], methods: Sequence[str], *, device: str | None,
          cost_of: Callable[[str, Task], float], second: Task | None = None, seed: int = 0,
          workers: int = 1) -> Probe:
    """Time the first candidate of ``pool`` on ``task`` (no feature cache, so nothing is left behind), each of
    ``estimators`` on its features, a cache round trip of them, and each inference-free run of ``methods`` on the
    task, then on ``second`` (``cost_of(method, task)`` runs one and returns its seconds): the first includes the
    run's set-up (its encoder's load)."""
    import tempfile

    from .features.cache import FeatureCache  # lazy: start-up
    from .features.text import _load_model, encode  # lazy: start-up

    from .features.sources import _model_identity  # lazy: start-up

    cand = pool[0]
    method_s = {}
    for m in methods:
        if m in INFERENCE_FREE:
            first = cost_of(m, task)
            later = cost_of(m, second) if second is not None else first
            method_s[m] = (max(first - later, 0.0), later)
    load_s = forward_s = read_s = job_s = 0.0
    spent: dict[str, float] = {}
    texts, classes = len(task.train) + len(task.val), max(task.num_classes, 1)
    if estimators:
        config = FeatureJobConfig(estimators=tuple(estimators), seed=seed)
        (inp,) = prepare_tasks([task], config)
        texts = len(inp.texts)
        source, revision, name, _ = _model_identity(cand, None)
        _load_model(source, revision, device or "auto", name)  # the first load imports the model's classes
        t0 = time.perf_counter()
        loaded = _load_model(source, revision, device or "auto", name)
        t1 = time.perf_counter()
        with cpu_parallel(workers):  # as the runs compute: one torch thread per model when models run in parallel
            # a first call of two texts pays the model's one-time set-up (kernel choice, lazy buffers)
            encode(loaded, inp.texts[:2], max_length=config.max_length, batch_size=config.batch_size, progress=False)
            t1 = time.perf_counter()
            feats = encode(loaded, inp.texts, max_length=config.max_length, batch_size=config.batch_size,
                           progress=False)
        t2 = time.perf_counter()
        load_s, forward_s = t1 - t0, t2 - t1
        with tempfile.TemporaryDirectory(prefix="modelseek-probe-") as tmp:
            cache = FeatureCache(tmp)
            t3 = time.perf_counter()
            cache.put("probe", {"probe": True}, feats)  # a durable write: what a job's claim and outcome cost too
            t4 = time.perf_counter()
            cache.get("probe")
            read_s = time.perf_counter() - t4
            job_s = 2 * (t4 - t3)
        for name in estimators:  # the second call: the first imports the estimator's libraries
            for _ in range(2):
                t4 = time.perf_counter()
                estimator_score(config, name, feats, inp.train_labels, inp.val_labels, inp.regression)
                spent[name] = time.perf_counter() - t4
    return Probe(cand.id, task.id, texts, classes, workers, load_s, forward_s, read_s, job_s, spent, method_s)


def estimate(p: Probe, methods: Sequence[str], estimators_of: Mapping[str, Sequence[str]],
             tasks_of: Mapping[str, Sequence[Task]], n_candidates: int) -> dict[str, float]:
    """Seconds each of ``methods`` is expected to take: ``estimators_of[m]`` the estimators it runs (empty for an
    inference-free run), ``tasks_of[m]`` the tasks it ranks."""
    out: dict[str, float] = {}
    features_done = False
    for m in methods:
        tasks = tasks_of.get(m, ())
        names = estimators_of.get(m, ())
        if not names:
            _, each = p.method_s.get(m, (0.0, 0.0))  # its set-up (imports, a shared encoder) was the probe's
            out[m] = each * len(tasks)
            continue
        sizes = [(len(t.train) + len(t.val), max(t.num_classes, 1)) for t in tasks]
        math_s = sum(p.estimator_s.get(n, 0.0) * _scale(n, x, c, p) for n in names for x, c in sizes)
        if features_done:  # the features are read back from the cache
            per = p.job_s + p.read_s * len(tasks) + math_s
        else:
            per = p.job_s + p.load_s + p.forward_s * sum(x for x, _ in sizes) / max(p.texts, 1) + math_s
            features_done = True
        out[m] = per * n_candidates / max(p.workers, 1)  # the candidates' jobs run on p.workers threads
    return out


def advice(method: str, seconds: float, n_candidates: int, n_tasks: int, cheap: Sequence[str]) -> str | None:
    """The line that names the cheap alternative of a run estimated to take longer than :data:`LONG_S`."""

    if seconds < LONG_S:
        return None
    others = [m for m in cheap if m != method]
    tail = (f"; the inference-free run(s) {' and '.join(others)} take seconds (--methods {' '.join(others)})"
            if others else "")
    return (f"{method}: about {format_seconds(seconds)} ({n_candidates} candidates x {n_tasks} tasks on this "
            f"machine); a GPU (--device cuda) shortens it{tail}")


def measured_share(estimates: Mapping[str, float], timings: Mapping[str, float]) -> dict[str, float]:
    """measured / estimated per method (1.0 = exact), for the run's notes and the benchmark."""
    return {m: timings[m] / estimates[m] for m in timings if estimates.get(m)}


class ModelThreads:
    """An in-process executor (:mod:`modelseek.retrieval.executors`) that runs the candidates' jobs on ``workers``
    threads:
    the submission's frozen-feature runs on a CPU, each model with one torch thread (see :func:`cpu_parallel`).
    ``on_start`` and ``on_done`` are called in the caller's thread, as the contract asks."""

    name: ClassVar[str] = "threads"
    in_process: ClassVar[bool] = True
    concurrency: ClassVar[Concurrency] = "threads"

    def __init__(self, workers: int = 2) -> None:
        self.workers = max(1, int(workers))

    def run(self, units: Sequence[Unit], on_start: OnStart, on_done: OnDone) -> None:
        from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

        todo = iter(units)
        with ThreadPoolExecutor(self.workers, thread_name_prefix="modelseek-candidate") as pool:
            running: dict[Future[Outcome], tuple[Unit, int]] = {}

            def start_next() -> None:
                for unit in todo:
                    attempt = on_start(unit)
                    if attempt is not None:
                        running[pool.submit(unit.call)] = (unit, attempt)
                        return

            for _ in range(self.workers):
                start_next()
            while running:
                finished, _ = wait(list(running), return_when=FIRST_COMPLETED)
                for fut in finished:
                    unit, attempt = running.pop(fut)
                    on_done(unit, fut.result(), attempt)
                    start_next()


def parallel_workers(pool: Pool, device: str | None) -> int:
    """How many candidates to run at once: on a CPU, one per core (at most 8) while the largest snapshot, three
    times over (weights, activations, a tokenizer), fits that many times in the free memory; on a GPU one."""
    import os
    from pathlib import Path

    if device not in (None, "auto", "cpu"):
        return 1
    if device != "cpu":
        import torch  # lazy: torch

        if torch.cuda.is_available():
            return 1
    cores = min(os.cpu_count() or 1, 8)
    biggest = 0
    for c in pool:
        folder = Path(str(c.path)) if c.path and not str(c.path).startswith("package:") else None
        if folder is not None and folder.is_dir():
            biggest = max(biggest, sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()))
    try:
        free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 1
    fits = free // max(3 * biggest, 1) if biggest else cores
    return max(1, min(cores, int(fits), len(pool)))


class cpu_parallel:
    """Within the block, torch runs one thread per operation (restored after): the candidates are parallel
    instead. Small models' operations are too small to share between cores — on the stand-in of issue #55 two
    torch threads made the forward passes 2.6x slower than one on a busy machine."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._before: int | None = None

    def __enter__(self) -> cpu_parallel:
        if self.workers > 1:
            import torch  # lazy: torch

            self._before = torch.get_num_threads()
            torch.set_num_threads(1)
        return self

    def __exit__(self, *exc) -> None:
        if self._before is not None:
            import torch  # lazy: torch

            torch.set_num_threads(self._before)


__all__ = ["INFERENCE_FREE", "LONG_S", "ModelThreads", "Probe", "advice", "cpu_parallel", "estimate",
           "measured_share", "parallel_workers", "probe"]
