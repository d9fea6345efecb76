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

The parts live beside this module (:mod:`.table`, :mod:`.priors`, :mod:`.orders`, :mod:`.joint`, :mod:`.choose`);
every public name is importable from here too.

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
from ..errors import InputError
from ..metrics.ndcg import ideal_dcg, ndcg
from .choose import (CHOICE_BOOTSTRAP, FORM_FINETUNES, MIN_CHOICE_TASKS, MIN_MERGE_TASKS, MIN_TRUST_TASKS,
                     ORDER_FINETUNES, TRUST_GRID, Choices, choose_on_history, fit_trust, gains_clearly)
from .choose import _split_trust
from .joint import Acquisition, JointModel
from .merge import learn_gains, merged_final
from .orders import (FUNNEL, FUSION, MERGE_SUFFIX, PRIOR, SEQUENTIAL, WEIGHTED, fusion_weight, merge_name,
                     plain_orders, reliabilities, weighted_scores)
from .orders import _orders
from .priors import PriorForm, avgrank_scores, meanscore_scores, prior_scores
from .table import Split, Table, check_covers, splits
from .table import _ranks_of, _scored_first, _signal_matrix

METRICS = ("ndcg@1", "ndcg@3", "ndcg@5", "regret")


DEFAULT_FINETUNES = (0, 1, 3, 5, 10)


_TOP = 1e6  # fine-tuned candidates rank above every other (observed scores are far below this)


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


__all__ = ["CHOICE_BOOTSTRAP", "DEFAULT_FINETUNES", "FORM_FINETUNES", "FUNNEL", "FUSION", "MERGE_SUFFIX", "METRICS",
           "MIN_CHOICE_TASKS", "MIN_MERGE_TASKS", "MIN_TRUST_TASKS", "ORDER_FINETUNES", "PRIOR", "SEQUENTIAL",
           "TRUST_GRID", "WEIGHTED", "Acquisition", "Choices", "JointModel", "PriorForm", "ReplayData", "Split",
           "Table", "avgrank_scores", "check_covers", "choose_on_history", "fit_trust", "funnel_rankings",
           "fusion_weight", "gains_clearly", "history_gains", "meanscore_scores", "merge_name", "plain_orders",
           "prior_scores", "reliabilities", "replay", "splits", "weighted_scores"]
