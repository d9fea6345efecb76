"""Rankers that run the task through every candidate and score its frozen features with an estimator.

``FeatureRanker(estimator="logme")`` ranks a pool for a task by: features of the task's train + validation
texts under each candidate (:class:`modelseek.features.text.TextEncoder`: cached, the model loaded once for
all tasks), then the registered estimator on them (:mod:`modelseek.estimators`). Everything the ranker needs
to know about an estimator comes from its registration record: its input (``features``, or ``probs``, the
candidate's own classification head, for leep/nce), whether it takes a ``seed``, whether it fits on the train
split and scores the validation split (knn, linear_probe), and its direction (a lower-is-better score is
negated). :func:`feature_ranker` derives one ranker class per registered estimator, registered under the
estimator's name (``logme``, ``knn``...); ``rrf`` fuses several estimators by reciprocal-rank fusion over one
feature extraction per candidate.

Failures are loud. Before any work the feature cache folder is checked (an unusable path is one
:class:`~modelseek.errors.InputError`) and, when some candidate is a Hugging Face id, the Hub is probed once
(:func:`~modelseek.features.text.hub_offline_reason`: ``HF_HUB_OFFLINE`` or one HEAD request with a 3 s
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

**Regression.** A task whose labels are all numbers, at least one of them not an integer (``3.5``, ``0.25``),
is a regression task: estimators registered with ``regression=True`` (LogME's regression form, kNN
regression) score it with ``task="regression"``; any other estimator is refused before a model is loaded,
in one line naming the task and the estimators that can.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from ..data.pool import Candidate, Pool
from ..data.run import Run
from ..data.task import Split, Task
from ..errors import InputError, ModelseekError
from ._registry import register
from .base import Ranker

log = logging.getLogger(__name__)

_OPTION_KEYS = ("pooling", "layer", "max_length", "batch_size")


class CandidateFailures(ModelseekError):
    """Some candidates could not be scored; ``failures`` maps candidate id -> (source, reason, task ids)."""

    def __init__(self, method: str, n_candidates: int, failures: dict[str, tuple[str, str, list[str]]]) -> None:
        self.failures = dict(failures)
        lines = [f"{method}: {len(failures)} of {n_candidates} candidate(s) failed; rerun with "
                 f"--allow-failures (allow_failures=True) to rank the others without them:"]
        for cid, (source, reason, tasks) in failures.items():
            where = f" (task {tasks[0]})" if len(tasks) == 1 else f" ({len(tasks)} tasks)"
            lines.append(f"  candidate {cid} [{source}]{where}: {reason}")
        super().__init__("\n".join(lines))


def _short(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:300]


def _keep_only(models: dict, enc) -> None:
    """Free loaded checkpoints other than the one ``enc`` reads (one model in memory at a time)."""
    for slot in [k for k in models if k[1:3] != (enc.source, enc.revision)]:
        del models[slot]


def _subsample(split: Split, cap: int | None, rng: np.random.Generator) -> Split:
    if cap is None or len(split) <= cap:
        return split
    keep = np.sort(rng.choice(len(split), size=cap, replace=False))
    return Split([split.texts[i] for i in keep], [split.labels[i] for i in keep])


class FeatureRanker(Ranker):
    """Score each candidate's frozen features of the task with one or more estimators."""

    name = "features"
    needs_text = True
    needs_fit = False
    #: default estimator of the derived subclasses
    estimator_name = "logme"

    def __init__(self, estimator: str | None = None, *, pooling: str = "mean", layer: "str | int" = "last",
                 max_length: int = 256, batch_size: int = 32, device: str = "auto",
                 cache_dir: "str | Path | bool | None" = None, max_examples: int | None = None,
                 estimator_params: dict | None = None, seed: int = 0, progress: bool = True,
                 allow_failures: bool = False) -> None:
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

    # ------------------------------------------------------------------------------------ internals
    def _estimators(self) -> list[str]:
        return [self.estimator]

    def _encoder_kwargs(self, cand: Candidate) -> dict[str, Any]:
        from ..features.text import parse_layer

        kw = {"pooling": self.pooling, "layer": self.layer, "max_length": self.max_length,
              "batch_size": self.batch_size}
        kw.update({k: cand.options[k] for k in _OPTION_KEYS if k in cand.options})
        if parse_layer(kw["layer"], best=True) == "best":
            kw["layer"] = "all"  # every layer's features, scored one by one (see score_tasks)
        return kw

    def _score(self, est_name: str, feats: np.ndarray, ytr: Sequence[str], yva: Sequence[str],
               regression: bool = False) -> float:
        from .. import estimators

        info = estimators.info(est_name)
        params = dict(self.estimator_params or {})
        if info.seeded:
            params.setdefault("seed", self.seed)
        if regression:
            params["task"] = "regression"
            ytr, yva = [float(v) for v in ytr], [float(v) for v in yva]
        ntr = len(ytr)
        if info.uses_validation and len(yva):
            value = info.fn(feats[:ntr], list(ytr), val_features=feats[ntr:], val_labels=list(yva), **params)
        else:
            value = info.fn(feats, list(ytr) + list(yva), **params)
        value = float(value)
        if not math.isfinite(value):
            raise ModelseekError(f"{est_name} returned {value}")
        return value if info.higher_is_better else -value

    def _task_data(self, task: Task) -> tuple[list[str], list[str], list[str]]:
        task.require_data(f"method {self.name!r}")
        rng = np.random.default_rng(self.seed)
        tr = _subsample(task.train, self.max_examples, rng)
        va = _subsample(task.val, self.max_examples, rng)
        return list(tr.texts) + list(va.texts), list(tr.labels), list(va.labels)

    def _preflight(self, pool: Pool) -> dict[str, str]:
        """Checks made once before any model is loaded: the feature cache folder (InputError when unusable),
        and the Hub when some candidate needs it. -> {candidate id: why it cannot load}; sets
        ``self._local_only_`` to the ids to load from the local Hugging Face cache."""
        from ..features.cache import FeatureCache
        from ..features.text import hub_offline_reason, in_hub_cache, is_hub_source

        if self.cache_dir is not False:
            FeatureCache(None if self.cache_dir in (None, True) else self.cache_dir).ensure_usable()
        from ..features.text import resolve_source

        self._local_only_: set[str] = set()
        dead: dict[str, str] = {}
        for c in pool:
            if c.path and not c.path.startswith("package:") and not Path(resolve_source(c.path)).expanduser().is_dir():
                dead[c.id] = f"no model folder at {c.path}"
        hub = [c for c in pool if is_hub_source(c)]
        reason = hub_offline_reason() if hub else None
        if reason:
            for c in hub:
                if in_hub_cache(c.hf_id, c.revision):
                    self._local_only_.add(c.id)
                else:
                    dead[c.id] = f"not in the local Hugging Face cache and the Hub is offline ({reason})"
        return dead

    def score_tasks(self, tasks: Sequence[Task], pool: Pool) -> dict[str, dict[str, dict[str, float]]]:
        """{estimator: {task id: {candidate id: score}}}, one model load per candidate for all tasks.

        Failed (candidate, task) pairs are absent; ``self.failures_`` maps each failed candidate id to
        (source, first reason, task ids). The failure policy is applied by :meth:`rank`/:meth:`rank_tasks`.
        """
        from .. import estimators
        from ..features.text import HeadProbs, TextEncoder
        from ..progress import progress_bar

        names = self._estimators()
        infos = {n: estimators.info(n) for n in names}
        data = {t.id: self._task_data(t) for t in tasks}
        regression = {t.id: is_regression(data[t.id][1] + data[t.id][2]) for t in tasks}
        for t in tasks:  # refused before any model is loaded
            cannot = [n for n in names if regression[t.id] and not infos[n].regression]
            if cannot:
                able = [n for n in estimators.names() if estimators.info(n).regression]
                raise InputError(f"task {t.id}: its labels are numbers (a regression task, e.g. "
                                 f"{data[t.id][1][0]!r}); {', '.join(cannot)} need{'s' if len(cannot) == 1 else ''} "
                                 f"class labels; estimators for regression: {', '.join(able)}", field="method")
        self.chosen_layers_: dict[str, dict[str, str]] = {}
        out: dict[str, dict[str, dict[str, float]]] = {n: {t.id: {} for t in tasks} for n in names}
        self.failures_: dict[str, tuple[str, str, list[str]]] = {}
        dead_at_start = self._preflight(pool)
        kinds = {i.input.value for i in infos.values()}
        models: dict = {}  # loaded checkpoints, shared by consecutive candidates that read the same one
        for cand in progress_bar(list(pool), desc=f"{self.name}: candidates", disable=not self.progress):
            kw = self._encoder_kwargs(cand)
            local = {"local_files_only": True} if cand.id in self._local_only_ else {}
            enc = head = None
            dead = dead_at_start.get(cand.id)  # why this candidate is unusable (it cannot load)
            for task in tasks:
                texts, ytr, yva = data[task.id]
                if dead is not None:
                    self._fail(cand, task, dead, log_it=cand.id not in self.failures_)
                    continue
                inputs: dict[str, np.ndarray] = {}
                try:
                    if "features" in kinds:
                        if enc is None:
                            enc = TextEncoder(cand, device=self.device, cache_dir=self.cache_dir,
                                              progress=self.progress, models=models, **local, **kw)
                            _keep_only(models, enc)
                        inputs["features"] = enc(texts)
                    if "probs" in kinds:
                        if head is None:
                            head = HeadProbs(cand, max_length=kw["max_length"], batch_size=kw["batch_size"],
                                             device=self.device, cache_dir=self.cache_dir,
                                             progress=self.progress, models=models, **local)
                            _keep_only(models, head)
                        inputs["probs"] = head(texts)
                except Exception as exc:  # noqa: BLE001 - recorded, then the policy decides
                    msg = _short(exc)
                    self._fail(cand, task, msg)
                    if not any(x is not None and x.loaded for x in (enc, head)):
                        dead = msg
                    continue
                scores: dict[str, float] = {}
                chosen: list[str] = []
                try:
                    for n in names:
                        x = inputs[infos[n].input.value]
                        if x.ndim == 3:  # layer: best -- every layer scored, the best kept (first on a tie)
                            per = [self._score(n, x[:, j], ytr, yva, regression[task.id]) for j in range(x.shape[1])]
                            j = int(np.argmax(per))
                            scores[n] = per[j]
                            chosen.append(f"{n} {j + 1}" if len(names) > 1 else str(j + 1))
                        else:
                            scores[n] = self._score(n, x, ytr, yva, regression[task.id])
                except Exception as exc:  # noqa: BLE001
                    self._fail(cand, task, f"{n}: {_short(exc)}")
                    continue
                if chosen:
                    self.chosen_layers_.setdefault(task.id, {})[cand.id] = ", ".join(chosen)
                for n, v in scores.items():  # a candidate is scored by every estimator of a task or absent
                    out[n][task.id][cand.id] = v
            for x in (enc, head):
                if x is not None:
                    x.close()
        return out

    def _fail(self, cand: Candidate, task: Task, msg: str, log_it: bool = True) -> None:
        if log_it:  # the summary (an error, or a warning with allow_failures) names every failure once
            log.info("candidate %s (%s) failed on task %s: %s", cand.id, cand.source, task.id, msg)
        entry = self.failures_.setdefault(cand.id, (str(cand.source), msg, []))
        entry[2].append(task.id)

    def _apply_policy(self, scores, tasks: Sequence[Task], pool: Pool):
        """Raise :class:`CandidateFailures` unless ``allow_failures``; then drop tasks nobody could score."""
        if self.failures_ and not self.allow_failures:
            raise CandidateFailures(self.name, len(pool), self.failures_)
        if self.failures_:
            log.warning("%s: %d candidate(s) failed and are left out of the run: %s", self.name,
                        len(self.failures_), "; ".join(f"{c} [{src}] ({m})" for c, (src, m, _) in self.failures_.items()))
        first = scores[self._estimators()[0]]
        empty = [t.id for t in tasks if not first[t.id]]
        if len(empty) == len(tasks):
            raise CandidateFailures(self.name, len(pool), self.failures_) if self.failures_ else \
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


