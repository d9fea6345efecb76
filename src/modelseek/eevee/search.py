"""The evolutionary search over benchmark subsets, the k-sweep, leave-one-out importance and budget tiers.

Search (GATE's EEVEE): when the C(B, k) subsets of size k are no more than ``population``, every one is scored
and the search ends there (exhaustive: the answer is exact, and said so); else ``population`` random subsets,
keep the best ``keep``; each generation keeps every parent and adds ``children`` children per parent, each made by
swapping one benchmark of the parent for one outside it; duplicates are dropped and the best ``keep`` of
parents + children survive. Every subset a generation has not scored yet is trained in one batched call of
the evaluator (all candidates x all splits); a subset's score depends only on the subset and the seeds, so
subsets seen in earlier generations are not trained again. Ties in score are broken by the subset's names.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from numbers import Integral

import numpy as np

from ..core.config import Config, Interval
from ..core.errors import InputError
from ..core.io import atomic_write_text, read_json
from ..core.progress import progress_bar
from .config import MetaConfig
from .evaluators import BatchedEvaluator, Evaluator
from .honest import Honest, NestedConfig, NestedRunner, within_noise
from .score import Score, Subset, normalise_subset
from .table import Table

log = logging.getLogger(__name__)


#: bounds of the search's sizes: each is a list or a loop of that length (larger values are typos)
MAX_SUBSETS = 10_000_000
MAX_GENERATIONS = 1_000_000


@dataclass(frozen=True)
class SearchConfig(Config):
    population: int = 1000   # random initial subsets
    keep: int = 50           # parents kept per generation
    children: int = 10       # children per parent
    generations: int = 10
    seed: int = 0            # subset sampling and mutation

    _constraints = {"population": [Interval(Integral, 1, MAX_SUBSETS, closed="both")],
                    "keep": [Interval(Integral, 1, MAX_SUBSETS, closed="both")],
                    "children": [Interval(Integral, 0, MAX_SUBSETS, closed="both")],
                    "generations": [Interval(Integral, 0, MAX_GENERATIONS, closed="both")],
                    "seed": [Interval(Integral, 0, 2**32 - 1, closed="both")]}


@dataclass
class SearchResult:
    k: int
    top: list[Score]
    n_evaluated: int          # distinct subsets scored during this search (cache hits included)
    n_trained: int            # subsets whose meta-models were trained (cache misses)
    wall_s: float
    best_per_generation: list[float] = field(default_factory=list)
    exhaustive: bool = False  # every subset of size k was scored (the space fit in the population)
    n_subsets: int = 0        # C(B, k): the subsets of size k that exist (before any budget)
    honest: Honest | None = None   # the nested estimate and the baselines (``search(..., nested=...)``)
    honest_note: str = ""          # why there is none, when one was asked for

    @property
    def best(self) -> Score:
        return self.top[0]

    @property
    def loss(self) -> float:
        """The figure to quote: the honest (nested) loss when there is one, else the in-sample best."""
        return self.honest.loss if self.honest is not None else self.best.mean

    def to_dict(self) -> dict:
        return {"k": self.k, "top": [s.to_dict() for s in self.top], "n_evaluated": self.n_evaluated,
                "n_trained": self.n_trained, "wall_s": self.wall_s,
                "best_per_generation": self.best_per_generation, "exhaustive": self.exhaustive,
                "n_subsets": self.n_subsets,
                "nested": self.honest.to_full_dict() if self.honest is not None else None,
                "honest_note": self.honest_note}

    @classmethod
    def from_dict(cls, d: dict) -> SearchResult:
        top = [Score(tuple(t["benchmarks"]), t["score"], t["std"], t["min"], t["max"], ()) for t in d["top"]]
        return cls(int(d["k"]), top, int(d["n_evaluated"]), int(d["n_trained"]), float(d["wall_s"]),
                   list(d.get("best_per_generation", [])), bool(d.get("exhaustive", False)),
                   int(d.get("n_subsets", 0)),
                   Honest.from_full_dict(d["nested"]) if d.get("nested") else None, str(d.get("honest_note", "")))


def _rank(scores: Iterable[Score]) -> list[Score]:
    return sorted(scores, key=lambda s: (s.mean, s.subset))


def _evaluator(table_or_evaluator: Table | Evaluator, cfg: SearchConfig, meta: MetaConfig | None,
               nested: NestedConfig | None, order) -> tuple[Evaluator, object]:
    """The evaluator to search with (made from a table with ``meta``, or by default ``MetaConfig(seed=cfg.seed)``:
    the search's seed seeds the meta-models too, as ``--seed`` does), and the models' order for
    ``--split-by COLUMN`` (the column taken out of a table given whole)."""
    if isinstance(table_or_evaluator, Evaluator):
        return table_or_evaluator, order
    table = table_or_evaluator
    if nested is not None and nested.by_column and order is None and nested.outer_splits > 0:
        table, values = table.without_column(nested.split_by)
        order = dict(zip(table.models, values))
    elif order is not None and not isinstance(order, Mapping):
        order = dict(zip(table.models, order))
    return BatchedEvaluator(table, meta or MetaConfig(seed=cfg.seed)), order


def search(table_or_evaluator: Table | Evaluator, k: int, config: SearchConfig | None = None, *,
           meta: MetaConfig | None = None, budget: float | None = None, progress: bool = False,
           top: int | None = None, nested: NestedConfig | None = None, order=None) -> SearchResult:
    """Find the k benchmarks whose metrics best predict every metric of unseen models.

    ``table_or_evaluator``: a :class:`Table` (a :class:`BatchedEvaluator` is made with ``meta``, by default
    ``MetaConfig(seed=config.seed)``) or an evaluator to reuse (its cache carries over, e.g. across the k of a
    sweep). ``budget``: only subsets whose total cost (``table.costs``) is at most ``budget`` are considered.
    Returns the best ``top`` (default ``config.keep``) subsets, best first.

    ``nested``: also the honest estimate (:mod:`modelseek.eevee.honest`): the search and the four baselines
    rerun on the training models of each outer split and scored on its held-out models (``result.honest``;
    ``eevee search`` always asks for it, with ``NestedConfig()``'s defaults). ``order``: the models' values of
    the ``split_by`` column when it was taken out of the table already (``Table.without_column``).
    """
    cfg = config or SearchConfig()
    ev, order = _evaluator(table_or_evaluator, cfg, meta, nested, order)
    res = _search(ev, k, cfg, budget=budget, progress=progress, top=top)
    if nested is not None:
        runner = NestedRunner(ev.table, ev.config, nested, cfg.seed, order=order, search=search,
                              feasibility=_feasibility)
        try:
            res.honest = runner.estimate(k, cfg, budget=budget, full=ev, full_search=res, progress=progress)
        finally:
            runner.close()
        res.honest_note = runner.note
    return res


def _search(ev: Evaluator, k: int, cfg: SearchConfig, *, budget: float | None, progress: bool,
            top: int | None) -> SearchResult:
    """The in-sample search (see :func:`search`)."""
    table = ev.table
    names = table.benchmark_names
    B = len(names)
    if not isinstance(k, (int, np.integer)) or k < 1:
        raise InputError(f"k must be a positive integer, got {k!r}", field="k")
    if k > B:
        raise InputError(f"k = {k} is larger than the number of benchmarks ({B})", field="k")
    feasible = _feasibility(table, budget)
    rng = np.random.default_rng(cfg.seed)
    t0 = time.perf_counter()
    trained0 = ev.n_trained
    n_top = cfg.keep if top is None else top

    # initial population
    total = math.comb(B, k)
    if total <= cfg.population:  # the whole space: scored once, exactly, and no generation can change it
        pop = [tuple(names[i] for i in c) for c in combinations(range(B), k)]
        pop = [normalise_subset(s) for s in pop if feasible(s)]
    else:
        seen: dict[Subset, None] = {}
        attempts = 0
        while len(seen) < cfg.population and attempts < 50 * cfg.population:
            attempts += 1
            s = normalise_subset(names[i] for i in rng.choice(B, size=k, replace=False))
            if s not in seen and feasible(s):
                seen[s] = None
        pop = list(seen)
    if not pop:
        raise InputError(f"no subset of {k} benchmarks fits the budget {budget}", field="budget")
    scored = _rank(ev.scores(pop))
    if total <= cfg.population:
        return SearchResult(k, scored[:n_top], len(scored), ev.n_trained - trained0, time.perf_counter() - t0,
                            [scored[0].mean], exhaustive=True, n_subsets=total)
    parents = scored[: cfg.keep]
    history = [parents[0].mean]
    evaluated: set[Subset] = {s.subset for s in scored}
    # A parent has k (B - k) one-swap neighbours; 64 times as many random draws find every one of them but with
    # a negligible probability, so more draws than that (a huge --children) can only repeat them.
    draws = min(cfg.children, 64 * k * (B - k))
    gens = range(cfg.generations)
    for g in progress_bar(gens, desc=f"eevee k={k}", total=cfg.generations, disable=not progress):
        cand: dict[Subset, None] = {p.subset: None for p in parents}
        for p in parents:
            inside = list(p.subset)
            inside_set = set(inside)
            outside = [b for b in names if b not in inside_set]
            if not outside:
                continue
            for _c in range(draws):
                drop = inside[rng.integers(len(inside))]
                add = outside[rng.integers(len(outside))]
                child = normalise_subset([b for b in inside if b != drop] + [add])
                if child not in cand and feasible(child):
                    cand[child] = None
        subs = list(cand)
        before = [p.subset for p in parents]
        parents = _rank(ev.scores(subs))[: cfg.keep]
        evaluated.update(subs)
        history.append(parents[0].mean)
        if [p.subset for p in parents] == before and _converged(before, names, evaluated, feasible):
            # every subset a later generation could draw is scored, and none beat these parents (a subset left
            # out once never re-enters: the parents only improve): the remaining generations cannot change them
            history.extend([parents[0].mean] * (cfg.generations - 1 - g))
            break
    return SearchResult(k, parents[:n_top], len(evaluated), ev.n_trained - trained0, time.perf_counter() - t0, history,
                        n_subsets=total)


def _converged(parents: list[Subset], names: Sequence[str], scored: set[Subset], feasible) -> bool:
    """Whether every feasible one-swap neighbour of every parent has been scored."""
    for p in parents:
        inside = set(p)
        for drop in p:
            rest = [b for b in p if b != drop]
            for add in names:
                if add not in inside:
                    child = normalise_subset([*rest, add])
                    if child not in scored and feasible(child):
                        return False
    return True


def _feasibility(table: Table, budget: float | None):
    if budget is None:
        return lambda s: True
    missing = [b for b in table.benchmark_names if b not in table.costs]
    if missing:
        raise InputError(f"a budget needs a cost for every benchmark; missing: {', '.join(missing[:5])}",
                         field="cost")
    costs = dict(table.costs)
    return lambda s: sum(costs[b] for b in s) <= budget + 1e-9


# ------------------------------------------------------------------------------------------------ sweep
#: the largest k :func:`parse_ks` reads without a table to bound it (a table bounds k by its benchmarks)
MAX_K = 10_000


def parse_ks(text: str, n_benchmarks: int | None = None) -> list[int]:
    """``"1-25"``, ``"1,2,8"`` or ``"3"`` -> sorted list of k. Each value is checked against the benchmarks
    (or :data:`MAX_K`) before a range is expanded: ``1-<30 digits>`` is refused, never made."""
    shown = repr(text) if len(str(text)) <= 60 else repr(str(text)[:57]) + "..."
    most = MAX_K if n_benchmarks is None else n_benchmarks
    ks: set[int] = set()
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        bounds = part.split("-", 1) if "-" in part else [part, part]
        if not all(b.strip().isascii() and b.strip().isdigit() for b in bounds):
            raise InputError(f"cannot read k values {shown}; use e.g. 1-25 or 1,2,8", field="k")
        lo, hi = (_bounded_k(b.strip(), most, n_benchmarks) for b in bounds)
        if lo > hi:
            raise InputError(f"k range {part!r} is empty (write the smaller k first)", field="k")
        ks.update(range(lo, hi + 1))
    if not ks or min(ks) < 1:
        raise InputError(f"k values must be positive integers, got {shown}", field="k")
    return sorted(ks)


def _bounded_k(digits: str, most: int, n_benchmarks: int | None) -> int:
    """The k of ``digits`` if at most ``most`` (compared as text first: int() refuses over 4,300 digits)."""
    bare = digits.lstrip("0") or "0"
    if len(bare) > len(str(most)) or int(bare) > most:
        shown = bare if len(bare) <= 20 else f"{bare[:12]}... ({len(bare):,} digits)"
        if n_benchmarks is not None:
            raise InputError(f"k = {shown} is larger than the number of benchmarks ({n_benchmarks})", field="k")
        raise InputError(f"k = {shown} is over the {MAX_K:,} k values a sweep considers", field="k")
    return int(bare)


def _fingerprint(table: Table, meta: MetaConfig, cfg: SearchConfig, budget: float | None,
                 nested: NestedConfig | None = None, order=None) -> str:
    h = hashlib.sha256()
    h.update(np.ascontiguousarray(np.nan_to_num(table.values, nan=-1e300)).tobytes())
    extra = [] if nested is None else [nested.__dict__, sorted((order or {}).items())]
    h.update(json.dumps([table.models, table.columns, table.groups, sorted(table.group_weights.items()),
                         table.lower_is_better, meta.to_dict(), cfg.__dict__, budget, *extra],
                        default=str).encode())
    return h.hexdigest()[:16]


def sweep(table: Table, ks: Sequence[int], config: SearchConfig | None = None, *, meta: MetaConfig | None = None,
          out_dir: str | Path | None = None, budget: float | None = None, progress: bool = False,
          evaluator: Evaluator | None = None, nested: NestedConfig | None = None, order=None
          ) -> dict[int, SearchResult]:
    """Run :func:`search` for every k, sharing one evaluator (and its score cache). With ``out_dir``, each
    finished k is written to ``k<k>.json`` (atomically) and a rerun with the same table and settings resumes
    from the files; files of other settings are recomputed. ``nested``: each k's honest estimate too (one
    set of outer splits and inner score caches for every k); :func:`choose_k` then picks k by it."""
    cfg = config or SearchConfig()
    ev, order = _evaluator(evaluator or table, cfg, meta, nested, order)
    fp = _fingerprint(ev.table, ev.config, cfg, budget, nested, order)  # the canonical table: any order resumes
    runner = NestedRunner(ev.table, ev.config, nested, cfg.seed, order=order, search=search,
                          feasibility=_feasibility) if nested is not None else None
    try:
        return _sweep(ev, ks, cfg, out_dir, budget, progress, fp, runner)
    finally:
        if runner is not None:
            runner.close()


def _sweep(ev: Evaluator, ks, cfg: SearchConfig, out_dir, budget, progress: bool, fp: str,
           runner: NestedRunner | None) -> dict[int, SearchResult]:
    results: dict[int, SearchResult] = {}
    for k in progress_bar(list(ks), desc="eevee sweep", disable=not progress):
        path = Path(out_dir) / f"k{k}.json" if out_dir is not None else None
        if path is not None and os.path.lexists(path):
            try:  # the checked reader: a FIFO or device is refused (never waited on), damage is a located error
                data = read_json(path, "sweep result")
                if data.get("fingerprint") == fp:
                    results[k] = SearchResult.from_dict(data["result"])
                    continue
            except (ValueError, KeyError, TypeError, AttributeError) as exc:  # InputError is a ValueError
                log.warning("%s: unreadable (%s); recomputing k=%d", path, exc, k)
        res = _search(ev, k, cfg, budget=budget, progress=False, top=None)
        if runner is not None:
            res.honest = runner.estimate(k, cfg, budget=budget, full=ev, full_search=res)
            res.honest_note = runner.note
        results[k] = res
        if path is not None:
            atomic_write_text(path, json.dumps({"fingerprint": fp, "result": res.to_dict()}, indent=1))
    return results


def choose_k(results: Mapping[int, SearchResult], confidence: float | None = None) -> int:
    """The k to use: the smallest k whose honest loss is not worse than the best k's beyond the noise
    (:func:`~modelseek.eevee.honest.within_noise`: worse by no more than the best k's standard error over the
    shared outer splits, and the paired interval of their differences reaching zero); without honest estimates,
    the k of the lowest in-sample loss. Ties go to the smaller k."""
    if not results:
        raise InputError("no k to choose from", field="k")
    ks = sorted(results)
    if any(results[k].honest is None for k in ks):
        return min(ks, key=lambda k: (results[k].best.mean, k))
    best = min(ks, key=lambda k: (results[k].loss, k))
    conf = confidence or results[best].honest.confidence  # type: ignore[union-attr]
    ref = results[best].honest.search.per_split  # type: ignore[union-attr]
    for k in ks:
        if k == best or within_noise(results[k].honest.search.per_split, ref, conf):  # type: ignore[union-attr]
            return k
    return best


# ------------------------------------------------------------------------------------------------ importance
def importance(table_or_evaluator: Table | Evaluator, subset: Iterable[str], *, meta: MetaConfig | None = None
               ) -> list[tuple[str, float]]:
    """Leave-one-out importance: for each benchmark b of ``subset``, score(subset - b) - score(subset) (how
    much the loss rises without b), largest first. A one-benchmark subset is compared with no input at all
    (the meta-model then learns the training means)."""
    ev = table_or_evaluator if isinstance(table_or_evaluator, Evaluator) else \
        BatchedEvaluator(table_or_evaluator, meta)
    sub = normalise_subset(subset)
    if not sub:
        raise InputError("importance needs a non-empty subset", field="benchmarks")
    others = [tuple(x for x in sub if x != b) for b in sub]
    scores = ev.scores([sub, *others])
    base = scores[0].mean
    out = [(b, s.mean - base) for b, s in zip(sub, scores[1:])]
    return sorted(out, key=lambda t: (-t[1], t[0]))


# ------------------------------------------------------------------------------------------------ tiers
@dataclass(frozen=True)
class Tier:
    budget: float
    score: Score | None
    cost: float
    k: int = 0                      # the size chosen for the budget
    honest: Honest | None = None    # its nested estimate (tiers(..., nested=...)), by which k was chosen

    def to_dict(self) -> dict:
        return {"budget": self.budget, "cost": self.cost, "k": self.k,
                **(self.score.to_dict() if self.score else {"benchmarks": [], "score": None}),
                **({"in_sample": self.score.mean if self.score else None,
                    "honest": self.honest.to_dict() if self.honest else None} if self.honest else {})}


def tiers(table: Table, budgets: Sequence[float], config: SearchConfig | None = None, *,
          meta: MetaConfig | None = None, ks: Sequence[int] | None = None, progress: bool = False,
          evaluator: Evaluator | None = None, nested: NestedConfig | None = None, order=None) -> list[Tier]:
    """For each budget, the best subset (over every k in ``ks``, default all that can fit) whose total cost
    fits it: a budget-constrained search per k, sharing one score cache. With ``nested``, every k's search is
    estimated honestly and k is chosen by :func:`choose_k` (the smallest k not worse than the best beyond the
    noise); without, the lowest in-sample loss over every k."""
    cfg = config or SearchConfig()
    ev, order = _evaluator(evaluator or table, cfg, meta, nested, order)
    table = ev.table
    _feasibility(table, 0.0)  # every benchmark needs a cost
    runner = NestedRunner(table, ev.config, nested, cfg.seed, order=order, search=search,
                          feasibility=_feasibility) if nested is not None else None
    costs = sorted(table.costs[b] for b in table.benchmark_names)
    out = []
    try:
        for budget in budgets:
            fit = int(np.searchsorted(np.cumsum(costs), budget + 1e-9, side="right"))
            kk = [k for k in (ks or range(1, len(costs) + 1)) if 1 <= k <= fit]
            results: dict[int, SearchResult] = {}
            for k in progress_bar(kk, desc=f"tier {budget:g}", disable=not progress):
                res = _search(ev, k, cfg, budget=budget, progress=False, top=1)
                if runner is not None:
                    res.honest = runner.estimate(k, cfg, budget=budget)
                results[k] = res
            if not results:
                out.append(Tier(float(budget), None, 0.0))
                continue
            if runner is not None and runner.splits:
                k_best = choose_k(results)
            else:  # the lowest in-sample loss over every k (ties: the subset's names)
                k_best = min(results, key=lambda k: (results[k].best.mean, results[k].best.subset))
            best = results[k_best].best
            out.append(Tier(float(budget), best, table.cost(best.subset), k_best, results[k_best].honest))
    finally:
        if runner is not None:
            runner.close()
    return out
