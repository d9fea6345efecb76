"""Duels: per-model profiles, then every pair's one-tailed p-value on a task, vectorised.

A *profile* is what a model brings to its duels on one task, computed once: the per-sample vector (t-test),
the sorted posterior AUROC draws (Bayesian AUROC test), or the statistic on each bootstrap resample plus the
observed one (paired bootstrap; all models of a task share one resampling plan). Random streams are named
by (seed, task, model) or (seed, task), so a pair's p-value is the same whichever other models take part:
a new submission only computes its own profiles and its own 2 x N duels per task.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..errors import InputError
from ..stats.auroc import N_DRAWS, N_THRESHOLDS, auroc, auroc_draws, auroc_pvalue_matrix
from ..stats import bootstrap as _boot
from ..stats.seeding import derive_rng
from ..stats.ttest import paired_ttest_matrix
from .config import Metric, TaskSpec, Test
from .submission import TaskData


@dataclass(frozen=True)
class Settings:
    seed: int = 0
    n_draws: int = N_DRAWS
    n_thresholds: int | None = N_THRESHOLDS
    n_resamples: int = 1000

    def to_dict(self) -> dict:
        return {"seed": self.seed, "n_draws": self.n_draws, "n_thresholds": self.n_thresholds,
                "n_resamples": self.n_resamples}


@dataclass(frozen=True)
class Profile:
    test: Test
    n: int
    vector: np.ndarray          # t-test: samples; AUROC: sorted draws; bootstrap: resampled statistic
    observed: float = float("nan")  # bootstrap: the statistic on the original samples

    def to_bytes(self) -> bytes:
        buf = io.BytesIO()
        np.savez(buf, vector=self.vector, meta=np.array([self.n, self.observed], dtype=float),
                 test=np.array(self.test.name))
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> "Profile":
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            n, observed = z["meta"]
            return cls(Test[str(z["test"])], int(n), z["vector"].copy(), float(observed))


@lru_cache(maxsize=64)
def _plan(seed: int, task: str, n: int, n_resamples: int) -> np.ndarray:
    counts = _boot.resample_counts(n, n_resamples, derive_rng(seed, task, "bootstrap-plan")).astype(np.float64)
    counts.setflags(write=False)
    return counts


def profile(spec: TaskSpec, data: TaskData, model: str, settings: Settings = Settings()) -> Profile:
    """The profile of ``model`` on ``spec.task`` (its duels need nothing else from its predictions)."""
    test = spec.metric.test
    if data.metric is not spec.metric:
        raise InputError(f"task {spec.task!r}: data is {data.metric.value}, leaderboard expects {spec.metric.value}")
    if test is Test.TTEST:
        return Profile(test, data.n, np.asarray(data.values, dtype=float))
    if test is Test.AUROC:
        rng = derive_rng(settings.seed, spec.task, model, "auroc")
        try:
            draws = auroc_draws(data.gold, data.probs, rng, settings.n_draws, settings.n_thresholds)
        except InputError as exc:
            raise InputError(f"task {spec.task!r}, model {model!r}: {exc.message}") from None
        return Profile(test, data.n, draws)
    counts = _plan(settings.seed, spec.task, data.n, settings.n_resamples)
    if test is Test.BOOTSTRAP_MEAN:
        return Profile(test, data.n, _boot.resampled_mean(data.values, counts), float(np.mean(data.values)))
    return Profile(test, data.n, _boot.resampled_perplexity(data.loglik, data.words, counts),
                   float(_boot.perplexity(data.loglik, data.words)))


def pvalues(spec: TaskSpec, rows: list[Profile], cols: list[Profile] | None = None) -> np.ndarray:
    """``P[i, j]``: p that row model ``i`` beats column model ``j`` on the task (default cols = rows, NaN diagonal)."""
    every = rows + (cols or [])
    ns = {p.n for p in every}
    if len(ns) > 1:
        raise InputError(f"task {spec.task!r}: models have different sample counts {sorted(ns)}",
                         field=f"predictions.{spec.task}")
    test = spec.metric.test
    if not rows or (cols is not None and not cols):
        return np.empty((len(rows), len(cols) if cols is not None else len(rows)))
    R = np.stack([p.vector for p in rows])
    if test is Test.TTEST:
        return paired_ttest_matrix(R, None if cols is None else np.stack([p.vector for p in cols]))
    C = None if cols is None else np.stack([p.vector for p in cols])
    if test is Test.AUROC:
        return auroc_pvalue_matrix(R, C)
    o = np.array([p.observed for p in rows])
    oc = None if cols is None else np.array([p.observed for p in cols])
    return _boot.bootstrap_pvalue_matrix(R, o, spec.metric.higher_is_better, C, oc)


def metric_value(data: TaskData) -> float:
    """The task metric recomputed from the per-sample records (for checks and for runs)."""
    if data.metric.test in (Test.TTEST, Test.BOOTSTRAP_MEAN):
        return float(np.mean(data.values))
    if data.metric is Metric.AVG_MCAUROC:
        return auroc(data.gold, data.probs)
    return float(_boot.perplexity(data.loglik, data.words))
