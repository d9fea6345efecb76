"""Replay: what a fine-tuning budget buys, measured on recorded results.

A ground truth that holds every candidate fine-tuned on every task can answer "what if I had fine-tuned only
``k`` of them?" without training anything: for every task, a *policy* chooses ``k`` candidates to fine-tune;
fine-tuning one reveals its recorded score plus Gaussian seed noise (sd ``noise``, in the score's units, drawn
``repeats`` times; the same draws for every policy, so comparisons are paired); the final ranking puts the
fine-tuned candidates first by their observed score, then the others in the policy's order. It is scored with
the official grading (:class:`~modelseek.retrieval.data.truth.GradingScheme`, nDCG@1/3/5 from
:func:`modelseek.retrieval.metrics.ndcg.ndcg`) and the regret of the final top-1 (``1 - its true score / the best's``).

Policies (everything a policy learns comes from tasks other than the one replayed: the history, or the other
folds of a task-level cross-fitting):

* ``prior`` — the average-rank prior (:class:`modelseek.retrieval.rankers.avgrank.AvgRank`: mean ``model_rank`` over the
  history) and its top ``k``;
* one per signal run (e.g. LogME's scores) and ``rrf``, the reciprocal-rank fusion of the prior and the signals
  (:func:`modelseek.retrieval.fusion.fuse`), each with its top ``k``;
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
  the plain top-``k`` (:func:`modelseek.retrieval.funnel.curve.sequential_wins`).

The parts live beside this module: :mod:`.table` (the recorded table, its splits), :mod:`.priors`, :mod:`.orders`
(the plain orders, the policies' names, the reliabilities), :mod:`.joint` (the Gaussian) and :mod:`.scoring` (one
split's metrics); what a history chooses by inner cross-fitting stays here, as it replays the history's own folds.
Every public name is importable from here too.

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
from ...core.errors import InputError
from ...core.stats.bootstrap import paired_bootstrap
from .joint import Acquisition, JointModel
from .merge import learn_gains, merged_final
from .orders import (FUNNEL, FUSION, MERGE_SUFFIX, PRIOR, SEQUENTIAL, WEIGHTED, fusion_weight, merge_name,
                     plain_orders, reliabilities, weighted_scores)
from .orders import _orders
from .priors import PriorForm, avgrank_scores, meanscore_scores, prior_scores
from .scoring import METRICS, _final_scores, _replay_split
from .table import Split, Table, check_covers, splits
from .table import _ranks_of, _scored_first, _signal_matrix

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


#: the weights of the joint model's evidence that ``blend`` chooses among (by inner cross-fitting on the history)
TRUST_GRID = (0.0, 0.5, 1.0, 2.0, 4.0, 8.0)


#: the fewest history tasks from which ``blend`` learns a weight (below: 0, the plain order)
MIN_TRUST_TASKS = 10


_INNER_REPEATS = 5  # noise draws of the inner replay that fits ``trust`` (its choice is a mean over many tasks)


DEFAULT_FINETUNES = (0, 1, 3, 5, 10)


def history_gains(history: GroundTruth, model_ids: Sequence[str], ks: Sequence[int],
                  form: PriorForm | str = PriorForm.AVGRANK, scheme: GradingScheme = GradingScheme.NTCIR,
                  noise: float = 0.0, seed: int = 0, unseen: bool = False) -> dict[int, Any]:
    """The merge's gain tables (:func:`modelseek.retrieval.funnel.merge.learn_gains`) for each ``k > 0`` of ``ks``,
    learned
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
    (:func:`modelseek.core.stats.bootstrap.paired_bootstrap`): a choice is made only where the low end is above 0."""
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


def fit_trust(history: GroundTruth, model_ids: Sequence[str], signals: Sequence[Run], finetunes: Sequence[int],
              noise: float, repeats: int, folds: int, seed: int, form: PriorForm | str = PriorForm.AVGRANK
              ) -> tuple[float, dict[float, dict[int, float]]]:
    """The ``blend`` weight that replay on ``history`` alone (``folds``-fold cross-fitting by task within it)
    finds best, and each weight's mean nDCG@5 per budget: the same rule as shipping the order
    (:func:`modelseek.retrieval.funnel.curve.sequential_wins`) — among the weights never below ``0`` (the plain order)
    at
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


def _split_trust(sp: Split, table: Table, signals: Sequence[Run], ks: Sequence[int], noise: float, repeats: int,
                 folds: int, seed: int, form: PriorForm | str = PriorForm.AVGRANK) -> float:
    """The ``blend`` weight learned from the split's history alone (0, the plain order, when it holds fewer than
    :data:`MIN_TRUST_TASKS` tasks: an inner cross-fitting over a handful of tasks picks a weight by noise)."""
    if len(sp.history.task_ids) < MIN_TRUST_TASKS:
        return 0.0
    return fit_trust(sp.history, table.model_ids, signals, ks, noise, repeats, folds, seed, form)[0]


__all__ = ["CHOICE_BOOTSTRAP", "DEFAULT_FINETUNES", "FORM_FINETUNES", "FUNNEL", "FUSION", "MERGE_SUFFIX", "METRICS",
           "MIN_CHOICE_TASKS", "MIN_MERGE_TASKS", "MIN_TRUST_TASKS", "ORDER_FINETUNES", "PRIOR", "SEQUENTIAL",
           "TRUST_GRID", "WEIGHTED", "Acquisition", "Choices", "JointModel", "PriorForm", "ReplayData", "Split",
           "Table", "avgrank_scores", "check_covers", "choose_on_history", "fit_trust", "funnel_rankings",
           "fusion_weight", "gains_clearly", "history_gains", "meanscore_scores", "merge_name", "plain_orders",
           "prior_scores", "reliabilities", "replay", "splits", "weighted_scores"]
