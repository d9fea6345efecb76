"""The plain orders a policy fine-tunes down (the prior's, each signal's, their reciprocal-rank fusion and
their reliability-weighted fusion), the policies' names, and the reliabilities that weight the fusion."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..data.run import Run
from ..data.truth import GroundTruth
from ..fusion import fuse
from .priors import PriorForm, prior_scores
from .table import Table, _signal_matrix

PRIOR = "prior"


FUSION = "rrf"


#: the reliability-weighted fusion of the prior and the signals (z-scores per task weighted by r / (1 - r^2), r each
#: input's mean within-task rank correlation with the fine-tuned score MEASURED on the history: :func:`reliabilities`)
WEIGHTED = "weighted"


SEQUENTIAL = "sequential"


#: the suffix of a policy whose final ranking is the expected-gain merge (:mod:`.merge`) instead of fine-tuned first
MERGE_SUFFIX = "+merge"


#: the funnel's final ranking where the folds chose differently (the merge in some folds, fine-tuned first in others)
FUNNEL = "funnel"


def merge_name(base: str) -> str:
    """The policy that walks ``base``'s order and ranks the result by the expected-gain merge."""
    return base + MERGE_SUFFIX


def _orders(scores: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """Per row, candidate indices by descending score, the prior (one row, or one per row) breaking ties (then
    column order)."""
    pri = np.broadcast_to(prior, scores.shape)
    return np.lexsort((np.arange(scores.shape[1])[None, :].repeat(len(scores), 0), -pri, -scores), axis=1)


def _zscores(a: np.ndarray) -> np.ndarray:
    """Per row, the finite scores standardised (mean 0, sd 1 over the row's finite ones; all 0 where they are
    equal); a missing (non-finite) score takes the row's lowest standardised score."""
    ok = np.isfinite(a)
    x = np.where(ok, a, np.nan)
    with np.errstate(all="ignore"):
        mu = np.nanmean(np.where(ok.any(axis=1, keepdims=True), x, 0.0), axis=1, keepdims=True)
        sd = np.nanstd(np.where(ok.any(axis=1, keepdims=True), x, 0.0), axis=1, keepdims=True)
    z = np.where(sd > 0, (x - mu) / np.where(sd > 0, sd, 1.0), 0.0)
    low = np.nanmin(np.where(ok, z, np.inf), axis=1, keepdims=True)
    return np.where(ok, z, np.where(np.isfinite(low), low, 0.0))


def fusion_weight(r: float) -> float:
    """The weight of an input of reliability ``r`` in the weighted fusion: ``r / (1 - r^2)``, ``r`` clipped to
    [0, 0.95] (an input that does not rank with the fine-tuned score gets no weight)."""
    r = min(max(float(r), 0.0), 0.95) if np.isfinite(r) else 0.0
    return r / (1.0 - r * r)


def weighted_scores(prior: np.ndarray, signal_mats: Sequence[np.ndarray], rel: Sequence[float]) -> np.ndarray:
    """The reliability-weighted fusion's score: over the candidates every signal scored, the weighted sum of the
    per-task z-scores (over those candidates) of the prior and of each signal (``rel``: their reliabilities, the
    prior's first); the others after them (at ``-inf``: the prior orders them)."""
    mats = [np.broadcast_to(prior, signal_mats[0].shape if signal_mats else np.shape(prior)), *signal_mats]
    both = np.all([np.isfinite(m) for m in signal_mats], axis=0) if signal_mats else np.isfinite(mats[0])
    out = sum((fusion_weight(r) * _zscores(np.where(both, np.asarray(m, dtype=float), np.nan))
               for m, r in zip(mats, rel)), np.zeros(mats[0].shape))
    return np.where(both, out, -np.inf)


def plain_orders(prior: np.ndarray, table: Table, rows: np.ndarray, signals: Sequence[Run],
                 rel: Sequence[float] | None = None) -> dict[str, np.ndarray]:
    """Each plain policy's order of the candidates on ``rows`` of ``table`` from the ``prior``'s scores (one
    vector, or one row per replayed row): the prior's, each signal's (the prior breaking ties), ``rrf``, the
    reciprocal-rank fusion of the prior and the signals (:func:`modelseek.retrieval.fusion.fuse`), and with the measured
    reliabilities ``rel`` (the prior's, then each signal's) ``weighted``, their reliability-weighted fusion — the one
    function ``select`` walks too."""
    pri = np.broadcast_to(np.asarray(prior, dtype=float), (len(rows), len(table.model_ids)))
    out = {PRIOR: _orders(pri, pri)}
    if signals:
        tids = [table.task_ids[r] for r in rows]
        prior_run = Run.from_scores({t: dict(zip(table.model_ids, p.tolist())) for t, p in zip(tids, pri)},
                                    run_id=PRIOR)
        mats = []
        for run in signals:
            mats.append(_signal_matrix(run, table, rows))
            out[run.run_id] = _orders(mats[-1], pri)
        fused = fuse([prior_run, *(r.restrict(tids) for r in signals if any(t in r for t in tids))], "rrf",
                     run_id=FUSION)
        out[FUSION] = _orders(_signal_matrix(fused, table, rows), pri)
        if rel is not None:
            out[WEIGHTED] = _orders(weighted_scores(pri, mats, rel), pri)
    return out


def _mean_rank_corr(scores: np.ndarray, true: np.ndarray) -> float:
    """Mean over rows of the Spearman correlation of ``scores`` with ``true`` over the entries where both are
    finite (rows where either is constant are left out; ``nan`` when none is left)."""
    from scipy.stats import spearmanr  # lazy: scipy

    rs = []
    for a, b in zip(scores, true):
        ok = np.isfinite(a) & np.isfinite(b)
        if ok.sum() > 2 and np.ptp(a[ok]) > 0 and np.ptp(b[ok]) > 0:
            rs.append(float(spearmanr(a[ok], b[ok])[0]))
    return float(np.mean(rs)) if rs else float("nan")


def reliabilities(history: GroundTruth, model_ids: Sequence[str], signals: Sequence[Run],
                  form: PriorForm | str = PriorForm.AVGRANK, unseen: bool = False, prior_run: Run | None = None
                  ) -> list[float] | None:
    """The prior's and each signal's reliability measured on ``history``: the mean within-task rank correlation
    with the fine-tuned score over its tasks. The prior's scores on a history task are ``prior_run``'s, or the
    prior fitted on the history's other folds (5-fold by task: never on the task it is measured on). ``None``
    where a signal (or ``prior_run``) does not score every history task: nothing to measure the weights on."""
    tids = list(history.task_ids)
    if any(not all(t in r for t in tids) for r in (*signals, *([prior_run] if prior_run else []))):
        return None
    hist = Table.from_truth(history, model_ids, what="history", unseen=unseen)
    rows = np.arange(len(hist.task_ids))
    if prior_run is not None:
        pri = _signal_matrix(prior_run, hist, rows)
    else:
        from ..data.folds import make_folds  # lazy: start-up

        pri = np.zeros(hist.score.shape)
        pos = {t: i for i, t in enumerate(hist.task_ids)}
        n_f = max(2, min(5, len(tids)))
        for fold in make_folds(hist.task_ids, history.tiers(hist.task_ids), folds=n_f, seed=0):
            rest = history.subset([t for t in hist.task_ids if t not in fold])
            pri[[pos[t] for t in fold]] = prior_scores(rest, model_ids, form, unseen_neutral=True)
    out = [_mean_rank_corr(pri, hist.score)]
    out += [_mean_rank_corr(_signal_matrix(r, hist, rows), hist.score) for r in signals]
    return [0.0 if not np.isfinite(r) else round(r, 6) for r in out]
