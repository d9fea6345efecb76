"""Tournaments: every pair of models duels on every task; results, scores and the leaderboard table."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..core.errors import InputError
from ..core.progress import progress_bar
from .config import LeaderboardConfig
from .copies import answer_vectors, copy_groups
from .engine import Settings, profiles, pvalues
from .scoring import ALPHA, MAX_COMPETITORS, adjusted, win_scores
from .submission import Submission, check_distinct_models, check_sample_counts


@dataclass
class TournamentResult:
    models: list[str]
    config: LeaderboardConfig
    pvalues: dict[str, np.ndarray]          # task -> models x models (raw, unadjusted)
    scores: dict[str, dict[str, float]]
    raw: dict[str, dict[str, float]] = field(default_factory=dict)  # model -> task -> reported metric
    alpha: float = ALPHA
    fdr: bool = False
    copies: dict[str, list[str]] = field(default_factory=dict)   # model -> its family's other members

    def duels(self) -> list[dict]:
        """Every ordered pair on every task: ``{"task", "a", "b", "significant", "p_value"}`` (adjusted if fdr)."""
        p = adjusted(self.pvalues, self.config.task_ids, self.fdr)
        out = []
        for t in self.config.task_ids:
            P = p[t]
            for i, a in enumerate(self.models):
                for j, b in enumerate(self.models):
                    if i != j:
                        out.append({"task": t, "a": a, "b": b, "significant": bool(P[i, j] < self.alpha),
                                    "p_value": float(P[i, j])})
        return out

    def to_dict(self) -> dict:
        return {"duels": self.duels(), "scores": self.scores, "near_copies": self.copies}

    def table(self, level: str = "overall"):
        """A pandas leaderboard: one row per model, sorted by overall score; ``level`` 'overall' shows
        overall + categories, 'tasks' adds every task, a category name shows that category's tasks."""
        from .leaderboard import leaderboard_frame  # lazy: pandas

        return leaderboard_frame(self.scores, self.raw, self.config, level)


def tournament(subs: list[Submission], config: LeaderboardConfig | None = None, settings: Settings = Settings(),
               alpha: float = ALPHA, fdr: bool = False, max_competitors: int = MAX_COMPETITORS,
               progress: bool = False) -> TournamentResult:
    """Run the full tournament of ``subs`` (each must cover every task of ``config``). Copies among them
    (:mod:`.copies`: a file that copies others, taken in the order of the models' names, whatever the order
    given) join the family of the one they copy and
    families count once (:mod:`.scoring`); ``copies`` of the result names them."""
    config = config or LeaderboardConfig.load()
    names = [s.model for s in subs]
    check_distinct_models(subs)                 # case, width and invisible characters do not count
    if len(subs) < 2:
        raise InputError("a tournament needs at least two submissions")
    check_sample_counts(subs, config)
    P = {}
    for t in progress_bar(config.task_ids, desc="duels", disable=not progress):
        spec = config.spec(t)
        P[t] = pvalues(spec, profiles(spec, [s.data[t] for s in subs], names, settings))
    # files carry no publication time: copies are found in the order of the models' names, so that the answer does
    # not depend on the order the files were given in (the first name of a family is its original)
    order = sorted(range(len(subs)), key=lambda i: names[i])
    canonical = copy_groups([answer_vectors(subs[i].data) for i in order])
    groups = [order[canonical[order.index(i)]] for i in range(len(subs))]
    scores = win_scores(P, names, config, alpha, max_competitors, fdr, groups)
    raw = {s.model: {t: s.raw(t) for t in config.task_ids} for s in subs}   # from the predictions
    copies = {a: [b for j, b in enumerate(names) if j != i and groups[j] == groups[i]] for i, a in enumerate(names)}
    return TournamentResult(names, config, P, scores, raw, alpha, fdr, {k: v for k, v in copies.items() if v})
