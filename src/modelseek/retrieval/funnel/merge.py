"""The expected-gain merge: the final ranking after fine-tuning ``k`` candidates, by expected official gain.

"Fine-tuned first" puts every fine-tuned candidate above every untried one. But a fine-tuned candidate far below
the best observed score is known not to reach the top grade, while an untried candidate on an easy task may well
reach it. The merge ranks ALL candidates by their expected gain (the gain of the grading, e.g. NTCIR's
``2^grade - 1`` of the normalised score):

* a fine-tuned candidate by ``E[gain | its observed score / the best observed, the level of the best observed]``;
* an untried candidate by ``E[gain | the level of the best observed]`` (the same for every untried candidate of a
  task: among themselves they keep the order they were in).

Both are **learned** on a history (:func:`learn_gains`), never a threshold: on every past task the same number of
candidates is "fine-tuned" down the history's own prior order (its recorded scores revealed, plus seed noise when
asked), and the gains that followed are averaged — the untried ones per level bin (quantiles of the best observed
score over the history's tasks), the fine-tuned ones per level bin by an increasing isotonic fit in the ratio
(:class:`sklearn.isotonic.IsotonicRegression`), over the fine-tuned ones and every other candidate counted as if
fine-tuned beside them (so that ratios the history's order never tried are learned, not extrapolated). Ties: a
fine-tuned candidate before an untried one of equal expected gain; fine-tuned ones among themselves by observed
score, then by their order; untried ones by their order.

Written by hand: two tables of conditional means (scikit-learn does the isotonic fit); no library merges
verified and unverified candidates of a selection by expected graded gain.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..data.truth import GradingScheme

#: at most this many bins of the best observed level (quantiles over the history's tasks)
LEVEL_BINS = 4
#: history tasks per level bin at least (fewer tasks: fewer bins)
TASKS_PER_BIN = 12


@dataclass(frozen=True)
class GainTables:
    """``E[gain]`` of a fine-tuned candidate by (ratio to the best observed, level) and of an untried one by level,
    learned for one number of fine-tunes ``k`` (see the module docstring)."""

    k: int
    edges: np.ndarray                      # inner edges of the level bins
    tried_x: tuple[np.ndarray, ...]        # per bin: the isotonic fit's ratio knots
    tried_y: tuple[np.ndarray, ...]        # per bin: its expected gains there
    untried: np.ndarray                    # per bin: the mean gain of an untried candidate
    tasks: int

    def _bins(self, level: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.edges, level, side="right")

    def tried_gain(self, ratio: np.ndarray, level: np.ndarray) -> np.ndarray:
        ratio, level = np.broadcast_arrays(np.asarray(ratio, float), np.asarray(level, float))
        out = np.zeros(ratio.shape)
        b = self._bins(level)
        for i, (x, y) in enumerate(zip(self.tried_x, self.tried_y)):
            sel = b == i
            if sel.any():
                out[sel] = np.interp(ratio[sel], x, y)
        return out

    def untried_gain(self, level: np.ndarray) -> np.ndarray:
        return self.untried[self._bins(np.asarray(level, float))]

    def to_dict(self, exact: bool = False) -> dict:
        """As JSON holds it: rounded to 6 decimals, or with ``exact`` every float as it is (what
        :meth:`from_dict` reads back bit for bit: a shipped policy ranks exactly as the tables it was chosen with)."""
        r = (lambda v: float(v)) if exact else (lambda v: round(float(v), 6))
        return {"k": self.k, "tasks": self.tasks, "level_edges": [r(e) for e in self.edges],
                "untried": [r(u) for u in self.untried],
                "tried": [{"ratio": [r(v) for v in x], "gain": [r(v) for v in y]}
                          for x, y in zip(self.tried_x, self.tried_y)]}

    @classmethod
    def from_dict(cls, d: dict) -> GainTables:
        return cls(k=int(d["k"]), edges=np.array(d["level_edges"], float),
                   tried_x=tuple(np.array(t["ratio"], float) for t in d["tried"]),
                   tried_y=tuple(np.array(t["gain"], float) for t in d["tried"]),
                   untried=np.array(d["untried"], float), tasks=int(d["tasks"]))


def true_gains(scores: np.ndarray, scheme: GradingScheme = GradingScheme.NTCIR) -> np.ndarray:
    """The gain of every recorded score of a (tasks x models) table (NaN: no result, gain 0): the grading's
    gain of the score over the task's best."""
    s = np.asarray(scores, float)
    ok = np.isfinite(s)
    best = np.max(np.where(ok, s, -np.inf), axis=1, keepdims=True)
    norm = np.where(ok, s, 0.0) / np.where(best > 0, best, 1.0)
    g = scheme.gain_array(scheme.grade_array(norm.ravel())).reshape(s.shape)
    return np.where(ok, g, 0.0)


def ratio_to_best(observed: np.ndarray, best: np.ndarray) -> np.ndarray:
    """``observed / best`` (1 where the best is not positive and the score equals it, 0 below it)."""
    best = np.asarray(best, float)
    return np.where(best > 0, observed / np.where(best > 0, best, 1.0), np.where(observed >= best, 1.0, 0.0))


