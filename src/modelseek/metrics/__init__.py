"""Metrics by name: ``ndcg@5``, ``mrr``, ``kendall``, ``regret@1`` ...

Each metric is a function ``(ranking, judgments) -> float`` over one topic; :func:`get` parses a name
with an optional ``@k`` cut-off. Higher is better except for ``regret``. These per-topic functions are the
reference definitions (tested against hand-computed values); :func:`modelseek.evaluate.evaluate` computes
the built-in ones over all topics at once with arrays, and the tests check that both agree.

``TREC_NAMES`` gives trec_eval's name of each measure (``ndcg@5`` -> ``ndcg_cut_5``, ``mrr`` -> ``recip_rank``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ..data.truth import GradingScheme
from ..errors import InputError
from ..registry import Registry
from .kendall import weighted_tau
from .mrr import reciprocal_rank
from .ndcg import ndcg_at_k
from .regret import regret_at_k


@dataclass(frozen=True)
class Judgments:
    """What is known about one topic: graded relevance and F1 of every candidate."""

    grades: Mapping[str, int]
    f1: Mapping[str, float]
    scheme: GradingScheme = GradingScheme.NTCIR
    relevance_level: int = 1  # the lowest grade that counts as relevant for MRR (trec_eval's -l)


#: the measures reported when none are named: by :func:`modelseek.evaluate.evaluate`, the benchmarks and every
#: command that scores runs
DEFAULT_METRICS: tuple[str, ...] = ("ndcg@1", "ndcg@3", "ndcg@5", "mrr")

MetricFn = Callable[[Sequence[str], Judgments], float]
# factories take the cut-off k (None when the name has none) and return the per-topic function
METRICS: Registry[Callable[[int | None], MetricFn]] = Registry("metric")
LOWER_IS_BETTER = {"regret"}


@METRICS.register("ndcg")
def _ndcg(k: int | None) -> MetricFn:
    if k is None:
        raise InputError("ndcg needs a cut-off, e.g. ndcg@5")
    return lambda ranking, j: ndcg_at_k(ranking, j.grades, k, j.scheme.gain)


@METRICS.register("mrr")
def _mrr(k: int | None) -> MetricFn:
    return lambda ranking, j: reciprocal_rank(ranking[:k] if k else ranking, j.grades, j.relevance_level)


@METRICS.register("kendall")
def _kendall(k: int | None) -> MetricFn:
    if k is not None:  # a cut-off would be silently ignored
        raise InputError(f"kendall takes no cut-off (got kendall@{k}); it compares whole rankings")
    return lambda ranking, j: weighted_tau(ranking, j.f1)


@METRICS.register("regret")
def _regret(k: int | None) -> MetricFn:
    return lambda ranking, j: regret_at_k(ranking, j.f1, k or 1)


def parse(name: str) -> tuple[str, int | None]:
    base, _, cut = name.strip().lower().partition("@")
    k = None
    if cut:
        try:
            k = int(cut)
        except ValueError:
            raise InputError(f"bad cut-off in metric {name!r}; write e.g. ndcg@5") from None
        if k < 1:
            raise InputError(f"cut-off must be >= 1 in metric {name!r}")
    return base, k


def ndcg_cutoff(metric: str, who: str = "learned fusion") -> int:
    """The k of ``ndcg@k``; any other name is an :class:`InputError` (``who`` optimises nDCG only)."""
    base, k = parse(metric)
    if base != "ndcg" or k is None:
        raise InputError(f"{who} optimises nDCG at a cut-off (e.g. ndcg@5), got {metric!r}", field="metric")
    return k


def get(name: str) -> MetricFn:
    base, k = parse(name)
    return METRICS.get(base)(k)


def names() -> list[str]:
    return METRICS.names()


def trec_name(name: str) -> str:
    """trec_eval's name of a measure: ``ndcg@5`` -> ``ndcg_cut_5``, ``mrr`` -> ``recip_rank`` (``mrr@k`` ->
    ``recip_rank_cut_k``, not in trec_eval); others keep their name with ``@`` written ``_``."""
    base, k = parse(name)
    if base == "ndcg":
        return f"ndcg_cut_{k}"
    if base == "mrr":
        return "recip_rank" if k is None else f"recip_rank_cut_{k}"
    return base if k is None else f"{base}_{k}"


__all__ = ["DEFAULT_METRICS", "METRICS", "Judgments", "get", "names", "ndcg_at_k", "ndcg_cutoff", "reciprocal_rank",
           "regret_at_k", "trec_name", "weighted_tau"]
