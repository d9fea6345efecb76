"""The honest (nested) estimate of a subset search, and the cheap baselines scored the same way.

The score of the best subset a search found is chosen and scored on the same cross-validation splits: it is
the minimum of many noisy estimates, optimistic for the next model (the winner's curse). The nested estimate
scores the *procedure* instead. The models are split into outer folds; for each outer split the search runs
on its training models only (its own inner cross-validation, a table that never saw the test models), and
the subset it returns is scored on the outer split's test models: a meta-model trained on all the outer
training models predicts every metric of the held-out ones, in the same loss and unit as the in-sample score
(each metric's spread over the whole table). The mean over outer splits is the honest figure.

Beside the search, four baselines choose their subset on the same outer training models and are scored on
the same held-out models (the issue's literature: Zhang, Dorner & Hardt 2025, arXiv 2506.07673; BenTo,
arXiv 2410.13804):

* ``median_random``: a random k-subset, no choice at all — per outer split, the median loss of
  ``random_subsets`` random subsets;
* ``best_random``: the best (by inner cross-validation) of as many random subsets as the search scored on
  that split — the same compute as the search;
* ``greedy``: forward selection, adding the benchmark that lowers the inner cross-validated loss most;
* ``facility_location``: BenTo's facility location on the absolute correlation between benchmarks over the
  outer training models (no meta-model fitted to choose).

The paired differences over outer splits (search minus baseline) give a t interval. The recommendation
(:meth:`Honest.recommendation`) weighs the methods against the best one (the lowest honest loss) and against
**the training means** (every metric of a held-out model predicted by the training models' means, no benchmark
measured): it is the cheapest method (cost order: a random subset, facility location, greedy, best random,
search) that

* is worse than the best by no more than **the best's own uncertainty** — its standard error over the outer
  splits (standard deviation of its per-split losses / sqrt(splits)) — and whose paired interval against the
  best reaches zero (not shown worse), and
* beats the training means beyond the noise (its paired interval against them lies below zero);

and ``"none"`` — no subset is worth measuring — when no method does both. One outlying split can widen a paired
interval until it reaches zero, but not move a method's mean within the best's standard error: a method far
worse on average is never recommended.

The median random baseline draws ``random_subsets`` distinct random k-subsets per outer split (1,000 by
default: each draw is one meta-model fit on the outer split, about a sixtieth of the search's fits) and keeps
doubling them, up to eight times as many, until the median's interval (distribution-free, from the order
statistics) is within ``random_tolerance`` of the median; the draws, that interval and the quartiles of the
random subsets' losses are reported.

Outer splits (``split_by``): ``random`` is K-fold over models (shuffled by the search seed; every model is
held out once); ``strongest`` orders the models by strength (each model's weighted mean z-score over every
metric) and holds out, per split, the next ``test_models`` stronger models, trained on all the weaker ones
(an expanding window: every held-out model is stronger than every training model, the extrapolation case);
a column of the table does the same with the models ordered by it (the newest by a release date), the
column taken out of the table (see :meth:`~modelseek.eevee.table.Table.without_column`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import Any

import numpy as np

from ..core.config import Config, Interval
from ..core.errors import InputError
from ..core.progress import progress_bar
from ..core.stats.seeding import derive_rng
from .config import MetaConfig
from .data import column_scale, min_models, rms
from .evaluators import BatchedEvaluator, Evaluator
from .score import Subset, normalise_subset
from .table import Table

#: the methods in order of cost (what choosing a subset costs), the cheapest first; "search" is the search itself
METHODS = ("median_random", "facility_location", "greedy", "best_random", "search")
BASELINES = METHODS[:-1]
#: what the recommendation says when no subset beats the training means beyond the noise
NONE = "none"
DESCRIPTIONS = {
    "search": "the evolutionary search (EEVEE)",
    "median_random": "a random k-subset (the median over random draws)",
    "best_random": "the best of as many random k-subsets as the search scored (equal compute)",
    "greedy": "greedy forward selection on the inner cross-validated loss",
    "facility_location": "facility location on |correlation| between benchmarks (BenTo)",
    NONE: "no subset is worth measuring: predict every metric of a new model by the training models' means",
}
RULE = ("the cheapest method whose honest loss is worse than the best method's by no more than the best's standard "
        "error over the outer splits (and whose paired interval against the best reaches zero), among those whose "
        "paired interval against the training means lies below zero; none when no method does both")
MARGIN = "the best method's standard error over the outer splits (std of its per-split losses / sqrt(splits))"


@dataclass(frozen=True)
class NestedConfig(Config):
    """The nested estimate's settings. The defaults suit tables of about 16 models: four outer folds of four
    held-out models (twelve training models, six per side in the inner protocol's splits)."""

    outer_splits: int = 4       # 0 = no nested estimate
    split_by: str = "random"    # random | strongest | a column of the table (ordered: the largest held out)
    test_models: int = 0        # held-out models per outer split for strongest/column (0 = max(1, n // 8));
                                # random is K-fold: n / outer_splits each
    random_subsets: int = 1000  # random k-subsets per outer split behind the median random baseline (at least;
                                # doubled up to 8x until the median's interval is within random_tolerance)
    random_tolerance: float = 0.02  # relative half-width of the median's interval that stops the doubling
    confidence: float = 0.9     # of the paired intervals over outer splits and of the median's interval

    _constraints = {"outer_splits": [Interval(Integral, 0, 1000, closed="both")],
                    "test_models": [Interval(Integral, 0, None, closed="left")],
                    "random_subsets": [Interval(Integral, 1, 100_000, closed="both")],
                    "random_tolerance": [Interval(Real, 0, None, closed="left")],
                    "confidence": [Interval(Real, 0, 1, closed="neither")]}

    def _check(self) -> None:
        if not str(self.split_by).strip():
            raise InputError("split_by must be random, strongest or a column of the table", field="split_by")
        if self.split_by == "random" and self.outer_splits == 1:
            raise InputError("random outer splits are K-fold: give 2 or more (or 0 for none)", field="outer_splits")

    @property
    def by_column(self) -> bool:
        return self.split_by not in ("random", "strongest")


# ------------------------------------------------------------------------------------------------ splits
def zscores(table: Table) -> np.ndarray:
    """Each metric oriented higher-is-better and z-scored over all the models (NaN where missing; a constant
    column is 0); each column divided by a power of two first (:func:`~modelseek.eevee.data.column_scale`), so
    huge values neither overflow nor change a z-score."""
    x = table.oriented()
    x = x / column_scale(x)
    cnt = np.maximum((~np.isnan(x)).sum(0), 1)
    mu = np.nansum(x, 0) / cnt
    sd = rms(x - mu, cnt)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        return (x - mu) / np.where(sd > 0, sd, np.inf)


def strength(table: Table) -> np.ndarray:
    """Each model's strength: the mean of its z-scores (:func:`zscores`), weighted like the loss; missing
    cells left out."""
    z = zscores(table)
    w = table.column_weights()[None, :] * ~np.isnan(z)
    return np.nansum(np.nan_to_num(z) * w, 1) / np.maximum(w.sum(1), 1e-300)


def outer_splits(table: Table, nested: NestedConfig, seed: int, order: np.ndarray | None = None,
                 meta: MetaConfig | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
    """The outer (training rows, test rows) of ``table`` (rows as given). Splits whose training part is too
    small for the inner protocol (``meta``'s, default the default protocol's) are left out; an empty list means no
    nested estimate is possible."""
    n = table.n_models
    J = nested.outer_splits
    if J < 1:
        return []
    if nested.split_by == "random":
        from sklearn.model_selection import KFold  # lazy: sklearn

        if n < 2 or J < 2:
            return []
        folds = KFold(n_splits=min(J, n), shuffle=True, random_state=seed).split(np.zeros((n, 1)))
        splits = [(np.sort(tr), np.sort(te)) for tr, te in folds]
    else:
        key = strength(table) if nested.split_by == "strongest" else np.asarray(order, dtype=float)
        if key is None or len(key) != n:
            raise InputError(f"`split_by` {nested.split_by!r}: no ordering of the models", field="split_by")
        ranked = sorted(range(n), key=lambda i: (key[i], table.models[i]))   # weakest (oldest) first
        m = nested.test_models or max(1, n // 8)
        splits = []
        for j in range(J):
            hi = n - (J - 1 - j) * m
            lo = hi - m
            if lo < 1:
                continue
            splits.append((np.sort(np.array(ranked[:lo])), np.sort(np.array(ranked[lo:hi]))))
    fewest = min_models(meta if meta is not None else MetaConfig())
    return [(tr, te) for tr, te in splits if len(tr) >= fewest and len(te) >= 1]


# ------------------------------------------------------------------------------------------------ selectors
def _random_subsets(names: Sequence[str], k: int, n: int, rng: np.random.Generator, feasible,
                    seen: dict[Subset, None] | None = None) -> list[Subset]:
    """``n`` distinct feasible random k-subsets (every subset when fewer exist); ``seen``: subsets already drawn,
    extended in place (the result then holds them first, the new ones after)."""
    B = len(names)
    if math.comb(B, k) <= n:
        from itertools import combinations

        every = [s for s in (normalise_subset(names[i] for i in c) for c in combinations(range(B), k)) if feasible(s)]
        if seen is None:
            return every
        old = list(seen)
        new = [s for s in every if s not in seen]
        seen.update(dict.fromkeys(new))
        return [*old, *new]
    seen = {} if seen is None else seen
    attempts = 0
    while len(seen) < n and attempts < 50 * n:
        attempts += 1
        s = normalise_subset(names[i] for i in rng.choice(B, size=k, replace=False))
        if feasible(s):
            seen[s] = None
    return list(seen)


def exhausted(names: Sequence[str], k: int, n: int) -> bool:
    """Whether ``n`` draws already take every k-subset (the median is then exact)."""
    return math.comb(len(names), k) <= n


def median_interval(losses: Sequence[float], confidence: float) -> tuple[float, float]:
    """A distribution-free interval of the median of the distribution ``losses`` were drawn from: the order
    statistics whose ranks the binomial(n, 1/2) distribution brackets (exact, no resampling: what a bootstrap of
    the median approximates)."""
    from scipy import stats  # lazy: scipy

    x = np.sort(np.asarray(losses, dtype=float))
    n = len(x)
    lo = max(int(stats.binom.ppf((1 - confidence) / 2, n, 0.5)) - 1, 0)
    return float(x[lo]), float(x[n - 1 - lo])


@dataclass
class RandomDraws:
    """The random k-subsets behind a median-random figure: how many, their median loss, the median's interval
    (:func:`median_interval`; a point when every subset was drawn) and the quartiles of their losses."""

    draws: int
    median: float
    interval: tuple[float, float]
    quartiles: tuple[float, float]
    exact: bool = False
    reference: float | None = None   # the mean over the draws of the training means with the subset measured

    def to_dict(self) -> dict:
        return {"draws": self.draws, "median": self.median, "interval": list(self.interval),
                "quartiles": list(self.quartiles), "exact": self.exact,
                "training_means_given_subset": self.reference}

    @classmethod
    def from_dict(cls, d: Mapping) -> RandomDraws:
        ref = d.get("training_means_given_subset")
        return cls(int(d["draws"]), float(d["median"]), (float(d["interval"][0]), float(d["interval"][1])),
                   (float(d["quartiles"][0]), float(d["quartiles"][1])), bool(d.get("exact", False)),
                   float(ref) if ref is not None else None)


def random_median(loss_of: Callable[[list[Subset]], Sequence[float] | np.ndarray], names: Sequence[str], k: int,
                  nested: NestedConfig, rng: np.random.Generator, feasible,
                  reference_of: Callable[[list[Subset]], Sequence[float] | np.ndarray] | None = None,
                  grow: bool = True) -> RandomDraws:
    """The median loss of random k-subsets: ``nested.random_subsets`` draws, doubled (up to eight times as many)
    while the median's interval is wider than ``nested.random_tolerance`` times the median on either side.
    ``loss_of`` scores a list of subsets (one meta-model fit per subset and split); ``reference_of``, when given,
    their training-means references (no fit), averaged over the draws. ``grow=False``: the first draws only (the
    in-sample figure, scored on every cross-validation split, is shown, not used to recommend)."""
    seen: dict[Subset, None] = {}
    losses: list[float] = []
    n = nested.random_subsets
    while True:
        subs = _random_subsets(names, k, n, rng, feasible, seen)
        losses.extend(float(x) for x in loss_of(subs[len(losses):]))
        if not losses:
            raise InputError(f"no subset of {k} benchmarks fits the budget", field="budget")
        med = float(np.median(losses))
        exact = exhausted(names, k, n)
        lo, hi = (med, med) if exact else median_interval(losses, nested.confidence)
        tight = max(med - lo, hi - med) <= nested.random_tolerance * abs(med)
        if exact or tight or not grow or len(subs) < n or n >= 8 * nested.random_subsets:
            q1, q3 = np.percentile(losses, [25, 75])
            ref = float(np.mean(reference_of(subs))) if reference_of is not None else None
            return RandomDraws(len(losses), med, (lo, hi), (float(q1), float(q3)), exact, ref)
        n *= 2


def best_random(ev: Evaluator, k: int, n: int, rng: np.random.Generator, feasible) -> tuple[Subset, int]:
    """The best (by ``ev``'s cross-validated loss) of ``n`` random k-subsets, and how many were scored."""
    subs = _random_subsets(ev.table.benchmark_names, k, n, rng, feasible)
    if not subs:
        raise InputError(f"no subset of {k} benchmarks fits the budget", field="budget")
    scores = ev.scores(subs)
    return min(scores, key=lambda s: (s.mean, s.subset)).subset, len(subs)


def greedy(ev: Evaluator, k: int, feasible) -> tuple[Subset, int]:
    """Forward selection: from no benchmark, add the one that lowers ``ev``'s loss most, k times (ties by
    name); returns the subset and the number of subsets scored."""
    chosen: list[str] = []
    scored = 0
    for _ in range(k):
        cands = [normalise_subset([*chosen, b]) for b in ev.table.benchmark_names if b not in chosen]
        cands = [c for c in cands if feasible(c)]
        if not cands:
            break
        scores = ev.scores(cands)
        scored += len(cands)
        chosen = list(min(scores, key=lambda s: (s.mean, s.subset)).subset)
    return normalise_subset(chosen), scored


def facility_location(table: Table, k: int, feasible) -> Subset:
    """BenTo's facility location: the k benchmarks that maximise sum over benchmarks b of max over chosen s of
    sim(b, s), sim = |Pearson correlation| of the benchmarks' profiles over the models (a profile: the mean of
    the benchmark's z-scored metric columns, missing = 0), chosen greedily (ties by name)."""
    names = table.benchmark_names
    z = np.nan_to_num(zscores(table))
    prof = np.stack([z[:, [j for j, b in enumerate(table.benchmarks) if b == name]].mean(1) for name in names])
    c = prof - prof.mean(1, keepdims=True)
    norm = np.sqrt((c * c).sum(1))
    with np.errstate(invalid="ignore", divide="ignore"):
        sim = np.abs(c @ c.T) / np.outer(norm, norm)
    sim = np.nan_to_num(sim)
    np.fill_diagonal(sim, 1.0)
    chosen: list[int] = []
    cover = np.zeros(len(names))
    for _ in range(k):
        best, best_gain = None, -1.0
        for i in sorted(range(len(names)), key=lambda i: names[i]):
            if i in chosen or not feasible(normalise_subset([*(names[j] for j in chosen), names[i]])):
                continue
            gain = float(np.maximum(cover, sim[i]).sum() - cover.sum())
            if gain > best_gain + 1e-12:
                best, best_gain = i, gain
        if best is None:
            break
        chosen.append(best)
        cover = np.maximum(cover, sim[best])
    return normalise_subset(names[j] for j in chosen)


# ------------------------------------------------------------------------------------------------ results
def standard_error(per_split: Sequence[float] | np.ndarray) -> float:
    """The standard error of a mean over outer splits (0 with one split: no spread to measure)."""
    x = np.asarray(per_split, dtype=float)
    return float(x.std(ddof=1) / math.sqrt(len(x))) if len(x) > 1 else 0.0


def within_noise(per_split: Sequence[float], best: Sequence[float], confidence: float) -> bool:
    """Whether a figure (per outer split) is as good as the best one's within the noise: its mean worse by no more
    than the best's standard error over the splits, and its paired interval against the best reaching zero
    (with one split: no worse at all). The paired interval alone is not enough: one outlying split widens it
    until it reaches zero, for a method far worse on average."""
    a, b = np.asarray(per_split, dtype=float), np.asarray(best, dtype=float)
    if len(a) != len(b):
        return False
    gap = float(a.mean() - b.mean())
    if gap <= 0:
        return True
    ci = paired_interval(a - b, confidence)
    return ci is not None and ci[0] <= 0 and gap <= standard_error(b)


def paired_interval(diff: Sequence[float], confidence: float) -> tuple[float, float] | None:
    """Student t interval of the mean of paired differences (None with fewer than two)."""
    d = np.asarray(diff, dtype=float)
    if len(d) < 2:
        return None
    from scipy import stats  # lazy: scipy

    se = float(d.std(ddof=1) / math.sqrt(len(d)))
    h = float(stats.t.ppf(0.5 + confidence / 2, len(d) - 1)) * se
    return float(d.mean() - h), float(d.mean() + h)


@dataclass
class Method:
    """One way of choosing a subset: per outer split, the subset it chose (None for the random median) and its
    loss on the held-out models; on the whole table, its subset and in-sample score."""

    name: str
    per_split: list[float]
    subsets: list[list[str] | None]
    scored: list[int]                      # subsets whose inner cross-validated loss was computed, per split
    subset: list[str] | None = None        # chosen on the whole table
    in_sample: float | None = None         # its cross-validated loss on the whole table (chosen on it too)
    reference: list[float] | None = None   # per split: the training means with its subset measured (for the random
                                           # median, the mean over its draws) — what predicting anything must beat

    @property
    def mean(self) -> float:
        return float(np.mean(self.per_split))

    def to_dict(self, confidence: float) -> dict:
        ci = paired_interval(self.per_split, confidence) if len(self.per_split) > 1 else None
        return {"what": DESCRIPTIONS[self.name], "loss": self.mean, "std": float(np.std(self.per_split)),
                "interval": list(ci) if ci else None, "per_split": self.per_split, "subsets": self.subsets,
                "scored": self.scored, "subset": self.subset, "in_sample": self.in_sample,
                "training_means_given_subset": self.reference}


@dataclass
class Honest:
    """The nested estimate of one search (size ``k``) and its baselines."""

    k: int
    split_by: str
    confidence: float
    test_models: list[list[str]]               # per outer split
    train_size: list[int]
    out_of_range: list[list[str]]              # per outer split: held-out models outside the training range
    methods: dict[str, Method]
    training_means: list[float]                # per outer split: every metric by the training models' means
    warnings: list[str] = field(default_factory=list)
    random_draws: list[RandomDraws] = field(default_factory=list)   # per outer split: behind median_random
    random_in_sample: RandomDraws | None = None                     # behind median_random's in-sample figure

    @property
    def search(self) -> Method:
        return self.methods["search"]

    @property
    def loss(self) -> float:
        return self.search.mean

    def comparison(self, a: str, b: str) -> dict:
        """Paired comparison of methods a and b over the outer splits (a - b: negative = a better)."""
        diff = np.array(self.methods[a].per_split) - np.array(self.methods[b].per_split)
        ci = paired_interval(diff, self.confidence)
        if ci is None:
            verdict = "one outer split: no interval"
        elif ci[1] < 0:
            verdict = f"{a} better"
        elif ci[0] > 0:
            verdict = f"{b} better"
        else:
            verdict = "not distinguishable"
        return {"diff": float(diff.mean()), "interval": list(ci) if ci else None, "verdict": verdict}

    @property
    def recommended(self) -> str:
        """The method to use (:meth:`recommendation`), or ``"none"``."""
        return str(self.recommendation()["method"])

    def beats_training_means(self, m: str) -> bool:
        """Whether method ``m`` predicts the held-out models better than the training means beyond the noise:
        its paired interval against them lies below zero (with one split: a lower loss). The training means
        here are given the method's subset (its metrics measured, the others predicted by the means): a subset
        that predicts nothing would otherwise beat them by the metrics it measures."""
        ref = self.methods[m].reference
        diff = np.array(self.methods[m].per_split) - np.array(ref if ref is not None else self.training_means)
        ci = paired_interval(diff, self.confidence)
        return bool(ci[1] < 0) if ci is not None else bool(diff.mean() < 0)

    def recommendation(self) -> dict:
        """The cheapest method as good as the best one within the best's own uncertainty (:func:`within_noise`)
        that beats the training means beyond the noise; ``"none"`` when none does (:data:`RULE`)."""
        best = min(self.methods, key=lambda m: (self.methods[m].mean, METHODS.index(m)))
        ref = self.methods[best].per_split
        near = [m for m in METHODS if within_noise(self.methods[m].per_split, ref, self.confidence)]
        useful = [m for m in near if self.beats_training_means(m)]
        method = useful[0] if useful else NONE
        tm = float(np.mean(self.training_means))
        best_ref = self.methods[best].reference
        given = float(np.mean(best_ref)) if best_ref is not None else tm
        if method != NONE:
            reason = (f"{method} is within the best method's ({best}, {self.methods[best].mean:.4f}) standard error "
                      f"and predicts better than the training means beyond the noise")
        else:
            reason = (f"no subset is worth measuring: none predicts the held-out models better than the training "
                      f"means beyond the noise (the best method, {best}, {self.methods[best].mean:.4f}; the training "
                      f"means {tm:.4f}, {given:.4f} with its subsets measured)")
        return {"method": method, "what": DESCRIPTIONS[method], "reason": reason, "rule": RULE,
                "best": best, "best_loss": self.methods[best].mean, "margin": standard_error(ref),
                "margin_is": MARGIN, "within_noise_of_best": near,
                "beat_training_means": [m for m in METHODS if self.beats_training_means(m)], "training_means": tm}

    def to_dict(self) -> dict:
        s = self.search
        rec = self.recommendation()
        return {
            "k": self.k, "split_by": self.split_by, "outer_splits": len(s.per_split), "confidence": self.confidence,
            "what": "each subset chosen on the training models of an outer split and scored on its held-out "
                    "models (nested); the mean over outer splits",
            **{key: v for key, v in s.to_dict(self.confidence).items() if key not in ("subset", "in_sample")},
            "test_models": self.test_models, "train_size": self.train_size, "out_of_range": self.out_of_range,
            "training_means": self.training_means_dict(),
            "training_means_given_subset": self.search.reference,
            "warnings": self.warnings,
            "recommended": rec["method"], "recommendation": rec,
        }

    def training_means_dict(self) -> dict:
        """The training means on the held-out models, and the search's paired interval against them."""
        diff = np.array(self.search.per_split) - np.array(self.training_means)
        ci = paired_interval(diff, self.confidence)
        return {"what": DESCRIPTIONS[NONE].split(": ", 1)[1], "loss": float(np.mean(self.training_means)),
                "per_split": self.training_means,
                "search_minus_training_means": {"diff": float(diff.mean()), "interval": list(ci) if ci else None}}

    def random_dict(self) -> dict | None:
        """The random draws behind the median random baseline: per outer split, and the mean over the splits of
        the medians' intervals and of the quartiles (the spread of one random subset's loss)."""
        if not self.random_draws:
            return None
        d = self.random_draws
        return {"draws": [r.draws for r in d], "per_split": [r.to_dict() for r in d],
                "interval": [float(np.mean([r.interval[0] for r in d])), float(np.mean([r.interval[1] for r in d]))],
                "quartiles": [float(np.mean([r.quartiles[0] for r in d])), float(np.mean([r.quartiles[1] for r in d]))],
                "confidence": self.confidence,
                "in_sample": self.random_in_sample.to_dict() if self.random_in_sample is not None else None}

    def baselines_dict(self) -> dict:
        out = {m: {**self.methods[m].to_dict(self.confidence), "search_minus_baseline": self.comparison("search", m)}
               for m in BASELINES}
        out["median_random"]["random_draws"] = self.random_dict()
        return out

    def to_full_dict(self) -> dict:
        return {"honest": self.to_dict(), "baselines": self.baselines_dict(),
                "in_sample_methods": {m: self.methods[m].in_sample for m in METHODS}}

    @classmethod
    def from_full_dict(cls, d: dict) -> Honest:
        h, b = d["honest"], d["baselines"]
        methods = {"search": Method("search", list(h["per_split"]), list(h["subsets"]), list(h["scored"]),
                                    None, d.get("in_sample_methods", {}).get("search"),
                                    h.get("training_means_given_subset"))}
        for m in BASELINES:
            x = b[m]
            methods[m] = Method(m, list(x["per_split"]), list(x["subsets"]), list(x["scored"]), x.get("subset"),
                                x.get("in_sample"), x.get("training_means_given_subset"))
        draws = b["median_random"].get("random_draws") or {}
        ins = draws.get("in_sample")
        return cls(int(h["k"]), str(h["split_by"]), float(h["confidence"]), h["test_models"], h["train_size"],
                   h["out_of_range"], methods, list(h["training_means"]["per_split"]), list(h["warnings"]),
                   [RandomDraws.from_dict(r) for r in draws.get("per_split", [])],
                   RandomDraws.from_dict(ins) if ins else None)


# ------------------------------------------------------------------------------------------------ runner
class NestedRunner:
    """The outer splits of one table and an evaluator per outer split's training models (their score caches
    shared by every k of a sweep or tiers). They train in this process (``workers=1``): worker processes per
    outer split cost more to start (torch in each) than they save on tables of tens of models."""

    def __init__(self, table: Table, meta: MetaConfig, nested: NestedConfig, seed: int, *,
                 order: Mapping[str, float] | Sequence[float] | None = None, workers: int = 1,
                 search: Callable[..., Any], feasibility: Callable[..., Any]) -> None:
        # the search and its feasibility rule are handed in by modelseek.eevee.search (which imports this module):
        # no import cycle
        self._search, self._feasibility = search, feasibility
        key: np.ndarray | None = None
        if order is not None:  # per model: a mapping model -> value, or values in ``table``'s row order
            if isinstance(order, Mapping):
                by_model = {str(m): float(v) for m, v in order.items()}
            else:
                if len(order) != table.n_models:
                    raise InputError(f"the order has {len(order)} values for {table.n_models} models",
                                     field="split_by")
                by_model = dict(zip(table.models, (float(v) for v in order)))
            missing = [m for m in table.models if m not in by_model]
            if missing:
                raise InputError(f"model {missing[0]!r} has no value in the order", field="split_by")
            key = np.array([by_model[m] for m in table.canonical().models])
        table = table.canonical()
        self.table, self.meta, self.nested, self.seed, self.workers = table, meta, nested, seed, workers
        if nested.by_column and key is None and nested.outer_splits > 0:
            raise InputError(f"`split_by` {nested.split_by!r}: take the column out of the table first "
                             f"(Table.without_column) and pass its values as the order", field="split_by")
        if key is not None and np.isnan(key).any():
            i = int(np.flatnonzero(np.isnan(key))[0])
            raise InputError(f"model {table.models[i]!r} has no value in the ordering column {nested.split_by!r}",
                             path=table.source or None, field="split_by")
        self.splits = outer_splits(table, nested, seed, key, meta)
        self.note = "" if self.splits else (
            "no nested estimate: " + ("outer_splits is 0" if nested.outer_splits == 0 else
                                      f"{table.n_models} models leave no outer split with "
                                      f"{min_models(meta)} or more training models for the inner "
                                      f"cross-validation"))
        st = strength(table)
        self.out_of_range = [[table.models[i] for i in te
                              if st[i] > st[tr].max() + 1e-12 or st[i] < st[tr].min() - 1e-12]
                             for tr, te in self.splits]
        self._inner: dict[int, BatchedEvaluator] = {}
        self._outer: dict[int, BatchedEvaluator] = {}

    def inner(self, j: int) -> BatchedEvaluator:
        if j not in self._inner:
            self._inner[j] = BatchedEvaluator(self.table.take_models(self.splits[j][0].tolist()), self.meta,
                                              workers=self.workers)
        return self._inner[j]

    def outer(self, j: int) -> BatchedEvaluator:
        if j not in self._outer:
            self._outer[j] = BatchedEvaluator(self.table, self.meta, splits=[self.splits[j]])
        return self._outer[j]

    def close(self) -> None:
        for ev in [*self._inner.values(), *self._outer.values()]:
            ev.close()

    def estimate(self, k: int, config, *, budget: float | None = None, full: Evaluator | None = None,
                 full_search=None, progress: bool = False) -> Honest | None:
        """The nested estimate of a search of size ``k`` (``config``: its :class:`SearchConfig`) and of the
        baselines. With ``full`` (the whole table's evaluator) each method's in-sample subset and score are
        added (``full_search``: the search's own result on it, when already run)."""
        search, _feasibility = self._search, self._feasibility
        if not self.splits:
            return None
        feasible = _feasibility(self.table, budget)
        names = self.table.benchmark_names
        per: dict[str, list[float]] = {m: [] for m in METHODS}
        subsets: dict[str, list] = {m: [] for m in METHODS}
        scored: dict[str, list[int]] = {m: [] for m in METHODS}
        refs: dict[str, list[float]] = {m: [] for m in METHODS}
        means: list[float] = []
        draws: list[RandomDraws] = []
        for j in progress_bar(range(len(self.splits)), desc=f"eevee nested k={k}", total=len(self.splits),
                              disable=not progress):
            ev = self.inner(j)
            rng = derive_rng(self.seed, "eevee-nested", j, k)
            res = search(ev, k, config, budget=budget, top=1)
            pick = {"search": res.best.subset}
            scored["search"].append(res.n_evaluated)
            pick["best_random"], n = best_random(ev, k, res.n_evaluated, rng, feasible)
            scored["best_random"].append(n)
            pick["greedy"], n = greedy(ev, k, feasible)
            scored["greedy"].append(n)
            pick["facility_location"] = facility_location(ev.table, k, feasible)
            scored["facility_location"].append(0)
            out = self.outer(j)
            chosen = [pick[m] for m in METHODS if m != "median_random"]
            losses, given = out.losses(chosen)[:, 0], out.baseline_given(chosen)[:, 0]
            for m, loss, g in zip([m for m in METHODS if m != "median_random"], losses, given):
                per[m].append(float(loss))
                refs[m].append(float(g))
                subsets[m].append(list(pick[m]))
            draws.append(self._random(out, names, k, rng, feasible))
            per["median_random"].append(draws[-1].median)
            refs["median_random"].append(float(draws[-1].reference or 0.0))
            subsets["median_random"].append(None)
            scored["median_random"].append(0)
            means.append(float(out.baseline().mean))
        methods = {m: Method(m, per[m], subsets[m], scored[m], reference=refs[m]) for m in METHODS}
        in_sample = self._in_sample(methods, k, config, full, feasible, full_search, budget) if full is not None \
            else None
        return Honest(k, self.nested.split_by, self.nested.confidence,
                      [[self.table.models[i] for i in te] for _, te in self.splits],
                      [len(tr) for tr, _ in self.splits], self.out_of_range, methods, means,
                      self._warnings(methods["search"].mean, float(np.mean(means))), draws, in_sample)

    def _random(self, out: Evaluator, names: Sequence[str], k: int, rng: np.random.Generator,
                feasible) -> RandomDraws:
        """The median random baseline of one outer split (``out``: its evaluator), with its references."""
        def losses(subs: list[Subset]) -> np.ndarray:
            return out.losses(subs)[:, 0]

        def given(subs: list[Subset]) -> np.ndarray:
            return out.baseline_given(subs)[:, 0]

        return random_median(losses, names, k, self.nested, rng, feasible, given)

    def _warnings(self, search: float, training_means: float) -> list[str]:
        warnings = []
        n_out = sum(len(x) for x in self.out_of_range)
        n_test = sum(len(te) for _, te in self.splits)
        if n_out:
            warnings.append(f"{n_out} of the {n_test} held-out models lie outside the training models' range of "
                            f"strength (mean z-score): their metrics are extrapolated, where every method degrades")
        if search >= training_means:
            warnings.append(f"the search's subsets predict the held-out models worse than the training means "
                            f"({search:.4f} against {training_means:.4f}): measuring them gains nothing over "
                            f"the average model")
        return warnings

    def _in_sample(self, methods: dict[str, Method], k: int, config, full: Evaluator, feasible, full_search,
                   budget: float | None) -> RandomDraws:
        """Each method's subset chosen on the whole table and its (in-sample) cross-validated loss there."""
        search = self._search
        rng = derive_rng(self.seed, "eevee-in-sample", k)
        res = full_search or search(full, k, config, budget=budget, top=1)
        spawn = getattr(full, "spawn", None)
        if spawn is not None:  # the baselines use the search's worker processes if it started them, never start them
            full.spawn = False  # type: ignore[attr-defined]
        try:
            return self._in_sample_picks(methods, k, full, feasible, res, rng)
        finally:
            if spawn is not None:
                full.spawn = spawn  # type: ignore[attr-defined]

    def _in_sample_picks(self, methods: dict[str, Method], k: int, full: Evaluator, feasible, res,
                         rng) -> RandomDraws:
        picks = {"search": res.best.subset, "best_random": best_random(full, k, res.n_evaluated, rng, feasible)[0],
                 "greedy": greedy(full, k, feasible)[0],
                 "facility_location": facility_location(full.table, k, feasible)}
        for m, s in picks.items():
            methods[m].subset = list(s)
            methods[m].in_sample = full.score(s).mean
        draws = random_median(lambda subs: [s.mean for s in full.scores(subs)], full.table.benchmark_names, k,
                              self.nested, rng, feasible, grow=False)
        methods["median_random"].in_sample = draws.median
        return draws
