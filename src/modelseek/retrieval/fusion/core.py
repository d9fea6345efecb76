"""Fusion of runs: Run x Run x ... -> Run (one implementation for every part of modelseek).

Methods (``w_r`` is run ``r``'s weight, ``v_r(d)`` candidate ``d``'s normalised score in run ``r``,
``p_r(d)`` its 1-based position in run ``r``'s order -- Rank, then line order):

* ``rrf``     -- reciprocal-rank fusion, ``sum_r w_r / (k + p_r(d))`` (Cormack, Clarke & Buettcher, SIGIR
  2009; ``k = 60``, ``w_r = 1`` unless given). Uses ranks only: a normalisation does not apply.
* ``combsum`` -- ``sum_r v_r(d)`` (Fox & Shaw, TREC-2, 1994). No weights.
* ``combmnz`` -- ``combsum(d) x |{r : d in r}|`` (Fox & Shaw, 1994). No weights.
* ``wsum``    -- weighted sum ``sum_r w_r v_r(d)`` (weights default to 1, i.e. combsum).

Each method is one registered :class:`~modelseek.retrieval.fusion.methods.FusionMethod` in its own file of
:mod:`modelseek.retrieval.fusion.methods` (properties, combine function and search space together); a new method is one
file there. Score-based methods normalise first (default ``min-max``; see :mod:`modelseek.retrieval.fusion.norms`).

**Missing candidates (the rule).** A candidate missing from a run for a topic -- not ranked there, or
ranked with a failed score (non-finite, or the ``±1e308`` a run file writes for one) -- adds nothing from
that run: it contributes 0 to combsum and wsum *after* normalisation (the normalisation sees only the
candidates the run holds), is not counted in combmnz's multiplier, and has no term in the RRF sum. A
candidate that appears in no run is absent from the fused run (never given a placeholder score).

**Topics in only some runs.** The fused run covers the union of the input runs' topics (in natural topic
order, whatever the order of the files and lines). A run that lacks a topic is treated as ranking none of its
candidates: the topic is fused from the runs that hold it, with their weights unchanged (weights are not renormalised).

**Ties.** Fused scores are ranked by :meth:`Run.from_scores`: decreasing score, equal scores by natural
docID order ('2' before '10'), so the result is deterministic.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from ..data.run import Entry, Run, natural_key
from ...core.errors import InputError
from .features import TaskFeatures, spread
from .gates import Gate
from .methods import FUSION_METHODS, FusionMethod
from .norms import Norm, normalize_block

FAILED_SCORE = 1e308  # a score this large in magnitude is the run files' marker for a failed candidate
DEFAULT_RRF_K = 60.0


# ------------------------------------------------------------------------------------------ the blocks
@dataclass
class Block:
    """Every run's scores for a set of topics, as ``runs x topics x candidates`` arrays.

    Candidates of a topic are the union over runs, in natural docID order (the tie order); topics with
    fewer candidates are padded with NaN. ``scores`` and ``positions`` are NaN where a run lacks a candidate.
    """

    run_ids: list[str]
    topics: list[str]
    docs: list[list[str]]            # per topic, natural order
    scores: np.ndarray               # R x T x D
    positions: np.ndarray            # R x T x D, 1-based position in the run's order
    #: task features ``{feature: {topic: value}}`` for gated fusions (see :mod:`modelseek.retrieval.fusion.features`)
    features: Mapping[str, Mapping[str, float]] = field(default_factory=dict, repr=False)
    _normed: dict = field(default_factory=dict, repr=False)

    @property
    def present(self) -> np.ndarray:
        return ~np.isnan(self.scores)

    def values(self, method: FusionMethod, norm: Norm, k: float) -> np.ndarray:
        """What each run contributes per candidate before weighting (NaN where absent): the normalised scores for
        a score-based method, the reciprocal ranks ``1 / (k + p)`` for a rank-based one."""
        key = ("rrf", float(k)) if not method.uses_scores else ("norm", norm)
        if key not in self._normed:
            if not method.uses_scores:
                self._normed[key] = 1.0 / (float(k) + self.positions)
            else:
                self._normed[key] = normalize_block(self.scores, self.positions, norm)
        return self._normed[key]

    def spread(self) -> np.ndarray:
        """``runs x topics`` standard deviation of each run's raw scores (:func:`.features.spread`)."""
        if "spread" not in self._normed:
            self._normed["spread"] = spread(self.scores)
        return self._normed["spread"]

    def feature(self, name: str) -> np.ndarray:
        """Task feature ``name`` per topic (NaN where a topic has no value)."""
        per_topic = self.features.get(name, {})
        return np.array([per_topic.get(t, np.nan) for t in self.topics], dtype=float)


