"""What each stage of the funnel costs, per model, in seconds.

A model's cost is three numbers (:class:`ModelCost`): seconds to load it, seconds of frozen-feature extraction
(plus the estimator) per 1,000 texts, and seconds of fine-tuning per epoch per 1,000 training + validation
texts. :class:`CostTable` holds given numbers (the benchmark's simulated pool); :class:`MeasuredCosts`
measures them on this machine with a short probe of the real code paths (``modelseek.rank`` with the feature
method on 16 and then 64 texts of the task, which separates load time from per-text time; one fine-tuning
epoch on 64 texts under the funnel's recipe) and caches them per model under ``$MODELSEEK_CACHE/costs`` in the
verified array format of :mod:`modelseek.core.cache` (written atomically, checked on read, a corrupt entry is
measured again). Only the first few candidates of the prior are probed (``probe_top``); another candidate's cost
is the probed median, scaled by its parameter count where both are known (cost grows with size). The plan is
made from these numbers; what each unit really took is recorded as it finishes.
"""

from __future__ import annotations

import csv
import hashlib
import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from ..data.pool import Candidate, Pool
from ..data.task import Split, Task
from ..ranking import rank
from ...core.errors import InputError, ModelseekError

log = logging.getLogger(__name__)

COST_VERSION = 1
PROBE_SMALL, PROBE_LARGE, PROBE_TRAIN = 16, 64, 64


@dataclass(frozen=True)
class ModelCost:
    """Seconds to load a model, per 1,000 texts of frozen features, per epoch per 1,000 fine-tuning texts."""

    load_s: float
    feature_s_per_1k: float
    finetune_s_per_epoch_1k: float

    def features(self, n_texts: int) -> float:
        return self.load_s + self.feature_s_per_1k * n_texts / 1000.0

    def finetune(self, n_texts: int, epochs: int) -> float:
        return self.load_s + epochs * self.finetune_s_per_epoch_1k * n_texts / 1000.0


class Costs(Protocol):
    """What the planner asks of a cost model."""

    def cost(self, candidate: Candidate) -> ModelCost: ...


@dataclass
class CostTable:
    """Given costs by candidate id (e.g. a simulated pool's); an unknown id is a programming error."""

    table: Mapping[str, ModelCost]

    def cost(self, candidate: Candidate) -> ModelCost:
        return self.table[candidate.id]


def scaled_cost(known: Mapping[str, ModelCost], params: Mapping[str, float | None], cid: str) -> ModelCost:
    """The cost of ``cid`` from the measured ``known`` ones: their median, times ``params[cid]`` over the
    median parameter count of the measured models that declare one (when ``cid`` declares one too)."""
    if not known:
        raise ValueError("no measured costs to extrapolate from")
    arr = np.array([[c.load_s, c.feature_s_per_1k, c.finetune_s_per_epoch_1k] for c in known.values()])
    med = np.median(arr, axis=0)
    sizes = [p for k in known if (p := params.get(k))]
    mine = params.get(cid)
    factor = float(mine / np.median(sizes)) if mine and sizes else 1.0
    return ModelCost(*(float(x) * factor for x in med))


def _cost_key(candidate: Candidate, feature_method: str, recipe) -> dict:
    from ..finetune.protocol import resolve_device  # lazy: pandas

    return {"what": "funnel-cost", "version": COST_VERSION, "source": candidate.source,
            "revision": candidate.revision or "", "feature_method": feature_method,
            "device": resolve_device(recipe), "batch_size": recipe.batch_size, "max_length": recipe.max_length,
            "precision": str(recipe.precision)}


def _sample(task: Task, n: int, seed: int) -> Split:
    """``n`` training rows of ``task`` in a seeded random order (both classes of a sorted table, not the first)."""
    rng = np.random.default_rng(seed)
    idx = rng.permutation(len(task.train.texts))[:n]
    return Split(tuple(task.train.texts[i] for i in idx), tuple(task.train.labels[i] for i in idx))


def _reason(exc: Exception) -> str:
    """One line saying why a probe failed (a ranking's own per-candidate reason where it gives one)."""
    failures = getattr(exc, "failures", None)
    if failures:
        text = str(next(iter(failures.values()))[1])
    else:
        text = str(exc) or type(exc).__name__
    return text.strip().splitlines()[0] if text.strip() else type(exc).__name__


