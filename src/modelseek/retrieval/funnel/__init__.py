"""A budgeted funnel: "I have 4 GPU-hours: which models should I look at, and which should I fine-tune?"

    from modelseek import select
    res = select("my-data.csv", "candidates.txt", budget="4h", out="funnel-out")
    res.run          # a TREC run: fine-tuned first (by validation F1), then the estimators', then the prior
    res.finetuned    # the fine-tuned candidates' validation and test F1

Stages, plan and resumption: :mod:`.run`; the plan: :mod:`.plan`; costs: :mod:`.costs`; budgets: :mod:`.budget`;
what a budget buys, replayed on recorded results: :mod:`.replay` (``modelseek replay``: the replay loop and its
scores, over :mod:`.table` — the recorded table and its splits —, :mod:`.priors`, :mod:`.orders` — the plain
orders, their names and reliabilities —, :mod:`.joint` — the sequential policy's Gaussian — and :mod:`.scoring` —
one split's metrics) and :mod:`.curve` (the measured reliabilities and curve the plan
and the answer use); the policy ``select`` walks, chosen by replay: :mod:`.policy`.
"""

from .budget import format_seconds, parse_budget
from .costs import CostTable, MeasuredCosts, ModelCost
from .curve import Measured, budget_curve, measure, summarize
from .plan import Plan, Reliability, plan_funnel
from .pools import load_any_pool, read_id_list
from .replay import replay
from .run import FunnelResult, select

__all__ = ["CostTable", "FunnelResult", "Measured", "MeasuredCosts", "ModelCost", "Plan", "Reliability",
           "budget_curve", "format_seconds", "load_any_pool", "measure", "parse_budget", "plan_funnel",
           "read_id_list", "replay", "select", "summarize"]
