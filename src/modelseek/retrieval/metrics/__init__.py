"""Metrics by name: ``ndcg@5``, ``mrr``, ``kendall``, ``regret@1`` ...

A metric is one object registered in :data:`METRICS` (see :mod:`modelseek.retrieval.metrics.base`) that carries its
per-list
definition ``(ranking, judgments, k) -> float`` over one topic and its vectorised form over every topic of a run;
:func:`modelseek.retrieval.evaluation.evaluate` dispatches each name through the registry, and the contract tests check
that both
forms agree on every registered metric. :func:`get` parses a name with an optional ``@k`` cut-off and returns the
per-list function. Higher is better except where ``higher_is_better`` is False (``regret``). A new metric is one file
in this package: a :class:`Metric` subclass with ``@register("metric", name=...)``.

:func:`trec_name` gives trec_eval's name of each measure (``ndcg@5`` -> ``ndcg_cut_5``, ``mrr`` -> ``recip_rank``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ...core.errors import InputError
from .base import METRICS, Batch, Judgments, Metric, parse, resolve
from .kendall import weighted_tau
from .mrr import reciprocal_rank
from .ndcg import ndcg_at_k
from .regret import regret_at_k

#: the ranking measures of the task (nDCG at 1, 3, 5 and MRR)
RANKING_METRICS: tuple[str, ...] = ("ndcg@1", "ndcg@3", "ndcg@5", "mrr")
#: the measures reported when none are named, by :func:`modelseek.retrieval.evaluation.evaluate` and ``modelseek
# evaluate``
#: alike, by :func:`modelseek.retrieval.comparison` and ``modelseek compare``, and by the benchmarks: the ranking
# measures and
#: weighted Kendall tau
DEFAULT_METRICS: tuple[str, ...] = (*RANKING_METRICS, "kendall")

MetricFn = Callable[[Sequence[str], Judgments], float]


def ndcg_cutoff(metric: str, who: str = "learned fusion") -> int:
    """The k of ``ndcg@k``; any other name is an :class:`InputError` (``who`` optimises nDCG only)."""
    base, k = parse(metric)
    if base != "ndcg" or k is None:
        raise InputError(f"{who} optimises nDCG at a cut-off (e.g. ndcg@5), got {metric!r}", field="metric")
    return k


def get(name: str) -> MetricFn:
    """The per-list function of ``name`` (``ndcg@5`` ...): ``(ranking, judgments) -> float``."""
    metric, k = resolve(name)

    def per_list(ranking, j):
        with METRICS.calling(metric.name, "per_list"):
            return metric.per_list(ranking, j, k)

    return per_list


def names() -> list[str]:
    return METRICS.names()


def trec_name(name: str) -> str:
    """trec_eval's name of a measure: ``ndcg@5`` -> ``ndcg_cut_5``, ``mrr`` -> ``recip_rank`` (``mrr@k`` ->
    ``recip_rank_cut_k``, not in trec_eval); others keep their name with ``@`` written ``_``."""
    base, k = parse(name)
    if base in METRICS:
        return METRICS.get(base).trec_name(k)
    return base if k is None else f"{base}_{k}"


__all__ = ["DEFAULT_METRICS", "METRICS", "RANKING_METRICS", "Batch", "Judgments", "Metric", "get", "names", "ndcg_at_k",
           "ndcg_cutoff", "parse", "reciprocal_rank", "regret_at_k", "resolve", "trec_name", "weighted_tau"]
