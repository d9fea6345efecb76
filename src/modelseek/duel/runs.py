"""The duel leaderboard over model-retrieval runs.

Each run (a method) is a model; its per-topic nDCG@5 comes from the shared evaluator
(:func:`modelseek.evaluate`). Categories are the criticality tiers of the ground truth (low, medium, high):
in each tier the runs duel by a paired t-test across the tier's topics (one-tailed, alpha 0.05), a run's
tier score is the share of the other runs it beats, and the overall score is the mean over tiers. The raw
value beside each tier score is the tier's mean nDCG@5.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..retrieval.data.run import Run
from ..retrieval.data.truth import GroundTruth
from ..core.errors import InputError
from ..retrieval.evaluation import evaluate
from .config import LeaderboardConfig, Metric
from .engine import Settings
from .scoring import ALPHA, MAX_COMPETITORS
from .submission import Submission, TaskSamples
from .tournament import TournamentResult, tournament

TIERS = ("low", "medium", "high")


def tier_task(tier: str) -> str:
    return f"{tier}-criticality topics"


def runs_tournament(runs: Sequence[Run], truth: GroundTruth, scheme: str = "ntcir", alpha: float = ALPHA,
                    fdr: bool = False, max_competitors: int = MAX_COMPETITORS,
                    sources: Sequence[str] | None = None) -> TournamentResult:
    """Duel leaderboard of ``runs`` (distinct run ids) on ``truth``'s topics, categories = criticality tiers.

    ``sources``: the file of each run; a run that cannot be scored against ``truth`` is an error naming it."""
    ids = [r.run_id for r in runs]
    if len(set(ids)) != len(ids):
        raise InputError(f"run ids must differ: {ids}")
    reports = []
    for i, r in enumerate(runs):
        try:
            reports.append(evaluate(r, truth, ["ndcg@5"], scheme))
        except InputError as exc:
            if exc.path is not None or sources is None:
                raise
            raise InputError(exc.message, path=sources[i], field=exc.field) from None
    per_topic = reports[0].per_topic
    tiers = [t for t in TIERS if (per_topic["tier"] == t).any()]
    config = LeaderboardConfig.from_dict({"tasks": {tier_task(t): {"category": t, "metric": Metric.NDCG5.value,
                                                                   "name": f"nDCG@5, {t} tier"} for t in tiers}})
    subs = []
    for rep in reports:
        df = rep.per_topic
        data, results = {}, {}
        for t in tiers:
            vals = df.loc[df["tier"] == t, "ndcg@5"].to_numpy(dtype=float)
            data[tier_task(t)] = TaskSamples(Metric.NDCG5, values=vals)
            results[tier_task(t)] = {"ndcg@5": float(np.mean(vals))}
        subs.append(Submission({"model": rep.run_id}, results, None, data))
    return tournament(subs, config, Settings(), alpha=alpha, fdr=fdr, max_competitors=max_competitors)
