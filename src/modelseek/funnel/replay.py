"""Replay: what a fine-tuning budget buys, measured on recorded results.

A ground truth that holds every candidate fine-tuned on every task can answer "what if I had fine-tuned only
``k`` of them?" without training anything: for every task, a *policy* chooses ``k`` candidates to fine-tune;
fine-tuning one reveals its recorded score plus Gaussian seed noise (sd ``noise``, in the score's units, drawn
``repeats`` times; the same draws for every policy, so comparisons are paired); the final ranking puts the
fine-tuned candidates first by their observed score, then the others in the policy's order. It is scored with
the official grading (:class:`~modelseek.data.truth.GradingScheme`, nDCG@1/3/5 from
:func:`modelseek.metrics.ndcg.ndcg`) and the regret of the final top-1 (``1 - its true score / the best's``).

Policies (everything a policy learns comes from tasks other than the one replayed: the history, or the other
folds of a task-level cross-fitting):

* ``prior`` — the average-rank prior (:class:`modelseek.rankers.avgrank.AvgRank`: mean ``model_rank`` over the
  history) and its top ``k``;
* one per signal run (e.g. LogME's scores) and ``rrf``, the reciprocal-rank fusion of the prior and the signals
  (:func:`modelseek.fusion.fuse`), each with its top ``k``;
* ``sequential`` — fine-tuning one candidate at a time, each next one chosen with a model of the candidates' joint
  performance: a Gaussian over the candidates' scores fitted on the history (mean and Ledoit-Wolf shrunk
  covariance, :class:`sklearn.covariance.LedoitWolf`), conditioned on the scores observed so far (their seed
  noise on the diagonal). The first is the top of the plain order. By default (``blend``) every candidate's
  score is its normal score in the plain order (``Phi^-1(1 - (rank + 1/2) / m)``) plus ``trust`` times how far
  the conditioning moved it (its conditional mean minus its mean, in its own standard deviations, centred over
  the candidates so that the task's overall level moves nobody); the next pick is the best-scored candidate not
  yet fine-tuned and the others are ranked by that score. ``trust`` is learned from the history by an inner
  cross-fitting over :data:`TRUST_GRID` (``0`` gives back the plain top-``k`` exactly), so the order follows
  the joint model only as far as it paid on past tasks. The rules ``pi`` (the candidate most likely to beat the
  best observed score), ``ei`` (expected improvement) and ``mean`` (greedy conditional mean) trust the Gaussian
  fully and rank the others by its conditional mean. It is the funnel's order only when replay shows it beats
  the plain top-``k`` (:func:`modelseek.funnel.curve.sequential_wins`).

Written by hand: the replay loop and the Gaussian conditioning (a few lines of linear algebra); no library
replays selection policies over a recorded task x model table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..data.run import Run
from ..data.truth import GradingScheme, GroundTruth
from ..enums import Choice
from ..errors import InputError
from ..fusion import fuse
from ..metrics.ndcg import ideal_dcg, ndcg
from .merge import learn_gains, merged_final

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
#: the budgets over which the prior's form is chosen (its mean nDCG@5 over them; whatever budgets are replayed)
FORM_FINETUNES = (0, 1, 3, 5)
#: the budgets over which the funnel's order is chosen (its mean nDCG@5 over them, fine-tuned first; whatever budgets
#: are replayed, so the choice does not depend on them)
ORDER_FINETUNES = (1, 3, 5, 10)
#: the fewest history tasks on which replay chooses the prior's form and the order by inner cross-fitting (below:
#: the average rank and the default order)
MIN_CHOICE_TASKS = 10
#: the fewest history tasks on which replay chooses the final ranking (the merge) by inner cross-fitting (below:
#: fine-tuned first). Lower than :data:`MIN_CHOICE_TASKS`: a small zoo (TransferGraph's 8 data sets leave 6 or 7
#: history tasks a fold) can still show a merge that gains on every task; the interval guards the choice
MIN_MERGE_TASKS = 4
#: bootstrap resamples of the paired interval that a choice must clear (its held-out gain's 95 % lower bound > 0)
CHOICE_BOOTSTRAP = 1000
METRICS = ("ndcg@1", "ndcg@3", "ndcg@5", "regret")
DEFAULT_FINETUNES = (0, 1, 3, 5, 10)
#: the weights of the joint model's evidence that ``blend`` chooses among (by inner cross-fitting on the history)
TRUST_GRID = (0.0, 0.5, 1.0, 2.0, 4.0, 8.0)
#: the fewest history tasks from which ``blend`` learns a weight (below: 0, the plain order)
MIN_TRUST_TASKS = 10
_INNER_REPEATS = 5  # noise draws of the inner replay that fits ``trust`` (its choice is a mean over many tasks)
_TOP = 1e6  # fine-tuned candidates rank above every other (observed scores are far below this)


class PriorForm(Choice):
    """The prior's form, fitted on the history.

    * ``avgrank`` — each candidate's mean fine-tuned rank over the history's tasks
      (:class:`modelseek.rankers.avgrank.AvgRank`);
    * ``meanscore`` — its mean normalised score (its score over the task's best, averaged over the tasks it has a
      result on).
    """

    AVGRANK = "avgrank"
    MEANSCORE = "meanscore"


def merge_name(base: str) -> str:
    """The policy that walks ``base``'s order and ranks the result by the expected-gain merge."""
    return base + MERGE_SUFFIX


class Acquisition(Choice):
    """How the sequential policy chooses the next candidate to fine-tune.

    * ``blend`` — the plain order moved by the Gaussian's evidence, weighted by a learned ``trust`` (the default);
    * ``pi`` — the probability of beating the best observed score;
    * ``ei`` — the expected improvement over it;
    * ``mean`` — the highest conditional mean (greedy).
    """

    BLEND = "blend"
    PI = "pi"
    EI = "ei"
    MEAN = "mean"


