"""``adaptive`` — the default ranker: the population prior, moved by the evidence a task carries, and an
explanation of what moved it and how much the choice matters.

**Ranking.** Candidate ``m`` of a new task is scored by minus its expected fine-tuned rank::

    score_m = prior_m + domain_m + neighbours_m + shape_m

* ``prior_m``: minus ``m``'s mean rank over the training tasks (alone, exactly the organisers' avgrank).
* ``domain_m`` (inference-free evidence from the model itself, :mod:`modelseek.retrieval.profiles`): the task's texts
and
  label names (the unit sum of their mean embeddings) are compared with the domain evidence of ``m``'s card (its
  domain, specific pre-training corpus, prior fine-tuning data and labels; general-purpose models have none) by
  cosine, standardised against the training tasks (``z``). How much to trust a match is learned per candidate,
  without a tuned parameter: ``b_m``, the least-squares slope of ``m``'s utility (minus its rank) on
  ``max(z - tau, 0)`` over the training tasks, so ``domain_m = domain_weight * b_m * max(z - tau, 0)``
  (``domain_weight = 1``: the slope as fitted; ``tau = 0.5``: a match counts from half a standard deviation above
  the past tasks' mean, so that text without a domain, whose affinities are near that mean, is not moved). A
  candidate that did no better on the past tasks that matched its card has ``b_m`` near 0 and is not moved,
  whatever its card says; one that did worse moves down.
* ``neighbours_m``: ``weight * g(q) * (knnrank_m(q) - prior_m)``, the softmax(cosine / T)-weighted mean utility
  over the ``k`` training tasks most similar to the task (as :mod:`task_knn <modelseek.retrieval.rankers.task_knn>`),
  optionally gated by how close those tasks are (``g``: 0 below the training tasks' lower quartile of
  closeness, 1 above the upper).
* ``shape_m``: ``shape_weight`` times per-candidate ridge slopes of utility on the task's shape (log2 classes,
  words per label name).

The domain slopes are fitted, not chosen (``domain_weight=auto`` searches a weight and threshold by
leave-one-task-out instead). The neighbour and shape stages, when searched (``auto``), are chosen on the training
tasks by leave-one-task-out nDCG@5 (the inner loop of the nested CV of ``modelseek bench`` /
``benchmarks/adaptive_default.py``), in that order, and kept only when their choice survives an inner
cross-validation (:func:`cv_select`). Measured on the 70 public NTCIR
tasks, the searched neighbour and shape terms lowered held-out nDCG@5 (their grids find in-sample gains that do
not generalise), so the default fixes ``weight = shape_weight = 0``; ``--param weight=auto`` (or a number)
brings them back. Without evidence (no card matches, stages off) the order *is* the prior, and the explanation
says so. A candidate without fine-tuning history is ranked, not refused: its prior is the mean prior of the
trained candidates of its architecture, and its card evidence moves it by the mean domain slope of the trained
candidates that have card evidence. The predicted relative F1 of ``m`` (its F1 over the best candidate's) blends
normalized F1 as the neighbour stage blends ranks.

**Explanation** (:meth:`AdaptiveRanker.explain`):

* per candidate, the evidence that moved it (``domain: clinical/biomedical (...); card: all MIMIC-III clinical
  notes``, the neighbours, the task shape, no history), in expected ranks;
* an interval for each ``pred_m``: ``pred_m`` plus the ``(1 -/+ coverage) / 2`` quantiles of ``m``'s
  leave-one-out residuals on the training tasks (a jackknife interval; clipped to [0, 1]);
* the expected regret of fine-tuning only the top-1 candidate instead of all of them: ``1 - pred_top1`` corrected
  by the mean leave-one-out error of that estimate on the training tasks, with an interval from the quantiles of
  those errors;
* the predicted criticality tier (Low/Medium/High): a class-balanced, similarity-weighted vote of the ``k_c``
  nearest training tasks' tiers (``k_c``, ``T_c`` by leave-one-out balanced accuracy), with where it comes from;
* the three most similar training tasks, with their cosine similarity.

The artifact holds numbers only (the training tasks' representations, the candidates' card embeddings,
normalized F1 and residuals) plus the training tasks' ids and names; ranking a new task embeds only that task's
texts (and the card of a candidate the artifact does not know).
"""

from __future__ import annotations

from collections.abc import Callable
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np

from ..data.pool import Pool, Candidate
from ..data.task import Task, TaskSet
from ..data.truth import GradingScheme, GroundTruth
from ...core.config import Constraint, Interval
from ...core.errors import InputError
from ..metrics.ndcg import ideal_dcg, ndcg
from ..taskrep import TaskRep, sample_indices, META_FEATURES
from ._learned import LearnedRanker
from ...core.kinds import register
from .base import Constraints

K_GRID = (3, 5, 10, 20, 40)
T_GRID = (0.02, 0.05, 0.1, 1.0)
W_GRID = tuple(np.round(np.linspace(0.0, 1.0, 11), 2))
KC_GRID = (3, 5, 10, 20)
TC_GRID = (0.05, 0.1, 1.0)
TIERS = ("low", "medium", "high")


