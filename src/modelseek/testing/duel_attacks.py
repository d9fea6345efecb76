"""A copier's uploads, built from a published submission (dicts in the compiled format), for the tests and the
copy-detection benchmark: answers flipped, a copy disguised by transforms the metrics cannot see, a task-by-task
mix, and "sparring partners" (copies with answers made wrong, which their source beats)."""

from __future__ import annotations

import copy

import numpy as np

from ..duel.config import LeaderboardConfig
from .duel import recompute_results


def _named(d: dict, name: str) -> dict:
    out = copy.deepcopy(d)
    out["metadata"]["model"] = name
    out["metadata"].pop("model_name", None)
    return out


def flipped(d: dict, config: LeaderboardConfig, name: str, share: float, seed: int, worse: bool = False) -> dict:
    """``d`` with ``share`` of each task's samples changed: answers flipped, class probabilities rotated, ROUGE
    mirrored, a document's log-likelihood halved. ``worse``: only correct answers made wrong (ROUGE lowered by 0.3,
    log-likelihood 1.5 times lower, probabilities rotated): a sparring partner its source beats."""
    out = _named(d, name)
    rng = np.random.default_rng(seed)
    for t in config.task_ids:
        recs = out["predictions"][t]
        metric = config.spec(t).metric.value
        k = max(1, round(share * len(recs)))
        pool = [i for i, r in enumerate(recs) if not worse or r[metric] in (1, [1])] if metric in (
            "acc", "exact_match") else list(range(len(recs)))
        for i in rng.choice(pool, size=min(k, len(pool)), replace=False):
            v = recs[i][metric]
            if metric in ("acc", "exact_match"):
                recs[i][metric] = 0 if worse else 1 - v
            elif metric == "avg_mcauroc":
                recs[i][metric] = [v[0], v[1][1:] + v[1][:1]]
            elif metric == "word_perplexity":
                recs[i][metric] = [v[0] * (1.5 if worse else 0.5), v[1]]
            else:
                recs[i][metric] = max(0.0, v - 0.3) if worse else 1.0 - v
    return recompute_results(out, config)


def disguised(d: dict, config: LeaderboardConfig, name: str, seed: int) -> dict:
    """``d`` with every metric unchanged: answers identical, class probabilities sharpened (cubed and renormalised:
    each class column keeps its order on two-class tasks, so the AUROC is the same), the documents'
    log-likelihoods shuffled between documents (the same total, so the same perplexity)."""
    out = _named(d, name)
    rng = np.random.default_rng(seed)
    for t in config.task_ids:
        recs = out["predictions"][t]
        metric = config.spec(t).metric.value
        if metric == "avg_mcauroc":
            for r in recs:
                p = np.asarray(r[metric][1]) ** 3
                r[metric] = [r[metric][0], [float(v) for v in np.round(p / p.sum(), 12)]]
        elif metric == "word_perplexity":
            ll = [r[metric][0] for r in recs]
            for r, v in zip(recs, rng.permutation(ll)):
                r[metric] = [float(v), r[metric][1]]
    return recompute_results(out, config)


def task_mix(parts: dict[str, dict], config: LeaderboardConfig, name: str) -> dict:
    """An upload taking each task's predictions from the submission ``parts[task]``."""
    first = next(iter(parts.values()))
    out = _named(first, name)
    for t in config.task_ids:
        out["predictions"][t] = copy.deepcopy(parts[t]["predictions"][t])
    return recompute_results(out, config)
