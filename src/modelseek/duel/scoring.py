"""Win scores (BenCzechMark): task -> category -> overall.

On a task, model A *wins* its duel against B when the one-tailed p-value of "A better than B" is below
``alpha`` (0.05). A's task win score is ``wins / competitors x 100``; its competitors are the other models,
at most the top ``max_competitors`` (50) by overall score (computed first against every other model). A
category score is the mean over its tasks, the overall score the mean over categories. With
``fdr=True`` each ordered pair's p-values are Benjamini-Hochberg adjusted across tasks first.

**Families count once** (``groups``): an entry that copies another (:mod:`.copies`: published anyway by a
reviewer, or found among the files of an offline tournament) joins that entry's family, whose **original** is its
first member in ``models`` order (publication order). Then

* every entry's competitors are the originals (and entries without a family) outside its own family: the duels of
  anyone against a family are the duels against its original, and members of a family do not duel each other;
* a copy's task scores are at most its original's (then its categories and overall are recomputed);
* ranks are taken among originals and entries without a family (:func:`ranks` with ``counted``): a copy shares
  the rank its score would have among them and takes no rank from anyone.

So adding copies (an "army" of sparring partners of one model, or an exact copy of the leader) changes no other
entry's score or rank, and a copy never ranks above its original. Without groups every model is its own original.
**Ties** are never broken by name: models with equal overall scores share a rank (:func:`ranks`), and the top
``max_competitors`` include every model tied with the last one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..core.stats.multitest import benjamini_hochberg
from ..core.errors import InputError
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


def originals(groups: Sequence[int] | None, m: int) -> np.ndarray:
    """Each model's original: the model its family's label names (labels are the original's index, as
    :func:`.copies.copy_groups` and :func:`.copies.groups_from_pairs` give them), else the first model of its family
    (its own index without ``groups``)."""
    if groups is None:
        return np.arange(m)
    first: dict[int, int] = {}
    return np.array([g if 0 <= g < m and groups[g] == g else first.setdefault(g, i) for i, g in enumerate(groups)])


def _scores(wins: dict[str, np.ndarray], config: LeaderboardConfig, competitors: np.ndarray,
            orig: np.ndarray) -> np.ndarray:
    """models x (tasks, categories, overall) matrix; ``competitors`` is a boolean models x models mask; a copy's
    task scores are capped at its original's (``orig``)."""
    tasks = config.task_ids
    w = competitors.astype(float)
    count = w.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        task_scores = np.stack([np.where(count > 0, (wins[t] * w).sum(axis=1) / count * 100.0, 0.0)
                                for t in tasks], axis=1)
    task_scores = np.minimum(task_scores, task_scores[orig])
    cats = [np.mean(task_scores[:, [tasks.index(t) for t in config.tasks_of(c)]], axis=1) for c in config.categories]
    cat_scores = np.stack(cats, axis=1)
    return np.concatenate([task_scores, cat_scores, cat_scores.mean(axis=1, keepdims=True)], axis=1)


class Scores(dict):
    """``{model: {task: score, ..., "overall": score}}`` with ``copy_of``: each copy's original (:func:`ranks`
    counts only the others)."""

    copy_of: dict[str, str]


def win_scores(pvals: Mapping[str, np.ndarray], models: list[str], config: LeaderboardConfig, alpha: float = ALPHA,
               max_competitors: int = MAX_COMPETITORS, fdr: bool = False,
               groups: Sequence[int] | None = None) -> dict[str, dict[str, float]]:
    """``{model: {task: score, ..., category: score, ..., "overall": score}}`` from ``P[task][i, j]``;
    ``groups[i]``: model i's family (see the module docstring), ``None``: every model its own."""
    check_alpha(alpha)
    m = len(models)
    p = adjusted(pvals, config.task_ids, fdr)
    wins = {t: np.nan_to_num(p[t], nan=1.0) < alpha for t in config.task_ids}
    orig = originals(groups, m)
    is_orig = orig == np.arange(m)
    competitors = is_orig[None, :] & (orig[:, None] != orig[None, :])
    table = _scores(wins, config, competitors, orig)
    if int(is_orig.sum()) - 1 > max_competitors:
        overall = np.round(table[:, -1], 9)
        cut = np.sort(overall[is_orig])[::-1][max_competitors - 1]
        top = overall >= cut                    # every model tied with the last one stays: no tie broken by name
        competitors = competitors & top[None, :]
        table = _scores(wins, config, competitors, orig)
    keys = [*config.task_ids, *config.categories, "overall"]
    out = Scores({models[i]: {k: float(table[i, c]) for c, k in enumerate(keys)} for i in range(m)})
    out.copy_of = {models[i]: models[int(orig[i])] for i in range(m) if not is_orig[i]}
    return out


def ranks(overall: Sequence[float], counted: Sequence[bool] | None = None) -> list[int]:
    """Competition ranks of overall scores (1 for the best; equal scores, to 9 decimals, share the better rank);
    ``counted``: the scores that take ranks (a family's copies do not: every score is ranked among the others)."""
    vals = np.round(np.asarray(overall, dtype=float), 9)
    keep = vals if counted is None else vals[np.asarray(counted, dtype=bool)]
    return [1 + int((keep > v).sum()) for v in vals]
