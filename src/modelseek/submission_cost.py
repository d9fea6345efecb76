"""The up-front cost of a submission's runs, from a probe of one candidate on one test task (issue #55).

Before the runs start, :func:`probe` times what one candidate costs on one test task: loading it, the forward
passes over the task's texts, each estimator on its features, and reading features back from the feature cache.
:func:`estimate` scales that to every run: the first frozen-feature run computes every candidate's features on
every task (loads + forward passes, in proportion to each task's texts) and its estimators; the later ones read the
features back from the cache and run their estimators (LogME in proportion to texts x classes, kNN to texts
squared). The inference-free runs are timed on the probe task and scaled by the number of tasks.

The figures are estimates: the candidates differ in size (the probe is the first one), and a shared machine runs
slower than an idle one. :func:`advice` names the cheap alternative when a run is estimated to take long.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from .data.pool import Pool
from .data.task import Task

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
    load_s: float
    forward_s: float
    read_s: float
    estimator_s: Mapping[str, float] = field(default_factory=dict)
    #: inference-free runs: (the first task's seconds less a later one's: set-up, a later task's seconds)
    method_s: Mapping[str, tuple[float, float]] = field(default_factory=dict)


def _scale(name: str, texts: int, classes: int, probe: Probe) -> float:
    """How much more ``name`` costs on a task of ``texts`` texts and ``classes`` classes than on the probe's."""
    n = texts / max(probe.texts, 1)
    if name == "knn":  # pairwise distances: texts squared
        return n * n
    return n * max(classes, 1) / max(probe.classes, 1)


def probe(task: Task, pool: Pool, estimators: Sequence[str], methods: Sequence[str], *, device: str | None,
          cost_of: Callable[[str, Task], float], second: Task | None = None, seed: int = 0) -> Probe:
    """Time the first candidate of ``pool`` on ``task`` (no feature cache, so nothing is left behind), each of
    ``estimators`` on its features, a cache round trip of them, and each inference-free run of ``methods`` on the
    task, then on ``second`` (``cost_of(method, task)`` runs one and returns its seconds): the first includes the
    run's set-up (its encoder's load)."""
    import tempfile

    from .features.cache import FeatureCache
    from .features.text import _load_model, encode
    from .rankers.feature_jobs import FeatureJobConfig, estimator_score, prepare_tasks

    from .features.sources import _model_identity

    cand = pool[0]
    method_s = {}
    for m in methods:
        if m in INFERENCE_FREE:
            first = cost_of(m, task)
            later = cost_of(m, second) if second is not None else first
            method_s[m] = (max(first - later, 0.0), later)
    load_s = forward_s = read_s = 0.0
    spent: dict[str, float] = {}
    texts, classes = len(task.train) + len(task.val), max(task.num_classes, 1)
    if estimators:
        config = FeatureJobConfig(estimators=tuple(estimators), seed=seed)
        (inp,) = prepare_tasks([task], config)
        texts = len(inp.texts)
        t0 = time.perf_counter()
        source, revision, name, _ = _model_identity(cand, None)
        loaded = _load_model(source, revision, device or "auto", name)
        t1 = time.perf_counter()
        feats = encode(loaded, inp.texts, max_length=config.max_length, batch_size=config.batch_size,
                       progress=False)
        t2 = time.perf_counter()
        load_s, forward_s = t1 - t0, t2 - t1
        with tempfile.TemporaryDirectory(prefix="modelseek-probe-") as tmp:
            cache = FeatureCache(tmp)
            cache.put("probe", {"probe": True}, feats)
            t3 = time.perf_counter()
            cache.get("probe")
            read_s = time.perf_counter() - t3
        for name in estimators:  # the second call: the first imports the estimator's libraries
            for _ in range(2):
                t4 = time.perf_counter()
                estimator_score(config, name, feats, inp.train_labels, inp.val_labels, inp.regression)
                spent[name] = time.perf_counter() - t4
    return Probe(cand.id, task.id, texts, classes, load_s, forward_s, read_s, spent, method_s)


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
            setup, each = p.method_s.get(m, (0.0, 0.0))
            out[m] = setup + each * len(tasks)
            continue
        sizes = [(len(t.train) + len(t.val), max(t.num_classes, 1)) for t in tasks]
        math_s = sum(p.estimator_s.get(n, 0.0) * _scale(n, x, c, p) for n in names for x, c in sizes)
        if features_done:  # the features are read back from the cache
            per = p.read_s * len(tasks) + math_s
        else:
            per = p.load_s + p.forward_s * sum(x for x, _ in sizes) / max(p.texts, 1) + math_s
            features_done = True
        out[m] = per * n_candidates
    return out


def advice(method: str, seconds: float, n_candidates: int, n_tasks: int, cheap: Sequence[str]) -> str | None:
    """The line that names the cheap alternative of a run estimated to take longer than :data:`LONG_S`."""
    from .funnel import format_seconds

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


__all__ = ["INFERENCE_FREE", "LONG_S", "Probe", "advice", "estimate", "measured_share", "probe"]
