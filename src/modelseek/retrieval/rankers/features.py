"""Rankers that run the task through every candidate and score its frozen features with an estimator.

``FeatureRanker(estimator="logme")`` ranks a pool for a task by: features of the task's train + validation
texts under each candidate (:class:`modelseek.retrieval.features.text.TextEncoder`: cached, the model loaded once for
all tasks), then the registered estimator on them (:mod:`modelseek.retrieval.estimators`). Everything the ranker needs
to know about an estimator comes from its registration record: its input (``features``, or ``probs``, the
candidate's own classification head, for leep/nce), whether it takes a ``seed``, whether it fits on the train
split and scores the validation split (knn, linear_probe), and its direction (a lower-is-better score is
negated). :func:`feature_ranker` derives one ranker class per registered estimator, registered under the
estimator's name (``logme``, ``knn``...); ``rrf`` fuses several estimators by reciprocal-rank fusion over one
feature extraction per candidate.

**Execution.** Each candidate is one job (its model loaded once for every task of the call), run by
:func:`modelseek.retrieval.rankers.feature_jobs.score_candidates` with the ranker's ``executor`` (``local``, or ``ray``
at
``address``) on its ``device``; finished candidates are kept in a job store beside the feature cache, so a rerun
after a crash, or a second process on the same cache, never computes one twice.

Failures are loud. Before any work the feature cache folder is checked (an unusable path is one
:class:`~modelseek.core.errors.InputError`) and, when some candidate is a Hugging Face id, the Hub is probed once
(:func:`~modelseek.retrieval.features.text.hub_offline_reason`: ``HF_HUB_OFFLINE`` or one HEAD request with a 3 s
timeout); offline, ids in the local Hugging Face cache load from it and the others fail at once. A candidate
that cannot be downloaded, loaded or featurised, or whose estimator fails, makes the ranking raise
:class:`CandidateFailures` naming every failure. With ``allow_failures=True`` the failures are logged and the
failed candidates are **absent** from the run: a candidate that failed on a task is left out of that task's
ranking (one that cannot load is left out of every task); they never get placeholder scores. A ranking in which
no candidate could be scored for any task raises either way.

Per-candidate feature options (``pooling``, ``layer``, ``max_length``, ``batch_size``) in the pool file override
the ranker's. ``layer: best`` extracts every transformer layer's pooled features (one forward pass), scores
each with the estimator and keeps the best; the layer chosen for each (task, candidate) is in
``chosen_layers_`` (``rank`` prints it).

**Regression.** A task that declares its labels numeric targets (``label_kind`` number: a table's
``--label-kind number``, a tasks.csv ``label_kind`` column or a class count below 2) is a regression task — never
labels that merely look numeric (tasks.csv's 11-class ``0.0`` ... ``1.0`` ratings are classes): estimators
registered with ``regression=True`` (LogME's regression form, kNN regression) score it with
``task="regression"``; any other estimator is refused before a model is loaded, in one line naming the task
and the estimators that can.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Sequence
from numbers import Integral
from pathlib import Path
from typing import ClassVar

from .. import estimators
from ..data.pool import Candidate, Pool
from ..data.run import Run
from ..data.task import Task
from ...core.errors import InputError, ModelseekError
from ..fusion import fuse
from ...core.kinds import register
from ...core.config import Interval
from ...core.registry import PluginError
from .base import Constraints, Ranker
from .feature_jobs import is_regression  # noqa: F401  (re-exported: part of the API)
from .feature_jobs import FeatureJobConfig, score_candidates

log = logging.getLogger(__name__)


class CandidateFailures(ModelseekError):
    """Some candidates could not be scored; ``failures`` maps candidate id -> (source, reason, task ids)."""

    def __init__(self, method: str, n_candidates: int, failures: dict[str, tuple[str, str, list[str]]],
                 allowed: bool = False) -> None:
        self.failures = dict(failures)
        # with failures allowed already, this is raised only when no candidate is left: never suggest the flag
        tail = ("no candidate is left to rank" if allowed else
                "rerun with --allow-failures (allow_failures=True) to rank the others without them")
        lines = [f"{method}: {len(failures)} of {n_candidates} candidate(s) failed; {tail}:"]
        for cid, (source, reason, tasks) in failures.items():
            where = f" (task {tasks[0]})" if len(tasks) == 1 else f" ({len(tasks)} tasks)"
            lines.append(f"  candidate {cid} [{source}]{where}: {reason}")
        super().__init__("\n".join(lines))


class FeatureRanker(Ranker):
    """Score each candidate's frozen features of the task with one or more estimators."""

    name = "features"
    needs_text = True
    needs_fit = False
    #: default estimator of the derived subclasses
    estimator_name = "logme"
    #: each bound is what one candidate's job can afford (tokens per text, texts per forward pass, examples
    #: embedded per task); a value outside is refused before any model is read
    _parameter_constraints: ClassVar[Constraints] = {
        "max_length": [Interval(Integral, 2, 131_072, closed="both")],
        "batch_size": [Interval(Integral, 1, 65_536, closed="both")],
        "max_examples": [Interval(Integral, 1, 10_000_000, closed="both"), None],
        "seed": [Interval(Integral, 0, 2**32 - 1, closed="both")],
    }

    def __init__(self, estimator: str | None = None, *, pooling: str = "mean", layer: str | int = "last",
                 max_length: int = 256, batch_size: int = 32, device: str = "auto",
                 cache_dir: str | Path | bool | None = None, max_examples: int | None = None,
                 estimator_params: dict | None = None, seed: int = 0, progress: bool = True,
                 allow_failures: bool = False, executor: str = "local", address: str | None = None) -> None:
        self.estimator = estimator or self.estimator_name
        self.pooling = pooling
        self.layer = layer
        self.max_length = max_length
        self.batch_size = batch_size
        self.device = device
        self.cache_dir = cache_dir
        self.max_examples = max_examples
        self.estimator_params = estimator_params
        self.seed = seed
        self.progress = progress
        self.allow_failures = allow_failures
        #: how the candidate jobs run (:mod:`modelseek.retrieval.rankers.feature_jobs`): ``local`` or ``ray`` (at
        # ``address``)
        self.executor = executor
        self.address = address

    # ------------------------------------------------------------------------------------ internals
    def _estimators(self) -> list[str]:
        return [self.estimator]

    def job_config(self) -> FeatureJobConfig:
        """What one candidate job computes for this ranker (see :func:`~.feature_jobs.score_candidates`)."""
        return FeatureJobConfig(estimators=tuple(self._estimators()), pooling=self.pooling, layer=self.layer,
                                max_length=self.max_length, batch_size=self.batch_size,
                                max_examples=self.max_examples, estimator_params=dict(self.estimator_params or {}),
                                seed=self.seed, device=self.device, cache_dir=self.cache_dir,
                                progress=self.progress, method=self.name)

    def score_tasks(self, tasks: Sequence[Task], pool: Pool) -> dict[str, dict[str, dict[str, float]]]:
        """{estimator: {task id: {candidate id: score}}}: one job per candidate (its model loaded once for all
        tasks), run by ``self.executor`` and kept in the job store beside the feature cache
        (:func:`~.feature_jobs.score_candidates`).

        Failed (candidate, task) pairs are absent; ``self.failures_`` maps each failed candidate id to
        (source, first reason, task ids). The failure policy is applied by :meth:`rank`/:meth:`rank_tasks`.
        """
        names = self._estimators()
        outcomes = score_candidates(tasks, pool, self.job_config(), executor=self.executor, address=self.address)
        self.chosen_layers_: dict[str, dict[str, str]] = {}
        self.failures_: dict[str, tuple[str, str, list[str]]] = {}
        out: dict[str, dict[str, dict[str, float]]] = {n: {t.id: {} for t in tasks} for n in names}
        by_id = {t.id: t for t in tasks}
        for cand in pool:  # pool order, whatever order the jobs finished in
            o = outcomes[cand.id]
            for task_id, msg, log_it in o.failures:
                self._fail(cand, by_id[task_id], msg, log_it=log_it)
            for task_id, layer in o.chosen.items():
                self.chosen_layers_.setdefault(task_id, {})[cand.id] = layer
            for n in names:
                for task_id, v in o.scores[n].items():
                    out[n][task_id][cand.id] = v
        return out

    def _fail(self, cand: Candidate, task: Task, msg: str, log_it: bool = True) -> None:
        if log_it:  # the summary (an error, or a warning with allow_failures) names every failure once
            log.info("candidate %s (%s) failed on task %s: %s", cand.id, cand.source, task.id, msg)
        entry = self.failures_.setdefault(cand.id, (str(cand.source), msg, []))
        entry[2].append(task.id)

    def _apply_policy(self, scores, tasks: Sequence[Task], pool: Pool):
        """Raise :class:`CandidateFailures` unless ``allow_failures``; then drop tasks nobody could score."""
        if self.failures_ and not self.allow_failures:
            _raise_plugin_failure(self._estimators(), self.failures_)
            raise CandidateFailures(self.name, len(pool), self.failures_)
        if self.failures_:
            log.warning("%s: %d candidate(s) failed and are left out of the run: %s", self.name, len(self.failures_),
                        "; ".join(f"{c} [{src}] ({m})" for c, (src, m, _) in self.failures_.items()))
        first = scores[self._estimators()[0]]
        empty = [t.id for t in tasks if not first[t.id]]
        if len(empty) == len(tasks):
            raise CandidateFailures(self.name, len(pool), self.failures_, allowed=True) if self.failures_ else \
                ModelseekError(f"{self.name}: the pool is empty")
        if empty:
            log.warning("%s: no candidate could be scored for task(s) %s; they are absent from the run",
                        self.name, ", ".join(empty))
        return {n: {t: v for t, v in per.items() if v} for n, per in scores.items()}

    # ------------------------------------------------------------------------------------ the contract
    def rank(self, task: Task, pool: Pool) -> dict[str, float]:
        scores = self._apply_policy(self.score_tasks([task], pool), [task], pool)
        return scores[self.estimator][task.id]

    def rank_tasks(self, tasks: Iterable[Task], pool: Pool, run_id: str | None = None,
                   progress: bool = False) -> Run:
        tasks = list(tasks)
        wanted, self.progress = self.progress, self.progress and progress
        try:
            scores = self.score_tasks(tasks, pool)
        finally:
            self.progress = wanted
        scores = self._apply_policy(scores, tasks, pool)
        kept = [t for t in tasks if t.id in scores[self._estimators()[0]]]
        return Run.from_scores(self._combine(scores, kept), run_id or self.name)

    def _combine(self, scores, tasks) -> dict[str, dict[str, float]]:
        return {t.id: scores[self.estimator][t.id] for t in tasks}


