"""Win scores (BenCzechMark): task -> category -> overall.

On a task, model A *wins* its duel against B when the one-tailed p-value of "A better than B" is below
``alpha`` (0.05). A's task win score is ``wins / competitors x 100``; its competitors are the other models,
at most the top ``max_competitors`` (50) by overall score (computed first against every other model). A
category score is the mean over its tasks, the overall score the mean over categories. With
``fdr=True`` each ordered pair's p-values are Benjamini-Hochberg adjusted across tasks first.

**Near-copies count once** (``groups``): models whose predictions are near-copies of each other
(:mod:`.copies`) form a group, and a model's duels against a group count as one opponent, the mean of its
results against the group's members. Four clones of one model are one opponent, so they cannot lift (or sink)
anyone by being beaten four times. Without groups every competitor weighs one.

**Ties** are never broken by name: models with equal overall scores share a rank (:func:`ranks`), and the top
``max_competitors`` include every model tied with the last one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

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


def _weights(competitors: np.ndarray, groups: np.ndarray | None) -> np.ndarray:
    """Each competitor's weight: 1, or 1 / (members of its near-copy group among the row's competitors)."""
    w = competitors.astype(float)
    if groups is None:
        return w
    labels, index = np.unique(groups, return_inverse=True)
    onehot = np.zeros((len(groups), len(labels)))
    onehot[np.arange(len(groups)), index] = 1.0
    per_group = w @ onehot                      # row i: how many of each group are i's competitors
    members = per_group[:, index]               # row i, column j: j's group's members among i's competitors
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(competitors, 1.0 / np.maximum(members, 1), 0.0)


def _scores(wins: dict[str, np.ndarray], config: LeaderboardConfig, competitors: np.ndarray,
            groups: np.ndarray | None = None) -> np.ndarray:
    """models x (tasks, categories, overall) matrix; ``competitors`` is a boolean models x models mask."""
    tasks = config.task_ids
    w = _weights(competitors, groups)
    count = w.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        task_scores = np.stack([np.where(count > 0, (wins[t] * w).sum(axis=1) / count * 100.0, 0.0)
                                for t in tasks], axis=1)
    cats = [np.mean(task_scores[:, [tasks.index(t) for t in config.tasks_of(c)]], axis=1) for c in config.categories]
    cat_scores = np.stack(cats, axis=1)
    return np.concatenate([task_scores, cat_scores, cat_scores.mean(axis=1, keepdims=True)], axis=1)


def win_scores(pvals: Mapping[str, np.ndarray], models: list[str], config: LeaderboardConfig, alpha: float = ALPHA,
               max_competitors: int = MAX_COMPETITORS, fdr: bool = False,
               groups: Sequence[int] | None = None) -> dict[str, dict[str, float]]:
    """``{model: {task: score, ..., category: score, ..., "overall": score}}`` from ``P[task][i, j]``;
    ``groups[i]``: model i's near-copy group (see the module docstring), ``None``: every model its own."""
    check_alpha(alpha)
    m = len(models)
    p = adjusted(pvals, config.task_ids, fdr)
    wins = {t: np.nan_to_num(p[t], nan=1.0) < alpha for t in config.task_ids}
    g = None if groups is None or len(set(groups)) == len(groups) else np.asarray(groups)
    competitors = ~np.eye(m, dtype=bool)
    table = _scores(wins, config, competitors, g)
    if m - 1 > max_competitors:
        overall = np.round(table[:, -1], 9)
        cut = np.sort(overall)[::-1][max_competitors - 1]
        top = overall >= cut                    # every model tied with the last one stays: no tie broken by name
        competitors = competitors & top[None, :]
        table = _scores(wins, config, competitors, g)
    keys = [*config.task_ids, *config.categories, "overall"]
    return {models[i]: {k: float(table[i, c]) for c, k in enumerate(keys)} for i in range(m)}


def ranks(overall: Sequence[float]) -> list[int]:
    """Competition ranks of overall scores (1 for the best; equal scores, to 9 decimals, share the better rank)."""
    vals = np.round(np.asarray(overall, dtype=float), 9)
    return [1 + int((vals > v).sum()) for v in vals]
