"""What ``modelseek rank`` concludes from an explained ranking, in the library: :func:`rank_explained` is
:func:`modelseek.api.rank_explained` with, in each explanation that predicts criticality and the top-1 regret
(``adaptive``'s, the default's), the regret rule's tier and the budget curve. ``rank``'s text, ``rank --json`` and
this function read the same fields. It sits above :mod:`modelseek.funnel` (the curve is the funnel's replay),
which itself ranks through :mod:`modelseek.api`."""

from __future__ import annotations

from typing import Any

from .api import RankResult
from .api import rank_explained as _rank_explained
from .data.task import Criticality
from .funnel.curve import budget_curve


def rank_explained(*args: Any, **kwargs: Any) -> RankResult:
    """:func:`modelseek.api.rank_explained` (same arguments) with :func:`with_verdicts` on every explanation."""
    return add_verdicts(_rank_explained(*args, **kwargs))


def add_verdicts(result: RankResult) -> RankResult:
    """``result`` with :func:`with_verdicts` on each explanation (the budget curve replayed once per tier)."""
    curves: dict[str, dict[str, Any]] = {}
    result.explanations = {t: with_verdicts(ex, curves) for t, ex in result.explanations.items()}
    return result


def with_verdicts(ex: dict[str, Any], curves: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """An explanation that predicts criticality and the top-1 regret, with what ``rank`` concludes from them:

    * ``regret_rule``: the tier the regret rule alone gives (:meth:`Criticality.from_regret` of the expected
      regret), and whether it is the predicted tier;
    * ``budget_curve``: what fine-tuning the top k buys on the shipped history's tasks of the predicted tier
      (:func:`modelseek.funnel.curve.budget_curve`: per k, expected nDCG@5 with its interval and the regret).

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


__all__ = ["add_verdicts", "rank_explained", "with_verdicts"]
