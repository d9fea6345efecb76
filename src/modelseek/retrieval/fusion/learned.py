"""Learned fusion: choose the method, normalisation and weights from ground truth, honestly.

The search space is a fixed grid of :class:`~modelseek.retrieval.fusion.core.Fusion` specifications, enumerated in a
fixed order: plain RRF first, then combsum and combmnz under each normalisation, then wsum and weighted RRF
over weight vectors on the simplex (steps of ``step``; equal weights and every single run included; when
the simplex grid is larger than ``max_weights`` a seeded random subset of it). Every specification is
scored once per topic with the official metric (nDCG@k), so fitting a fold is choosing a specification from
its scores on that fold's *training* topics: by default (``selection="vs-rrf"``) plain RRF unless the
one-standard-error choice beats it in an inner cross-validation (:func:`_choose_vs_rrf`); or the
one-standard-error rule alone (``"1se"``: the simplest fusion -- fewest runs, then ungated -- among those
within one paired standard error of the best mean; see :func:`choose`), or the best mean (``"best"``).

Per-task weights (``per_task=True``, the default): the grid also holds every weighted fusion of two runs or
more with its weights scaled per topic by a :class:`~modelseek.retrieval.fusion.gates.Gate` -- each run's own spread, or
a task feature (task size, number of classes, any given number per task) on one run -- for each exponent of a
small grid. They are scored with the others; the ``1se`` rule first chooses among the ungated fusions as
without them, and takes the choice over the whole grid only when it beats that one in an inner cross-validation
by more than one paired standard error (:func:`_choose_per_task`); ``vs-rrf`` then guards against plain RRF as
before. Where per-task weights do not help, the choice is the global-only grid's.

Honest estimate: task-level k-fold cross-validation with the folds of ``bench`` (seeded, stratified by
criticality tier where possible). Each fold's choice is made on the other folds' topics only and scored
on its held-out topics; :class:`FoldResult` records both topic lists so that this can be checked. The
held-out scores are compared with each input run and with plain RRF on the same topics (mean, percentile
bootstrap interval over topics, paired bootstrap of the difference). The fusion that is saved and applied
is then chosen on every topic with ground truth.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TYPE_CHECKING

import numpy as np

from ..data.run import Run, natural_key
from ..data.truth import GradingScheme, GroundTruth
from ...core.errors import InputError
from ...core.registry import PluginError
from ..evaluation import evaluate
from ..metrics import ndcg_cutoff
from ..metrics.ndcg import ideal_dcg, ndcg
from ...core.stats.bootstrap import bootstrap_ci, paired_bootstrap
from .core import DEFAULT_RRF_K, Block, Fusion, FusionMethod, _as_runs, block_to_run, fuse, make_block
from .features import TaskFeatures
from .gates import GAMMAS, Gate, candidate_gates
from .methods import FUSION_METHODS, SearchSpace, builtin, usable_methods
from .norms import Norm
from .persist import read_fusion, save_fusion

if TYPE_CHECKING:
    import pandas as pd

LEARNED = "learned fusion"   # names with a space cannot clash with a run id
PLAIN_RRF = "plain rrf"
DEFAULT_NORMS = (Norm.MIN_MAX, Norm.ZMUV, Norm.RANK, Norm.SUM)


# ------------------------------------------------------------------------------------------ the grid
#: the most weight vectors :func:`simplex_weights` enumerates (a --step of 1e-9 would ask for a billion)
MAX_GRID = 200_000


def simplex_weights(n_runs: int, step: float = 0.1) -> list[tuple[float, ...]]:
    """Every weight vector with entries in {0, step, 2 step, ..., 1} summing to 1 (lexicographic order). A grid of
    more than :data:`MAX_GRID` vectors is refused before any is made, naming the step the runs can afford."""
    if not (0 < step <= 1) or not math.isfinite(step):
        raise InputError(f"step must be in (0, 1], got {step}", field="step")
    units = int(round(1.0 / step))  # noqa: RUF046 - a numpy step: numpy<2 rounds to a float
    if abs(units * step - 1.0) > 1e-9:
        raise InputError(f"step must divide 1 (0.5, 0.25, 0.2, 0.1, 0.05 ...), got {step}", field="step")
    size = math.comb(units + n_runs - 1, n_runs - 1)
    if size > MAX_GRID:
        most = max(u for u in (1, 2, 4, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 10_000, 100_000)
                   if math.comb(u + n_runs - 1, n_runs - 1) <= MAX_GRID)
        raise InputError(f"step {step:g} gives {_count(size)} weight vectors for {n_runs} runs, over the "
                         f"{MAX_GRID:,} the search enumerates; use a step of at least {1 / most:g}", field="step")
    out = [tuple(c / units for c in comp) for comp in _compositions(units, n_runs)]
    return sorted(out, reverse=True)


def _compositions(total: int, parts: int) -> Iterator[tuple[int, ...]]:
    """Every tuple of ``parts`` non-negative integers summing to ``total`` (each made once: no filtering of a
    larger product, so the work is the size of the grid)."""
    if parts == 1:
        yield (total,)
        return
    for first in range(total + 1):
        for rest in _compositions(total - first, parts - 1):
            yield (first, *rest)


def _count(n: int) -> str:
    return f"{n:,}" if n < 10**15 else f"about 10^{len(str(n)) - 1}"


def candidate_fusions(run_ids: Sequence[str], methods: Sequence[FusionMethod | str] | None = None,
                      norms: Sequence[Norm | str] | None = None, step: float = 0.1,
                      rrf_ks: Sequence[float] = (DEFAULT_RRF_K,), max_weights: int = 1000,
                      seed: int = 0, gates: Sequence[Gate] = ()) -> list[Fusion]:
    """The search grid, in its fixed order (see the module docstring): what every registered method (or each
    of ``methods``) contributes (:attr:`~modelseek.retrieval.fusion.methods.FusionMethod.search`), ordered by phase;
    then,
    for each of ``gates`` in turn, every weighted fusion of the grid that uses at least two runs (and the gated
    run, for a gate on a task feature) with its weights scaled per topic by the gate (per-task weights)."""
    ids = list(run_ids)
    every, _ = usable_methods()  # a broken plugin is left out (optimize_fusion says which), never raised
    ms = [FusionMethod.parse(m, field="method") for m in methods] if methods else every
    ns = [Norm.parse(n, field="norm") for n in (norms or DEFAULT_NORMS)]
    if not ms or not ns:
        raise InputError("the search needs at least one method and one normalisation")
    if max_weights < 1:
        raise InputError(f"max_weights must be >= 1, got {max_weights}", field="max_weights")
    R = len(ids)
    equal = tuple(1.0 / R for _ in ids)
    singles = [tuple(1.0 if i == j else 0.0 for j in range(R)) for i in range(R)]
    grid = simplex_weights(R, step) if R > 1 else [(1.0,)]
    if len(grid) > max_weights:
        rng = np.random.default_rng(seed)
        keep = sorted(rng.choice(len(grid), size=max_weights, replace=False))
        grid = [grid[i] for i in keep]
    run_ids = tuple(ids)

    by_name = {m.value: m for m in ms}  # a search names its method: the member searched, not a fresh look-up

    def make(method, norm, weights, k):
        return Fusion.build(run_ids, by_name.get(method, method) if isinstance(method, str) else method, norm,
                            weights, DEFAULT_RRF_K if k is None else k)

    space = SearchSpace(run_ids, tuple(ns), tuple(dict.fromkeys([equal, *singles, *grid])),
                        tuple(float(k) for k in rrf_ks), make)
    chosen = set(ms)
    order = every + [m for m in ms if m not in every]
    staged: list[tuple[int, Fusion]] = []
    for m in (m for m in order if m in chosen):
        try:
            with FUSION_METHODS.calling(m.value, "search"):
                staged += [(phase, spec) for phase, spec in m.search(space)]
        except PluginError as exc:  # a plugin fails alone: out of the default search (optimize_fusion names it)
            if methods:
                raise
            FUSION_METHODS.leave_out(m.value, str(exc))
    out = [spec for _, spec in sorted(staged, key=lambda x: x[0])]  # stable: method order, then as yielded
    out += [spec.with_gate(g) for g in gates for spec in out if _gateable(spec, g)]
    return list(dict.fromkeys(out))


def _gateable(spec: Fusion, gate: Gate) -> bool:
    """A gate changes the balance of a fusion's runs only where it weighs two runs or more, one of them gated."""
    used = {r for r, w in zip(spec.run_ids, spec.weights) if w > 0}
    return (spec.method.takes_weights and spec.gate is None and len(used) > 1
            and bool(used & {r for r, _ in gate.refs}))


