"""What ``modelseek rank`` concludes from an explained ranking, in the library: in each explanation that predicts
criticality and the top-1 regret (``adaptive``'s, the default's), the regret rule's tier and the budget curve
(:func:`with_verdicts`). :func:`modelseek.retrieval.api.rank_explained` adds them to every explanation it returns, so
``rank``'s text, ``rank --json`` and the API read the same fields. The curve is the funnel's replay
(:mod:`modelseek.retrieval.funnel.curve`); the funnel ranks through :mod:`modelseek.retrieval.ranking`, below the
API."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from .data.task import Criticality
from .funnel.curve import budget_curve

if TYPE_CHECKING:
    from .api import RankResult

Result = TypeVar("Result", bound="RankResult")


def add_verdicts(result: Result) -> Result:
    """``result`` with :func:`with_verdicts` on each explanation (the budget curve replayed once per tier)."""
    curves: dict[str, dict[str, Any]] = {}
    result.explanations = {t: with_verdicts(ex, curves) for t, ex in result.explanations.items()}
    return result


def with_verdicts(ex: dict[str, Any], curves: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """An explanation that predicts criticality and the top-1 regret, with what ``rank`` concludes from them:

    * ``regret_rule``: the tier the regret rule alone gives (:meth:`Criticality.from_regret` of the expected
      regret), and whether it is the predicted tier;
    * ``budget_curve``: what fine-tuning the top k buys on the shipped history's tasks of the predicted tier
      (:func:`modelseek.retrieval.funnel.curve.budget_curve`: per k, expected nDCG@5 with its interval and the regret).

    ``curves`` memoises the curve per tier. Other explanations are returned as they are."""
    if "criticality" not in ex or "regret_top1" not in ex:
        return ex
    tier = ex["criticality"]["tier"]
    rule = Criticality.from_regret(ex["regret_top1"]["expected"]).value
    curves = {} if curves is None else curves
    if tier not in curves:
        m = budget_curve(tier=tier)
        curves[tier] = {"tier": tier, "tasks": int(m.tasks), "noise": float(m.noise),
                        "points": [{k: p[k] for k in ("k", "ndcg@5", "ndcg@5_low", "ndcg@5_high", "regret")}
                                   for p in m.curve]}
    return {**ex, "regret_rule": {"tier": rule, "agrees": rule == tier}, "budget_curve": curves[tier]}


__all__ = ["add_verdicts", "with_verdicts"]
