"""Rankers that run the task through every candidate and score its frozen features with an estimator.

``FeatureRanker(estimator="logme")`` ranks a pool for a task by: features of the task's train + validation
texts under each candidate (:class:`modelseek.features.text.TextEncoder`: cached, the model loaded once for
all tasks), then ``modelseek.estimators.get(estimator)`` on them (higher = better). Estimators that fit a
classifier (knn, linear_probe) train on the train split and score the validation split; ``leep``/``nce``
score the candidate's own classification head (its softmax over source classes) and need a candidate with
one. One class per estimator is registered under the estimator's name (``logme``, ``knn``...), and
``rrf`` fuses several estimators by reciprocal-rank fusion over one feature extraction per candidate.

A candidate that fails to load or run is logged with its error, scored -inf (ranked last; the run file
writes -1e+308) and named in the summary warning; the run goes on with the others. Per-candidate feature
options (``pooling``, ``layer``, ``max_length``, ``batch_size``) in the pool file override the ranker's.
"""

from __future__ import annotations

import inspect
import logging
import math
from typing import Any, Iterable, Sequence

import numpy as np

from ..data.pool import Candidate, Pool
from ..data.run import Run
from ..data.task import Split, Task
from ..errors import InputError
from .base import Ranker

log = logging.getLogger(__name__)

_OPTION_KEYS = ("pooling", "layer", "max_length", "batch_size")


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
    #: default estimator of the registered subclasses
    estimator_name = "logme"

    def __init__(self, estimator: str | None = None, *, pooling: str = "mean", layer: "str | int" = "last",
                 max_length: int = 256, batch_size: int = 32, device: str = "auto", cache_dir=None,
                 max_examples: int | None = None, estimator_params: dict | None = None, seed: int = 0,
                 progress: bool = True) -> None:
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

    # ------------------------------------------------------------------------------------ internals
    def _estimators(self) -> list[str]:
        return [self.estimator]

    def _encoder_kwargs(self, cand: Candidate) -> dict[str, Any]:
        kw = {"pooling": self.pooling, "layer": self.layer, "max_length": self.max_length,
              "batch_size": self.batch_size}
        kw.update({k: cand.options[k] for k in _OPTION_KEYS if k in cand.options})
        return kw

    def _score(self, est_name: str, feats: np.ndarray, ytr: Sequence[str], yva: Sequence[str]) -> float:
        from .. import estimators

        fn = estimators.get(est_name)
        params = dict(self.estimator_params or {})
        sig = inspect.signature(fn).parameters
        if "seed" in sig:
            params.setdefault("seed", self.seed)
        ntr = len(ytr)
        if est_name in estimators.USES_VALIDATION and len(yva):
            return float(fn(feats[:ntr], list(ytr), val_features=feats[ntr:], val_labels=list(yva), **params))
        return float(fn(feats, list(ytr) + list(yva), **params))

    def _task_data(self, task: Task) -> tuple[list[str], list[str], list[str]]:
        task.require_data(f"method {self.name!r}")
        rng = np.random.default_rng(self.seed)
        tr = _subsample(task.train, self.max_examples, rng)
        va = _subsample(task.val, self.max_examples, rng)
        return list(tr.texts) + list(va.texts), list(tr.labels), list(va.labels)

    def score_tasks(self, tasks: Sequence[Task], pool: Pool) -> dict[str, dict[str, dict[str, float]]]:
        """{estimator: {task id: {candidate id: score}}}, one model load per candidate for all tasks."""
        from .. import estimators
        from ..features.text import HeadProbs, TextEncoder
        from ..progress import progress_bar

        names = self._estimators()
        for n in names:
            estimators.get(n)
        data = {t.id: self._task_data(t) for t in tasks}
        out = {n: {t.id: {} for t in tasks} for n in names}
        self.failures_: dict[str, str] = getattr(self, "failures_", {})
        kinds = {estimators.input_kind(n) for n in names}
        models: dict = {}  # loaded checkpoints, shared by consecutive candidates that read the same one
        for cand in progress_bar(list(pool), desc=f"{self.name}: candidates", disable=not self.progress):
            kw = self._encoder_kwargs(cand)
            enc = head = None
            dead = None  # the error that makes this candidate unusable (it failed to load)
            for task in tasks:
                texts, ytr, yva = data[task.id]
                inputs: dict[str, np.ndarray] = {}
                if dead is None:
                    try:
                        if "features" in kinds:
                            if enc is None:
                                enc = TextEncoder(cand, device=self.device, cache_dir=self.cache_dir,
                                                  progress=self.progress, models=models, **kw)
                                _keep_only(models, enc)
                            inputs["features"] = enc(texts)
                        if "probs" in kinds:
                            if head is None:
                                head = HeadProbs(cand, max_length=kw["max_length"], batch_size=kw["batch_size"],
                                                 device=self.device, cache_dir=self.cache_dir,
                                                 progress=self.progress, models=models)
                                _keep_only(models, head)
                            inputs["probs"] = head(texts)
                    except Exception as exc:  # noqa: BLE001 - one broken candidate must not stop the run
                        msg = _short(exc)
                        loaded = any(x is not None and x.loaded for x in (enc, head))
                        self._fail(cand, task, msg)
                        if not loaded:
                            dead = msg
                for n in names:
                    if estimators.input_kind(n) not in inputs:
                        out[n][task.id][cand.id] = -math.inf
                        continue
                    try:
                        out[n][task.id][cand.id] = self._score(n, inputs[estimators.input_kind(n)], ytr, yva)
                    except Exception as exc:  # noqa: BLE001
                        self._fail(cand, task, f"{n}: {_short(exc)}")
                        out[n][task.id][cand.id] = -math.inf
            for x in (enc, head):
                if x is not None:
                    x.close()
        return out

    def _fail(self, cand: Candidate, task: Task, msg: str) -> None:
        log.warning("candidate %s (%s) failed on task %s: %s", cand.id, cand.hf_id or cand.path, task.id, msg)
        self.failures_.setdefault(cand.id, msg)

    def _summary(self) -> None:
        if getattr(self, "failures_", None):
            log.warning("%s: %d candidate(s) failed and were ranked last: %s", self.name, len(self.failures_),
                        "; ".join(f"{c} ({m})" for c, m in self.failures_.items()))

    # ------------------------------------------------------------------------------------ the contract
    def rank(self, task: Task, pool: Pool) -> dict[str, float]:
        self.failures_ = {}
        scores = self.score_tasks([task], pool)[self.estimator][task.id]
        self._summary()
        return scores

    def rank_tasks(self, tasks: Iterable[Task], pool: Pool, run_id: str | None = None,
                   progress: bool = False) -> Run:
        tasks = list(tasks)
        self.failures_ = {}
        wanted, self.progress = self.progress, self.progress and progress
        try:
            scores = self.score_tasks(tasks, pool)
        finally:
            self.progress = wanted
        self._summary()
        return Run.from_scores(self._combine(scores, tasks), run_id or self.name)

    def _combine(self, scores, tasks) -> dict[str, dict[str, float]]:
        return scores[self.estimator]


