"""Frozen-feature scoring as one job per candidate, run by an executor, persisted and claimed in a job store.

:func:`score_candidates` is the whole API: for a list of tasks, a pool and a :class:`FeatureJobConfig` (what to
extract and which estimators to run; :meth:`FeatureRanker.job_config
<modelseek.retrieval.rankers.features.FeatureRanker.job_config>` builds it from a ranker) it returns one
:class:`CandidateOutcome` per candidate, in pool order: the candidate's scores on every task, the layer ``layer:
best`` chose, and the tasks it failed on. Each candidate is **one job**: its model is loaded once and runs every
task of the call (features from the verified feature cache, :mod:`modelseek.retrieval.features.cache`, where present),
then
every estimator on them.

Executors: any of :data:`modelseek.retrieval.executors.EXECUTORS` (the same names as ``modelseek finetune --executor``):

* ``local`` — the jobs one after another in this process (the default);
* ``ray`` — each job is a Ray task (one GPU per job where the cluster has GPUs and the device is not ``cpu``, else
  one CPU); ``address=None`` starts a local Ray instance, ``"auto"`` or ``HOST:PORT`` joins a running cluster. A
  worker that dies is retried by Ray; a job whose retries are spent is a failed candidate;
* one of your own (:mod:`modelseek.retrieval.executors`: a module there, or an entry point).

Results are equal to the last digit whichever executor ran them on the same device: the job is the same function,
its inputs (subsampled texts and labels) are made once by the driver, and the scores travel as Python floats.

**Resumable and shared.** The outcomes are kept in a job store (:class:`modelseek.retrieval.finetune.store.JobStore`,
the
one fine-tuning grids use), by default ``scores.sqlite`` in the feature cache folder. A job's key is the digest of
the candidate (its source, revision, folder contents and options), the tasks (ids and the exact texts and labels
scored) and the configuration (estimators and their parameters, pooling, layer, max_length, max_examples, seed;
not the device, as for the feature cache):
a finished candidate is read back instead of recomputed, after a crash or ``kill -9`` too. Each job is claimed
before it runs (claims with a heartbeat; a dead owner's claim is taken over), so two processes scoring one pool on
one cache split the candidates between them and each waits for the other's: no candidate is computed twice. A
candidate that failed on some task is stored as failed and retried by the next call. ``store=False`` (or a ranker
with ``cache_dir=False``) keeps the outcomes for the call only.

``device`` (``auto`` | ``cpu`` | ``cuda``) is where the features are computed; ``auto`` picks CUDA where the
process (or the Ray task, which is given a GPU only on clusters that have them) sees one.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import logging
import math
import socket
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..data.pool import Candidate, Pool, snapshot_name
from ..data.task import Split, Task
from ...core.errors import InputError, ModelseekError
from ..executors import Executor, Gpu, Outcome, Shared, Unit, make_executor, run_until_done, runs_in_process
from ..._version import __version__
from .. import estimators
from ...core.progress import progress_counter

if TYPE_CHECKING:
    from ..finetune.store import JobStore
    from .base import Ranker

log = logging.getLogger(__name__)

#: bumped when the meaning of a stored outcome changes (part of every job key)
SCORES_VERSION = 1
DEVICES = ("auto", "cpu", "cuda")
_OPTION_KEYS = ("pooling", "layer", "max_length", "batch_size")


@dataclass(frozen=True)
class FeatureJobConfig:
    """What a candidate job computes. ``device``, ``cache_dir``, ``progress`` and ``method`` (the name used in
    messages) say how and where, not what: they are no part of :meth:`digest`."""

    estimators: tuple[str, ...]
    pooling: str = "mean"
    layer: str | int = "last"
    max_length: int = 256
    batch_size: int = 32
    max_examples: int | None = None
    estimator_params: Mapping[str, Any] = field(default_factory=dict)
    seed: int = 0
    device: str = "auto"
    cache_dir: str | Path | bool | None = None
    progress: bool = False
    method: str = "features"

    def digest(self) -> str:
        what = {k: v for k, v in asdict(self).items() if k not in ("device", "cache_dir", "progress", "method")}

        return _digest({"scores_version": SCORES_VERSION, "modelseek": __version__, **what})

    def describe(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if k not in ("cache_dir", "progress")}


@dataclass(frozen=True)
class TaskInput:
    """One task as a job reads it: the texts (train then validation, subsampled) and the labels."""

    id: str
    texts: tuple[str, ...]
    train_labels: tuple[str, ...]
    val_labels: tuple[str, ...]
    regression: bool


@dataclass
class CandidateOutcome:
    """One candidate's result. ``scores``: {estimator: {task id: score}} (higher is better; a failed task is
    absent); ``chosen``: {task id: the layer ``layer: best`` chose}; ``failures``: [(task id, reason, log it)];
    ``forward_calls``: extractions that ran the model (cache misses)."""

    scores: dict[str, dict[str, float]] = field(default_factory=dict)
    chosen: dict[str, str] = field(default_factory=dict)
    failures: list[tuple[str, str, bool]] = field(default_factory=list)
    forward_calls: int = 0

    @property
    def status(self) -> str:
        return "failed" if self.failures else "done"

    def to_dict(self) -> dict[str, Any]:
        return {"scores": self.scores, "chosen": self.chosen, "failures": [list(f) for f in self.failures],
                "forward_calls": self.forward_calls}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CandidateOutcome:
        return cls({e: {t: float(v) for t, v in per.items()} for e, per in d["scores"].items()}, dict(d["chosen"]),
                   [(str(t), str(m), bool(b)) for t, m, b in d["failures"]], int(d.get("forward_calls", 0)))


def _digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode("utf-8")).hexdigest()


def _short(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:300]


# ------------------------------------------------------------------------------------------ the task inputs
def is_regression(labels: Sequence[str]) -> bool:
    """Whether labels *look* numeric: every label a finite number and at least one not an integer (``0``, ``1``,
    ``2`` are class ids; ``0.5`` or ``3.0`` look numeric). Only a hint: whether a task is a regression task is what
    it declares (:attr:`Task.regression <modelseek.retrieval.data.task.Task.regression>`)."""
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


def _subsample(split: Split, cap: int | None, rng: np.random.Generator) -> Split:
    if cap is None or len(split) <= cap:
        return split
    keep = np.sort(rng.choice(len(split), size=cap, replace=False))
    return Split(tuple(split.texts[i] for i in keep), tuple(split.labels[i] for i in keep))


def prepare_tasks(tasks: Sequence[Task], config: FeatureJobConfig) -> list[TaskInput]:
    """The tasks' inputs (at most ``max_examples`` train and validation rows each, drawn with ``seed``); a
    regression task with an estimator that cannot score one is refused here, before any model is loaded."""
    out = []
    for task in tasks:
        task.require_data(f"method {config.method!r}")
        rng = np.random.default_rng(config.seed)
        tr = _subsample(task.train, config.max_examples, rng)
        va = _subsample(task.val, config.max_examples, rng)
        ytr, yva = tuple(tr.labels), tuple(va.labels)
        # the task's declared kind decides (tasks.csv's class count, --label-kind), never the labels' look
        regression = task.regression
        if task.label_kind is None and not regression and is_regression(list(ytr) + list(yva)):
            log.warning("task %s: its labels look like numbers (e.g. %r) but the task does not say whether they "
                        "are classes or targets; they are scored as %d classes (give --label-kind number for a "
                        "regression task)", task.id, ytr[0], len(set(ytr) | set(yva)))
        cannot = [n for n in config.estimators if regression and not estimators.info(n).regression]
        if cannot:
            able = [n for n, e in estimators.ESTIMATORS.usable()[0].items() if e.regression]
            raise InputError(f"task {task.id}: a regression task (label kind number, e.g. {ytr[0]!r}); "
                             f"{', '.join(cannot)} need{'s' if len(cannot) == 1 else ''} class labels; estimators "
                             f"for regression: {', '.join(able)}", field="method")
        out.append(TaskInput(task.id, tuple(tr.texts) + tuple(va.texts), ytr, yva, regression))
    return out


# ------------------------------------------------------------------------------------------ one candidate
def _encoder_kwargs(config: FeatureJobConfig, cand: Candidate) -> dict[str, Any]:
    from ..features.text import parse_layer  # lazy: start-up

    kw = {"pooling": config.pooling, "layer": config.layer, "max_length": config.max_length,
          "batch_size": config.batch_size}
    kw.update({k: cand.options[k] for k in _OPTION_KEYS if k in cand.options})
    if parse_layer(kw["layer"], best=True) == "best":
        kw["layer"] = "all"  # every layer's features, scored one by one (see score_candidate)
    return kw


def estimator_score(config: FeatureJobConfig, est_name: str, feats: np.ndarray, ytr: Sequence[str],
                    yva: Sequence[str], regression: bool = False) -> float:
    """One estimator's score of one feature matrix (train rows then validation rows), negated when the
    estimator is lower-is-better."""
    info = estimators.info(est_name)
    params = dict(config.estimator_params or {})
    if info.seeded:
        params.setdefault("seed", config.seed)
    tr: list[str] | list[float] = list(ytr)
    va: list[str] | list[float] = list(yva)
    if regression:
        params["task"] = "regression"
        tr, va = [float(v) for v in ytr], [float(v) for v in yva]
    ntr = len(tr)
    if info.uses_validation and len(va):
        value = info.fn(feats[:ntr], tr, val_features=feats[ntr:], val_labels=va, **params)
    else:
        value = info.fn(feats, [*tr, *va], **params)
    value = float(value)
    if not math.isfinite(value):
        raise ModelseekError(f"{est_name} returned {value}")
    return value if info.higher_is_better else -value


def _keep_only(models: dict, enc) -> None:
    """Free loaded checkpoints other than the one ``enc`` reads (one model in memory at a time)."""
    for slot in [k for k in models if k[1:3] != (enc.source, enc.revision)]:
        del models[slot]


def score_candidate(config: FeatureJobConfig, cand: Candidate, tasks: Sequence[TaskInput],
                    local_files_only: bool = False, models: dict | None = None) -> CandidateOutcome:
    """One job: ``cand`` loaded once, every task's features (cache first), every estimator on them. Never
    raises for a candidate's own failure: a task it could not score is in ``failures`` (a candidate that cannot
    load fails every task)."""
    from ..features.text import HeadProbs, TextEncoder  # lazy: start-up

    names = list(config.estimators)
    infos = {n: estimators.info(n) for n in names}
    kinds = {i.input.value for i in infos.values()}
    models = {} if models is None else models
    kw = _encoder_kwargs(config, cand)
    local: dict[str, Any] = {"local_files_only": True} if local_files_only else {}
    out = CandidateOutcome(scores={n: {} for n in names})
    enc = head = None
    dead: str | None = None  # why this candidate is unusable (it cannot load)
    try:
        for task in tasks:
            if dead is not None:
                out.failures.append((task.id, dead, False))
                continue
            inputs: dict[str, np.ndarray] = {}
            try:
                if "features" in kinds:
                    if enc is None:
                        # no bar per (candidate, task): the candidates' bar is the one progress line
                        enc = TextEncoder(cand, device=config.device, cache_dir=config.cache_dir,
                                          progress=False, models=models, **local, **kw)
                        _keep_only(models, enc)
                    inputs["features"] = enc(task.texts)
                if "probs" in kinds:
                    if head is None:
                        head = HeadProbs(cand, max_length=kw["max_length"], batch_size=kw["batch_size"],
                                         device=config.device, cache_dir=config.cache_dir,
                                         progress=False, models=models, **local)
                        _keep_only(models, head)
                    inputs["probs"] = head(task.texts)
            except Exception as exc:  # noqa: BLE001 - recorded, then the ranker's policy decides
                msg = _short(exc)
                out.failures.append((task.id, msg, True))
                if not any(x is not None and x.loaded for x in (enc, head)):
                    dead = msg
                continue
            scores: dict[str, float] = {}
            chosen: list[str] = []
            try:
                for n in names:
                    x = inputs[infos[n].input.value]
                    if x.ndim == 3:  # layer: best -- every layer scored, the best kept (first on a tie)
                        per = [estimator_score(config, n, x[:, j], task.train_labels, task.val_labels,
                                               task.regression) for j in range(x.shape[1])]
                        j = int(np.argmax(per))
                        scores[n] = per[j]
                        chosen.append(f"{n} {j + 1}" if len(names) > 1 else str(j + 1))
                    else:
                        scores[n] = estimator_score(config, n, x, task.train_labels, task.val_labels,
                                                    task.regression)
            except Exception as exc:  # noqa: BLE001
                out.failures.append((task.id, f"{n}: {_short(exc)}", True))
                continue
            if chosen:
                out.chosen[task.id] = ", ".join(chosen)
            for n, v in scores.items():  # a candidate is scored by every estimator of a task or absent
                out.scores[n][task.id] = v
    finally:
        out.forward_calls = sum(m.forward_calls for m in (enc, head) if m is not None)
        for m in (enc, head):
            if m is not None:
                m.close()
    return out


def _failed_everywhere(tasks: Sequence[TaskInput], names: Sequence[str], msg: str) -> CandidateOutcome:
    return CandidateOutcome({n: {} for n in names}, {}, [(t.id, msg, i == 0) for i, t in enumerate(tasks)])


# ------------------------------------------------------------------------------------------ preflight
def preflight(pool: Pool, cache_dir: str | Path | bool | None) -> tuple[dict[str, str], set[str]]:
    """Checks made once before any model is loaded: the feature cache folder (InputError when unusable) and the
    Hub when some candidate needs it. -> ({candidate id: why it cannot load}, ids to load from the local Hugging
    Face cache only)."""
    from ..features.cache import FeatureCache  # lazy: start-up
    from ..features.text import hub_offline_reason, in_hub_cache, is_hub_source, resolve_source  # lazy: start-up

    if cache_dir is not False:
        FeatureCache(_cache_root(cache_dir)).ensure_usable()
    local_only: set[str] = set()
    dead: dict[str, str] = {}
    for c in pool:
        if c.path and not c.path.startswith("package:") and not Path(resolve_source(c.path)).expanduser().is_dir():
            dead[c.id] = f"no model folder at {c.path}"
    hub = [c for c in pool if is_hub_source(c)]
    reason = hub_offline_reason() if hub else None
    if reason:
        from ..profiles import hf_cache_dir  # lazy: start-up

        model_dir = getattr(pool, "model_dir", None)
        for c in hub:
            if in_hub_cache(c.hf_id, c.revision):
                local_only.add(c.id)
            else:  # say everywhere it was looked for
                folder = f"no folder {model_dir / snapshot_name(c.id)}, " if model_dir is not None else ""
                dead[c.id] = (f"{folder}not in the local Hugging Face cache ({hf_cache_dir()}) and the Hub is "
                              f"offline ({reason})")
    return dead, local_only


def check_device(device: str, here: bool = True) -> None:
    """``device`` names a device (:data:`DEVICES`, or a torch device string such as ``cuda:1``), and a CUDA one
    only where this process sees CUDA when ``here`` (the local executor; a Ray task runs where its GPU is)."""
    import torch  # lazy: torch

    if device not in DEVICES:
        try:
            torch.device(device)
        except (RuntimeError, TypeError):
            raise InputError(f"unknown device {device!r}; valid values: {', '.join(DEVICES)}", field="device") \
                from None
    if here and str(device).startswith("cuda") and not torch.cuda.is_available():
        raise InputError(f"device {device} asked for, but no CUDA device is visible here", field="device")


# ------------------------------------------------------------------------------------------ job keys
def job_key(config_digest: str, tasks_digest: str, cand: Candidate) -> str:
    """The store key of one candidate's job: the configuration, the tasks' inputs and the candidate (its model
    identity, including a local folder's file sizes and times, and its per-candidate options)."""
    from ..features.text import _model_identity  # lazy: start-up

    try:
        identity = _model_identity(cand, None)[3]
    except InputError:
        identity = {"source": cand.source}
    return _digest({"config": config_digest, "tasks": tasks_digest, "id": cand.id, "model": identity,
                    "revision": cand.revision, "options": {k: cand.options.get(k) for k in sorted(cand.options)}})


def tasks_digest(tasks: Sequence[TaskInput]) -> str:
    return _digest([asdict(t) for t in tasks])


def default_store_path(cache_dir: str | Path | bool | None) -> Path | None:
    """``scores.sqlite`` in the feature cache folder; None without a cache."""
    from ..features.cache import FeatureCache  # lazy: start-up

    if cache_dir is False:
        return None
    return FeatureCache(_cache_root(cache_dir)).root / "scores.sqlite"


def _cache_root(cache_dir: str | Path | bool | None) -> str | Path | None:
    """The :class:`FeatureCache` folder a ``cache_dir`` setting names (None: the default folder)."""
    return None if cache_dir is None or isinstance(cache_dir, bool) else cache_dir


# ------------------------------------------------------------------------------------------ units
class ModelSlots:
    """The checkpoints that the candidate jobs of one call have loaded in this process, one dict per thread
    (consecutive candidates reading one checkpoint load it once). A job sent to another process gets an empty
    one: loaded models never travel."""

    def __init__(self) -> None:
        self._local = threading.local()

    def get(self) -> dict:
        models = getattr(self._local, "models", None)
        if models is None:
            models = self._local.models = {}
        return models

    def clear(self) -> None:
        self.get().clear()

    def __reduce__(self):
        return ModelSlots, ()


def candidate_job(config: FeatureJobConfig, cand: Candidate, tasks: Sequence[TaskInput], local_files_only: bool,
                  slots: ModelSlots) -> dict[str, Any]:
    """A candidate's unit function (on any executor): :func:`score_candidate`, the outcome as a plain dict."""
    return score_candidate(config, cand, tasks, local_files_only, slots.get()).to_dict()


def _resolve_lazy_imports() -> None:
    """transformers' lazy classes, imported in this thread first: an in-process executor may run the jobs on
    threads, whose concurrent first imports of ``transformers`` race (one sees a half-initialised module)."""
    with contextlib.suppress(ImportError):  # without transformers each job fails naming it, as it would here
        from transformers import AutoConfig, AutoModel, AutoModelForSequenceClassification, AutoTokenizer  # noqa: F401  # lazy: transformers


def candidate_units(config: FeatureJobConfig, tasks: Sequence[TaskInput], cands: Sequence[Candidate],
                    keys: Mapping[str, str], local_only: set[str], in_process: bool,
                    slots: ModelSlots) -> list[Unit]:
    """One unit per candidate (its item the candidate): the tasks' inputs shared by all of them, a GPU asked for
    unless the device is ``cpu`` (required when it is ``cuda``); progress bars only in this process."""
    if in_process:
        _resolve_lazy_imports()
    cfg = config if in_process else replace(config, progress=False)
    shared = Shared(f"tasks {tasks_digest(tasks)}", list(tasks))
    device = str(config.device)
    gpu: Gpu = "none" if device == "cpu" else "required" if device.startswith("cuda") else "auto"
    return [Unit(keys[c.id], candidate_job, (cfg, c, shared, c.id in local_only, slots), gpu=gpu, item=c)
            for c in cands]


# ------------------------------------------------------------------------------------------ the API
def score_candidates(tasks: Sequence[Task], pool: Pool, config: FeatureJobConfig, *, executor: str | Executor = "local",
                     address: str | None = None, store: str | Path | bool | None = None,
                     progress: bool | None = None, poll_s: float = 0.5) -> dict[str, CandidateOutcome]:
    """Every candidate of ``pool`` scored on every task of ``tasks`` -> {candidate id: outcome}, in pool order.

    ``executor``: a name of :data:`modelseek.retrieval.executors.EXECUTORS` (``address``: the cluster) or an executor
    instance; ``store``: the job store file (None: beside the feature cache; False: this call only). Finished
    candidates are read from the store; the others are claimed, run and written to it one by one as they finish.
    Candidates another process holds are waited for (polled every ``poll_s`` seconds; a dead holder's claim is
    taken over). ``progress`` (default ``config.progress``): a bar of candidates done, with rate and ETA."""
    progress = config.progress if progress is None else progress
    in_process = runs_in_process(executor)
    check_device(config.device, here=in_process)
    ex = make_executor(executor, address)
    inputs = prepare_tasks(tasks, config)
    dead, local_only = preflight(pool, config.cache_dir)
    names = list(config.estimators)
    outcomes: dict[str, CandidateOutcome] = {c.id: _failed_everywhere(inputs, names, dead[c.id])
                                             for c in pool if c.id in dead}
    live = [c for c in pool if c.id not in dead]
    cdig, tdig = config.digest(), tasks_digest(inputs)
    keys = {c.id: job_key(cdig, tdig, c) for c in live}
    if len(set(keys.values())) != len(keys):
        raise InputError("the pool lists one candidate twice (same id and model)", field="pool")
    with contextlib.ExitStack() as stack:
        db = _open_store(stack, store, config.cache_dir)
        db.add_recipe(cdig, config.describe())
        known = db.states(keys.values())
        retry = {k: a for k, (s, a) in known.items() if s == "failed"}  # a failed candidate is retried once a call
        todo = [c for c in live if keys[c.id] not in known or keys[c.id] in retry]
        if len(todo) < len(live):
            log.info("%s: %d of %d candidate(s) read from the job store %s", config.method, len(live) - len(todo),
                     len(live), db.path)
        bar = progress_counter(len(todo), desc=f"{config.method}: candidates", disable=not progress or not todo)
        ran_here: set[str] = set()

        def on_start(unit: Unit) -> int | None:
            return db.claim(unit.key, retry.get(unit.key))

        def on_done(unit: Unit, done: Outcome, attempt: int) -> None:
            cand = unit.item
            outcome = (CandidateOutcome.from_dict(done.value) if done.ok
                       else _failed_everywhere(inputs, names, str(done.error)))
            db.finish(key=keys[cand.id], task_id=",".join(t.id for t in inputs)[:500], model_id=cand.id,
                      model_source=str(cand.source), recipe=cdig, seed=config.seed, task_fingerprint=tdig,
                      status=outcome.status, result=outcome.to_dict(),
                      error="; ".join(f"{t}: {m}" for t, m, _ in outcome.failures)[:2000] or None,
                      attempt=attempt, host=socket.gethostname())
            ran_here.add(cand.id)
            bar.update(1)

        def pending() -> list[Candidate]:
            now = db.states(keys[c.id] for c in todo)
            left = [c for c in todo if c.id not in ran_here
                    and (keys[c.id] not in now or (keys[c.id] in retry and now[keys[c.id]] == ("failed",
                                                                                           retry[keys[c.id]])))]
            bar.n = len(todo) - len(left)  # candidates finished by other processes count too
            bar.refresh()
            return left

        slots = ModelSlots()
        try:
            if todo:
                run_until_done(ex, lambda: candidate_units(config, inputs, pending(), keys, local_only, in_process,
                                                           slots), on_start, on_done, db, poll_s, "remove it")
        finally:
            slots.clear()
            bar.close()
        recs = {r.key: r for r in db.records(keys.values())}
    for c in live:
        rec = recs.get(keys[c.id])
        if rec is None or rec.result is None:  # pragma: no cover - the loop above waits for every key
            raise ModelseekError(f"candidate {c.id}: no outcome in the job store")
        outcomes[c.id] = CandidateOutcome.from_dict(rec.result)
    return {c.id: outcomes[c.id] for c in pool}


def _open_store(stack: contextlib.ExitStack, store: str | Path | bool | JobStore | None,
                cache_dir: str | Path | bool | None) -> JobStore:
    """The job store ``score_candidates`` asks for, open in ``stack``: a given store as it is; None (or True): the
    file beside the feature cache; False, or no feature cache: a file for this call only."""
    from ..finetune.store import JobStore  # lazy: pandas

    if isinstance(store, JobStore):
        return store
    path = default_store_path(cache_dir) if store is None or store is True else store or None
    if path is None:
        path = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="modelseek-scores-"))) / "s.sqlite"
    return stack.enter_context(JobStore(path, rebuild=True))  # a cache: a damaged one is set aside and rebuilt


