"""``adaptive`` — the default ranker: a shrinkage blend of the population prior with what the most similar past
tasks say, and an explanation of how much the choice matters.

**Ranking.** For a new task with representation ``q`` (the unit mean embedding of a class-stratified, seeded
sample of at most ``max_texts`` training texts; :mod:`modelseek.taskrep`), candidate ``m`` is scored by minus its
blended expected fine-tuned rank::

    score_m = -[(1 - w) * meanrank_m + w * knnrank_m(q)]

``meanrank_m`` is ``m``'s mean rank over the training tasks (the population prior: ``w = 0`` is exactly the
organisers' average-rank baseline); ``knnrank_m(q)`` is the softmax(cosine / T)-weighted mean of ``m``'s rank over
the ``k`` training tasks most similar to ``q`` (as :mod:`task_knn <modelseek.rankers.task_knn>`). ``w``, ``k``
and ``T`` are chosen on the training tasks by leave-one-task-out (the inner loop of a nested CV when
``modelseek bench`` cross-validates it) to maximise nDCG@5; ``w = 0`` is in the grid, so the blend falls back to
the prior when neighbours do not help, and ties in the selection go to the smaller ``w``. (Blending mean
normalized F1 instead of ranks was measured too: its prior alone is 0.014 nDCG@5 below avgrank on the 70
public tasks, so ranks it is.) The predicted relative F1 of ``m`` (its F1 over the best candidate's) is the same
blend of normalized F1.

**Explanation** (:meth:`AdaptiveRanker.explain`):

* an interval for each ``pred_m``: ``pred_m`` plus the ``(1 -/+ coverage) / 2`` quantiles of ``m``'s
  leave-one-out residuals on the training tasks (a jackknife interval; clipped to [0, 1]);
* the expected regret of fine-tuning only the top-1 candidate instead of all of them: ``1 - pred_top1`` corrected
  by the mean leave-one-out error of that estimate on the training tasks (a shrunk prediction understates the
  winner's F1 when the neighbours are right), with an interval from the quantiles of those errors;
* the predicted criticality tier (Low/Medium/High: how much choosing badly costs): its own small model, a
  class-balanced, similarity-weighted vote of the ``k_c`` nearest training tasks' tiers (``k_c``, ``T_c`` by
  leave-one-out balanced accuracy);
* the three most similar training tasks, with their cosine similarity.

The artifact holds numbers only (the training tasks' representations, normalized F1 and residuals) plus the
training tasks' ids and names; ranking a new task embeds only that task's texts.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..data.pool import Pool
from ..data.task import Task, TaskSet
from ..data.truth import GradingScheme, GroundTruth
from ..errors import InputError
from ..taskrep import TaskRep, sample_indices
from ._learned import LearnedRanker

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


def _ndcg5(pred: np.ndarray, gains: np.ndarray, idcg: np.ndarray) -> np.ndarray:
    """Per-row nDCG@5 (the official conventions: stable order, ideal from all columns), vectorised."""
    disc = 1.0 / np.log2(np.arange(2, 7))
    order = np.argsort(-pred, axis=1, kind="stable")[:, :5]
    dcg = (np.take_along_axis(gains, order, axis=1) * disc[: order.shape[1]]).sum(axis=1)
    return np.where(idcg > 0, dcg / np.where(idcg > 0, idcg, 1.0), 0.0)


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


class AdaptiveRanker(LearnedRanker):
    name = "adaptive"
    parameters = ("k", "temperature", "weight", "coverage", "encoder", "max_texts", "cache_dir", "seed")

    def __init__(self, k: int | None = None, temperature: float | None = None, weight: float | None = None,
                 coverage: float = 0.8, encoder: str = "minilm", max_texts: int = 256,
                 cache_dir: str | None = "auto", seed: int = 0) -> None:
        super().__init__(encoder, max_texts, cache_dir, seed)
        self.k = k
        self.temperature = temperature
        self.weight = weight
        self.coverage = coverage

    # ------------------------------------------------------------------------------------------ fitting
    def _validate(self) -> None:
        def num(name, kind, ok, what):
            v = getattr(self, name)
            if v is None:
                return
            try:
                x = kind(v)
            except (TypeError, ValueError):
                raise InputError(f"{name} must be a number, got {v!r}", field=name) from None
            if not ok(x):
                raise InputError(f"{name} must be {what}, got {v!r}", field=name)

        num("k", int, lambda x: x >= 1, ">= 1")
        num("temperature", float, lambda x: x > 0, "> 0")
        num("weight", float, lambda x: 0 <= x <= 1, "in [0, 1]")
        num("coverage", float, lambda x: 0 < x < 1, "in (0, 1)")
        if self.coverage is None:
            raise InputError("coverage must be in (0, 1), got None", field="coverage")

    def fit(self, tasks: TaskSet | None, truth: GroundTruth, pool: Pool | None = None,
            progress: bool = False) -> "AdaptiveRanker":
        self._validate()
        f1 = truth.matrix("normalized_f1")
        self._fit_ranks = truth.matrix("model_rank").loc[f1.index, f1.columns].to_numpy(float)
        self._fit_tiers = np.array([TIERS.index(truth.criticality(t).value) for t in truth.task_ids])
        self._fit_names = {t: (tasks.get(t).name if tasks is not None and t in tasks else "") for t in truth.task_ids}
        return super().fit(tasks, truth, pool=pool, progress=progress)

    def _fit(self, tasks, reps, y, progress) -> None:
        n = len(reps)
        if n < 3:
            raise InputError(f"method 'adaptive' needs at least 3 training tasks, got {n}")
        keys = _unit_rows(np.stack([r.mean for r in reps]).astype(np.float64))
        sims = keys @ keys.T
        np.fill_diagonal(sims, -np.inf)  # leave-one-task-out: a task is never its own neighbour
        u = -self._fit_ranks  # ranking utility: minus the fine-tuned rank (1 = best), as the organisers' avgrank
        prior_loo = (u.sum(axis=0)[None, :] - u) / (n - 1)
        f1_prior_loo = (y.sum(axis=0)[None, :] - y) / (n - 1)
        gains = np.vectorize(lambda v: GradingScheme.NTCIR.gain(GradingScheme.NTCIR.grade(v)))(y)
        disc = 1.0 / np.log2(np.arange(2, 7))
        idcg = (-np.sort(-gains, axis=1)[:, :5] * disc[: min(5, y.shape[1])]).sum(axis=1)
        ks = (int(self.k),) if self.k is not None else K_GRID
        ts = (float(self.temperature),) if self.temperature is not None else T_GRID
        ws = (float(self.weight),) if self.weight is not None else W_GRID
        best = None
        for w in ws:  # ascending: on ties the smaller weight (closer to the prior) wins
            for k in ks:
                for t in ts:
                    knn_loo = _softmax_topk(sims, k, t) @ u
                    score = float(_ndcg5((1 - w) * prior_loo + w * knn_loo, gains, idcg).mean())
                    if best is None or score > best[0] + 1e-12:
                        best = (score, w, k, t)
        self.loo_ndcg5_, self.weight_, self.k_, self.temperature_ = best
        nbr = _softmax_topk(sims, self.k_, self.temperature_)
        rank_loo = (1 - self.weight_) * prior_loo + self.weight_ * (nbr @ u)
        pred_loo = (1 - self.weight_) * f1_prior_loo + self.weight_ * (nbr @ y)
        self.keys_ = keys.astype(np.float32)
        self.targets_ = y.astype(np.float32).astype(np.float64)  # as stored in the artifact: save/load is exact
        self.residuals_ = (y - pred_loo).astype(np.float32).astype(np.float64)
        self.utility_ = u.astype(np.float32).astype(np.float64)
        top = np.argmax(rank_loo, axis=1)
        rows = np.arange(n)
        self.regret_residuals_ = (1 - y[rows, top]) - (1 - pred_loo[rows, top])
        self.regret_residuals_ = self.regret_residuals_.astype(np.float32).astype(np.float64)
        self.loo_regret_ = float((1 - y[rows, top]).mean())
        # the criticality model: its own neighbourhood, chosen by leave-one-out balanced accuracy
        tiers = self._fit_tiers
        bestc = None
        for kc in KC_GRID:
            for tc in TC_GRID:
                acc = _balanced_accuracy(tiers, tier_votes(sims, tiers, kc, tc).argmax(axis=1))
                if bestc is None or acc > bestc[0] + 1e-12:
                    bestc = (acc, kc, tc)
        self.loo_tier_balanced_accuracy_, self.k_tier_, self.temperature_tier_ = bestc
        self.tiers_ = tiers
        self.task_names_ = [self._fit_names.get(t, "") for t in self.fitted_task_ids_]

    # ------------------------------------------------------------------------------------------ ranking
    def _query(self, rep: TaskRep) -> np.ndarray:
        q = rep.mean.astype(np.float64)
        return q / max(float(np.linalg.norm(q)), 1e-12)

    def _predict(self, rep: TaskRep) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(ranking score = minus the blended expected rank, predicted normalized F1, similarities to the
        training tasks), for every trained candidate."""
        sims = self.keys_.astype(np.float64) @ self._query(rep)
        w = _softmax_topk(sims[None, :], int(self.k_), float(self.temperature_))[0]
        blend = lambda m: (1 - self.weight_) * m.mean(axis=0) + self.weight_ * (w @ m)  # noqa: E731
        return blend(self.utility_), blend(self.targets_), sims

    def _scores(self, task: Task, rep: TaskRep, pool: Pool, idx: np.ndarray) -> np.ndarray:
        return self._predict(rep)[0][idx]

    def explain(self, task: Task, pool: Pool, neighbours: int = 3) -> dict[str, Any]:
        """The ranking of ``pool`` for ``task`` with what it rests on (see the module docstring); JSON-ready."""
        idx = self.pool_index(pool)
        rep = self._rep(task)
        score, pred, sims = self._predict(rep)
        a = (1 - float(self.coverage)) / 2
        lo_off, hi_off = np.quantile(self.residuals_, [a, 1 - a], axis=0)
        order = np.argsort(-score[idx], kind="stable")
        cands = []
        for r, j in enumerate(order, start=1):
            c, m = pool[int(j)], int(idx[j])
            cands.append({"rank": r, "doc": c.id, "model": c.hf_id or c.id, "expected_rank": float(-score[m]),
                          "relative_f1": float(pred[m]),
                          "low": float(np.clip(pred[m] + lo_off[m], 0, 1)),
                          "high": float(np.clip(pred[m] + hi_off[m], 0, 1))})
        top = int(idx[order[0]])
        rlo, rhi = np.quantile(self.regret_residuals_, [a, 1 - a])
        naive = 1 - float(pred[top])
        regret = float(np.clip(naive + self.regret_residuals_.mean(), 0, 1))
        probs = tier_votes(sims[None, :], self.tiers_, int(self.k_tier_), float(self.temperature_tier_))[0]
        near = np.argsort(-sims, kind="stable")[:neighbours]
        n_train = len(task.train)
        return {
            "task": task.id,
            "sample": {"texts_embedded": int(len(sample_indices(task.train.labels, int(self.max_texts), int(self.seed)))),
                       "train_rows": n_train, "max_texts": int(self.max_texts), "seed": int(self.seed),
                       "stratified_by": "label"},
            "candidates": cands,
            "coverage": float(self.coverage),
            "regret_top1": {"expected": regret, "low": float(np.clip(naive + rlo, 0, 1)),
                            "high": float(np.clip(naive + rhi, 0, 1))},
            "criticality": {"tier": TIERS[int(np.argmax(probs))],
                            "probabilities": {t: float(p) for t, p in zip(TIERS, probs)}},
            "nearest_tasks": [{"task": self.fitted_task_ids_[int(i)], "name": self.task_names_[int(i)],
                               "similarity": float(sims[int(i)])} for i in near],
            "blend": {"weight": float(self.weight_), "k": int(self.k_), "temperature": float(self.temperature_),
                      "training_tasks": len(self.fitted_task_ids_)},
        }

    # ------------------------------------------------------------------------------------------ artifacts
    def _state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        arrays = {"keys": self.keys_.astype(np.float32), "targets": self.targets_.astype(np.float32),
                  "utility": self.utility_.astype(np.float32),
                  "residuals": self.residuals_.astype(np.float32),
                  "regret_residuals": self.regret_residuals_.astype(np.float32), "tiers": self.tiers_.astype(np.int8)}
        extra = {"weight": self.weight_, "k": self.k_, "temperature": self.temperature_, "k_tier": self.k_tier_,
                 "temperature_tier": self.temperature_tier_, "task_names": self.task_names_,
                 "loo_ndcg5": self.loo_ndcg5_, "loo_tier_balanced_accuracy": self.loo_tier_balanced_accuracy_,
                 "loo_regret": self.loo_regret_}
        return arrays, extra

    def _set_state(self, arrays, extra) -> None:
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
        self.loo_tier_balanced_accuracy_ = float(extra["loo_tier_balanced_accuracy"])
        self.loo_regret_ = float(extra["loo_regret"])