def reciprocal_rank_fusion(per_method: Sequence[dict[str, float]], k: float = 60.0) -> dict[str, float]:
    """RRF of one task's per-estimator scores by :func:`modelseek.fusion.fuse` (ranks by decreasing score,
    ties by natural docID; a failed, -inf, score has no term); a candidate failed everywhere gets -inf."""
    from ..fusion import fuse

    if not per_method:
        return {}
    fused = fuse([Run.from_scores({"t": s}, f"m{i}") for i, s in enumerate(per_method)], "rrf", k=k)
    got = fused.scores("t") if "t" in fused else {}
    return {d: got.get(d, -math.inf) for s in per_method for d in s}


class FusionRanker(FeatureRanker):
    """Reciprocal-rank fusion of several estimators over one feature extraction per candidate."""

    name = "rrf"

    def __init__(self, methods: Sequence[str] = ("logme", "knn"), *, rrf_k: float = 60.0, pooling: str = "mean",
                 layer: "str | int" = "last", max_length: int = 256, batch_size: int = 32, device: str = "auto",
                 cache_dir=None, max_examples: int | None = None, seed: int = 0, progress: bool = True) -> None:
        super().__init__(None, pooling=pooling, layer=layer, max_length=max_length, batch_size=batch_size,
                         device=device, cache_dir=cache_dir, max_examples=max_examples, seed=seed,
                         progress=progress)
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
        self.failures_ = {}
        scores = self.score_tasks([task], pool)
        self._summary()
        return self._combine(scores, [task])[task.id]


def _make(est: str) -> type:
    doc = (f"``{est}`` on frozen features of the task under each candidate "
           f"(see :mod:`modelseek.estimators.{est}`).")
    return type(f"{est.title().replace('_', '')}Ranker", (FeatureRanker,),
                {"name": est, "estimator_name": est, "__doc__": doc, "__module__": __name__})


LogMERanker = _make("logme")
HScoreRanker = _make("hscore")
HScoreRegRanker = _make("hscore_reg")
KNNRanker = _make("knn")
KNNLOORanker = _make("knn_loo")
LinearProbeRanker = _make("linear_probe")
NLEEPRanker = _make("nleep")
SFDARanker = _make("sfda")
TransRateRanker = _make("transrate")
GBCRanker = _make("gbc")
PACTranGaussRanker = _make("pactran_gauss")
LEEPRanker = _make("leep")
NCERanker = _make("nce")