def _unit_rows(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def _softmax_topk(sims: np.ndarray, k: int, temperature: float) -> np.ndarray:
    """Row-wise weights over columns: softmax(sims / T) on each row's ``k`` largest entries, 0 elsewhere
    (-inf entries, e.g. a task itself in leave-one-out, never count)."""
    k = min(k, int(np.isfinite(sims).sum(axis=1).min()))
    top = np.argsort(-sims, axis=1, kind="stable")[:, :k]
    s = np.take_along_axis(sims, top, axis=1)
    e = np.exp((s - s[:, :1]) / temperature)
    w = np.zeros_like(sims)
    np.put_along_axis(w, top, e / e.sum(axis=1, keepdims=True), axis=1)
    return w


def _balanced_accuracy(true: np.ndarray, pred: np.ndarray) -> float:
    classes = np.unique(true)
    return float(np.mean([(pred[true == c] == c).mean() for c in classes]))


def tier_votes(sims: np.ndarray, tiers: np.ndarray, k: int, temperature: float) -> np.ndarray:
    """(rows, 3) class-balanced tier probabilities from a similarity-weighted vote of the nearest tasks."""
    w = _softmax_topk(sims, k, temperature)
    onehot = np.stack([tiers == i for i in range(len(TIERS))], axis=1).astype(float)
    freq = np.maximum(onehot.mean(axis=0), 1e-12)  # balanced: a rare tier's vote weighs more
    p = (w @ onehot) / freq
    return p / np.maximum(p.sum(axis=1, keepdims=True), 1e-12)


SHAPE_FEATURES = ("log2_classes", "mean_label_words")  # of taskrep.META_FEATURES: the task's shape
SHAPE_GRID = (0.0, 0.25, 0.5, 1.0)
DOMAIN_GRID = (0.0, 0.5, 1.0, 2.0)
TAU_GRID = (0.0, 0.5, 1.0, 1.5)
DOMAIN_MODEL = "slope"  # the domain term's form, stored in artifacts (older ones had another form: see _set_state)
SHAPE_RIDGE = 1.0   # ridge penalty (per task) of the per-candidate slopes on the shape features
INNER_REPEATS = 3  # repeats of the inner cross-validation that decides whether a stage is kept
MOVED = 0.25        # an evidence term that moves a candidate by less than this many ranks is not named


def _gate(strength: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """How much of the neighbours' evidence a task carries: 0 below ``lo``, 1 above ``hi``, linear between."""
    if hi <= lo:
        return np.ones_like(strength)
    return np.clip((strength - lo) / (hi - lo), 0.0, 1.0)


def _topk_mean(sims: np.ndarray, k: int) -> np.ndarray:
    """Per row: the mean of the ``k`` largest finite similarities (how close the nearest past tasks are)."""
    k = min(k, int(np.isfinite(sims).sum(axis=1).min()))
    part = -np.sort(-np.where(np.isfinite(sims), sims, -np.inf), axis=1)[:, :k]
    return part.mean(axis=1)


def _ridge_slopes(x: np.ndarray, u: np.ndarray, ridge: float) -> tuple[np.ndarray, np.ndarray]:
    """(feature means, F x M slopes) of the per-candidate ridge regression of ``u`` on ``x`` (centred)."""
    mu = x.mean(axis=0)
    xc = x - mu
    a = xc.T @ xc + ridge * len(x) * np.eye(x.shape[1])
    return mu, np.linalg.solve(a, xc.T @ (u - u.mean(axis=0)))


def _loo_z(a: np.ndarray) -> np.ndarray:
    """Each row of ``a`` standardised per column by the mean and SD of the *other* rows (leave-one-out)."""
    n = len(a)
    mu = (a.sum(axis=0)[None, :] - a) / (n - 1)
    sq = ((a ** 2).sum(axis=0)[None, :] - a ** 2) / (n - 1)
    return (a - mu) / np.sqrt(np.maximum(sq - mu ** 2, 1e-12))


def card_matches(ranker: AdaptiveRanker) -> tuple[np.ndarray, list[int]]:
    """The card match ``z`` of every trained candidate on every training task of a fitted ``ranker`` (training
    tasks x trained candidates: the tasks' affinities to the candidate's card, standardised leave-one-out, as the
    domain slopes are fitted), and the columns of the candidates that have card evidence (the others' are 0)."""
    ranker._check_fitted()
    stored = ranker.profile_emb_
    cols = [j for j in range(ranker.utility_.shape[1]) if stored.shape[1] > 0 and np.any(stored[j])]
    return _card_z(ranker.akeys_, stored, cols), cols


def _card_z(akeys: np.ndarray, card_emb: np.ndarray, cols) -> np.ndarray:
    """Training tasks x candidates: each task's affinity to the cards of the candidates ``cols``, standardised
    leave-one-out per candidate (0 for the other candidates) -- what the domain slopes are fitted on."""
    z = np.zeros((len(akeys), len(card_emb)))
    if len(cols):
        z[:, cols] = _loo_z(akeys.astype(np.float64) @ card_emb[cols].astype(np.float64).T)
    return z


def _finite_or_none(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None


def clears_one_se(before: np.ndarray, after: np.ndarray) -> bool:
    """Whether a stage's per-task gain is worth its parameters: the mean paired gain exceeds one standard error
    of it (the one-standard-error rule of Breiman et al., 1984, against the simpler model: with a few dozen
    noisy tasks a grid search always finds a small in-sample gain)."""
    d = np.asarray(after, float) - np.asarray(before, float)
    if len(d) < 2 or not np.any(d):
        return False
    return bool(d.mean() > d.std(ddof=1) / np.sqrt(len(d)))


def _first_best(means: np.ndarray) -> int:
    """Index of the highest mean, the first (most preferred) on ties."""
    return int(np.argmax(np.asarray(means) - 1e-12 * np.arange(len(means))))


def cv_select(per_config: np.ndarray, base: np.ndarray, folds: int = 5, seed: int = 0) -> tuple[int, bool]:
    """Choose among a grid of configurations from their per-task leave-one-out scores (rows: configurations in
    preference order, columns: tasks), and say whether choosing is worth it.

    The choice is the best mean (the first on ties). Whether it is worth it is itself cross-validated: the
    tasks are split into ``folds`` (seeded), the choice is made on the other folds' tasks and scored on the
    held-out ones, and the stage is kept only when these held-out scores beat ``base`` (the stage left out) by
    more than one standard error. The best in-sample configuration of a large grid always looks better than the
    base on a few dozen noisy tasks; this asks whether the *selection procedure* generalises.
    """
    n = per_config.shape[1]
    best = _first_best(per_config.mean(axis=1))
    if n < 2 * folds:
        return best, False
    held = np.zeros(n)
    for r in range(INNER_REPEATS):  # repeated with other splits: the decision must not hinge on one split
        order = np.random.default_rng([seed, r]).permutation(n)
        for f in range(folds):
            test = order[f::folds]
            train = np.setdiff1d(np.arange(n), test)
            held[test] += per_config[_first_best(per_config[:, train].mean(axis=1)), test] / INNER_REPEATS
    return best, clears_one_se(base, held)


def _slope(sx, su, sxx, sxu, m) -> np.ndarray:
    """Least-squares slope from sums over ``m`` rows; 0 where ``x`` does not vary."""
    cxx = sxx / m - (sx / m) ** 2
    cxu = sxu / m - (sx / m) * (su / m)
    flat = cxx <= 1e-12
    return np.where(flat, 0.0, cxu / np.where(flat, 1.0, cxx))


def domain_slopes(z: np.ndarray, u: np.ndarray, tau: float, loo: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Per candidate (column): the least-squares slope of its utility ``u`` on ``x = max(z - tau, 0)`` over the past
    tasks (rows), and the slope's standard error. A candidate whose ``x`` does not vary (no past task matched its
    card) has slope 0. ``loo``: slopes with one row per past task, each fitted without that task (a task is not its
    own evidence); the standard errors are those of the full fit."""
    x = np.maximum(z - tau, 0.0)
    n = len(u)
    sx, su, sxx, sxu = x.sum(axis=0), u.sum(axis=0), (x ** 2).sum(axis=0), (x * u).sum(axis=0)
    full = _slope(sx, su, sxx, sxu, n)
    # leave-one-out: each row's own terms taken out of the sums
    slope = _slope(sx - x, su - u, sxx - x ** 2, sxu - x * u, n - 1) if loo else full
    xc = x - x.mean(axis=0)
    sxx = (xc ** 2).sum(axis=0)
    resid = (u - u.mean(axis=0)) - xc * full
    se = np.sqrt((resid ** 2).sum(axis=0) / max(n - 2, 1) / np.maximum(sxx, 1e-12))
    return slope, np.where(sxx <= 1e-12, 0.0, se)


class _Auto(Constraint):
    """``auto`` (any case; also ``none``, ``null`` or empty): the value is chosen on the training tasks."""

    def is_satisfied_by(self, value: Any) -> bool:
        return isinstance(value, str) and value.strip().lower() in ("auto", "none", "null", "")

    def __str__(self) -> str:
        return "'auto'"


class _Text(Constraint):
    def is_satisfied_by(self, value: Any) -> bool:
        return isinstance(value, str)

    def __str__(self) -> str:
        return "a profile file path"


_AUTO = _Auto()


@register("ranker")
class AdaptiveRanker(LearnedRanker):
    name = "adaptive"
    _parameter_constraints: ClassVar[Constraints] = {
        **LearnedRanker._parameter_constraints,
        "k": [Interval(Integral, 1, None, closed="left"), _AUTO, None],
        "temperature": [Interval(Real, 0, None, closed="neither"), _AUTO, None],
        "weight": [Interval(Real, 0, 1, closed="both"), _AUTO, None],
        "shape_weight": [Interval(Real, 0, 10, closed="both"), _AUTO, None],
        "domain_weight": [Interval(Real, 0, 100, closed="both"), _AUTO, None],
        "domain_threshold": [Interval(Real, -10, 10, closed="both"), _AUTO, None],
        "coverage": [Interval(Real, 0, 1, closed="neither")],
        "profiles": [_Text(), None],
    }

    # the fitted state (set by fit or load; declared here for the type checker, absent until then)
    domain_weight_: float
    domain_threshold_: float
    weight_: float
    k_: int
    temperature_: float
    gate_: bool
    gate_lo_: float
    gate_hi_: float
    shape_weight_: float
    shape_mean_: np.ndarray
    shape_slopes_: np.ndarray
    loo_ndcg5_: float
    loo_ndcg5_prior_: float
    keys_: np.ndarray
    akeys_: np.ndarray
    profile_emb_: np.ndarray
    targets_: np.ndarray
    residuals_: np.ndarray
    utility_: np.ndarray
    regret_residuals_: np.ndarray
    loo_regret_: float
    loo_tier_balanced_accuracy_: float
    k_tier_: int
    temperature_tier_: float
    tiers_: np.ndarray
    task_names_: list[str]
    # what fit hands from _learn to _fit
    _fit_ranks: np.ndarray
    _fit_tiers: np.ndarray
    _fit_names: dict[str, str]

    def __init__(self, k: int | None = None, temperature: float | None = None, weight: float | str | None = 0.0,
                 shape_weight: float | str | None = 0.0, domain_weight: float | str | None = 1.0,
                 domain_threshold: float | str | None = 0.5, coverage: float = 0.8, profiles: str | None = None,
                 encoder: str = "minilm", max_texts: int = 256, cache_dir: str | None = "auto",
                 seed: int = 0) -> None:
        super().__init__(encoder, max_texts, cache_dir, seed)
        self.k = k
        self.temperature = temperature
        self.weight = weight
        self.shape_weight = shape_weight
        self.domain_weight = domain_weight
        self.domain_threshold = domain_threshold
        self.coverage = coverage
        self.profiles = profiles

    # ------------------------------------------------------------------------------------------ fitting
    def _auto_to_none(self) -> None:
        """Parameters given as ``auto`` are chosen on the training tasks (see the module docstring): None."""
        for name in ("k", "temperature", "weight", "shape_weight", "domain_weight", "domain_threshold"):
            if _AUTO.is_satisfied_by(getattr(self, name)):
                setattr(self, name, None)

    def _extra_profiles(self) -> dict:
        from ..profiles import read_profiles  # lazy: start-up

        if self.profiles is None:
            return {}
        cache = self.__dict__.setdefault("_profiles_cache", {})
        if self.profiles not in cache:
            cache[self.profiles] = read_profiles(self.profiles)
        return cache[self.profiles]

    def _profile_matrix(self, profs) -> tuple[np.ndarray, np.ndarray]:
        """(unit embeddings of the profiles' domain evidence, mask of profiles that carry any)."""
        texts = [p.evidence_text() for p in profs]
        has = np.array([bool(t) for t in texts])
        emb = np.zeros((len(profs), 0))
        if has.any():
            e = self._enc()([t for t in texts if t]).astype(np.float64)
            emb = np.zeros((len(profs), e.shape[1]))
            emb[has] = e
        return emb, has

    def _learn(self, tasks: TaskSet | None, truth: GroundTruth, *, pool: Pool | None, progress: bool) -> None:
        self._auto_to_none()
        f1 = truth.matrix("normalized_f1")
        self._fit_ranks = truth.matrix("model_rank").loc[f1.index, f1.columns].to_numpy(float)
        self._fit_tiers = np.array([TIERS.index(truth.criticality(t).value) for t in truth.task_ids])
        self._fit_names = {t: (tasks.get(t).name if tasks is not None and t in tasks else "") for t in truth.task_ids}
        super()._learn(tasks, truth, pool=pool, progress=progress)

    def _fit(self, tasks, reps, y, progress) -> None:
        self.__dict__.pop("_slopes_memo", None)  # derived from the fitted state (see trained_slopes)
        n = len(reps)
        if n < 3:
            raise InputError(f"method 'adaptive' needs at least 3 training tasks, got {n}")
        keys = _unit_rows(np.stack([r.mean for r in reps]).astype(np.float64))
        akeys = self._affinity_keys(reps)
        shape_x = np.stack([r.meta[[META_FEATURES.index(f) for f in SHAPE_FEATURES]] for r in reps]).astype(np.float64)
        sims = keys @ keys.T
        np.fill_diagonal(sims, -np.inf)  # leave-one-task-out: a task is never its own neighbour
        u = -self._fit_ranks  # ranking utility: minus the fine-tuned rank (1 = best), as the organisers' avgrank
        prior_loo = (u.sum(axis=0)[None, :] - u) / (n - 1)
        f1_prior_loo = (y.sum(axis=0)[None, :] - y) / (n - 1)
        gains = np.vectorize(lambda v: GradingScheme.NTCIR.gain(GradingScheme.NTCIR.grade(v)))(y)
        idcg = ideal_dcg(gains, 5)
        score = lambda s: float(ndcg(s, gains, 5, idcg).mean())  # noqa: E731
        per_task = lambda s: ndcg(s, gains, 5, idcg)  # noqa: E731

        # Three stages of evidence, each chosen on the training tasks by leave-one-out and kept only when its
        # choice survives an inner cross-validation (cv_select); a stage that is not kept contributes nothing.
        pemb, stage1 = self._fit_domain(akeys, u, prior_loo, per_task)
        g, nbr, stage2 = self._fit_neighbours(sims, u, prior_loo, stage1, per_task)
        final = self._fit_shape(shape_x, u, stage2, per_task)
        self.loo_ndcg5_ = score(final)
        self.loo_ndcg5_prior_ = score(prior_loo)
        pred_loo = f1_prior_loo + self.weight_ * g * (nbr @ y - f1_prior_loo)
        self.keys_ = keys.astype(np.float32)
        self.akeys_ = akeys.astype(np.float32)
        self.profile_emb_ = pemb.astype(np.float32)
        self.targets_ = y.astype(np.float32).astype(np.float64)  # as stored in the artifact: save/load is exact
        self.residuals_ = (y - pred_loo).astype(np.float32).astype(np.float64)
        self.utility_ = u.astype(np.float32).astype(np.float64)
        top = np.argmax(final, axis=1)
        every = np.arange(n)
        self.regret_residuals_ = (1 - y[every, top]) - (1 - pred_loo[every, top])
        self.regret_residuals_ = self.regret_residuals_.astype(np.float32).astype(np.float64)
        self.loo_regret_ = float((1 - y[every, top]).mean())
        self._fit_criticality(sims)
        self.task_names_ = [self._fit_names.get(t, "") for t in self.fitted_task_ids_]

    def _fit_domain(self, akeys: np.ndarray, u: np.ndarray, prior_loo: np.ndarray,
                    per_task: Callable[[np.ndarray], np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """Stage 1, domain evidence: the task's texts and label names against each candidate's card; a candidate
        moves by what it showed on the past tasks that matched its card as well (the most specific evidence, so it
        is weighed first). Sets ``domain_weight_``/``domain_threshold_``; returns (the candidates' card
        embeddings, the leave-one-out scores after this stage)."""
        from ..profiles import profile_for  # lazy: start-up

        extra = self._extra_profiles()
        profs = [profile_for(Candidate(id=m, hf_id=h), extra) for m, h in zip(self.trained_.model_ids,
                                                                               self.trained_.hf_ids)]
        pemb, has = self._profile_matrix(profs)
        z = _card_z(akeys, pemb, np.flatnonzero(has))
        taus = (float(self.domain_threshold),) if self.domain_threshold is not None else TAU_GRID
        betas = (float(self.domain_weight),) if self.domain_weight is not None else DOMAIN_GRID
        domain_configs: list[tuple[float, float]] = []
        rows: list[np.ndarray] = []
        terms: dict[float, np.ndarray] = {}
        for b in betas:  # ascending: ties keep the smaller weight, then the higher threshold
            for tau in taus[::-1]:
                if tau not in terms:
                    terms[tau] = domain_slopes(z, u, tau, loo=True)[0] * np.maximum(z - tau, 0.0)
                domain_configs.append((b, tau))
                rows.append(per_task(prior_loo + b * terms[tau]))
        # By default (weight 1, threshold 0.5) nothing is chosen: the slopes are the evidence's learned trust. A
        # searched grid ('auto') is chosen by leave-one-out; in the repeated nested CV choosing the weight this way
        # did worse than the plain slope (docs/results/learned-rankers.md).
        self.domain_weight_, self.domain_threshold_ = domain_configs[_first_best(np.array(rows).mean(axis=1))]
        return pemb, prior_loo + self.domain_weight_ * terms[self.domain_threshold_]

    def _fit_neighbours(self, sims: np.ndarray, u: np.ndarray, prior_loo: np.ndarray, stage1: np.ndarray,
                        per_task: Callable[[np.ndarray], np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Stage 2, the nearest past tasks: weight, neighbourhood, and whether closeness gates the weight. Sets
        ``weight_``, ``k_``, ``temperature_`` and the gate; returns (the gate per task as a column, the
        leave-one-out neighbour weights, the leave-one-out scores after this stage)."""
        ks = (int(self.k),) if self.k is not None else K_GRID
        ts = (float(self.temperature),) if self.temperature is not None else T_GRID
        ws = (float(self.weight),) if self.weight is not None else W_GRID
        configs: list[tuple[float, int, float, bool, float, float]] = []
        rows: list[np.ndarray] = []
        for w in ws:  # ascending: on ties the smaller weight (closer to the prior) wins
            for gate in (False, True):
                for k in ks:
                    strength = _topk_mean(sims, k)
                    lo, hi = (np.quantile(strength, [0.25, 0.75]) if gate else (0.0, 0.0))
                    g = _gate(strength, lo, hi)[:, None] if gate else 1.0
                    for t in ts:
                        knn_loo = _softmax_topk(sims, k, t) @ u
                        configs.append((w, k, t, gate, float(lo), float(hi)))
                        rows.append(per_task(stage1 + w * g * (knn_loo - prior_loo)))
        c, keep = cv_select(np.array(rows), per_task(stage1), seed=int(self.seed))
        self.weight_, self.k_, self.temperature_, self.gate_, self.gate_lo_, self.gate_hi_ = configs[c]
        if self.weight is None and not keep:
            self.weight_ = 0.0
        gate_col = self._gate_of(_topk_mean(sims, self.k_))[:, None]
        nbr = _softmax_topk(sims, self.k_, self.temperature_)
        return gate_col, nbr, stage1 + self.weight_ * gate_col * (nbr @ u - prior_loo)

    def _fit_shape(self, shape_x: np.ndarray, u: np.ndarray, stage2: np.ndarray,
                   per_task: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        """Stage 3, the task's shape (classes, label length): per-candidate slopes, fitted without the task. Sets
        ``shape_weight_`` and the slopes on all tasks; returns the final leave-one-out scores."""
        n = len(shape_x)
        shape_loo = np.zeros_like(u)
        for i in range(n):
            keep_rows = np.arange(n) != i
            mu, slopes = _ridge_slopes(shape_x[keep_rows], u[keep_rows], SHAPE_RIDGE)
            shape_loo[i] = (shape_x[i] - mu) @ slopes
        sws = (float(self.shape_weight),) if self.shape_weight is not None else SHAPE_GRID
        c, keep = cv_select(np.array([per_task(stage2 + s * shape_loo) for s in sws]), per_task(stage2),
                            seed=int(self.seed))
        self.shape_weight_ = sws[c] if (self.shape_weight is not None or keep) else 0.0
        self.shape_mean_, self.shape_slopes_ = _ridge_slopes(shape_x, u, SHAPE_RIDGE)
        return stage2 + self.shape_weight_ * shape_loo

    def _fit_criticality(self, sims: np.ndarray) -> None:
        """The criticality model: its own neighbourhood, chosen by leave-one-out balanced accuracy."""
        tiers = self._fit_tiers
        bestc: tuple[float, int, float] | None = None
        for kc in KC_GRID:
            for tc in TC_GRID:
                acc = _balanced_accuracy(tiers, tier_votes(sims, tiers, kc, tc).argmax(axis=1))
                if bestc is None or acc > bestc[0] + 1e-12:
                    bestc = (acc, kc, tc)
        assert bestc is not None  # the grids are not empty
        self.loo_tier_balanced_accuracy_, self.k_tier_, self.temperature_tier_ = bestc
        self.tiers_ = tiers

    @staticmethod
    def _affinity_keys(reps) -> np.ndarray:
        """Unit vectors of a task's texts and label names together (the mean text embedding plus the mean label
        embedding): what is compared with the candidates' cards."""
        a = np.stack([_unit_rows(r.mean.astype(np.float64)) + _unit_rows(r.label_emb.astype(np.float64).mean(axis=0))
                      for r in reps])
        return _unit_rows(a)

    def _gate_of(self, strength: np.ndarray) -> np.ndarray:
        return _gate(strength, self.gate_lo_, self.gate_hi_) if self.gate_ else np.ones_like(strength)

    # ------------------------------------------------------------------------------------------ ranking
    def _query(self, rep: TaskRep) -> np.ndarray:
        q = rep.mean.astype(np.float64)
        return q / max(float(np.linalg.norm(q)), 1e-12)

    def _terms(self, rep: TaskRep, pool: Pool) -> dict[str, Any]:
        """Everything a ranking of ``pool`` rests on, per candidate (in pool order): the prior, each evidence
        term in expected-rank units, the predicted relative F1, and the similarities to the training tasks."""
        from ..profiles import profile_for  # lazy: start-up

        idx = self.trained_.match(pool)
        known = idx >= 0
        profs = [profile_for(c, self._extra_profiles()) for c in pool]
        sims = self.keys_.astype(np.float64) @ self._query(rep)
        k = int(self.k_)
        strength = float(_topk_mean(sims[None, :], k)[0])
        gate = float(self._gate_of(np.array([strength]))[0])
        w = _softmax_topk(sims[None, :], k, float(self.temperature_))[0]
        u, y = self.utility_, self.targets_
        prior_all, knn_all = u.mean(axis=0), w @ u
        f1_prior_all, f1_knn_all = y.mean(axis=0), w @ y
        fam = self._family_prior(profs, idx, prior_all, f1_prior_all)
        prior = np.where(known, prior_all[np.maximum(idx, 0)], fam[0])
        f1_prior = np.where(known, f1_prior_all[np.maximum(idx, 0)], fam[1])
        knn = np.where(known, self.weight_ * gate * (knn_all - prior_all)[np.maximum(idx, 0)], 0.0)
        f1 = f1_prior + np.where(known, self.weight_ * gate * (f1_knn_all - f1_prior_all)[np.maximum(idx, 0)], 0.0)
        x = rep.meta[[META_FEATURES.index(f) for f in SHAPE_FEATURES]].astype(np.float64)
        shape_all = float(self.shape_weight_) * ((x - self.shape_mean_) @ self.shape_slopes_)
        shape = np.where(known, shape_all[np.maximum(idx, 0)], 0.0)
        z, domain, slope, slope_se = self._domain(rep, profs, idx)
        return {"idx": idx, "profiles": profs, "sims": sims, "strength": strength, "gate": gate, "prior": prior,
                "knn": knn, "shape": shape, "z": z, "domain": domain, "slope": slope, "slope_se": slope_se,
                "f1": np.clip(f1, 0.0, 1.0),
                "shape_x": x, "score": prior + knn + shape + domain}

    def _family_prior(self, profs, idx, prior_all, f1_prior_all) -> tuple[np.ndarray, np.ndarray]:
        """For candidates without history: the mean prior of the trained candidates of the same architecture,
        else of all trained candidates."""
        from ..profiles import profile_for  # lazy: start-up

        arch = getattr(self, "_trained_arch", None)
        if arch is None:
            arch = [profile_for(Candidate(id=m, hf_id=h), self._extra_profiles()).architecture.split(" ")[0].lower()
                    for m, h in zip(self.trained_.model_ids, self.trained_.hf_ids)]
            self._trained_arch = arch
        out_u, out_f = np.zeros(len(profs)), np.zeros(len(profs))
        for i, (p, j) in enumerate(zip(profs, idx)):
            if j >= 0:
                continue
            a = p.architecture.split(" ")[0].lower()
            same = [m for m, b in enumerate(arch) if a and b == a]
            cols = same or list(range(len(arch)))
            out_u[i], out_f[i] = prior_all[cols].mean(), f1_prior_all[cols].mean()
        return out_u, out_f

    def _domain(self, rep: TaskRep, profs, idx) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(z score of the task's affinity to each candidate's card against the training tasks, its term in
        expected ranks: the candidate's slope (:func:`domain_slopes`) times how far ``z`` is above the threshold, the
        slope, its standard error)."""
        beta, tau = float(self.domain_weight_), float(self.domain_threshold_)
        z, term, slope, se = (np.zeros(len(profs)) for _ in range(4))
        if not profs or beta == 0.0:
            return z, term, slope, se
        q = self._affinity_keys([rep])[0]
        emb = np.zeros((len(profs), self.akeys_.shape[1]))
        stored = self.profile_emb_
        has_stored = lambda j: j >= 0 and stored.shape[1] > 0 and bool(np.any(stored[j]))  # noqa: E731
        need = [i for i, (p, j) in enumerate(zip(profs, idx))
                if p.evidence_text() and (not has_stored(j) or p.origin.startswith("file"))]
        for i, j in enumerate(idx):
            if has_stored(j) and i not in need:
                emb[i] = stored[j]
        if need:
            emb[need] = self._enc()([profs[i].evidence_text() for i in need]).astype(np.float64)
        has = np.linalg.norm(emb, axis=1) > 0
        if not has.any():
            return z, term, slope, se
        akeys = self.akeys_.astype(np.float64)
        train = akeys @ emb[has].T  # the training tasks' affinities to these cards: the reference
        mu, sd = train.mean(axis=0), np.maximum(train.std(axis=0), 1e-6)
        z[has] = (q @ emb[has].T - mu) / sd
        # how much each candidate gained per unit of card match on the past tasks (trained candidates: their own
        # slope; a candidate without history: the mean slope of the trained candidates that have card evidence)
        slopes, ses, pooled = self.trained_slopes()
        slope = np.where(has, [slopes[j] if has_stored(j) else pooled for j in idx], 0.0)
        se = np.where(has, [ses[j] if has_stored(j) else np.nan for j in idx], np.nan)
        term = beta * slope * np.maximum(z - tau, 0.0)
        return z, term, slope, se

    def trained_slopes(self) -> tuple[np.ndarray, np.ndarray, float]:
        """Each trained candidate's domain slope and its standard error on the training tasks (as fitted: the
        training tasks' affinities standardised leave-one-out), and the mean slope over the candidates with card
        evidence (what a candidate without history gets): fitted state only, computed once."""
        cached = self.__dict__.get("_slopes_memo")
        if cached is not None:
            return cached
        tz, tcols = card_matches(self)
        slopes, se = domain_slopes(tz, self.utility_, float(self.domain_threshold_))
        self._slopes_memo = (slopes, se, float(np.mean(slopes[tcols])) if tcols else 0.0)
        return self._slopes_memo

    def rank(self, task: Task, pool: Pool) -> dict[str, float]:
        self._check_fitted()
        t = self._terms(self._rep(task), pool)
        return {c.id: float(s) for c, s in zip(pool, t["score"])}

    def explain(self, task: Task, pool: Pool, neighbours: int = 3) -> dict[str, Any]:
        """The ranking of ``pool`` for ``task`` with what it rests on (see the module docstring); JSON-ready."""
        self._check_fitted()
        rep = self._rep(task)
        t = self._terms(rep, pool)
        idx, score, pred, sims = t["idx"], t["score"], t["f1"], t["sims"]
        a = (1 - float(self.coverage)) / 2
        lo_off, hi_off = np.quantile(self.residuals_, [a, 1 - a], axis=0)
        pooled_lo, pooled_hi = np.quantile(self.residuals_, [a, 1 - a])
        order = np.argsort(-score, kind="stable")
        n_train = len(self.fitted_task_ids_)
        cands: list[dict[str, Any]] = []
        for r, j in enumerate(order, start=1):
            c, m, prof = pool[int(j)], int(idx[j]), t["profiles"][int(j)]
            lo = lo_off[m] if m >= 0 else pooled_lo
            hi = hi_off[m] if m >= 0 else pooled_hi
            cands.append({"rank": r, "doc": c.id, "model": c.hf_id or c.id, "expected_rank": float(-score[j]),
                          "relative_f1": float(pred[j]),
                          "low": float(np.clip(pred[j] + lo, 0, 1)), "high": float(np.clip(pred[j] + hi, 0, 1)),
                          "history": bool(m >= 0),
                          "evidence": self._evidence(t, int(j), prof, n_train)})
        top = int(order[0])
        rlo, rhi = np.quantile(self.regret_residuals_, [a, 1 - a])
        naive = 1 - float(pred[top])
        regret = float(np.clip(naive + self.regret_residuals_.mean(), 0, 1))
        probs = tier_votes(sims[None, :], self.tiers_, int(self.k_tier_), float(self.temperature_tier_))[0]
        near = np.argsort(-sims, kind="stable")[:neighbours]
        n_rows = len(task.train)
        moved = max((abs(d["ranks"]) for c in cands for d in c["evidence"]), default=0.0)
        fired = [{"model": c["model"], "z": float(t["z"][int(j)]), "domain": t["profiles"][int(j)].domain_name(),
                  "card": t["profiles"][int(j)].evidence_short()}
                 for c, j in zip(cands, order) if t["domain"][int(j)] >= MOVED]
        return {
            "task": task.id,
            "sample": {"texts_embedded": len(sample_indices(task.train.labels, int(self.max_texts), int(self.seed))),
                       "train_rows": n_rows, "rows_total": int(n_rows + len(task.val)), "val_rows": len(task.val),
                       "max_texts": int(self.max_texts), "seed": int(self.seed), "stratified_by": "label"},
            "candidates": cands,
            "coverage": float(self.coverage),
            "regret_top1": {"expected": regret, "low": float(np.clip(naive + rlo, 0, 1)),
                            "high": float(np.clip(naive + rhi, 0, 1))},
            "criticality": self._criticality(task, probs),
            "nearest_tasks": [{"task": self.fitted_task_ids_[int(i)], "name": self.task_names_[int(i)],
                               "similarity": float(sims[int(i)])} for i in near],
            "evidence": {"neighbour_closeness": t["strength"], "neighbour_gate": t["gate"],
                         "neighbour_weight": float(self.weight_ * t["gate"]),
                         "domain_matches": fired, "fallback_to_prior": bool(moved < MOVED)},
            "blend": {"weight": float(self.weight_), "k": int(self.k_), "temperature": float(self.temperature_),
                      "gate": bool(self.gate_), "shape_weight": float(self.shape_weight_),
                      "domain_weight": float(self.domain_weight_), "domain_threshold": float(self.domain_threshold_),
                      "training_tasks": n_train},
        }

    def _criticality(self, task: Task, probs: np.ndarray) -> dict[str, Any]:
        """The task's tier: the one tasks.csv gives (``task_criticalness``) when known, else the vote of the most
        similar past tasks; the vote's probabilities are reported either way."""
        vote = TIERS[int(np.argmax(probs))]
        out: dict[str, Any] = {"tier": vote, "vote": vote, "probabilities": {k: float(p) for k, p in zip(TIERS, probs)},
                               "source": f"a similarity-weighted vote of the {int(self.k_tier_)} most similar past "
                                         f"tasks' tiers"}
        if task.criticality is not None:
            out.update(tier=task.criticality.value, source="given by tasks.csv (task_criticalness)")
        return out

    def _evidence(self, t: dict, j: int, prof, n_train: int) -> list[dict[str, Any]]:
        """What moved candidate ``j`` away from its prior, in expected ranks (positive = up), largest first."""
        out = []
        if t["idx"][j] < 0:
            out.append({"kind": "no_history", "ranks": 0.0,
                        "text": f"no fine-tuning history: the prior of its architecture "
                                f"({prof.architecture or 'unknown'}) among the {n_train}-task history"})
        if abs(t["knn"][j]) >= MOVED:
            out.append({"kind": "neighbours", "ranks": float(t["knn"][j]),
                        "text": f"the most similar past tasks ({t['knn'][j]:+.1f} ranks)"})
        if abs(t["shape"][j]) >= MOVED:
            classes = 2 ** float(t["shape_x"][0])
            out.append({"kind": "shape", "ranks": float(t["shape"][j]),
                        "text": f"task shape: {classes:.0f} classes ({t['shape'][j]:+.1f} ranks)"})
        if abs(t["domain"][j]) < MOVED and t["z"][j] > float(self.domain_threshold_) + 1 and self.domain_weight_ > 0:
            out.append({"kind": "domain_unconfirmed", "ranks": float(t["domain"][j]),
                        "text": f"its card ({prof.domain_name() or prof.evidence_short()}) matches the task (z "
                                f"{t['z'][j]:.1f}), but on the past tasks it did not do better the better they "
                                f"matched its card ({self._per_unit(t, j)}): not moved"})
        if abs(t["domain"][j]) >= MOVED:
            what = prof.domain_name() or "its card"
            card = prof.evidence_short()
            how = "gained" if t["domain"][j] > 0 else "lost"
            out.append({"kind": "domain", "ranks": float(t["domain"][j]), "z": float(t["z"][j]),
                        "slope": float(t["slope"][j]), "slope_se": _finite_or_none(t["slope_se"][j]),
                        "text": f"domain: {what} (texts and labels resemble its card, z {t['z'][j]:.1f}; on past tasks "
                                f"it {how} {self._per_unit(t, j)}: {t['domain'][j]:+.1f} ranks)"
                                + (f"; card: {card}" if card else "")})
        return sorted(out, key=lambda d: -abs(d["ranks"]))

    @staticmethod
    def _per_unit(t: dict, j: int) -> str:
        """The candidate's slope in words: "1.1 ± 0.4 ranks per unit of card match" (the ± where it is known)."""
        se = t["slope_se"][j]
        pm = f" ± {se:.2f}" if np.isfinite(se) else " (the mean of the trained candidates)"
        return f"{abs(float(t['slope'][j])):.2f}{pm} ranks per unit of card match"

    # ------------------------------------------------------------------------------------------ artifacts
    def _state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        arrays: dict[str, np.ndarray] = {
            "keys": self.keys_.astype(np.float32), "targets": self.targets_.astype(np.float32),
            "utility": self.utility_.astype(np.float32), "residuals": self.residuals_.astype(np.float32),
            "regret_residuals": self.regret_residuals_.astype(np.float32), "tiers": self.tiers_.astype(np.int8),
            "akeys": self.akeys_.astype(np.float32), "profile_emb": self.profile_emb_.astype(np.float32),
            "shape_mean": self.shape_mean_.astype(np.float64), "shape_slopes": self.shape_slopes_.astype(np.float64)}
        extra: dict[str, Any] = {
            "weight": self.weight_, "k": self.k_, "temperature": self.temperature_, "k_tier": self.k_tier_,
            "temperature_tier": self.temperature_tier_, "task_names": self.task_names_,
            "loo_ndcg5": self.loo_ndcg5_, "loo_ndcg5_prior": self.loo_ndcg5_prior_,
            "loo_tier_balanced_accuracy": self.loo_tier_balanced_accuracy_,
            "loo_regret": self.loo_regret_, "gate": bool(self.gate_), "gate_lo": self.gate_lo_,
            "gate_hi": self.gate_hi_, "shape_weight": self.shape_weight_, "domain_weight": self.domain_weight_,
            "domain_threshold": self.domain_threshold_, "domain_model": DOMAIN_MODEL}
        return arrays, extra

    def _set_state(self, arrays, extra) -> None:
        self._auto_to_none()
        self.__dict__.pop("_slopes_memo", None)
        self.keys_ = arrays["keys"].astype(np.float32)
        self.targets_ = arrays["targets"].astype(np.float64)
        self.utility_ = arrays["utility"].astype(np.float64)
        self.residuals_ = arrays["residuals"].astype(np.float64)
        self.regret_residuals_ = arrays["regret_residuals"].astype(np.float64)
        self.tiers_ = arrays["tiers"].astype(int)
        self.weight_, self.k_, self.temperature_ = float(extra["weight"]), int(extra["k"]), float(extra["temperature"])
        self.k_tier_, self.temperature_tier_ = int(extra["k_tier"]), float(extra["temperature_tier"])
        self.task_names_ = [str(x) for x in extra["task_names"]]
        self.loo_ndcg5_ = float(extra["loo_ndcg5"])
        self.loo_ndcg5_prior_ = float(extra.get("loo_ndcg5_prior", float("nan")))
        self.loo_tier_balanced_accuracy_ = float(extra["loo_tier_balanced_accuracy"])
        self.loo_regret_ = float(extra["loo_regret"])
        # artifacts written before the evidence terms: the plain blend (no gate, no shape, no domain term)
        n_models = self.utility_.shape[1]
        self.gate_ = bool(extra.get("gate", False))
        self.gate_lo_, self.gate_hi_ = float(extra.get("gate_lo", 0.0)), float(extra.get("gate_hi", 0.0))
        self.shape_weight_ = float(extra.get("shape_weight", 0.0))
        # the domain term's form: artifacts written before the slope (2026-11-26) stored the weight of an earlier
        # form that is gone; they rank without a domain term (refit them: `modelseek train-ranker`)
        slope_form = extra.get("domain_model") == DOMAIN_MODEL
        self.domain_weight_ = float(extra.get("domain_weight", 0.0)) if slope_form else 0.0
        self.domain_threshold_ = float(extra.get("domain_threshold", 1.0))
        self.akeys_ = arrays.get("akeys", self.keys_).astype(np.float32)
        self.profile_emb_ = arrays.get("profile_emb", np.zeros((n_models, 0))).astype(np.float32)
        self.shape_mean_ = arrays.get("shape_mean", np.zeros(len(SHAPE_FEATURES))).astype(np.float64)
        self.shape_slopes_ = arrays.get("shape_slopes", np.zeros((len(SHAPE_FEATURES), n_models))).astype(np.float64)
