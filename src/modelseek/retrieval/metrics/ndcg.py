"""Normalised discounted cumulative gain at cut-off k: the one implementation.

    DCG@k  = sum_{i=1..k} gain(rel_i) / log2(i + 1)
    nDCG@k = DCG@k / IDCG@k

as in Järvelin & Kekäläinen (2002), with the NTCIR-19 Model Retrieval conventions: gain 2^rel - 1 under the
official grading (``rel`` under the paper's), the ideal ranking built from the grades of *all* candidates of
the topic (not only those in the run), documents missing from the run contribute nothing, and a topic whose
ideal DCG is 0 scores 0.

:func:`ndcg` scores many rankings at once (one row per ranking: candidates' scores and gains in columns), which
is what the learned rankers, the adaptive ranker and learned fusion need inside their search loops;
:func:`ndcg_at_k` is the same computation for one ranked list of document ids. Ties in score keep column
order (a stable sort), as the official scorer orders equal ranks by line. ``benchmarks/eval_speed.py`` and
``tests/test_ndcg.py`` check both against pytrec_eval (trec_eval's C code).
:func:`modelseek.retrieval.evaluation.evaluate`
scores whole run files by segment sums over the run's lines (no score matrix exists there) and is checked
against this module and pytrec_eval by the same tests.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from .base import Batch, Judgments, Metric, segment_sum
from ...core.kinds import register


def discounts(n: int) -> np.ndarray:
    """``1 / log2(i + 1)`` for the positions i = 1..n."""
    return 1.0 / np.log2(np.arange(2, n + 2))


def ideal_dcg(gains: np.ndarray, k: int) -> np.ndarray:
    """Ideal DCG@k of each row of ``gains`` (the gains of every judged candidate of a topic; rows may be padded
    with zeros), best gains first."""
    top = -np.sort(-np.atleast_2d(np.asarray(gains, dtype=np.float64)), axis=1)[:, :k]
    return (top * discounts(top.shape[1])).sum(axis=1)


def ndcg(scores: np.ndarray, gains: np.ndarray, k: int, idcg: np.ndarray | None = None) -> np.ndarray:
    """Per-row nDCG@k of the rankings by decreasing ``scores`` (rows x candidates).

    ``gains[r, j]`` is the gain of candidate j on row r. A NaN score marks a candidate absent from that row's
    ranking: it is placed after every present one and contributes nothing. Equal scores keep column order.
    ``idcg`` is the ideal DCG@k per row (:func:`ideal_dcg` of all the topic's judged candidates); by default it
    is computed from ``gains`` itself (when the columns are all the candidates of each topic).
    """
    if k < 1:
        raise ValueError("k must be >= 1")
    scores = np.atleast_2d(np.asarray(scores, dtype=np.float64))
    gains = np.atleast_2d(np.asarray(gains, dtype=np.float64))
    if scores.shape != gains.shape:
        raise ValueError(f"scores {scores.shape} and gains {gains.shape} differ in shape")
    absent = np.isnan(scores)
    if absent.any():
        key, present_gains = np.where(absent, np.inf, -scores), np.where(absent, 0.0, gains)
    else:
        key, present_gains = -scores, gains
    order = np.argsort(key, axis=1, kind="stable")[:, :k]
    dcg = (np.take_along_axis(present_gains, order, axis=1) * discounts(order.shape[1])).sum(axis=1)
    if idcg is None:
        idcg = ideal_dcg(gains, k)
    idcg = np.asarray(idcg, dtype=np.float64)
    return np.where(idcg > 0, dcg / np.where(idcg > 0, idcg, 1.0), 0.0)


def ndcg_at_k(ranking: Sequence[str], grades: Mapping[str, float], k: int,
              gain: Callable[[float], float]) -> float:
    """nDCG@k of one ranked list of document ids against the grades of all the topic's candidates."""
    if k < 1:
        raise ValueError("k must be >= 1")
    run_gains = np.array([gain(grades.get(d, 0)) for d in ranking], dtype=np.float64)
    idcg = ideal_dcg(np.array([gain(g) for g in grades.values()], dtype=np.float64), k)
    # the list's own order: strictly decreasing scores
    return float(ndcg(-np.arange(len(run_gains), dtype=np.float64), run_gains, k, idcg)[0])


@register("metric", name="ndcg")
class NDCG(Metric):
    """``ndcg@k``: the per-list form is :func:`ndcg_at_k`; the vectorised one sums each topic's discounted gains
    over the run's rows (a segment sum) and divides by the ideal DCG of all the topic's judged candidates,
    sorted once per ground truth."""

    cutoff = "required"

    def per_list(self, ranking: Sequence[str], j: Judgments, k: int | None) -> float:
        assert k is not None  # check() requires it
        return ndcg_at_k(ranking, j.grades, k, j.scheme.gain)

    def vectorised(self, b: Batch, k: int | None) -> np.ndarray:
        assert k is not None
        cut = b.pos < k  # only the rows within the cut-off are weighed (gains of a million rows would be 8 MB)
        dcg = segment_sum(b.seg[cut], b.scheme.gain_array(b.grade[cut]) / np.log2(b.pos[cut] + 2.0), b.W)
        idcg = _ideal_dcg_of_tasks(b, k)
        out = np.zeros(b.W)
        ok = idcg > 0
        out[ok] = dcg[ok] / idcg[ok]
        return out

    def trec_name(self, k: int | None) -> str:
        return f"ndcg_cut_{k}"


def _dcg(seg: np.ndarray, pos: np.ndarray, gains: np.ndarray, k: int, W: int) -> np.ndarray:
    cut = pos < k
    return segment_sum(seg[cut], gains[cut] / np.log2(pos[cut] + 2.0), W)


def _ideal_dcg_of_tasks(b: Batch, k: int) -> np.ndarray:
    """Ideal DCG@k of every scored topic (all its judged candidates, best gains first): one sort per ground
    truth and call, one segment sum per k."""
    cache = b.cache
    hit = cache.get(("idcg", k))
    if hit is None:
        ideal = cache.get("ideal")
        ta = b.truth
        if ideal is None:
            gains = b.scheme.gain_array(ta.grade)
            task = np.repeat(np.arange(len(ta.tasks)), np.diff(ta.offsets))
            order = np.lexsort((-gains, task))
            ideal = cache["ideal"] = (task, np.arange(task.size) - ta.offsets[task], gains[order])
        task, pos, gains = ideal
        hit = cache[("idcg", k)] = _dcg(task, pos, gains, k, len(ta.tasks))
    return hit[b.t_of_w]