# ------------------------------------------------------------------------------------------ fast scorer
def _ndcg_cut(metric: str) -> int:
    return ndcg_cutoff(metric, "learned fusion")


@dataclass
class _Judged:
    """Gains of a block's candidates and the ideal DCG per topic (the official scorer's conventions)."""

    gains: np.ndarray   # T x D
    idcg: np.ndarray    # T
    k: int

    @classmethod
    def build(cls, block: Block, truth: GroundTruth, scheme: GradingScheme, k: int) -> _Judged:
        gains = np.zeros(block.scores.shape[1:])
        idcg = np.zeros(len(block.topics))
        for ti, t in enumerate(block.topics):
            grades = truth.grades(t, scheme)
            for j, d in enumerate(block.docs[ti]):
                gains[ti, j] = scheme.gain(grades.get(d, 0))
            idcg[ti] = ideal_dcg(np.array([scheme.gain(g) for g in grades.values()], dtype=np.float64), k)[0]
        return cls(gains, idcg, k)

    def ndcg(self, fused: np.ndarray) -> np.ndarray:
        """Per-topic nDCG@k of rankings by decreasing fused score, ties in candidate (natural docID) order;
        NaN (a candidate no run has on that topic, or padding) is not ranked."""
        return ndcg(fused, self.gains, self.k, self.idcg)