def _usable(score: float) -> bool:
    return math.isfinite(score) and abs(score) < FAILED_SCORE


def make_block(runs: Sequence[Run], topics: Sequence[str] | None = None,
               features: TaskFeatures | Mapping[str, Mapping[str, float]] | None = None) -> Block:
    """Stack ``runs`` over ``topics`` (default: the union of their topics, in natural order), with the task
    ``features`` gated fusions read."""
    if topics is None:
        topics = sorted(dict.fromkeys(t for r in runs for t in r), key=natural_key)
    topics = [str(t) for t in topics]
    per_topic: list[list[dict[str, tuple[float, int]]]] = []
    docs: list[list[str]] = []
    for t in topics:
        rows = []
        union: dict[str, None] = {}
        for r in runs:
            present: dict[str, tuple[float, int]] = {}
            if t in r:
                pos = 0
                for e in r[t]:  # evaluation order: Rank, then line order
                    if _usable(e.score):
                        pos += 1
                        present[e.doc] = (e.score, pos)
                        union[e.doc] = None
            rows.append(present)
        per_topic.append(rows)
        docs.append(sorted(union, key=natural_key))
    R, T, D = len(runs), len(topics), max((len(d) for d in docs), default=0)
    scores = np.full((R, T, max(D, 1)), np.nan)
    positions = np.full((R, T, max(D, 1)), np.nan)
    for ti, (rows, ds) in enumerate(zip(per_topic, docs)):
        for j, d in enumerate(ds):
            for ri, present in enumerate(rows):
                if d in present:
                    scores[ri, ti, j], positions[ri, ti, j] = present[d]
    return Block([r.run_id for r in runs], topics, docs, scores, positions, TaskFeatures.of(features).values)


def combine(values: np.ndarray, method: FusionMethod, weights: Sequence[float] | np.ndarray) -> np.ndarray:
    """Fused score per (topic, candidate) from ``R x T x D`` member values by ``method``'s combine function,
    with one weight per run (``R``) or per run and topic (``R x T``, a gated fusion's);
    NaN where no run holds the candidate. Each method sums its terms in increasing order
    (:func:`~modelseek.retrieval.fusion.methods.ordered_sum`), so a candidate's fused score depends neither on the shape
    of the block it was computed in nor on the order of the runs.
    """
    present = ~np.isnan(values)
    with np.errstate(over="ignore", invalid="ignore"), FUSION_METHODS.calling(method.value, "combine"):
        acc = method.combine(values, np.asarray(weights, dtype=float))  # an overflow is reported by block_to_run
    return np.where(present.any(axis=0), acc, np.nan)


def block_to_run(block: Block, fused: np.ndarray, run_id: str, topics: Sequence[str] | None = None) -> Run:
    """The run of ``fused`` (T x D) scores; candidates with NaN (in no run) are absent."""
    index = {t: i for i, t in enumerate(block.topics)}
    out: dict[str, dict[str, float]] = {}
    for t in (block.topics if topics is None else topics):
        ti = index[t]
        row = fused[ti]
        scores = {d: float(row[j]) for j, d in enumerate(block.docs[ti]) if not math.isnan(row[j])}
        if any(not math.isfinite(s) for s in scores.values()):
            raise InputError(f"topic {t!r}: fused scores overflow (raw scores near the float range); "
                             f"use a normalisation (`norm` min-max)", field="norm")
        if scores:
            out[t] = scores
    return Run.from_scores(out, run_id)


