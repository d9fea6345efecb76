"""Win scores (BenCzechMark): task -> category -> overall.

On a task, model A *wins* its duel against B when the one-tailed p-value of "A better than B" is below
``alpha`` (0.05). A's task win score is ``wins / competitors x 100``; its competitors are the other models,
at most the top ``max_competitors`` (50) by overall score (computed first against every other model). A
category score is the mean over its tasks, the overall score the mean over categories. With
``fdr=True`` each ordered pair's p-values are Benjamini-Hochberg adjusted across tasks first.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..stats.multitest import benjamini_hochberg
from ..errors import InputError
from .config import LeaderboardConfig

ALPHA = 0.05
MAX_COMPETITORS = 50


def check_alpha(alpha: float) -> float:
    """A significance level must lie strictly between 0 and 1 (``alpha`` 5 would make every duel a win)."""
    if not isinstance(alpha, (int, float)) or isinstance(alpha, bool) or not 0 < alpha < 1:
        raise InputError(f"the significance level must be in (0, 1), got {alpha!r}", field="alpha")
    return float(alpha)


def adjusted(pvals: Mapping[str, np.ndarray], tasks: list[str], fdr: bool) -> dict[str, np.ndarray]:
    if not fdr:
        return dict(pvals)
    stack = np.stack([pvals[t] for t in tasks])     # tasks x models x models
    adj = benjamini_hochberg(stack, axis=0)
    return {t: adj[k] for k, t in enumerate(tasks)}


def _scores(wins: dict[str, np.ndarray], config: LeaderboardConfig, competitors: np.ndarray) -> np.ndarray:
    """models x (tasks, categories, overall) matrix; ``competitors`` is a boolean models x models mask."""
    tasks = config.task_ids
    count = competitors.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        task_scores = np.stack([np.where(count > 0, (wins[t] & competitors).sum(axis=1) / count * 100.0, 0.0)
                                for t in tasks], axis=1)
    cats = [np.mean(task_scores[:, [tasks.index(t) for t in config.tasks_of(c)]], axis=1) for c in config.categories]
    cat_scores = np.stack(cats, axis=1)
    return np.concatenate([task_scores, cat_scores, cat_scores.mean(axis=1, keepdims=True)], axis=1)


def win_scores(pvals: Mapping[str, np.ndarray], models: list[str], config: LeaderboardConfig, alpha: float = ALPHA,
               max_competitors: int = MAX_COMPETITORS, fdr: bool = False) -> dict[str, dict[str, float]]:
    """``{model: {task: score, ..., category: score, ..., "overall": score}}`` from ``P[task][i, j]``."""
    check_alpha(alpha)
    m = len(models)
    p = adjusted(pvals, config.task_ids, fdr)
    wins = {t: np.nan_to_num(p[t], nan=1.0) < alpha for t in config.task_ids}
    competitors = ~np.eye(m, dtype=bool)
    table = _scores(wins, config, competitors)
    if m - 1 > max_competitors:
        order = sorted(range(m), key=lambda i: (-table[i, -1], models[i]))
        top = np.zeros(m, dtype=bool)
        top[order[:max_competitors]] = True
        competitors = competitors & top[None, :]
        table = _scores(wins, config, competitors)
    keys = [*config.task_ids, *config.categories, "overall"]
    return {models[i]: {k: float(table[i, c]) for c, k in enumerate(keys)} for i in range(m)}