@dataclass(frozen=True)
class Table:
    """A task x model table of recorded scores (higher is better), NaN where a model has no result on a task (a
    published zoo rarely fine-tuned every model everywhere): such a candidate is not in that task's pool — no
    policy can fine-tune it, every ranking puts it last, and it has no gain."""

    task_ids: list[str]
    model_ids: list[str]
    score: np.ndarray

    @property
    def scored(self) -> np.ndarray:
        return ~np.isnan(self.score)

    def filled(self) -> np.ndarray:
        """The scores, ``-inf`` where there is none (below every score, so never the best)."""
        return np.where(self.scored, self.score, -np.inf)

    def imputed(self) -> np.ndarray:
        """The scores, holes filled by the two-way additive fit (task mean + model mean - grand mean, each over
        the recorded scores): what the joint model is fitted on."""
        if self.scored.all():
            return self.score
        grand = np.nanmean(self.score)
        row = np.nanmean(self.score, axis=1, keepdims=True)  # every task has 2 scores or more (from_truth)
        seen = self.scored.sum(axis=0, keepdims=True)
        col = np.where(seen > 0, np.nansum(self.score, axis=0, keepdims=True) / np.maximum(seen, 1), np.nan)
        fill = row + np.where(np.isnan(col), grand, col) - grand
        return np.where(self.scored, self.score, fill)

    @classmethod
    def from_truth(cls, truth: GroundTruth, model_ids: Sequence[str] | None = None, what: str = "ground truth",
                   unseen: bool = False) -> Table:
        """The table of ``truth`` over ``model_ids``; a model it never scored is an error, or with ``unseen`` a
        column of holes."""
        m = truth.matrix("f1")
        models = list(model_ids) if model_ids is not None else [str(c) for c in m.columns]
        missing = [c for c in models if c not in m.columns]
        if missing and unseen:
            m = m.reindex(columns=[*m.columns, *missing])
        elif missing:
            raise InputError(f"the {what} has no score for model(s) {', '.join(missing[:5])}",
                             path=truth.source or None, field="model_id")
        a = m[models].to_numpy(dtype=float)
        few = np.flatnonzero((~np.isnan(a)).sum(axis=1) < 2)
        if len(few):
            t = few[0]
            raise InputError(f"task {m.index[t]!r} has {int((~np.isnan(a[t])).sum())} scored model(s); replay needs "
                             f"at least 2 per task", path=truth.source or None, field="f1")
        return cls([str(t) for t in m.index], models, a)