class MeasuredCosts:
    """Costs measured on this machine for one task's text lengths (see the module docstring)."""

    def __init__(self, task: Task, feature_method: str, recipe, seed: int = 0, probe_top: int = 3,
                 clock: Callable[[], float] = time.perf_counter, progress: bool = False) -> None:
        self.task, self.feature_method, self.recipe, self.seed = task, feature_method, recipe, seed
        self.probe_top, self.clock, self.progress = probe_top, clock, progress
        self.measured: dict[str, ModelCost] = {}
        self.params: dict[str, float | None] = {}
        self.probe_seconds = 0.0
        self.failures: dict[str, str] = {}
        self.warm = False

    # ---------------------------------------------------------------- cache
    def _path(self, candidate: Candidate):
        from ...core.cache import cache_dir  # lazy: start-up

        key = _cost_key(candidate, self.feature_method, self.recipe)
        name = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:24]
        return cache_dir("costs") / f"{name}.bin", key

    def cached(self, candidate: Candidate) -> ModelCost | None:
        from ...core.cache import load_arrays  # lazy: start-up

        path, key = self._path(candidate)
        got = load_arrays(path, key, what="cost cache")
        if got is None:
            return None
        v = got["cost"]
        if v.shape != (3,) or not np.all(np.isfinite(v)) or np.any(v < 0):
            return None
        return ModelCost(*(float(x) for x in v))

    def _store(self, candidate: Candidate, cost: ModelCost) -> None:
        from ...core.cache import write_arrays  # lazy: start-up

        path, key = self._path(candidate)
        write_arrays(path, {"cost": np.array([cost.load_s, cost.feature_s_per_1k, cost.finetune_s_per_epoch_1k])},
                     key)

    # ---------------------------------------------------------------- probing
    def _time_features(self, candidate: Candidate, n: int) -> float:
        rows = _sample(self.task, n, self.seed)  # n texts in all: half train, half validation
        h = n // 2
        probe = Task(id=f"cost-probe-{n}", train=Split(rows.texts[:h], rows.labels[:h]),
                     val=Split(rows.texts[h:], rows.labels[h:]))
        t0 = time.perf_counter()
        rank(probe, Pool([candidate], name="probe"), method=self.feature_method)
        return time.perf_counter() - t0

    def _time_epoch(self, candidate: Candidate) -> tuple[float, int]:
        from ..finetune.protocol import finetune  # lazy: pandas

        train = _sample(self.task, PROBE_TRAIN, self.seed)
        val = Split(train.texts[:16], train.labels[:16])
        probe = Task(id="cost-probe-ft", train=train, val=val, test=val)
        t0 = time.perf_counter()
        finetune(probe, candidate, self.recipe.replace(max_epochs=1, patience=1), self.seed)
        return time.perf_counter() - t0, len(train.texts) + 2 * len(val.texts)

    def measure(self, candidate: Candidate) -> ModelCost:
        """Probe ``candidate`` (two small feature rankings and one short fine-tuning epoch) and cache it."""
        small = self._time_features(candidate, PROBE_SMALL)
        large = self._time_features(candidate, PROBE_LARGE)
        per_text = max((large - small) / (PROBE_LARGE - PROBE_SMALL), large / PROBE_LARGE * 0.05)
        load = max(small - PROBE_SMALL * per_text, 0.0)
        epoch, n_ft = self._time_epoch(candidate)  # the texts of its train, validation and test passes (a task
        # smaller than the probe gives fewer than PROBE_TRAIN + 32)
        per_ft = max(epoch - load, epoch * 0.05) / n_ft
        cost = ModelCost(load_s=load, feature_s_per_1k=per_text * 1000, finetune_s_per_epoch_1k=per_ft * 1000)
        self._store(candidate, cost)
        return cost

    def prepare(self, order: Sequence[Candidate]) -> float:
        """Know the cost of the first ``probe_top`` candidates of ``order`` (from the cache, else probed) and
        the parameter counts of all; returns the seconds spent, all of them (reading the parameter counts from
        the candidates' profiles and configs too, so a plan-only run reports every second it took)."""
        from ..profiles import profile_for  # lazy: start-up
        from ...core.progress import progress_bar  # lazy: start-up

        start = self.clock()
        for c in order:
            p = c.params_m if c.params_m else getattr(profile_for(c), "params_m", None)
            self.params[c.id] = float(p) if p else None
        todo = []
        for c in order[: self.probe_top]:
            got = self.cached(c)
            if got is not None:
                self.measured[c.id] = got
            else:
                todo.append(c)
        for i, c in enumerate(progress_bar(todo, desc="measuring costs", disable=not self.progress or not todo)):
            try:
                if i == 0 and not self.warm:
                    # the first probe of a process also pays its one-off start-up (imports, kernels, caches),
                    # which no later job pays: measured once to warm up, then again for the cost
                    self.measure(c)
                    self.warm = True
                self.measured[c.id] = self.measure(c)
            except Exception as exc:  # noqa: BLE001 - an unprobeable candidate is not measured; the feature stage names it
                self.failures[c.id] = _reason(exc)
                log.warning("cost probe of %s failed: %s", c.id, self.failures[c.id])
        whole = self.clock() - start  # the probes and everything around them
        self.probe_seconds += whole
        return whole

    def cost(self, candidate: Candidate) -> ModelCost:
        if candidate.id in self.measured:
            return self.measured[candidate.id]
        got = self.cached(candidate)
        if got is not None:
            self.measured[candidate.id] = got
            return got
        if not self.measured:
            first = next(iter(self.failures.items()), None)
            why = f"; {first[0]}: {first[1]}" if first else ""
            raise ModelseekError(f"no candidate's cost could be measured (every cost probe failed{why})")
        return scaled_cost(self.measured, self.params, candidate.id)