def score_grid(block: Block, judged: _Judged, grid: Sequence[Fusion], progress: bool = False) -> np.ndarray:
    """``len(grid) x topics`` matrix of per-topic nDCG@k; a specification whose fused scores overflow
    (raw scores near the float range under ``none``) scores -inf everywhere."""
    from ...core.progress import progress_bar  # lazy: start-up

    out = np.empty((len(grid), len(block.topics)))
    for i, spec in enumerate(progress_bar(grid, desc="fusion grid", disable=not progress)):
        fused = spec.fused_scores(block)
        if np.isinf(fused).any():
            out[i] = -np.inf
        else:
            out[i] = judged.ndcg(fused)
    return out


def _without_failing_plugins(grid: list[Fusion], block: Block) -> list[Fusion]:
    """``grid`` less the fusions of every plugin method whose combine raises on ``block`` (its first fusion of the
    grid is tried): such a method is left out of the registry with why, and :func:`optimize_fusion` names it, as a
    plugin that fails to load. A plugin fails alone: the search goes on with the others."""
    tried: set[FusionMethod] = set()
    failed: set[FusionMethod] = set()
    for spec in grid:
        m = spec.method
        if m in tried or FUSION_METHODS.distribution(m.value) is None:
            continue
        tried.add(m)
        try:
            spec.fused_scores(block)
        except PluginError as exc:
            FUSION_METHODS.leave_out(m.value, str(exc))
            failed.add(m)
    return [g for g in grid if g.method not in failed] if failed else grid