def learn_gains(scores: np.ndarray, order: np.ndarray, k: int, scheme: GradingScheme = GradingScheme.NTCIR,
                noise: float = 0.0, seed: int = 0, gains: np.ndarray | None = None) -> GainTables:
    """The gain tables for ``k`` fine-tunes from a history: ``scores`` (tasks x models, NaN where a model has no
    result), ``order`` (per task, candidate indices in the order they would be fine-tuned), ``gains`` (default:
    :func:`true_gains` under ``scheme``); with ``noise``, the revealed scores carry Gaussian seed noise of that
    sd (one draw from ``numpy.random.default_rng(seed)``)."""
    from sklearn.isotonic import IsotonicRegression  # lazy: sklearn

    s = np.asarray(scores, float)
    g = true_gains(s, scheme) if gains is None else np.asarray(gains, float)
    ok = np.isfinite(s)
    n = s.shape[0]
    rng = np.random.default_rng(seed)
    obs = np.where(ok, s, -np.inf) + (rng.normal(0.0, noise, s.shape) if noise > 0 else 0.0)
    order = np.asarray(order)
    # per task: the first k scored candidates of its order are the fine-tuned ones
    ordered_ok = np.take_along_axis(ok, order, axis=1)
    picked_sorted = ordered_ok & (np.cumsum(ordered_ok, axis=1) <= max(int(k), 1))
    picked = np.zeros_like(ok)
    np.put_along_axis(picked, order, picked_sorted, axis=1)
    level = np.max(np.where(picked, obs, -np.inf), axis=1)
    n_bins = int(max(1, min(LEVEL_BINS, n // TASKS_PER_BIN)))
    edges = np.quantile(level, np.arange(1, n_bins) / n_bins) if n_bins > 1 else np.zeros(0)
    edges = np.unique(edges)
    task_bin = np.searchsorted(edges, level, side="right")
    # a fine-tuned candidate's sample: its ratio to the best observed and that level, with every other scored
    # candidate counted too as if it had been fine-tuned beside the k (its own score then in the best), so that
    # the table covers the ratios the history's own order never tried
    as_tried = np.maximum(level[:, None], np.where(ok, obs, -np.inf))
    ratio = ratio_to_best(np.where(ok, obs, 0.0), np.where(picked, level[:, None], as_tried))
    t_level = np.where(picked, level[:, None], as_tried)
    t_bin = np.searchsorted(edges, t_level, side="right")
    xs, ys, untried = [], [], []
    overall_untried = g[ok & ~picked].mean() if (ok & ~picked).any() else 0.0
    for b in range(len(edges) + 1):
        rows = task_bin == b
        t_mask = ok & (t_bin == b)
        u_mask = ok & ~picked & rows[:, None]
        untried.append(float(g[u_mask].mean()) if u_mask.any() else float(overall_untried))
        if t_mask.any():
            iso = IsotonicRegression(increasing=True, out_of_bounds="clip").fit(ratio[t_mask], g[t_mask])
            xs.append(np.asarray(iso.X_thresholds_, float))
            ys.append(np.asarray(iso.y_thresholds_, float))
        else:
            xs.append(np.array([0.0, 1.0]))
            ys.append(np.array([0.0, 0.0]))
    return GainTables(k=int(k), edges=edges, tried_x=tuple(xs), tried_y=tuple(ys), untried=np.array(untried),
                      tasks=int(n))


def merged_final(base_rank: np.ndarray, picked: np.ndarray, observed: np.ndarray, scored: np.ndarray,
                 tables: GainTables) -> np.ndarray:
    """Ranking scores (higher first; rows are tasks) of the merge: ``base_rank`` is each candidate's place in the
    order (0 = first), ``picked`` marks the fine-tuned ones, ``observed`` their observed scores, ``scored`` the
    candidates with a result on the task (the others go last). A row with nothing fine-tuned keeps its order."""
    base_rank = np.atleast_2d(base_rank)
    picked = np.atleast_2d(picked) & np.atleast_2d(scored)
    observed = np.atleast_2d(observed)
    scored = np.atleast_2d(scored)
    any_pick: np.ndarray = np.asarray(picked.any(axis=1))
    level = np.max(np.where(picked, observed, -np.inf), axis=1)
    level = np.where(any_pick, level, 0.0)
    key = np.where(picked, tables.tried_gain(ratio_to_best(np.where(picked, observed, 0.0), level[:, None]),
                                             np.broadcast_to(level[:, None], picked.shape)),
                   tables.untried_gain(level)[:, None])
    key = np.where(scored, key, -np.inf)
    third = np.where(picked, -observed, base_rank.astype(float))
    # equal observed scores of fine-tuned ones: the order walked breaks the tie (as fine-tuned first does)
    merged = np.lexsort((base_rank, third, (~picked).astype(int), -key), axis=1)
    final = np.empty(base_rank.shape, float)
    rows = np.arange(len(final))[:, None]
    final[rows, merged] = -np.arange(base_rank.shape[1], dtype=float)[None, :]
    return np.where(any_pick[:, None], final, -base_rank.astype(float))


def merge_ranking(order: Sequence[str], observed: dict[str, float], tables: GainTables) -> list[str]:
    """The merge of one task: ``order`` (every candidate, the order fine-tuning walked), ``observed`` (the
    fine-tuned ones' validation scores)."""
    ids = list(order)
    rank = np.arange(len(ids))
    picked = np.array([c in observed for c in ids])
    obs = np.array([float(observed.get(c, -np.inf)) for c in ids])
    final = merged_final(rank[None, :], picked[None, :], obs[None, :], np.ones((1, len(ids)), dtype=bool),
                         tables)[0]
    return [ids[i] for i in np.lexsort((rank, -final))]


__all__ = ["GainTables", "learn_gains", "merge_ranking", "merged_final", "ratio_to_best", "true_gains"]