# ------------------------------------------------------------------------------------------ a fusion
@dataclass(frozen=True)
class Fusion:
    """A fully specified fusion of named runs: method, normalisation, one weight per run id, RRF's k, and
    optionally a :class:`~modelseek.retrieval.fusion.gates.Gate` that scales the weights per topic (per-task
    weights)."""

    method: FusionMethod
    norm: Norm
    run_ids: tuple[str, ...]
    weights: tuple[float, ...]
    k: float = DEFAULT_RRF_K
    gate: Gate | None = None

    @classmethod
    def build(cls, run_ids: Sequence[str], method: FusionMethod | str = "rrf", norm: Norm | str | None = None,
              weights: Sequence[float] | Mapping[str, float] | None = None, k: float = DEFAULT_RRF_K,
              gate: Gate | None = None) -> Fusion:
        """Validate and complete a specification (see :func:`fuse` for the defaults)."""
        m = FusionMethod.parse(method, field="method")
        ids = tuple(str(r) for r in run_ids)
        if not ids:
            raise InputError("fusion needs at least one run", field="runs")
        if len(set(ids)) != len(ids):
            dup = sorted({r for r in ids if ids.count(r) > 1})
            raise InputError(f"duplicate run id(s) {', '.join(dup)}; rename the runs (give them as a mapping "
                             f"{{new id: run}})", field="RunID")
        if not m.uses_scores:
            n = Norm.parse(norm or "none", field="norm")
            if n is not Norm.NONE:
                raise InputError(f"{m.value} fuses ranks; normalisation {n.value!r} does not apply (use wsum or "
                                 f"combsum with `norm`)", field="norm")
        else:
            n = Norm.parse(norm or "min-max", field="norm")
        try:
            kk = float(k)
        except (TypeError, ValueError):
            raise InputError(f"not a number: {k!r}", field="k") from None
        if not math.isfinite(kk) or kk < 0:
            raise InputError(f"rrf k must be a finite number >= 0, got {k!r}", field="k")
        if weights is None:
            w = tuple(1.0 for _ in ids)
        else:
            if not m.takes_weights:
                raise InputError(f"{m.value} takes no weights; use wsum for a weighted sum", field="weights")
            if isinstance(weights, Mapping):
                unknown = [r for r in weights if r not in ids]
                missing = [r for r in ids if r not in weights]
                if unknown or missing:
                    raise InputError(f"weights name run(s) {', '.join(map(str, unknown)) or '-'} not among the "
                                     f"inputs and miss {', '.join(missing) or '-'} (runs: {', '.join(ids)})",
                                     field="weights")
                weights = [weights[r] for r in ids]
            given: list[float] = []
            for x in weights:
                try:
                    given.append(float(x))
                except (TypeError, ValueError):
                    raise InputError(f"not a number: {x!r}", field="weights") from None
            if len(given) != len(ids):
                raise InputError(f"{len(given)} weight(s) for {len(ids)} run(s) ({', '.join(ids)})", field="weights")
            if any(not math.isfinite(x) or x < 0 for x in given):
                raise InputError(f"weights must be finite and >= 0, got {given}", field="weights")
            if sum(given) <= 0:
                raise InputError("at least one weight must be > 0", field="weights")
            w = tuple(given)
        if gate is not None:
            if not m.takes_weights:
                raise InputError(f"{m.value} takes no weights; a gate scales weights (use wsum or rrf)", field="gate")
            gate.check(ids)
        return cls(m, n, ids, w, kk, gate)

    def describe(self) -> str:
        parts = [self.method.value]
        if self.method.uses_scores:
            parts.append(f"norm={self.norm.value}")
        if not self.method.uses_scores:
            parts.append(f"k={self.k:g}")
        if self.method.takes_weights:
            parts.append("weights " + " ".join(f"{r}={w:g}" for r, w in zip(self.run_ids, self.weights)))
        if self.gate is not None:
            parts.append(self.gate.describe())
        return " ".join(parts)

    @property
    def task_features(self) -> list[str]:
        """The task features this fusion reads (a gate on ``size``, ...): none for an ungated one."""
        name = None if self.gate is None else self.gate.task_feature
        return [] if name is None else [name]

    def with_gate(self, gate: Gate | None) -> Fusion:
        """This fusion with its weights scaled per topic by ``gate``."""
        if gate is not None:
            gate.check(self.run_ids)
        return replace(self, gate=gate)

    def default_run_id(self) -> str:
        return f"fused-{self.method.value}"

    def order(self, runs: Sequence[Run] | Mapping[str, Run]) -> list[Run]:
        """The input runs in this fusion's run-id order; every run id must be there exactly once."""
        runs = list(runs.values()) if isinstance(runs, Mapping) else list(runs)
        have = [r.run_id for r in runs]
        if len(set(have)) != len(have):
            dup = sorted({r for r in have if have.count(r) > 1})
            raise InputError(f"duplicate run id(s) {', '.join(dup)}; rename the runs (give them as a mapping "
                             f"{{new id: run}})", field="RunID")
        missing = [r for r in self.run_ids if r not in have]
        extra = [r for r in have if r not in self.run_ids]
        if missing or extra:
            raise InputError(f"the fusion combines runs {', '.join(self.run_ids)}; "
                             f"{'missing ' + ', '.join(missing) if missing else ''}"
                             f"{'; ' if missing and extra else ''}"
                             f"{'not expected ' + ', '.join(extra) if extra else ''}", field="RunID")
        by_id = {r.run_id: r for r in runs}
        return [by_id[r] for r in self.run_ids]

    def fused_scores(self, block: Block) -> np.ndarray:
        if list(block.run_ids) != list(self.run_ids):
            raise InputError(f"block runs {block.run_ids} differ from the fusion's {list(self.run_ids)}")
        weights: tuple[float, ...] | np.ndarray = self.weights
        if self.gate is not None:
            weights = np.asarray(self.weights, dtype=float)[:, None] * self.gate.factors(block)
        return combine(block.values(self.method, self.norm, self.k), self.method, weights)

    def apply(self, runs: Sequence[Run] | Mapping[str, Run], run_id: str | None = None,
              features: TaskFeatures | Mapping[str, Mapping[str, float]] | None = None) -> Run:
        """Fuse ``runs`` (matched to this fusion by run id) into a new run; a fusion gated on a task feature
        needs ``features`` holding it (topics without a value get the base weights)."""
        ordered = self.order(runs)
        given = TaskFeatures.of(features)
        lacking = [f for f in self.task_features if f not in given.values]
        if lacking:
            raise InputError(f"the fusion weighs runs by the task feature {', '.join(lacking)}; give `features` "
                             f"(the tasks, or a task features table)", field="features")
        block = make_block(ordered, features=given)
        return block_to_run(block, self.fused_scores(block), run_id or self.default_run_id())

    # ------------------------------------------------------------------------------ serialisation
    def to_dict(self) -> dict:
        out = {"method": self.method.value, "norm": self.norm.value, "k": self.k,
               "weights": {r: w for r, w in zip(self.run_ids, self.weights)}}
        if self.gate is not None:  # an ungated fusion writes what version 1 files always held
            out["gate"] = self.gate.to_dict()
        return out

    @classmethod
    def from_dict(cls, d: object) -> Fusion:
        if not isinstance(d, Mapping):
            raise InputError("fusion must be an object", field="fusion")
        unknown = set(d) - {"method", "norm", "k", "weights", "gate"}
        if unknown:
            raise InputError(f"unknown key(s) {', '.join(sorted(unknown))}", field="fusion")
        weights = d.get("weights")
        if not isinstance(weights, Mapping) or not weights:
            raise InputError("weights must be a non-empty object {run_id: weight}", field="weights")
        method = FusionMethod.parse(d.get("method", ""), field="method")
        w = dict(weights)
        # combsum/combmnz store their implicit unit weights; they take none when built
        if not method.takes_weights:
            if any(float(x) != 1.0 for x in w.values()):
                raise InputError(f"{method.value} takes no weights", field="weights")
            if d.get("gate") is not None:
                raise InputError(f"{method.value} takes no weights; a gate scales weights", field="gate")
            return cls.build(list(w), method, d.get("norm"), None, d.get("k", DEFAULT_RRF_K))
        gate = None if d.get("gate") is None else Gate.from_dict(d["gate"], [str(r) for r in w])
        return cls.build(list(w), method, d.get("norm"), w, d.get("k", DEFAULT_RRF_K), gate)