def is_regression(labels: Sequence[str]) -> bool:
    """Whether a task's labels make it a regression task: every label a finite number and at least one not an
    integer (``0``, ``1``, ``2`` are class ids; ``0.5`` or ``3.0`` make the column numeric)."""
    if not labels:
        return False
    integral = True
    for v in labels:
        try:
            x = float(v)
        except (TypeError, ValueError):
            return False
        if not math.isfinite(x):
            return False
        text = str(v).strip().lstrip("+-")
        integral = integral and text.isdigit()
    return not integral


def reciprocal_rank_fusion(per_method: Sequence[dict[str, float]], k: float = 60.0) -> dict[str, float]:
    """RRF of one task's per-estimator scores by :func:`modelseek.fusion.fuse` (ranks by decreasing score,
    ties by natural docID; a failed, -inf, score has no term); a candidate failed everywhere gets -inf."""
    from ..fusion import fuse

    if not per_method:
        return {}
    fused = fuse([Run.from_scores({"t": s}, f"m{i}") for i, s in enumerate(per_method)], "rrf", k=k)
    got = fused.scores("t") if "t" in fused else {}
    return {d: got.get(d, -math.inf) for s in per_method for d in s}


@register
class FusionRanker(FeatureRanker):
    """Reciprocal-rank fusion of several estimators over one feature extraction per candidate."""

    name = "rrf"

    def __init__(self, methods: Sequence[str] = ("logme", "knn"), *, rrf_k: float = 60.0, pooling: str = "mean",
                 layer: "str | int" = "last", max_length: int = 256, batch_size: int = 32, device: str = "auto",
                 cache_dir: "str | Path | bool | None" = None, max_examples: int | None = None, seed: int = 0,
                 progress: bool = True, allow_failures: bool = False) -> None:
        super().__init__(None, pooling=pooling, layer=layer, max_length=max_length, batch_size=batch_size,
                         device=device, cache_dir=cache_dir, max_examples=max_examples, seed=seed,
                         progress=progress, allow_failures=allow_failures)
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
    from .. import estimators

    info = estimators.info(estimator)  # unknown names raise with suggestions
    cls = _DERIVED.get(estimator)
    if cls is None:
        doc = (f"``{estimator}`` on frozen {info.input.value} of the task under each candidate "
               f"(see :mod:`{info.fn.__module__}`): {info.summary}")
        cls = type(f"{estimator.title().replace('_', '')}Ranker", (FeatureRanker,),
                   {"name": estimator, "estimator_name": estimator, "__doc__": doc, "__module__": __name__})
        _DERIVED[estimator] = cls
    return cls