SELECTIONS = ("vs-rrf", "1se", "best")
INNER_FOLDS = 5


def runs_used(spec: Fusion) -> int:
    """How many input runs a fusion uses (runs with weight 0 are not used)."""
    return sum(1 for w in spec.weights if w > 0)


def complexity(spec: Fusion) -> int:
    """What the one-standard-error rule minimises: the runs used, then whether the weights differ per task
    (a gated fusion is more complex than an ungated one of the same runs)."""
    return 2 * runs_used(spec) + (spec.gate is not None)


def choose(M: np.ndarray, cols: Sequence[int], grid: Sequence[Fusion], selection: str = "1se") -> int:
    """Index of the fusion chosen from per-topic scores ``M[:, cols]`` (the training topics only).

    ``best``: the highest mean (first in grid order on a tie). ``1se``: the one-standard-error rule (Breiman
    et al., 1984; Hastie et al., ESL 7.10) on paired differences -- among the fusions whose mean is within
    one standard error of the best's (the SE of the per-topic difference to the best), the one using the
    fewest runs, then ungated before gated (:func:`complexity`), then the highest mean, then grid order.
    With few and noisy tasks the best-on-training weights often give a small weight to a run that only fits
    noise; the rule keeps such a run out unless the data clearly support it. When the grid holds gated
    fusions (per-task weights), ``1se`` keeps the choice among the ungated ones unless the rule over the whole
    grid beats it where it was not chosen (:func:`_choose_per_task`).
    """
    if selection == "vs-rrf":
        return _choose_vs_rrf(M, list(cols), grid)
    flat = np.array([g.gate is None for g in grid])
    if selection == "1se" and not flat.all():
        return _choose_per_task(M, list(cols), grid, flat)
    return _rule(M, list(cols), grid, selection)


def _rule(M: np.ndarray, cols: list[int], grid: Sequence[Fusion], selection: str,
          among: np.ndarray | None = None) -> int:
    """``best`` or ``1se`` (see :func:`choose`) among the fusions ``among`` (a mask; default all)."""
    X = M[:, cols]
    with np.errstate(invalid="ignore", over="ignore"):
        means = X.mean(axis=1)
        if among is not None:
            means = np.where(among, means, -np.inf)
        best = int(np.argmax(means))
        if selection == "best" or X.shape[1] < 2:
            return best
        diff = X[best][None, :] - X
        se = diff.std(axis=1, ddof=1) / math.sqrt(X.shape[1])
        ok = np.isfinite(means) & (means >= means[best] - np.nan_to_num(se, nan=np.inf))
    ok[best] = True
    used = np.array([complexity(g) for g in grid])
    fewest = used[ok].min()
    cand = np.flatnonzero(ok & (used == fewest))
    return int(cand[np.argmax(means[cand])])


def _held_out(M: np.ndarray, cols: list[int], rule, folds: int = INNER_FOLDS, seed: int = 0):
    """(topics in a seeded order, the held-out score of ``rule``'s choice on each): ``rule(train_cols)`` chosen on
    the other inner folds of ``cols``, scored on each inner fold."""
    order = np.asarray(cols)[np.random.default_rng(seed).permutation(len(cols))]
    held = np.empty(len(order))
    for f in range(folds):
        test = np.arange(f, len(order), folds)
        train = np.setdiff1d(np.arange(len(order)), test)
        held[test] = M[rule(list(order[train])), order[test]]
    return order, held


def _beats(d: np.ndarray) -> bool:
    """The paired differences ``d`` are finite and their mean exceeds one standard error."""
    with np.errstate(invalid="ignore"):
        return bool(np.isfinite(d).all() and d.mean() > d.std(ddof=1) / math.sqrt(len(d)))


