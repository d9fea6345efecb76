"""The plan: how many candidates get frozen-feature estimators (K1) and how many get fine-tuned (K2).

Inputs: the candidates in the order of the inference-free prior, each one's cost (:mod:`.costs`), the budget
left, the number of texts each stage reads and the epochs a fine-tuning may run. The plan considers every pair
on a grid of K values (all of 0-8, then steps of ~25 %, then the whole pool):

* ``K1 = 0``: fine-tune the top ``K2`` of the prior (the feature stage is skipped);
* ``K1 > K2``: estimators on the top ``K1`` of the prior, then fine-tune the top ``K2`` of the estimator ranking;

and keeps the feasible pair (cost within the budget left) with the best expected quality of the final top-1,
ties going to the cheaper pair. A pair's cost is the feature cost of the top ``K1`` plus ``K2`` fine-tunings, each
running every epoch (early stopping only makes it cheaper): the prior's top ``K2`` exactly, or ``K2`` times the
mean cost of the top ``K1`` (which of them the estimators will choose is not known yet); with successive halving,
the rungs' epochs instead. The run (:mod:`.run`) checks every unit against what is left before it starts it.

Expected quality comes from a small Monte-Carlo model of the three signals (fixed seed, so a plan is
reproducible): per draw, standard-normal true values for the pool, a prior and an estimator score correlated
with them at :class:`Reliability` ``prior`` and ``features``, fine-tuning exact; the candidates are put in the
prior's order and each pair's pick is the best fine-tuned one (or, when ``K2 = 0``, the top-1 of the order
:mod:`.answer` walks: the reciprocal-rank fusion of the prior and the estimator, or the prior).
:func:`modelseek.select` measures the prior's correlation by replay on
a fine-tuning history (:mod:`.curve`: the shipped NTCIR-19 results by default) and passes it in; the estimators'
stays at its default unless the caller measured it (``benchmarks/funnel.py`` does, on its world's history tasks).
The defaults below are the former assumptions (the prior weaker than the estimators, neither close to fine-tuning).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..data.pool import Candidate
from ...core.errors import InputError
from .budget import format_seconds
from .costs import Costs, ModelCost


@dataclass(frozen=True)
class Reliability:
    """Correlations of the prior and the estimators with fine-tuned F1, for planning (measured by replay where a
    history allows, see :func:`modelseek.retrieval.funnel.curve.measure`; these defaults are assumptions)."""

    prior: float = 0.5
    features: float = 0.7
    draws: int = 400
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("prior", "features"):
            v = getattr(self, name)
            if not 0.0 <= v < 1.0:
                raise InputError(f"must be in [0, 1), got {v}", field=f"reliability.{name}")


@dataclass(frozen=True)
class Plan:
    budget_s: float
    spent_before_s: float                 # what the prior stage and the cost probes took
    n_pool: int
    feature_ids: tuple[str, ...]          # the top K1 of the prior (empty: no feature stage)
    finetune_k: int                       # K2
    finetune_from: str                    # "features" | "prior"
    epochs: int
    halving: bool
    feature_cost_s: float
    finetune_cost_s: float                # all epochs run (see the module docstring)
    expected_top1: float                  # Monte-Carlo mean true value (z units) of the final top-1
    n_feature_texts: int
    n_finetune_texts: int
    alternatives: tuple[dict, ...] = field(default=(), compare=False)

    @property
    def k1(self) -> int:
        return len(self.feature_ids)

    @property
    def total_s(self) -> float:
        return self.spent_before_s + self.feature_cost_s + self.finetune_cost_s

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["feature_ids"] = list(self.feature_ids)
        d["alternatives"] = list(self.alternatives)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Plan:
        d = dict(d)
        d["feature_ids"] = tuple(d["feature_ids"])
        d["alternatives"] = tuple(d.get("alternatives", ()))
        return cls(**d)

    def describe(self) -> str:
        f = format_seconds
        how = (f"successive halving over {self.finetune_k} (eta 2, up to {self.epochs} epochs)" if self.halving
               else f"{self.finetune_k} candidate(s), up to {self.epochs} epoch(s) each")
        src = "the estimators' top" if self.finetune_from == "features" else "the prior's top"
        lines = [f"plan for a budget of {f(self.budget_s)} over {self.n_pool} candidates:",
                 f"  1. inference-free prior on all {self.n_pool}, with cost probes: {f(self.spent_before_s)} (spent)",
                 (f"  2. frozen-feature estimators on the prior's top {self.k1} ({self.n_feature_texts:,} texts each): "
                  f"~{f(self.feature_cost_s)}") if self.k1 else "  2. frozen-feature estimators: skipped",
                 (f"  3. fine-tune {src} {how} ({self.n_finetune_texts:,} texts): ~{f(self.finetune_cost_s)}")
                 if self.finetune_k else ("  3. fine-tuning: none planned (a candidate is fine-tuned only if what "
                                          "is left after the estimators fits it)"),
                 f"  total ~{f(self.total_s)} of {f(self.budget_s)}; what early stopping leaves goes to fine-tuning "
                 f"the next candidates that fit"]
        return "\n".join(lines)


def k_grid(n: int) -> list[int]:
    """0..8, then ~25 % steps, then ``n``: every K the planner considers for a pool of ``n``."""
    ks = set(range(0, min(n, 8) + 1))
    k = 8.0
    while k < n:
        k *= 1.25
        ks.add(min(n, round(k)))
    ks.add(n)
    return sorted(ks)


def halving_rungs(k: int, epochs: int, eta: int = 2, min_epochs: int = 1) -> list[tuple[int, int]]:
    """(survivors, epochs) per rung of :func:`modelseek.retrieval.finetune.verify.successive_halving` over ``k``."""
    out, n, r = [], k, 0
    while n >= 1:
        e = min(min_epochs * eta ** r, epochs)
        out.append((n, e))
        if n == 1 or e >= epochs:
            break
        n, r = max(1, math.ceil(n / eta)), r + 1
    return out


def finetune_cost(costs: Sequence[ModelCost], k: int, n_texts: int, epochs: int, halving: bool,
                  exact: bool) -> float:
    """What fine-tuning ``k`` of ``costs`` takes, every epoch run (early stopping only makes it cheaper):
    ``exact``, the first ``k`` (they are known: the prior's top); else ``k`` times their mean (which ``k`` the
    estimators will choose is not known yet). With ``halving``, the rungs' epochs instead."""
    if k == 0 or not costs:
        return 0.0
    def one(e: int, n: int) -> float:
        each = [c.finetune(n_texts, e) for c in costs]
        return float(sum(each[:n])) if exact else n * float(np.mean(each))
    if not halving:
        return one(epochs, k)
    return float(sum(one(e, n) for n, e in halving_rungs(k, epochs)))