# ------------------------------------------------------------------------------------------ plumbing
def with_execution(ranker: Ranker, executor: str | Executor | None = None, address: str | None = None,
                   device: str | None = None, strict: bool = True) -> Ranker:
    """``ranker`` set to run its candidate jobs with ``executor`` (at ``address``) on ``device`` (a copy; None
    leaves a setting as it is). Rankers that run no candidate model take no executor: ``ray`` for one is an
    error when ``strict`` (``rank --verify-top`` uses the executor for fine-tuning too); ``device`` is applied to
    every ranker that declares it."""
    wanted = {k: v for k, v in (("executor", executor), ("address", address), ("device", device)) if v is not None}
    if not wanted:
        return ranker
    if device is not None:
        check_device(device, here=False)
    if executor is not None:
        make_executor(executor, address)  # validates the pair
    declared = type(ranker).param_names()
    if strict and "executor" not in declared and (executor not in (None, "local") or address):
        raise InputError(f"method {getattr(ranker, 'name', ranker)!r} runs no candidate model: `executor` "
                         f"{executor or 'ray'!r} is for the feature methods (logme, knn, rrf ...)", field="executor")
    ranker = copy.copy(ranker)
    for k, v in wanted.items():
        if k in declared:
            setattr(ranker, k, v)
    return ranker


__all__ = ["DEVICES", "CandidateOutcome", "FeatureJobConfig", "TaskInput", "default_store_path",
           "is_regression", "prepare_tasks", "score_candidate", "score_candidates", "with_execution"]