def _raise_plugin_failure(names: Sequence[str], failures: dict[str, tuple[str, str, list[str]]]) -> None:
    """A plugin estimator that raised (the job recorded ``"NAME: PluginError: ..."``, as text since outcomes travel
    through the job store and other processes): its one line naming the distribution, not a failure of every
    candidate."""
    for _, reason, _ in failures.values():
        for n in names:
            head = f"{n}: {PluginError.__name__}: "
            if reason.startswith(head):
                raise PluginError(reason[len(head):])


def reciprocal_rank_fusion(per_method: Sequence[dict[str, float]], k: float = 60.0) -> dict[str, float]:
    """RRF of one task's per-estimator scores by :func:`modelseek.retrieval.fusion.fuse` (ranks by decreasing score,
    ties by natural docID; a failed, -inf, score has no term); a candidate failed everywhere gets -inf."""
    if not per_method:
        return {}
    fused = fuse([Run.from_scores({"t": s}, f"m{i}") for i, s in enumerate(per_method)], "rrf", k=k)
    got = fused.scores("t") if "t" in fused else {}
    return {d: got.get(d, -math.inf) for s in per_method for d in s}


@register("ranker")
class FusionRanker(FeatureRanker):
    """Reciprocal-rank fusion of several estimators over one feature extraction per candidate."""

    name = "rrf"

    def __init__(self, methods: Sequence[str] = ("logme", "knn"), *, rrf_k: float = 60.0, pooling: str = "mean",
                 layer: str | int = "last", max_length: int = 256, batch_size: int = 32, device: str = "auto",
                 cache_dir: str | Path | bool | None = None, max_examples: int | None = None, seed: int = 0,
                 progress: bool = True, allow_failures: bool = False, executor: str = "local",
                 address: str | None = None) -> None:
        super().__init__(None, pooling=pooling, layer=layer, max_length=max_length, batch_size=batch_size,
                         device=device, cache_dir=cache_dir, max_examples=max_examples, seed=seed,
                         progress=progress, allow_failures=allow_failures, executor=executor, address=address)
        if isinstance(methods, str):
            methods = [m for m in methods.split(",") if m]
        if len(methods) < 1:
            raise InputError("rrf needs at least one method", field="methods")
        self.methods = tuple(methods)
        self.rrf_k = rrf_k

    def _estimators(self) -> list[str]:
        return list(self.methods)

    def _combine(self, scores, tasks) -> dict[str, dict[str, float]]:
        return {t.id: reciprocal_rank_fusion([scores[m][t.id] for m in self.methods], self.rrf_k) for t in tasks}

    def rank(self, task: Task, pool: Pool) -> dict[str, float]:
        scores = self._apply_policy(self.score_tasks([task], pool), [task], pool)
        return self._combine(scores, [task])[task.id]


_DERIVED: dict[str, type] = {}


def feature_ranker(estimator: str) -> type:
    """The :class:`FeatureRanker` subclass of the registered ``estimator`` (built on first use, then reused).

    Derived from the estimator's registration alone, so a new estimator module is all it takes to make
    ``rank --method NAME`` work.
    """
    info = estimators.info(estimator)  # unknown names raise with suggestions
    cls = _DERIVED.get(estimator)
    if cls is None:
        doc = (f"``{estimator}`` on frozen {info.input.value} of the task under each candidate "
               f"(see :mod:`{info.fn.__module__}`): {info.summary}")
        cls = type(f"{estimator.title().replace('_', '')}Ranker", (FeatureRanker,),
                   {"name": estimator, "estimator_name": estimator, "__doc__": doc, "__module__": __name__})
        _DERIVED[estimator] = cls
    return cls
