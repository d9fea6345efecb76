"""What replay chooses on a history by inner cross-fitting: the prior's form, the order, the final ranking per
budget (the expected-gain merge or fine-tuned first) and the sequential order's trust — each alternative to the
default only where its held-out gain is positive with its paired 95 % interval."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..data.run import Run
from ..data.truth import GradingScheme, GroundTruth
from ..errors import InputError
from .joint import Acquisition
from .orders import FUSION, PRIOR, SEQUENTIAL, WEIGHTED, merge_name, reliabilities
from .priors import PriorForm
from .table import Split, Table

if TYPE_CHECKING:
    from .replay import ReplayData

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
    from .replay import replay  # lazy: replay chooses with these, these replay inner folds
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
    (:func:`modelseek.funnel.curve.sequential_wins`) — among the weights never below ``0`` (the plain order) at
    any budget, the highest mean at ``k = 3`` and ``5`` (every budget above 0 when neither is asked), the smallest
    among equals. Signals join only where they score every task of the history; the plain order is then their
    fusion with the prior, as in the outer replay."""
    from .replay import replay  # lazy: replay chooses with these, these replay inner folds
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