def _choose_per_task(M: np.ndarray, cols: list[int], grid: Sequence[Fusion], flat: np.ndarray,
                     folds: int = INNER_FOLDS) -> int:
    """The ``1se`` choice among the ungated fusions unless the ``1se`` choice over the whole grid (gated fusions
    included) beats it in an inner cross-validation on ``cols`` by more than one paired standard error -- the
    guard of :func:`_choose_vs_rrf` one level down: where per-task weights do not help, the choice is the one
    the global-only grid makes."""
    glob = _rule(M, cols, grid, "1se", flat)
    pick = _rule(M, cols, grid, "1se")
    if flat[pick] or len(cols) < 2 * folds:
        return glob
    _, held_all = _held_out(M, cols, lambda c: _rule(M, c, grid, "1se"), folds)
    _, held_flat = _held_out(M, cols, lambda c: _rule(M, c, grid, "1se", flat), folds)
    return pick if _beats(held_all - held_flat) else glob


def plain_rrf_index(grid: Sequence[Fusion]) -> int | None:
    """Position of plain RRF (equal weights, the default k) in the grid, or None when it is not searched."""
    for i, g in enumerate(grid):
        if g.method.value == "rrf" and len(set(g.weights)) <= 1 and g.k == DEFAULT_RRF_K:  # only the built-in
            return i
    return None


def _choose_vs_rrf(M: np.ndarray, cols: list[int], grid: Sequence[Fusion], folds: int = INNER_FOLDS,
                   seed: int = 0) -> int:
    """Plain RRF unless a learned choice beats it where it was not chosen.

    With the few dozen tasks of a model-selection ground truth, the best of a large grid always beats plain RRF
    on the topics it was chosen on. Here the choice rule (the one-standard-error rule of :func:`choose`) is
    itself cross-validated on ``cols``: chosen on the other inner folds, scored on each held-out inner fold.
    The learned fusion is used only when those held-out scores beat plain RRF's on the same topics by more than
    one paired standard error; otherwise plain RRF (the simplest candidate) is the answer.
    """
    rrf = plain_rrf_index(grid)
    pick = choose(M, cols, grid, "1se")
    if rrf is None:
        return pick
    if pick == rrf or len(cols) < 2 * folds:  # nothing to test, or too few topics to test it on
        return rrf
    order, held = _held_out(M, cols, lambda c: choose(M, c, grid, "1se"), folds, seed)
    return pick if _beats(held - M[rrf, order]) else rrf


# ------------------------------------------------------------------------------------------ results
@dataclass(frozen=True)
class FoldResult:
    fold: int
    held_out: tuple[str, ...]    # topics this fold's choice is scored on
    fitted: tuple[str, ...]      # topics this fold's choice was made on (never a held-out one)
    fusion: Fusion
    train_score: float

    def to_dict(self) -> dict:
        return {"fold": self.fold, "held_out": list(self.held_out), "fitted": list(self.fitted),
                "fusion": self.fusion.to_dict(), "describe": self.fusion.describe(),
                "train_score": self.train_score}