def _as_runs(runs: Sequence[Run] | Mapping[str, Run]) -> list[Run]:
    out = list(runs.values()) if isinstance(runs, Mapping) else list(runs)
    for r in out:
        if not isinstance(r, Run):
            raise InputError(f"fusion inputs must be Run objects, got {type(r).__name__}", field="runs")
    return out


def check_shared_candidates(runs: Sequence[Run] | Mapping[str, Run]) -> None:
    """Refuse runs that rank different pools: on a topic ranked by two or more of them, a run none of whose candidates
    the others rank. Fusing such runs would only interleave two unrelated lists (a candidate missing from a run adds
    nothing from it, so every score would come from one run alone); rank one pool with every method instead."""
    rs = _as_runs(runs)
    topics = sorted({t for r in rs for t in r}, key=natural_key)
    for t in topics:
        have = [(r, {e.doc for e in r[t]}) for r in rs if t in r]
        if len(have) < 2:
            continue
        for i, (r, docs) in enumerate(have):
            others = set().union(*(d for j, (_, d) in enumerate(have) if j != i))
            if docs and not docs & others:
                rest = ", ".join(o.run_id for j, (o, _) in enumerate(have) if j != i)
                raise InputError(f"run {r.run_id} shares no candidate with {rest} on topic {t} ({len(docs)} vs "
                                 f"{len(others)} candidates): fusing would interleave two pools; rank one pool "
                                 f"with every method and fuse those runs", field="runs")