class JointModel:
    """A Gaussian over the candidates' scores, fitted on past tasks (rows of ``history``), conditioned on what
    fine-tuning observed (see the module docstring)."""

    def __init__(self, history: np.ndarray, noise: float = 0.0) -> None:
        from sklearn.covariance import LedoitWolf  # lazy: sklearn

        if history.shape[0] < 2:
            raise InputError(f"the sequential policy needs at least 2 past tasks, got {history.shape[0]}")
        self.mean = history.mean(axis=0)
        self.cov = LedoitWolf().fit(history).covariance_
        self.noise_var = float(noise) ** 2

    def condition(self, seen: Sequence[int], values: Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mean and variance of every candidate's true score given the observed ``values`` of ``seen``."""
        if not seen:
            return self.mean.copy(), np.diag(self.cov).copy()
        s = np.asarray(seen)
        k_ss = self.cov[np.ix_(s, s)] + (self.noise_var + 1e-12) * np.eye(len(s))
        k_as = self.cov[:, s]
        sol = np.linalg.solve(k_ss, np.column_stack([np.asarray(values) - self.mean[s], k_as.T]))
        mu = self.mean + k_as @ sol[:, 0]
        var = np.diag(self.cov) - np.einsum("ij,ji->i", k_as, sol[:, 1:])
        return mu, np.maximum(var, 1e-12)

    def walk(self, base_rank: np.ndarray, observed: np.ndarray, steps: int,
             acquisition: Acquisition | str = Acquisition.BLEND, trust: float = 0.0,
             scored: np.ndarray | None = None) -> tuple[list[int], list[np.ndarray]]:
        """The sequential policy on one task, from the plain order's ranks ``base_rank`` (0 = first): the picks
        (the plain order's first, then each by ``acquisition``, only among the ``scored`` candidates: those with a
        result to reveal) and, after each number of picks 0..steps, the score that orders the candidates not
        fine-tuned (see the module docstring; after the last possible pick it stays as it is)."""
        acq = Acquisition.parse(acquisition)
        m = len(base_rank)
        avail = np.ones(m, dtype=bool) if scored is None else np.asarray(scored, dtype=bool)
        from scipy.stats import norm  # lazy: scipy

        base_z = norm.ppf(1.0 - (np.asarray(base_rank, dtype=float) + 0.5) / m)
        sd0 = np.sqrt(np.maximum(np.diag(self.cov), 1e-12))
        picks: list[int] = []
        scores = [base_z if acq is Acquisition.BLEND else self.mean.copy()]
        var = np.diag(self.cov)
        for step in range(min(steps, int(avail.sum()))):
            if step == 0:
                nxt = int(np.argmin(np.where(avail, base_rank, m)))
            else:
                p = scores[-1].copy()  # blend's score, or (mean) the conditional mean given the picks so far
                if acq in (Acquisition.PI, Acquisition.EI):  # scores[-1] is that conditional mean, var its variance
                    sd = np.sqrt(var)
                    z = (p - observed[picks].max()) / sd
                    p = norm.cdf(z) if acq is Acquisition.PI else sd * (z * norm.cdf(z) + norm.pdf(z))
                p[picks] = -np.inf
                p[~avail] = -np.inf
                nxt = int(np.argmax(p))
            picks.append(nxt)
            mu, var = self.condition(picks, observed[picks])
            if acq is Acquisition.BLEND:
                moved = (mu - self.mean) / sd0
                mu = base_z + trust * (moved - moved.mean())
            scores.append(mu)
        return picks, scores + [scores[-1]] * (steps + 1 - len(scores))


def avgrank_scores(history: GroundTruth, model_ids: Sequence[str], unseen_neutral: bool = False) -> np.ndarray:
    """The average-rank prior's score (minus the mean ``model_rank``) of each of ``model_ids``, fitted on
    ``history`` by :class:`modelseek.rankers.avgrank.AvgRank`. A model the history never fine-tuned is an error,
    or with ``unseen_neutral`` (a cross-fitting fold whose held-out tasks were its only results) gets the mean of
    the others' scores: no evidence either way."""
    from ..rankers.avgrank import AvgRank  # lazy: start-up

    ranker = AvgRank().fit(None, history)
    by_id = dict(zip(ranker.trained_.model_ids, ranker.mean_rank_.tolist()))
    missing = [m for m in model_ids if m not in by_id]
    if missing and unseen_neutral and len(missing) < len(model_ids):
        neutral = float(np.mean([by_id[m] for m in model_ids if m in by_id]))
        by_id.update({m: neutral for m in missing})
    elif missing:
        raise InputError(f"the history has no fine-tuning result for model(s) {', '.join(missing[:5])}",
                         path=history.source or None, field="model_id")
    return -np.array([by_id[m] for m in model_ids])


def meanscore_scores(history: GroundTruth, model_ids: Sequence[str], unseen_neutral: bool = False) -> np.ndarray:
    """The mean normalised score prior (each model's score over its task's best, averaged over the history's tasks
    it has a result on) of each of ``model_ids``; unseen models as in :func:`avgrank_scores`."""
    m = history.matrix("f1")
    a = m.to_numpy(dtype=float)
    best = np.nanmax(a, axis=1, keepdims=True)
    norm = a / np.where(best > 0, best, 1.0)
    seen = (~np.isnan(norm)).sum(axis=0)
    by_id = {str(c): float(np.nanmean(norm[:, j])) for j, c in enumerate(m.columns) if seen[j]}
    missing = [x for x in model_ids if x not in by_id]
    if missing and unseen_neutral and len(missing) < len(model_ids):
        neutral = float(np.mean([by_id[x] for x in model_ids if x in by_id]))
        by_id.update({x: neutral for x in missing})
    elif missing:
        raise InputError(f"the history has no fine-tuning result for model(s) {', '.join(missing[:5])}",
                         path=history.source or None, field="model_id")
    return np.array([by_id[x] for x in model_ids])


def prior_scores(history: GroundTruth, model_ids: Sequence[str], form: PriorForm | str = PriorForm.AVGRANK,
                 unseen_neutral: bool = False) -> np.ndarray:
    """The prior of ``form`` (:class:`PriorForm`) fitted on ``history``, for ``model_ids`` (higher first)."""
    if PriorForm.parse(form) is PriorForm.MEANSCORE:
        return meanscore_scores(history, model_ids, unseen_neutral)
    return avgrank_scores(history, model_ids, unseen_neutral)


@dataclass(frozen=True)
class Split:
    test: np.ndarray             # row indices of the replayed table
    history: GroundTruth         # what the policies learn from
    cross_fitted: bool = False   # the history is the other folds of the replayed truth


def splits(truth: GroundTruth, table: Table, history: GroundTruth | None, folds: int, seed: int) -> list[Split]:
    """Task-level cross-fitting within ``truth`` (``folds`` folds), or one split: every task against
    ``history`` (without any task of ``truth``, so no task is replayed on its own result)."""
    pos = {t: i for i, t in enumerate(table.task_ids)}
    if history is not None:
        keep = [t for t in history.task_ids if t not in pos]
        if len(keep) < 2:
            raise InputError(f"the history holds {len(keep)} task(s) besides the replayed ones; at least 2 needed",
                             path=history.source or None)
        return [Split(np.arange(len(table.task_ids)), history.subset(keep))]
    from ..data.folds import make_folds  # lazy: start-up

    held = make_folds(table.task_ids, truth.tiers(table.task_ids), folds=folds, seed=seed)
    return [Split(np.array(sorted(pos[t] for t in fold)), truth.subset([t for t in table.task_ids if t not in fold]),
                  cross_fitted=True) for fold in held]


def check_covers(run: Run, task_ids: Sequence[str], path: str | None = None) -> None:
    """A signal run must score every replayed task: the first one it lacks is a located error."""
    missing = [t for t in task_ids if t not in run]
    if missing:
        raise InputError(f"signal run {run.run_id!r} has no topic {missing[0]!r} ({len(missing)} of "
                         f"{len(task_ids)} tasks missing; replay needs every task scored)", path=path, field="topic")


def _signal_matrix(run: Run, table: Table, rows: np.ndarray) -> np.ndarray:
    """The run's scores as a (tasks x models) matrix; a candidate missing from a topic scores -inf (it then
    follows the others, in the prior's order)."""
    out = np.full((len(rows), len(table.model_ids)), -np.inf)
    col = {m: j for j, m in enumerate(table.model_ids)}
    for i, r in enumerate(rows):
        for m, s in run.scores(table.task_ids[r]).items():
            if m in col and np.isfinite(s):
                out[i, col[m]] = s
    return out


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
    reciprocal-rank fusion of the prior and the signals (:func:`modelseek.fusion.fuse`), and with the measured
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


def history_gains(history: GroundTruth, model_ids: Sequence[str], ks: Sequence[int],
                  form: PriorForm | str = PriorForm.AVGRANK, scheme: GradingScheme = GradingScheme.NTCIR,
                  noise: float = 0.0, seed: int = 0, unseen: bool = False) -> dict[int, Any]:
    """The merge's gain tables (:func:`modelseek.funnel.merge.learn_gains`) for each ``k > 0`` of ``ks``, learned
    on ``history`` with its tasks fine-tuned down its own prior's order (of ``form``)."""

    hist = Table.from_truth(history, model_ids, what="history", unseen=unseen)
    prior = prior_scores(history, model_ids, form, unseen_neutral=unseen)
    order = _scored_first(_orders(np.repeat(prior[None, :], len(hist.task_ids), 0), prior), hist.scored)
    return {k: learn_gains(hist.score, order, k, scheme, noise, seed) for k in ks if k > 0}


@dataclass
class ReplayData:
    """Per task (mean over the noise draws) value of every metric, per policy and budget."""

    task_ids: list[str]
    model_ids: list[str]
    finetunes: list[int]
    noise: float
    repeats: int
    folds: int | None
    seed: int
    values: dict[str, dict[int, dict[str, np.ndarray]]]
    reliability: dict[str, float]
    base: str                                 # the plain order the funnel fine-tunes down
    history: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    final: dict[int, str] = field(default_factory=dict)   # per k: the funnel's final ranking (a policy of values)
    choices: list[Any] = field(default_factory=list)      # per split: what its history chose (:class:`Choices`)


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


def _scored_first(order: np.ndarray, scored: np.ndarray) -> np.ndarray:
    """Each row of ``order`` with the candidates that have no result on that task moved to its end (stably)."""
    if scored.all():
        return order
    missing = ~np.take_along_axis(scored, order, axis=1)
    return np.take_along_axis(order, np.argsort(missing, axis=1, kind="stable"), axis=1)


def _ranks_of(order: np.ndarray) -> np.ndarray:
    r = np.empty_like(order)
    r[np.arange(len(order))[:, None], order] = np.arange(order.shape[1])[None, :]
    return r


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


def fit_trust(history: GroundTruth, model_ids: Sequence[str], signals: Sequence[Run], finetunes: Sequence[int],
              noise: float, repeats: int, folds: int, seed: int, form: PriorForm | str = PriorForm.AVGRANK
              ) -> tuple[float, dict[float, dict[int, float]]]:
    """The ``blend`` weight that replay on ``history`` alone (``folds``-fold cross-fitting by task within it)
    finds best, and each weight's mean nDCG@5 per budget: the same rule as shipping the order
    (:func:`modelseek.funnel.curve.sequential_wins`) — among the weights never below ``0`` (the plain order) at
    any budget, the highest mean at ``k = 3`` and ``5`` (every budget above 0 when neither is asked), the smallest
    among equals. Signals join only where they score every task of the history; the plain order is then their
    fusion with the prior, as in the outer replay."""
    inner = history.subset(history.task_ids, model_ids)
    use = [r for r in signals if all(t in r for t in inner.task_ids)]
    ks = [k for k in finetunes if k > 0]
    if not ks:  # no fine-tuning asked: the order is the plain one whatever the weight
        return 0.0, {}
    aim = [k for k in ks if k in (3, 5)] or ks
    means: dict[float, dict[int, float]] = {}
    for lam in TRUST_GRID:
        d = replay(inner, signals=use, finetunes=ks, noise=noise, repeats=min(repeats, _INNER_REPEATS),
                   folds=min(folds, len(inner.task_ids)), seed=seed, acquisition=Acquisition.BLEND, trust=lam,
                   prior_form=form, choose=False, with_merge=False)
        means[lam] = {k: float(d.values[SEQUENTIAL][k]["ndcg@5"].mean()) for k in ks}
    plain = means[TRUST_GRID[0]]
    safe = [lam for lam in TRUST_GRID if all(means[lam][k] >= plain[k] - 1e-12 for k in ks)]
    best = max(safe, key=lambda lam: (round(float(np.mean([means[lam][k] for k in aim])), 12), -lam))
    return best, means


def _reliability(orders_scores: dict[str, np.ndarray], true: np.ndarray) -> dict[str, float]:
    """Mean over tasks of the rank (Spearman) correlation between each policy's order and the recorded scores,
    over the candidates scored on the task (tasks where those scores are all equal are left out)."""
    from scipy.stats import spearmanr  # lazy: scipy

    out = {}
    ok = ~np.isnan(true)
    for name, s in orders_scores.items():
        pairs = [(a[k], b[k]) for a, b, k in zip(s, true, ok)]
        rs = [float(spearmanr(a, b)[0]) for a, b in pairs if np.ptp(b) > 0 and np.ptp(a) > 0]
        out[name] = float(np.mean(rs)) if rs else float("nan")
    return out


def _split_trust(sp: Split, table: Table, signals: Sequence[Run], ks: Sequence[int], noise: float, repeats: int,
                 folds: int, seed: int, form: PriorForm | str = PriorForm.AVGRANK) -> float:
    """The ``blend`` weight learned from the split's history alone (0, the plain order, when it holds fewer than
    :data:`MIN_TRUST_TASKS` tasks: an inner cross-fitting over a handful of tasks picks a weight by noise)."""
    if len(sp.history.task_ids) < MIN_TRUST_TASKS:
        return 0.0
    return fit_trust(sp.history, table.model_ids, signals, ks, noise, repeats, folds, seed, form)[0]


@dataclass(frozen=True)
class Choices:
    """What replay chooses per history by inner cross-fitting (:func:`choose_on_history`): the prior's form, the
    order the funnel fine-tunes down (the prior, a signal, ``rrf`` or ``weighted``, with the reliabilities measured
    on the whole history that weight the latter) and, per budget, whether the final ranking is the expected-gain
    merge; with each alternative's mean nDCG@5."""

    form: PriorForm = PriorForm.AVGRANK
    merge: dict[int, bool] = field(default_factory=dict)
    means: dict[str, dict[int, float]] = field(default_factory=dict)
    why: str = ""
    order: str = PRIOR
    reliability: tuple[float, ...] | None = None   # the prior's, then each signal's (weights of ``weighted``)
    #: per budget: the merge's held-out nDCG@5 gain over fine-tuned first on the inner folds, (mean, low, high)
    merge_gain: dict[int, tuple[float, float, float]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"prior_form": self.form.value, "order": self.order,
                "reliability": list(self.reliability) if self.reliability is not None else None,
                "merge": {str(k): v for k, v in self.merge.items()},
                "merge_gain": {str(k): [round(x, 6) for x in v] for k, v in self.merge_gain.items()},
                "means": {p: {str(k): round(v, 6) for k, v in by.items()} for p, by in self.means.items()},
                "why": self.why}


def gains_clearly(a: np.ndarray, b: np.ndarray, seed: int = 0) -> tuple[float, float, float]:
    """The paired gain of ``a`` over ``b`` (per task, held out), its mean and 95 % bootstrap interval
    (:func:`modelseek.stats.bootstrap.paired_bootstrap`): a choice is made only where the low end is above 0."""
    from ..stats.bootstrap import paired_bootstrap  # lazy: start-up

    if len(a) < 2:
        d = float(np.mean(np.asarray(a) - np.asarray(b))) if len(a) else 0.0
        return d, d, d
    c = paired_bootstrap(np.asarray(a, float), np.asarray(b, float), n_resamples=CHOICE_BOOTSTRAP, seed=seed)
    return float(c.mean_diff), float(c.low), float(c.high)


def _per_task(values: dict[str, dict[int, dict[str, np.ndarray]]], name: str, ks: Sequence[int]) -> np.ndarray:
    """Per task, the mean nDCG@5 of policy ``name`` over the budgets ``ks``."""
    return np.mean([values[name][k]["ndcg@5"] for k in ks], axis=0)


def _choose_order(values: dict[str, dict[int, dict[str, np.ndarray]]], names: Sequence[str], ks: Sequence[int],
                  seed: int = 0) -> tuple[str, dict[str, float]]:
    """The plain order of the highest mean nDCG@5 over the budgets ``ks`` where its gain over ``rrf`` (the default
    with signals) is positive with its paired interval (:func:`gains_clearly`), else ``rrf``; and each one's mean."""
    pos = list(ks)
    means = {n: float(np.mean([values[n][k]["ndcg@5"].mean() for k in pos])) for n in names if n in values}
    pref = {FUSION: 0, PRIOR: 1, WEIGHTED: 2}
    best = max(means, key=lambda n: (round(means[n], 12), -pref.get(n, 3)))
    if best != FUSION and FUSION in means and \
            gains_clearly(_per_task(values, best, pos), _per_task(values, FUSION, pos), seed)[1] <= 0:
        best = FUSION
    return best, means


def _choose_form(runs: dict[PriorForm, ReplayData], base: str, seed: int) -> PriorForm:
    """The average rank, or the other form where its gain over the budgets :data:`FORM_FINETUNES` is positive with
    its paired interval."""
    avg = runs.get(PriorForm.AVGRANK)
    best = max(runs, key=lambda f: (round(float(np.mean([runs[f].values[base][k]["ndcg@5"].mean()
                                                          for k in FORM_FINETUNES])), 12), f is PriorForm.AVGRANK))
    if best is PriorForm.AVGRANK or avg is None:
        return best
    low = gains_clearly(_per_task(runs[best].values, base, FORM_FINETUNES),
                        _per_task(avg.values, base, FORM_FINETUNES), seed)[1]
    return best if low > 0 else PriorForm.AVGRANK


def _choose_merge(d: ReplayData, chosen: str, ks: Sequence[int], seed: int
                  ) -> tuple[dict[int, bool], dict[int, tuple[float, float, float]]]:
    """Per ``k > 0``: the merge where its held-out nDCG@5 gain over fine-tuned first is positive with its paired
    interval (:func:`gains_clearly`), and that gain."""
    mname = merge_name(chosen)
    gain = {k: gains_clearly(d.values[mname][k]["ndcg@5"], d.values[chosen][k]["ndcg@5"], seed)
            for k in ks if k > 0}
    return {k: bool(g[1] > 0) for k, g in gain.items()}, gain


def choose_on_history(history: GroundTruth, model_ids: Sequence[str], signals: Sequence[Run], finetunes: Sequence[int],
                      noise: float = 0.0, repeats: int = 1, folds: int = 5, seed: int = 0,
                      scheme: GradingScheme = GradingScheme.NTCIR, forms: Sequence[PriorForm | str] | None = None,
                      prior_run: Run | None = None, order: str | None = None) -> Choices:
    """The prior's form, the funnel's order and the final ranking per budget that replay on ``history`` alone
    (``folds``-fold cross-fitting by task within it) finds best — each alternative to the default only where its
    held-out gain is positive with its paired 95 % interval over the history's tasks (:func:`gains_clearly`): the
    mean normalised score instead of the average rank (over the budgets :data:`FORM_FINETUNES`); with signals, the
    order of the highest mean nDCG@5 over :data:`ORDER_FINETUNES` among the prior, each signal, ``rrf`` and
    ``weighted`` instead of ``rrf`` (:func:`_choose_order`), unless ``order`` fixes it; then at each ``k > 0`` the
    expected-gain merge instead of fine-tuned first. Signals join only where they score every task of the history,
    as in :func:`fit_trust`. ``prior_run``: the prior's scores per task (instead of the prior fitted on the history;
    no form to choose). A history of fewer than :data:`MIN_CHOICE_TASKS` tasks keeps the average rank and the
    default order; of fewer than :data:`MIN_MERGE_TASKS`, fine-tuned first too."""
    walk = order or (FUSION if signals else PRIOR)  # the order walked where the history is not asked to choose it
    n_tasks = len(history.task_ids)
    few = n_tasks < MIN_CHOICE_TASKS
    use = [r for r in signals if all(t in r for t in history.task_ids)]
    order = (walk if few else order) if use else None  # signals that do not score the history: the prior's orders
    ks = sorted({int(k) for k in finetunes} | set(FORM_FINETUNES) | set(ORDER_FINETUNES if use and order is None
                                                                       else ()))
    if prior_run is not None and not all(t in prior_run for t in history.task_ids):
        raise InputError(f"the prior's run {prior_run.run_id!r} does not score every history task",
                         path=history.source or None, field="topic")
    if n_tasks < MIN_MERGE_TASKS:
        return Choices(PriorForm.AVGRANK, {k: False for k in ks if k > 0}, {},
                       f"the history holds {n_tasks} task(s), fewer than {MIN_MERGE_TASKS}: "
                       f"avgrank, {walk}, fine-tuned first", walk)
    models = [m for m in model_ids if m in set(map(str, history.matrix("f1").columns))]
    inner = history.subset(history.task_ids, models)
    base = FUSION if use else PRIOR
    inner_kw: dict[str, Any] = dict(signals=use, finetunes=ks, noise=noise, repeats=min(repeats, _INNER_REPEATS),
                                    folds=max(2, min(folds, n_tasks)), seed=seed, sequential=False, choose=False,
                                    scheme=scheme, prior_run=prior_run)
    all_forms = [PriorForm.AVGRANK] if prior_run is not None or few else [PriorForm.parse(f)
                                                                          for f in (forms or list(PriorForm))]
    single = len(all_forms) == 1 and (not use or order is not None)  # nothing to choose before the merge
    runs = {form: replay(inner, prior_form=form, with_merge=single, order=order, **inner_kw)
            for form in all_forms}  # the forms compared on the plain order alone; the merge replayed for the chosen
    means = {f"{base}[{form.value}]": {k: float(d.values[base][k]["ndcg@5"].mean()) for k in ks}
             for form, d in runs.items()}
    form = _choose_form(runs, base, seed)
    chosen = order or base
    if use and order is None:
        chosen, o_means = _choose_order(runs[form].values, [PRIOR, *(r.run_id for r in use), FUSION, WEIGHTED],
                                        ORDER_FINETUNES, seed)
        means.update({f"order:{n}": {0: v} for n, v in o_means.items()})
    d = runs[form] if single else replay(inner, prior_form=form, order=chosen, **inner_kw)
    mname = merge_name(chosen)
    means[f"{chosen}[{form.value}]"] = {k: float(d.values[chosen][k]["ndcg@5"].mean()) for k in ks}
    means[f"{mname}[{form.value}]"] = {k: float(d.values[mname][k]["ndcg@5"].mean()) for k in ks}
    merge, gain = _choose_merge(d, chosen, ks, seed)
    rel = reliabilities(inner, models, use, form, False, prior_run) if use else None
    why = (f"inner {max(2, min(folds, n_tasks))}-fold cross-fitting on the {n_tasks} history tasks; an "
           f"alternative only where its held-out gain is positive with its 95 % interval"
           + (f" (fewer than {MIN_CHOICE_TASKS} tasks: avgrank and {walk} kept, only the merge chosen)" if few else ""))
    return Choices(form, merge, means, why, chosen if use else walk, tuple(rel) if rel is not None else None, gain)


def funnel_rankings(truth: GroundTruth, k: int, signals: Sequence[Run] = (), history: GroundTruth | None = None,
                    noise: float = 0.0, repeats: int = 1, folds: int | None = None, seed: int = 0,
                    scheme: GradingScheme | str = GradingScheme.NTCIR, history_signals: Sequence[Run] = (),
                    prior_run: Run | None = None, order: str | None = None
                    ) -> dict[str, tuple[list[str], list[str]]]:
    """Per task of ``truth``: the funnel policy's picks and final ranking after ``k`` fine-tunes that reveal the
    recorded scores as they are (the draw without noise), made by the steps :func:`replay` scores — the split's
    choices (:func:`choose_on_history`, with ``noise`` and ``repeats`` as replay passes them), the order the split
    chose (the plain order of the chosen prior form, ``rrf`` with signals that do not score the history's tasks, or
    with ``history_signals`` — the same runs' scores on the history tasks — the one chosen there by cross-fitting,
    ``weighted`` with the reliabilities measured there), and the final ranking chosen at ``k`` (the merge's gain
    tables learned on the split's history, or fine-tuned first). ``prior_run``: the prior's scores per task (the
    replayed ones and the history's) instead of the prior fitted on the history; ``order`` fixes the order (as in
    :func:`replay`). What ``select`` does on the same inputs."""

    scheme = GradingScheme.parse(scheme, field="scheme")
    table = Table.from_truth(truth)
    folds = min(5, len(table.task_ids)) if folds is None else int(folds)
    out: dict[str, tuple[list[str], list[str]]] = {}
    for sp in splits(truth, table, history, folds, seed):
        both = _joined(signals, history_signals)
        ch = choose_on_history(sp.history, table.model_ids, both, [k], noise, int(repeats),
                               folds if history is None else 5, seed, scheme, prior_run=prior_run, order=order)
        rows = sp.test
        orders = plain_orders(_signal_matrix(prior_run, table, rows) if prior_run is not None else
                              prior_scores(sp.history, table.model_ids, ch.form, unseen_neutral=sp.cross_fitted),
                              table, rows, both, ch.reliability)
        walked = _scored_first(orders[ch.order if ch.order in orders else (FUSION if signals else PRIOR)],
                               table.scored[rows])
        kk = min(int(k), len(table.model_ids))
        rank_of = _ranks_of(walked)
        observed = table.filled()[rows]
        if kk and ch.merge.get(int(k)):
            tables = history_gains(sp.history, table.model_ids, [int(k)], ch.form, scheme, noise, seed,
                                   unseen=sp.cross_fitted)[int(k)]
            picked = np.zeros(walked.shape, dtype=bool)
            np.put_along_axis(picked, walked[:, :kk], True, axis=1)
            final = merged_final(rank_of, picked, observed, table.scored[rows], tables)
        else:
            final = _final_scores(rank_of, walked[:, :kk], observed)
        for i, r in enumerate(rows):
            ranked = np.lexsort((rank_of[i], -final[i]))
            out[table.task_ids[r]] = ([table.model_ids[j] for j in walked[i, :kk]],
                                      [table.model_ids[j] for j in ranked])
    return out


def _joined(signals: Sequence[Run], history_signals: Sequence[Run]) -> list[Run]:
    """Each signal run joined with the run of the same id in ``history_signals`` (its scores on the history
    tasks); the history runs no signal names are left out."""
    by_id = {r.run_id: r for r in history_signals}
    out = []
    for r in signals:
        h = by_id.get(r.run_id)
        if h is None:
            out.append(r)
            continue
        scores = {t: h.scores(t) for t in h if t not in r}
        scores.update({t: r.scores(t) for t in r})
        out.append(Run.from_scores(scores, run_id=r.run_id))
    return out


def _checked(finetunes: Sequence[int], noise: float, repeats: int, trust: float | None, signals: Sequence[Run]
             ) -> list[int]:
    """The budgets, sorted; every other argument of :func:`replay` checked (a located error otherwise)."""
    ks = sorted({int(k) for k in finetunes})
    if not ks or ks[0] < 0:
        raise InputError(f"fine-tune budgets must be >= 0, got {list(finetunes)}", field="finetunes")
    if not (np.isfinite(noise) and noise >= 0):
        raise InputError(f"must be a finite number >= 0, got {noise}", field="noise")
    if int(repeats) < 1:
        raise InputError(f"must be >= 1, got {repeats}", field="repeats")
    if trust is not None and not (np.isfinite(trust) and trust >= 0):
        raise InputError(f"must be a finite number >= 0, got {trust}", field="trust")
    names = [r.run_id for r in signals]
    clash = {PRIOR, FUSION, WEIGHTED, SEQUENTIAL, FUNNEL} & set(names) or {n for n in names if names.count(n) > 1} or \
        {n for n in names if n.endswith(MERGE_SUFFIX)}
    if clash:
        raise InputError(f"signal run id {sorted(clash)[0]!r} is used twice or names a built-in policy; give each "
                         f"run its own id", field="RunID")
    return ks


def _split_choices(sp: Split, table: Table, signals: Sequence[Run], ks: list[int], noise: float, repeats: int,
                   folds: int, seed: int, scheme: GradingScheme, choose: bool, form: PriorForm | None,
                   merge: bool | None, prior_run: Run | None = None, order: str | None = None) -> Choices:
    """What a split's history chooses (:func:`choose_on_history`), with what the caller fixed (without choosing:
    ``order``, else ``rrf`` with signals, with the reliabilities measured on the split's history)."""
    base = order or (FUSION if signals else PRIOR)
    if choose and (form is None or merge is None or (order is None and signals)):
        ch = choose_on_history(sp.history, table.model_ids, signals, ks, noise, repeats, folds, seed, scheme,
                               forms=None if form is None else [form], prior_run=prior_run, order=order)
    else:
        ch = Choices(form or PriorForm.AVGRANK, {k: False for k in ks if k > 0}, {}, "fixed", base)
    if merge is not None:
        ch = replace(ch, merge={k: bool(merge) for k in ks if k > 0}, why=ch.why + "; merge fixed")
    if ch.reliability is None and signals:
        rel = reliabilities(sp.history, table.model_ids, signals, ch.form, sp.cross_fitted, prior_run)
        ch = replace(ch, reliability=tuple(rel) if rel is not None else None)
    return ch


def _collect(per: dict, scores_for_rel: dict[str, np.ndarray], got: dict, orders: dict, table: Table,
             test: np.ndarray) -> None:
    """One split's replayed metrics into ``per`` (policy -> k -> metric -> per task) and its plain orders' ranks
    into ``scores_for_rel`` (for the reliabilities over every split)."""
    for name, by_k in got.items():
        for k, mets in by_k.items():
            slot = per.setdefault(name, {}).setdefault(k, {x: np.zeros(len(table.task_ids)) for x in METRICS})
            for x in METRICS:
                slot[x][test] = mets[x].mean(axis=0)
    for name, o in orders.items():
        if name in (FUSION, WEIGHTED):
            continue
        acc = scores_for_rel.setdefault(name, np.full(table.score.shape, np.nan))
        acc[test] = -_ranks_of(o).astype(float)


def _funnel_final(choices: Sequence[Choices], ks: Sequence[int], default_base: str) -> tuple[str, dict[int, str]]:
    """The order the splits walked (the default's name where they walked different ones: the plain comparisons are
    against it) and, per k, the funnel's final ranking as a policy's name where every split chose it alike (else
    ``funnel``)."""
    walked = {ch.order for ch in choices}
    base = walked.pop() if len(walked) == 1 else FUNNEL
    mname = merge_name(base)
    funnel_final = {}
    for k in ks:
        picked = {ch.merge.get(k, False) for ch in choices}
        funnel_final[k] = ((mname if picked == {True} else base) if len(picked) == 1 else FUNNEL) \
            if base != FUNNEL else FUNNEL
    return (default_base if base == FUNNEL else base), funnel_final


def replay(truth: GroundTruth, signals: Sequence[Run] = (), history: GroundTruth | None = None,
           finetunes: Sequence[int] = DEFAULT_FINETUNES, noise: float = 0.0, repeats: int = 1,
           folds: int | None = None,
           seed: int = 0, sequential: bool = True, acquisition: Acquisition | str = Acquisition.BLEND,
           trust: float | None = None, prior_form: PriorForm | str | None = None, choose: bool = True,
           merge: bool | None = None, scheme: GradingScheme | str = GradingScheme.NTCIR,
           with_merge: bool = True, prior_run: Run | None = None, order: str | None = None) -> ReplayData:
    """Replay every policy on every task of ``truth`` (see the module docstring). ``history``: what the policies
    learn from (default: ``folds``-fold cross-fitting by task within ``truth``; ``folds`` defaults to 5, or one
    fold per task when there are fewer); ``signals``: runs scoring the candidates of every task; ``noise``: sd
    of the seed noise added to each revealed score
    (``repeats`` draws, from ``numpy.random.default_rng(seed)``); ``scheme``: the grading whose gain is scored
    and learned by the merge. ``prior_form`` fixes the prior's form and ``merge`` the funnel's final ranking (the
    expected-gain merge or fine-tuned first); each left ``None`` is chosen per split by inner cross-fitting on
    the split's history (:func:`choose_on_history`) when ``choose`` (else: the average rank, fine-tuned first).
    The base order's merge is always replayed too (policy ``<base>+merge``), and the funnel's final ranking per
    budget is policy ``funnel`` where the splits chose differently. With signals, the order the funnel walks is
    chosen per split the same way (``order`` fixes it): the prior, a signal, ``rrf`` or ``weighted`` (the
    reliability-weighted fusion, its weights measured on the split's history where the signals score it), and the
    policy ``funnel`` walks each split's choice where they differ. ``prior_run``: the prior's scores per task
    (covering the history's tasks too) instead of the prior fitted on the history."""
    acq = Acquisition.parse(acquisition, field="acquisition")
    scheme = GradingScheme.parse(scheme, field="scheme")
    fixed_form = None if prior_form is None else PriorForm.parse(prior_form, field="prior_form")
    ks = _checked(finetunes, noise, repeats, trust, signals)
    table = Table.from_truth(truth)
    for run in signals:
        check_covers(run, table.task_ids)
    folds = min(5, len(table.task_ids)) if folds is None else int(folds)
    parts = splits(truth, table, history, folds, seed)
    inner_folds = folds if history is None else 5  # what a split's history is cross-fitted with, for its choices
    rng = np.random.default_rng(seed)
    draws = rng.normal(0.0, noise, (int(repeats), *table.score.shape)) if noise > 0 else np.zeros(
        (int(repeats), *table.score.shape))
    if prior_run is not None:
        check_covers(prior_run, table.task_ids)
    default_base = order or (FUSION if signals else PRIOR)
    per: dict[str, dict[int, dict[str, np.ndarray]]] = {}
    scores_for_rel: dict[str, np.ndarray] = {}
    trusts: list[float] = []
    choices: list[Choices] = []
    for sp in parts:
        ch = _split_choices(sp, table, signals, ks, noise, int(repeats), inner_folds, seed, scheme,
                            choose, fixed_form, merge, prior_run, order)
        choices.append(ch)
        base = ch.order
        orders = plain_orders(_signal_matrix(prior_run, table, sp.test) if prior_run is not None else
                              prior_scores(sp.history, table.model_ids, ch.form, unseen_neutral=sp.cross_fitted),
                              table, sp.test, signals, ch.reliability)
        if base not in orders:
            raise InputError(f"no order {base!r} to walk (orders: {', '.join(orders)})", field="order")
        lam = _split_trust(sp, table, signals, ks, noise, int(repeats), inner_folds, seed, ch.form) \
            if sequential and acq is Acquisition.BLEND and trust is None else float(trust or 0.0)
        trusts.append(lam)
        tables = history_gains(sp.history, table.model_ids, ks, ch.form, scheme, noise, seed,
                               unseen=sp.cross_fitted) if with_merge else None
        got = _replay_split(table, sp, orders, draws[:, sp.test], ks, base if sequential else None, noise,
                             acq, lam, scheme, base if with_merge else None, tables)
        got[FUNNEL] = {k: got[merge_name(base)][k] if with_merge and ch.merge.get(k) else got[base][k] for k in ks}
        if with_merge and base != default_base:  # the default order's merge, named alike in every split
            got.update(_replay_split(table, sp, {default_base: orders[default_base]}, draws[:, sp.test], ks, None,
                                     noise, acq, 0.0, scheme, default_base, tables))
        _collect(per, scores_for_rel, got, orders, table, sp.test)
    rel = _reliability(scores_for_rel, table.score)
    base, funnel_final = _funnel_final(choices, ks, default_base)
    if all(v != FUNNEL for v in funnel_final.values()):
        per.pop(FUNNEL, None)
    return ReplayData(task_ids=table.task_ids, model_ids=table.model_ids, finetunes=ks, noise=float(noise),
                      repeats=int(repeats), folds=None if history is not None else int(folds), seed=int(seed),
                      values=per, reliability=rel, base=base,
                      history=(history.source or "given") if history is not None else "cross-fitted",
                      extra={"acquisition": acq.value, **({"trust": trusts} if sequential and acq is
                                                            Acquisition.BLEND else {}),
                             "scheme": scheme.value, "prior_form": [c.form.value for c in choices],
                             "merge": {str(k): [bool(c.merge.get(k, False)) for c in choices] for k in ks if k > 0},
                             "order": [c.order for c in choices],
                             "choices": [c.to_dict() for c in choices]},
                      final=funnel_final, choices=choices)