@dataclass
class FusionCV:
    """Cross-validated comparison: per-topic held-out values of the learned fusion, each input run and plain
    RRF (columns), with the fold and tier of each topic."""

    metric: str
    folds: list[FoldResult]
    per_topic: pd.DataFrame
    systems: list[str]
    seed: int = 0
    run: Run | None = None      # the learned fusion's held-out rankings (each topic by its fold's choice)

    def per_fold(self) -> pd.DataFrame:
        """Mean metric per fold (rows) and system (columns), with the number of held-out topics."""
        df = self.per_topic.groupby("fold")[self.systems].mean()
        df.insert(0, "n", self.per_topic.groupby("fold").size())
        return df

    def summary(self, n_resamples: int = 1000, confidence: float = 0.95, seed: int | None = None) -> pd.DataFrame:
        """Per system: mean [bootstrap interval over topics] and the paired difference learned − system."""
        import pandas as pd  # lazy: pandas

        s = self.seed if seed is None else seed
        learned = self.per_topic[LEARNED].to_numpy(float)
        rows = []
        for name in self.systems:
            v = self.per_topic[name].to_numpy(float)
            ci = bootstrap_ci(v, n_resamples, confidence, s)
            row = {"system": name, "mean": ci.mean, "low": ci.low, "high": ci.high,
                   "diff": math.nan, "diff_low": math.nan, "diff_high": math.nan, "p_better": math.nan}
            if name != LEARNED:
                c = paired_bootstrap(learned, v, n_resamples, confidence, s)
                row.update(diff=c.mean_diff, diff_low=c.low, diff_high=c.high, p_better=c.p_better)
            rows.append(row)
        return pd.DataFrame(rows).set_index("system")

    def to_dict(self, n_resamples: int = 1000) -> dict:
        summ = self.summary(n_resamples)
        fold_means = self.per_fold()
        return {"metric": self.metric, "seed": self.seed, "n_topics": len(self.per_topic),
                "folds": [{**f.to_dict(),
                           "means": {k: float(v) for k, v in fold_means.loc[f.fold, self.systems].items()}}
                          for f in self.folds],
                "summary": {name: {k: (None if isinstance(v, float) and math.isnan(v) else float(v))
                                   for k, v in row.items()} for name, row in summ.iterrows()}}

    def table(self, n_resamples: int = 1000) -> str:
        """A text table: the mean per fold, then mean [95%] and learned − system [95%] over all topics."""
        summ = self.summary(n_resamples)
        pf = self.per_fold()
        names = self.systems
        w = max(16, *(len(n) for n in names)) + 2

        def row(label: str, cells) -> str:
            return f"{label:<16}" + "".join(f"{c:>{w}}" for c in cells)

        lines = [f"{self.metric} on held-out topics ({len(self.folds)} folds, seed {self.seed}, "
                 f"{len(self.per_topic)} topics)", row("", names)]
        for fold, r in pf.iterrows():
            lines.append(row(f"fold {fold} (n={int(r['n'])})", [f"{r[n]:.4f}" for n in names]))
        lines.append(row("mean", [f"{summ.loc[n, 'mean']:.4f}" for n in names]))
        lines.append(row("  95% interval", [f"[{summ.loc[n, 'low']:.3f}, {summ.loc[n, 'high']:.3f}]" for n in names]))
        lines.append(row("learned − it", ["—" if n == LEARNED else f"{summ.loc[n, 'diff']:+.4f}" for n in names]))
        lines.append(row("  95% interval", ["" if n == LEARNED else
                                            f"[{summ.loc[n, 'diff_low']:+.3f}, {summ.loc[n, 'diff_high']:+.3f}]"
                                            for n in names]))
        return "\n".join(lines)


@dataclass
class LearnedFusion:
    """A fusion chosen on ground truth, with how it was chosen and (when run) its cross-validation."""

    fusion: Fusion
    metric: str
    scheme: str
    fitted_topics: list[str]
    train_score: float
    cv: FusionCV | None = None
    info: dict[str, Any] = field(default_factory=dict)

    def apply(self, runs: Sequence[Run] | Mapping[str, Run], run_id: str | None = None,
              features: TaskFeatures | Mapping[str, Mapping[str, float]] | None = None) -> Run:
        """Fuse ``runs`` (matched by run id) on every topic they hold, new topics included; a fusion gated on a
        task feature needs ``features`` (see :meth:`Fusion.apply`)."""
        return self.fusion.apply(runs, run_id or "fused-learned", features)

    def save(self, path: str | Path) -> None:
        save_fusion(self, path)

    @classmethod
    def load(cls, path: str | Path) -> LearnedFusion:
        return cls(**read_fusion(path))


def load_fusion(path: str | Path) -> LearnedFusion:
    """Read and verify a saved fusion; every problem is an :class:`InputError` naming the file and field."""
    return LearnedFusion.load(path)