def fuse(runs: Sequence[Run] | Mapping[str, Run], method: FusionMethod | str = "rrf",
         norm: Norm | str | None = None, weights: Sequence[float] | Mapping[str, float] | None = None,
         k: float = DEFAULT_RRF_K, run_id: str | None = None) -> Run:
    """Fuse several runs into a new, immutable run (the inputs are not touched).

    ``method``: ``rrf`` (default), ``combsum``, ``combmnz`` or ``wsum``; ``norm``: ``none``, ``min-max``
    (default for score-based methods), ``zmuv``, ``rank`` or ``sum`` (rrf takes none); ``weights``: one per
    run, in order or by run id (rrf and wsum only; default 1 each); ``k``: RRF's constant. The run id
    defaults to ``fused-METHOD``. Missing candidates, topics in only some runs and ties follow the rules in
    :mod:`modelseek.retrieval.fusion.core`.

    >>> import modelseek as ms
    >>> a = ms.Run.from_scores({"t": {"x": 3, "y": 2, "z": 1}}, "a")
    >>> b = ms.Run.from_scores({"t": {"y": 5, "x": 1}}, "b")
    >>> ms.fuse([a, b], method="combsum").ranking("t")   # min-max: x 1 + 0, y 0.5 + 1, z 0
    ['y', 'x', 'z']
    """
    rs = _as_runs(runs)
    check_shared_candidates(rs)
    spec = Fusion.build([r.run_id for r in rs], method, norm, weights, k)
    return spec.apply(rs, run_id)


def normalize_run(run: Run, norm: Norm | str, run_id: str | None = None) -> Run:
    """``run`` with its scores normalised per topic (order unchanged; failed candidates dropped)."""
    block = make_block([run])
    values = normalize_block(block.scores, block.positions, norm)[0]
    out = {}
    for ti, t in enumerate(block.topics):
        pos = block.positions[0, ti]
        items = [(block.docs[ti][j], float(values[ti, j]), int(pos[j])) for j in range(len(block.docs[ti]))
                 if not math.isnan(values[ti, j])]
        if items:
            out[t] = [Entry(d, p, s) for d, s, p in sorted(items, key=lambda x: x[2])]
    return Run(out, run_id or run.run_id)
