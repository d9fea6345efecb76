"""Duels: per-model profiles, then every pair's one-tailed p-value on a task, vectorised.

A *profile* is what a model brings to its duels on one task, computed once: the per-sample vector (t-test),
the sorted posterior AUROC draws (Bayesian AUROC test), or the statistic on each bootstrap resample plus the
observed one (paired bootstrap; all models of a task share one resampling plan). Random streams are named
by (seed, task, model) or (seed, task), so a pair's p-value is the same whichever other models take part:
a new submission only computes its own profiles and its own 2 x N duels per task.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from numbers import Integral

import numpy as np

from ..core.config import MAX_SAMPLES, Config, Interval
from ..core.errors import InputError
from ..core.stats.auroc import N_DRAWS, N_THRESHOLDS, auroc_draws, auroc_pvalue_matrix
from ..core.stats import bootstrap as _boot
from ..core.stats.seeding import derive_rng
from ..core.stats.ttest import paired_ttest_matrix
from .config import TaskSpec, Test
from .submission import TaskSamples


@dataclass(frozen=True)
class Settings(Config):
    """The Monte-Carlo settings of every duel (stored with a leaderboard; later openings must agree)."""

    seed: int = 0
    n_draws: int = N_DRAWS
    n_thresholds: int | None = N_THRESHOLDS
    n_resamples: int = 1000

    _constraints = {
        "seed": [Interval(Integral, 0, None, closed="left")],
        "n_draws": [Interval(Integral, 1, MAX_SAMPLES, closed="both")],
        "n_thresholds": [Interval(Integral, 2, None, closed="left")],
        "n_resamples": [Interval(Integral, 1, MAX_SAMPLES, closed="both")],
    }

    def to_dict(self) -> dict:
        return self.to_mapping()


@dataclass(frozen=True)
class Profile:
    test: Test
    n: int
    vector: np.ndarray          # t-test: samples; AUROC: sorted draws; bootstrap: resampled statistic
    observed: float = float("nan")  # bootstrap: the statistic on the original samples

    # storage format: b"MSP1" | test name (24 bytes, NUL-padded) | n, observed (2 x float64 LE) | vector (float64 LE)
    _MAGIC = b"MSP1"

    def to_bytes(self) -> bytes:
        head = self._MAGIC + self.test.name.encode("ascii").ljust(24, b"\0")
        return (head + struct.pack("<dd", float(self.n), self.observed)
                + np.ascontiguousarray(self.vector, "<f8").tobytes())

    @classmethod
    def from_bytes(cls, data: bytes) -> Profile:
        if data[:4] != cls._MAGIC or len(data) < 44 or (len(data) - 44) % 8:
            raise InputError("corrupt stored profile")
        n, observed = struct.unpack("<dd", data[28:44])
        return cls(Test[data[4:28].rstrip(b"\0").decode("ascii")], int(n),
                   np.frombuffer(data, dtype="<f8", offset=44).astype(float), float(observed))


#: (resample, sample) cells of a bootstrap plan held at once: a plan that fits is cached whole, a bigger one
#: is generated and applied in chunks of resamples (150k samples x 1000 resamples would be 1.2 GB)
PLAN_CELLS = 1 << 21


@lru_cache(maxsize=64)
def _plan(seed: int, task: str, n: int, n_resamples: int) -> np.ndarray:
    counts = _boot.resample_counts(n, n_resamples, derive_rng(seed, task, "bootstrap-plan")).astype(np.float64)
    counts.setflags(write=False)
    return counts


def _apply(counts: np.ndarray, X: np.ndarray) -> np.ndarray:
    """``counts @ X`` for one model (samples,), ``(counts @ X.T).T`` for several (models, samples): the
    products :mod:`..stats.bootstrap` computes, so stored profiles do not change by a rounding."""
    return counts @ X if X.ndim == 1 else (counts @ X.T).T


def _resampled_sums(seed: int, task: str, n: int, n_resamples: int, *Xs: np.ndarray) -> list[np.ndarray]:
    """``sum_i counts[r, i] * X[..., i]`` for each ``X`` ((samples,) or (models, samples)) and every resample
    ``r`` of the task's plan. The counts are those of :func:`_plan` (numpy's ``Generator.integers`` draws the
    same integers in consecutive chunks as in one call); a plan over :data:`PLAN_CELLS` is generated and
    applied in chunks of resamples, so memory stays linear in ``n`` whatever the number of resamples."""
    arrays = [np.asarray(X, dtype=float) for X in Xs]
    if n * n_resamples <= PLAN_CELLS:
        plan = _plan(seed, task, n, n_resamples)
        return [_apply(plan, X) for X in arrays]
    if n < 1:
        raise InputError("bootstrap needs at least one sample")
    rng = derive_rng(seed, task, "bootstrap-plan")
    outs = [np.empty((*X.shape[:-1], n_resamples)) for X in arrays]
    step = max(1, PLAN_CELLS // n)
    for r0 in range(0, n_resamples, step):
        k = min(step, n_resamples - r0)
        idx = rng.integers(0, n, size=(k, n))
        idx += n * np.arange(k)[:, None]
        counts = np.bincount(idx.ravel(), minlength=n * k).reshape(k, n).astype(np.float64)
        del idx
        for X, out in zip(arrays, outs):
            out[..., r0:r0 + k] = _apply(counts, X)
    return outs


def _bootstrap_stats(spec: TaskSpec, datas: Sequence[TaskSamples], settings: Settings) -> tuple[np.ndarray, np.ndarray]:
    """``(resampled statistic, observed statistic)`` of a bootstrap task: (resamples,) and a float for one
    model, (models, resamples) and (models,) for several."""
    n, one = datas[0].n, len(datas) == 1
    if spec.metric.test is Test.BOOTSTRAP_MEAN:
        X = datas[0].need("values") if one else np.stack([d.need("values") for d in datas])
        (S,) = _resampled_sums(settings.seed, spec.task, n, settings.n_resamples, X)
        return S / n, np.mean(X, axis=-1)
    L = datas[0].need("loglik") if one else np.stack([d.need("loglik") for d in datas])
    W = datas[0].need("words") if one else np.stack([d.need("words") for d in datas])
    SL, SW = _resampled_sums(settings.seed, spec.task, n, settings.n_resamples, L, W)
    return np.exp(-SL / SW), np.asarray(_boot.perplexity(L, W))


def profile(spec: TaskSpec, data: TaskSamples, model: str, settings: Settings = Settings()) -> Profile:
    """The profile of ``model`` on ``spec.task`` (its duels need nothing else from its predictions)."""
    test = spec.metric.test
    if data.metric is not spec.metric:
        raise InputError(f"task {spec.task!r}: data is {data.metric.value}, leaderboard expects {spec.metric.value}")
    if test is Test.TTEST:
        return Profile(test, data.n, np.asarray(data.values, dtype=float))
    if test is Test.AUROC:
        rng = derive_rng(settings.seed, spec.task, model, "auroc")
        try:
            draws = auroc_draws(data.need("gold"), data.need("probs"), rng, settings.n_draws, settings.n_thresholds)
        except InputError as exc:
            raise InputError(f"task {spec.task!r}, model {model!r}: {exc.message}") from None
        return Profile(test, data.n, draws)
    S, obs = _bootstrap_stats(spec, [data], settings)
    return Profile(test, data.n, S, float(obs))


def profiles(spec: TaskSpec, datas: list[TaskSamples], models: list[str],
             settings: Settings = Settings()) -> list[Profile]:
    """:func:`profile` of many models on one task; the bootstrap statistics of all models come from one
    product with the task's resampling plan (the plan is read from memory once, not once per model)."""
    test = spec.metric.test
    if test not in (Test.BOOTSTRAP_MEAN, Test.BOOTSTRAP_PERPLEXITY) or len(datas) < 2:
        return [profile(spec, d, m, settings) for d, m in zip(datas, models)]
    ns = {d.n for d in datas}
    if len(ns) > 1:
        raise InputError(f"task {spec.task!r}: models have different sample counts {sorted(ns)}",
                         field=f"predictions.{spec.task}")
    S, obs = _bootstrap_stats(spec, datas, settings)
    return [Profile(test, d.n, S[k].copy(), float(obs[k])) for k, d in enumerate(datas)]


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
    P = _boot.bootstrap_pvalue_matrix(R, o, spec.metric.higher_is_better, C, oc)
    if every[0].n < 2:  # a single sample cannot be tested (see stats.bootstrap)
        P = np.where(np.isnan(P), P, 1.0)
    return P


def duels_against(config, new: Sequence[Mapping[str, Profile]], published: Sequence[Mapping[str, Profile]]
                  ) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Every duel the ``new`` models bring to a leaderboard of ``published`` models, per task.

    ``new[k][task]`` / ``published[k][task]`` are profiles. Returns ``{task: (among, win, loss)}``:
    ``among[i, j]`` p that new model i beats new model j (NaN diagonal), ``win[i, k]`` p that new model i
    beats published model k, ``loss[k, i]`` p that published model k beats new model i. The one place
    where stored leaderboards compute duels (pre-submission, confirmation and bulk publication)."""
    out = {}
    for t in config.task_ids:
        spec = config.spec(t)
        rows = [p[t] for p in new]
        cols = [p[t] for p in published]
        among = pvalues(spec, rows) if len(rows) > 1 else np.full((len(rows), len(rows)), np.nan)
        if cols and rows:
            win, loss = pvalues(spec, rows, cols), pvalues(spec, cols, rows)
        else:
            win, loss = np.empty((len(rows), len(cols))), np.empty((len(cols), len(rows)))
        out[t] = (among, win, loss)
    return out