# ------------------------------------------------------------------------------------------ optimise
def optimize_fusion(runs: Sequence[Run] | Mapping[str, Run], truth: GroundTruth, metric: str = "ndcg@5",
                    scheme: GradingScheme | str = GradingScheme.NTCIR, folds: int | None = 5, seed: int = 0,
                    methods: Sequence[FusionMethod | str] | None = None, norms: Sequence[Norm | str] | None = None,
                    step: float = 0.1, rrf_ks: Sequence[float] = (DEFAULT_RRF_K,), max_weights: int = 1000,
                    selection: str = "vs-rrf", progress: bool = False,
                    features: TaskFeatures | Mapping[str, Mapping[str, float]] | None = None, per_task: bool = True,
                    gammas: Sequence[float] = GAMMAS) -> LearnedFusion:
    """Choose a fusion of ``runs`` on the topics that have ground truth (see the module docstring).

    ``selection``: ``vs-rrf`` (default: plain RRF unless a cross-validated choice beats it, see
    :func:`_choose_vs_rrf`), ``1se`` or ``best`` (see :func:`choose`). ``folds=None`` skips the
    cross-validation (the result has ``cv=None``). ``per_task`` (default) adds to the grid fusions whose
    weights differ per task (:mod:`modelseek.retrieval.fusion.gates`): gated by each run's spread and by each of the
    task
    ``features`` (``{feature: {topic: value}}``, e.g. from
    :func:`~modelseek.retrieval.fusion.features.read_task_features`),
    with exponents ``gammas``; they compete under the same selection rule. ``methods`` (default: every usable
    one) are searched; a plugin method that cannot be used (it fails to import, breaks the contract or clashes with
    a built-in) is left out of the default search and named, with why, in ``info["left_out"]``.
    """
    rs = sorted(_as_runs(runs), key=lambda r: r.run_id)  # canonical orders: the files' order changes nothing
    ids = [r.run_id for r in rs]
    Fusion.build(ids, builtin("rrf"))  # validates the run ids
    s = GradingScheme.parse(scheme)
    k = _ndcg_cut(metric)
    if selection not in SELECTIONS:
        raise InputError(f"unknown selection {selection!r}; valid values: {', '.join(SELECTIONS)}", field="selection")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(f"seed must be an integer >= 0, got {seed!r}", field="seed")
    topics, all_topics = _judged_topics(rs, truth)
    if folds is not None and (isinstance(folds, bool) or not 2 <= int(folds) <= len(topics)):
        raise InputError(f"folds must be between 2 and the number of topics with ground truth ({len(topics)}), "
                         f"got {folds}", field="folds")
    feats = TaskFeatures.of(features)
    block = make_block(rs, topics, feats)
    judged = _Judged.build(block, truth, s, k)
    gates = candidate_gates(block, feats.names, gammas) if per_task else []
    grid = candidate_fusions(ids, methods, norms, step, rrf_ks, max_weights, seed, gates)
    if not methods:
        grid = _without_failing_plugins(grid, block)
    M = score_grid(block, judged, grid, progress)
    mean_all = M.mean(axis=1)
    best = choose(M, list(range(len(topics))), grid, selection)
    info = {"grid_size": len(grid), "step": step, "selection": selection, "rrf_ks": [float(x) for x in rrf_ks],
            "methods": sorted({g.method.value for g in grid}), "norms": sorted({g.norm.value for g in grid}),
            "runs": ids, "n_topics_with_truth": len(topics), "n_topics": len(all_topics),
            "per_task": bool(per_task), "task_features": feats.names, "gammas": [float(g) for g in gammas]}
    left = {} if methods else usable_methods()[1]
    if left:  # plugin methods that could not be searched: named, each with why (the CLI prints it as a note)
        info["left_out"] = left
    result = LearnedFusion(grid[best], metric, s.value, list(topics), float(mean_all[best]), None, info)
    if folds is None:
        return result
    result.cv = _cross_validate_choice(rs, truth, s, k, topics, block, grid, M, folds, seed, selection)
    result.info["folds"] = len(result.cv.folds)
    result.info["seed"] = seed
    return result


