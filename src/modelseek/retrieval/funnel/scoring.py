"""Scoring one split of a replay: every policy's final ranking after k fine-tunes (fine-tuned first, the
expected-gain merge, or the sequential order's), per noise draw and task, by the official grading's nDCG@1/3/5 and
the regret of the final top-1."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..data.truth import GradingScheme
from ..metrics.ndcg import ideal_dcg, ndcg
from .joint import Acquisition, JointModel
from .merge import merged_final
from .orders import SEQUENTIAL, merge_name
from .table import Split, Table, _ranks_of, _scored_first

_TOP = 1e6  # fine-tuned candidates rank above every other (observed scores are far below this)


METRICS = ("ndcg@1", "ndcg@3", "ndcg@5", "regret")


def _score_final(final: np.ndarray, true: np.ndarray, gains: np.ndarray, idcg: dict[int, np.ndarray]
                 ) -> dict[str, np.ndarray]:
    """Metrics of the rankings by decreasing ``final`` (rows: draws x tasks flattened alike in all arrays)."""
    out = {f"ndcg@{c}": ndcg(final, gains, c, idcg[c]) for c in (1, 3, 5)}
    top = np.argmax(final, axis=1)
    best = true.max(axis=1)
    out["regret"] = 1.0 - true[np.arange(len(true)), top] / np.where(best > 0, best, 1.0)
    return out


def _final_scores(order_rank: np.ndarray, picks: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """Ranking scores: the picked candidates first by observed score, then the rest by ``order_rank``
    (0 = first)."""
    final = -order_rank.astype(float)
    rows = np.arange(len(final))[:, None]
    if picks.shape[1]:
        final[rows, picks] = _TOP + observed[rows, picks]
    return final


def _gains(table: Table, rows: np.ndarray, scheme: GradingScheme = GradingScheme.NTCIR
           ) -> tuple[np.ndarray, dict[int, np.ndarray]]:
    """Gains of the tasks' candidates under ``scheme`` (the official NTCIR grading by default: grades of normalized
    score) and their ideal DCG@1/3/5."""
    s = scheme
    true = table.filled()[rows]
    best = true.max(axis=1, keepdims=True)
    norm = np.where(np.isfinite(true), true, 0.0) / np.where(best > 0, best, 1.0)
    gains = np.where(np.isfinite(true), s.gain_array(s.grade_array(norm.ravel())).reshape(norm.shape), 0.0)
    return gains, {c: ideal_dcg(gains, c) for c in (1, 3, 5)}


def _replay_split(table: Table, split: Split, orders: dict[str, np.ndarray], noise_draws: np.ndarray,
                  finetunes: Sequence[int], sequential_from: str | None, noise: float,
                  acquisition: Acquisition = Acquisition.BLEND, trust: float = 0.0,
                  scheme: GradingScheme = GradingScheme.NTCIR, merge_from: str | None = None,
                  tables: dict[int, Any] | None = None) -> dict[str, dict[int, dict[str, np.ndarray]]]:
    """Every policy's per-(draw, task) metrics on the split's test tasks (draws x tasks arrays); with
    ``merge_from``, also that order ranked by the expected-gain merge with ``tables`` (per k)."""

    rows = split.test
    n_rep, n, m = noise_draws.shape[0], len(rows), len(table.model_ids)
    orders = {name: _scored_first(o, table.scored[rows]) for name, o in orders.items()}
    true = np.broadcast_to(table.filled()[rows], (n_rep, n, m))
    observed = true + noise_draws
    gains, idcg = _gains(table, rows, scheme)
    flat = lambda a: a.reshape(n_rep * n, m)  # noqa: E731
    g_all = flat(np.broadcast_to(gains, (n_rep, n, m)))
    i_all = {c: np.tile(v, n_rep) for c, v in idcg.items()}
    out: dict[str, dict[int, dict[str, np.ndarray]]] = {}
    for name, order in orders.items():
        o = np.broadcast_to(order, (n_rep, n, m))
        rank_of = flat(_ranks_of(flat(o)))
        out[name] = {}
        for k in finetunes:
            kk = min(k, m)
            final = _final_scores(rank_of, flat(o)[:, :kk], flat(observed))
            out[name][k] = {key: v.reshape(n_rep, n) for key, v in
                            _score_final(final, flat(true), g_all, i_all).items()}
    if merge_from is not None and tables is not None:
        o = np.broadcast_to(orders[merge_from], (n_rep, n, m))
        rank_of = flat(_ranks_of(flat(o)))
        scored = flat(np.broadcast_to(table.scored[rows], (n_rep, n, m)))
        merged: dict[int, dict[str, np.ndarray]] = {}
        for k in finetunes:
            kk = min(k, m)
            picked = np.zeros((n_rep * n, m), dtype=bool)
            np.put_along_axis(picked, flat(o)[:, :kk], True, axis=1)
            final = merged_final(rank_of, picked, flat(observed), scored, tables[k]) if k > 0 \
                else -rank_of.astype(float)
            merged[k] = {key: v.reshape(n_rep, n) for key, v in
                         _score_final(final, flat(true), g_all, i_all).items()}
        out[merge_name(merge_from)] = merged
    if sequential_from is not None and acquisition is Acquisition.BLEND and trust == 0:
        out[SEQUENTIAL] = out[sequential_from]  # weight 0: the plain top-k exactly (no joint model to fit)
    elif sequential_from is not None:
        out[SEQUENTIAL] = _sequential_split(table, split, orders[sequential_from], observed, true, gains, idcg,
                                            finetunes, noise, acquisition, trust)
    return out


def _sequential_split(table: Table, split: Split, base: np.ndarray, observed: np.ndarray, true: np.ndarray,
                      gains: np.ndarray, idcg: dict[int, np.ndarray], finetunes: Sequence[int], noise: float,
                      acquisition: Acquisition, trust: float) -> dict[int, dict[str, np.ndarray]]:
    """The sequential policy's per-(draw, task) metrics (see :class:`JointModel`)."""
    hist = Table.from_truth(split.history, table.model_ids, what="history", unseen=split.cross_fitted)
    model = JointModel(hist.imputed(), noise)
    scored = table.scored[split.test]
    n_rep, n, m = observed.shape
    steps = min(max(finetunes), m)
    finals = {k: np.zeros((n_rep, n, m)) for k in finetunes}
    base_rank = _ranks_of(base)
    for r in range(n_rep):
        for i in range(n):
            picks, scores = model.walk(base_rank[i], observed[r, i], steps, acquisition, trust, scored[i])
            for k in finetunes:
                kk = min(k, m)
                # nothing fine-tuned yet: the plain order (the Gaussian's unconditional mean is not a better prior)
                rest = base_rank[i] if kk == 0 else _ranks_of(np.argsort(-scores[kk], kind="stable")[None, :])[0]
                finals[k][r, i] = _final_scores(rest[None, :], np.array([picks[:kk]], dtype=int),
                                                observed[r, i][None, :])[0]
    out = {}
    for k in finetunes:
        res = _score_final(finals[k].reshape(n_rep * n, m), true.reshape(n_rep * n, m),
                           np.tile(gains, (n_rep, 1)), {c: np.tile(v, n_rep) for c, v in idcg.items()})
        out[k] = {key: v.reshape(n_rep, n) for key, v in res.items()}
    return out