def _simulated_top1(n: int, ks1: list[int], rel: Reliability) -> dict[tuple[int, int], float]:
    """Mean true value of the final top-1 for every (K1, K2) of the grid (see the module docstring)."""
    rng = np.random.default_rng(rel.seed)
    d = rel.draws
    true = rng.standard_normal((d, n))
    prior = rel.prior * true + math.sqrt(1 - rel.prior ** 2) * rng.standard_normal((d, n))
    feats = rel.features * true + math.sqrt(1 - rel.features ** 2) * rng.standard_normal((d, n))
    order = np.argsort(-prior, axis=1, kind="stable")
    t = np.take_along_axis(true, order, axis=1)       # true values in the prior's order
    f = np.take_along_axis(feats, order, axis=1)
    out: dict[tuple[int, int], float] = {}
    by_prior = np.maximum.accumulate(t, axis=1).mean(axis=0)  # best of the prior's top K2, fine-tuned
    for k2 in ks1:
        out[(0, k2)] = float(by_prior[max(k2, 1) - 1])
    for k1 in ks1:
        if k1 == 0:
            continue
        # the order :mod:`.answer` walks: the reciprocal-rank fusion of the prior (the top K1 are its first K1)
        # and the estimator over those K1 (``k = 60``, as :func:`modelseek.retrieval.fusion.fuse`)
        frank = np.argsort(np.argsort(-f[:, :k1], axis=1, kind="stable"), axis=1, kind="stable")
        fz = 1.0 / (60.0 + 1.0 + np.arange(k1))[None, :] + 1.0 / (60.0 + 1.0 + frank)
        idx = np.argsort(-fz, axis=1, kind="stable")
        best = np.maximum.accumulate(np.take_along_axis(t[:, :k1], idx, axis=1), axis=1).mean(axis=0)
        for k2 in ks1:
            if k2 < k1:
                out[(k1, k2)] = float(best[max(k2, 1) - 1])
    return out


def plan_funnel(order: Sequence[Candidate], costs: Costs, budget_s: float, spent_s: float, n_feature_texts: int,
                n_finetune_texts: int, epochs: int, halving: bool = False,
                reliability: Reliability | None = None) -> Plan:
    """The best feasible plan for the candidates in the prior's ``order`` (see the module docstring)."""
    rel = reliability or Reliability()
    n = len(order)
    left = budget_s - spent_s
    ks = k_grid(n)
    value = _simulated_top1(n, ks, rel)
    cost_of = [costs.cost(c) for c in order]
    feat_cum = np.concatenate([[0.0], np.cumsum([c.features(n_feature_texts) for c in cost_of])])
    best = None
    feasible = []
    for (k1, k2), v in value.items():
        pool_for_ft = cost_of[:k2] if k1 == 0 else cost_of[:k1]
        fc = float(feat_cum[k1])
        if fc > left:
            continue
        tc = finetune_cost(pool_for_ft, k2, n_finetune_texts, epochs, halving, exact=k1 == 0)
        if fc + tc > left:
            continue
        key = (round(v, 9), -(fc + tc))
        feasible.append({"k1": k1, "k2": k2, "expected_top1": round(v, 4), "cost_s": round(fc + tc, 1)})
        if best is None or key > best[0]:
            best = (key, k1, k2, fc, tc, v)
    if best is None:  # not even the prior's top-1: the answer is the prior alone
        best = ((0.0, 0.0), 0, 0, 0.0, 0.0, value[(0, 0)])
    _, k1, k2, fc, tc, v = best
    feasible.sort(key=lambda a: (-a["expected_top1"], a["cost_s"]))
    return Plan(budget_s=float(budget_s), spent_before_s=float(spent_s), n_pool=n,
                feature_ids=tuple(c.id for c in order[:k1]), finetune_k=int(k2),
                finetune_from="features" if k1 else "prior", epochs=int(epochs), halving=bool(halving),
                feature_cost_s=fc, finetune_cost_s=tc, expected_top1=v, n_feature_texts=int(n_feature_texts),
                n_finetune_texts=int(n_finetune_texts), alternatives=tuple(feasible[:5]))