def _judged_topics(rs: list[Run], truth: GroundTruth) -> tuple[list[str], list[str]]:
    """(the runs' topics that have ground truth, every topic of the runs), in natural order; an
    :class:`InputError` when no topic has ground truth or no docID is a model of the ground truth."""
    truth_topics = set(truth.task_ids)
    all_topics = sorted(dict.fromkeys(t for r in rs for t in r), key=natural_key)
    topics = [t for t in all_topics if t in truth_topics]
    if not topics:
        raise InputError(f"no topic of the runs has ground truth (runs: {', '.join(all_topics[:5])}"
                         f"{' ...' if len(all_topics) > 5 else ''}; ground truth: {', '.join(truth.task_ids[:5])}"
                         f"{' ...' if len(truth_topics) > 5 else ''})", field="topicID")
    models = set(truth.model_ids)
    if not any(e.doc in models for r in rs for t in topics for e in r[t] if t in r):
        raise InputError(f"no docID of the runs is a model id of the ground truth (e.g. "
                         f"{next(e.doc for r in rs for t in r for e in r[t])!r} vs "
                         f"{', '.join(truth.model_ids[:3])})", field="docID")
    return topics, all_topics


def _cross_validate_choice(rs: list[Run], truth: GroundTruth, s: GradingScheme, k: int, topics: list[str], block: Block,
                    grid: list[Fusion], M: np.ndarray, folds: int, seed: int, selection: str) -> FusionCV:
    """Task-level k-fold cross-validation of the choice: each fold's fusion is chosen on the other folds'
    topics and scored on its held-out topics, next to each input run and plain RRF on the same topics."""
    import pandas as pd  # lazy: pandas

    from ..data.folds import make_folds  # lazy: start-up

    tiers = [truth.criticality(t).value for t in topics]
    held_lists = [[str(t) for t in held] for held in make_folds(topics, tiers, folds, seed)]
    index = {t: i for i, t in enumerate(topics)}
    fold_results: list[FoldResult] = []
    fold_of: dict[str, int] = {}
    cv_scores: dict[str, dict[str, float]] = {}
    for f, held in enumerate(held_lists, start=1):
        held_set = set(held)
        train = [t for t in topics if t not in held_set]
        cols = [index[t] for t in train]
        c = choose(M, cols, grid, selection)
        spec = grid[c]
        fold_results.append(FoldResult(f, tuple(held), tuple(train), spec, float(M[c, cols].mean())))
        fused = spec.fused_scores(block)
        part = block_to_run(block, fused, "learned-cv", topics=held)
        for t in held:
            fold_of[t] = f
            if t in part:
                cv_scores[t] = part.scores(t)
    cv_run = Run({t: Run.from_scores({t: cv_scores[t]})[t] for t in topics if t in cv_scores}, "learned-cv")
    metric_name = f"ndcg@{k}"
    scores = {LEARNED: evaluate(cv_run, truth, [metric_name], s, topics=topics).per_topic[metric_name]}
    for r in rs:
        scores[r.run_id] = evaluate(r, truth, [metric_name], s, topics=topics).per_topic[metric_name]
    plain = fuse(rs, builtin("rrf"))  # the built-in, also where a plugin's entry point clashes with its name
    scores[PLAIN_RRF] = evaluate(plain, truth, [metric_name], s, topics=topics).per_topic[metric_name]
    per_topic = pd.DataFrame(scores)
    per_topic.insert(0, "tier", tiers)
    per_topic.insert(0, "fold", [fold_of[t] for t in topics])
    per_topic.index.name = "topic"
    return FusionCV(metric_name, fold_results, per_topic, [LEARNED, *[r.run_id for r in rs], PLAIN_RRF], seed, cv_run)