#: stated costs per million parameters for a plan made offline (``select --plan-only`` with nothing cached and no
#: ``--costs``): ASSUMPTIONS, the generated world's (``modelseek.testing.funnel``: a CPU-like machine), not
#: measurements — seconds to load, per 1,000 texts of frozen features, per epoch per 1,000 fine-tuning texts
STATED_PER_M = ModelCost(load_s=0.01, feature_s_per_1k=0.1, finetune_s_per_epoch_1k=1.0)
#: the size assumed for a candidate whose parameter count no card, config or pool declares (BERT-base)
STATED_PARAMS_M = 110.0


class OfflineCosts(MeasuredCosts):
    """Costs for a plan made without loading any weights: a candidate's cost cached by an earlier probe on this
    machine (:class:`MeasuredCosts`' cache), else the cached ones' median scaled by its parameter count, else
    :data:`STATED_PER_M` times its parameter count (from the pool, its shipped profile, its card or config in the
    local cache; :data:`STATED_PARAMS_M` where none declares one). :attr:`sources` says which per candidate."""

    def __init__(self, task: Task, feature_method: str, recipe, seed: int = 0) -> None:
        super().__init__(task, feature_method, recipe, seed=seed, probe_top=0)
        self.sources: dict[str, str] = {}

    def prepare(self, order: Sequence[Candidate]) -> float:
        """The parameter counts and cached costs of every candidate; no probe. Returns the seconds it took."""
        from ..profiles import profile_for  # lazy: start-up

        start = self.clock()
        for c in order:
            p = c.params_m if c.params_m else getattr(profile_for(c), "params_m", None)
            self.params[c.id] = float(p) if p else None
            got = self.cached(c)
            if got is not None:
                self.measured[c.id] = got
                self.sources[c.id] = "cached probe"
        whole = self.clock() - start
        self.probe_seconds += whole
        return whole

    def cost(self, candidate: Candidate) -> ModelCost:
        if candidate.id in self.measured:
            return self.measured[candidate.id]
        if self.measured:
            self.sources.setdefault(candidate.id, "cached probes, scaled by parameter count")
            return scaled_cost(self.measured, self.params, candidate.id)
        size = self.params.get(candidate.id) or candidate.params_m or STATED_PARAMS_M
        self.sources.setdefault(candidate.id, "stated per-parameter cost" + (
            "" if self.params.get(candidate.id) or candidate.params_m else f" ({STATED_PARAMS_M:g} M assumed)"))
        s = STATED_PER_M
        return ModelCost(load_s=s.load_s * size, feature_s_per_1k=s.feature_s_per_1k * size,
                         finetune_s_per_epoch_1k=s.finetune_s_per_epoch_1k * size)


def read_cost_table(path) -> CostTable:
    """Stated costs from a CSV (``model_id, load_s, feature_s_per_1k, finetune_s_per_epoch_1k``; every number
    finite and >= 0); a bad row is a located error. A candidate the table lacks is an error when the plan asks."""
    p = Path(path)
    if not p.is_file():
        raise InputError("no such cost table", path=p)
    cols = ("load_s", "feature_s_per_1k", "finetune_s_per_epoch_1k")
    out: dict[str, ModelCost] = {}
    with p.open(newline="", encoding="utf-8") as fh:
        rows = csv.DictReader(fh)
        missing = [c for c in ("model_id", *cols) if c not in (rows.fieldnames or [])]
        if missing:
            raise InputError(f"missing column {missing[0]!r}", path=p, line=1, field=missing[0])
        for i, row in enumerate(rows, start=2):
            vals = []
            for c in cols:
                try:
                    v = float(row[c])
                except (TypeError, ValueError):
                    v = float("nan")
                if not (np.isfinite(v) and v >= 0):
                    raise InputError(f"must be a finite number >= 0, got {row[c]!r}", path=p, line=i, field=c)
                vals.append(v)
            out[str(row["model_id"])] = ModelCost(*vals)
    return _StatedCosts(out, str(p))


class _StatedCosts(CostTable):
    """A :class:`CostTable` read from a file: a candidate it lacks is a located error."""

    def __init__(self, table: Mapping[str, ModelCost], source: str) -> None:
        super().__init__(table)
        self.source = source

    def cost(self, candidate: Candidate) -> ModelCost:
        if candidate.id not in self.table:
            raise InputError(f"no cost for candidate {candidate.id!r}", path=self.source, field="model_id")
        return self.table[candidate.id]
