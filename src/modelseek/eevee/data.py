"""Data preparation for the meta-models: the cross-validation splits over models, per-split z-scores (fitted
on the training models only, or on all models in the reference's leaky mode), loss weights, and the per-split
initial weight draws shared by every subset of the MLP (see :mod:`modelseek.eevee.evaluators`)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np

from ..core.errors import InputError
from .config import MetaConfig
from .table import Table, shown

MIN_TRAIN_MODELS = 2  # a z-score (and anything to learn) needs two training models


def _n_test(n: int, test_size) -> int:
    """Test models per split, as scikit-learn's ShuffleSplit counts them."""
    return math.ceil(test_size * n) if isinstance(test_size, float) else int(test_size)


def min_models(config: MetaConfig) -> int:
    """The fewest models for which every split of ``config``'s protocol has at least
    :data:`MIN_TRAIN_MODELS` training models and one test model."""
    n = 1
    while n < 100_000:
        t = _n_test(n, config.test_size)
        if t >= 1 and n - t >= MIN_TRAIN_MODELS:
            return n
        n += 1
    raise InputError(f"test size {config.test_size} leaves too few training models", field="test_size")


def check_table(table: Table, config: MetaConfig) -> None:
    """The table has enough models for the cross-validation protocol. With fewer than two training models
    per split every column is constant over the training models, nothing can be learned, and every subset
    would get the same score: an error, never a score."""
    n = table.n_models
    need = min_models(config)
    n_test = _n_test(n, config.test_size)
    if n < need or n_test < 1 or n - n_test < MIN_TRAIN_MODELS:
        raise InputError(f"EEVEE needs at least {need} models (rows) to cross-validate over models (test size "
                         f"{config.test_size}: every split must train on {MIN_TRAIN_MODELS} or more and test on "
                         f"1 or more); the table has {n}", path=table.source or None)


def column_scale(values: np.ndarray) -> np.ndarray:
    """Per column, the largest power of two at or below its largest finite magnitude (1 for a column of zeros or
    of missing values only): scaled values lie within [-2, 2]. Dividing by a power of two is exact, so it
    changes no z-score (``2 ** 1024`` itself would overflow, hence "at or below")."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns
        big = np.nanmax(np.abs(values), axis=0) if values.size else np.zeros(values.shape[1])
    big = np.where(np.isfinite(big) & (big > 0), big, 1.0)
    return np.ldexp(1.0, np.frexp(big)[1] - 1)


def rms(dev: np.ndarray, count) -> np.ndarray:
    """Per column, ``sqrt(nansum(dev ** 2) / count)`` computed on ``dev`` divided by a power of two near its
    largest magnitude and multiplied back: the same bits where the plain formula neither overflows nor
    underflows, a finite answer where it would."""
    s = column_scale(dev)
    d = dev / s
    return np.sqrt(np.nansum(d * d, 0) / count) * s


#: The largest z-score admitted: its square (1e36) still fits the meta-model's float32 loss (max ~3.4e38).
#: Beyond it a value is so far from the training models' values (a unit or typing error, or a sentinel such as
#: 1e308) that its squared error would overflow to inf and the score to NaN.
Z_MAX = 1e18


class SplitData:
    """Per-split tensors: z-scored inputs/targets and loss weights for the training and test models, and the
    per-split initial weight draws."""

    def __init__(self, table: Table, config: MetaConfig,
                 splits: Sequence[tuple[np.ndarray, np.ndarray]] | None = None) -> None:
        import torch  # lazy: torch
        from sklearn.model_selection import ShuffleSplit  # lazy: sklearn

        if splits is None:
            check_table(table, config)
        else:  # given (training rows, test rows) pairs, e.g. the outer splits of the nested estimate
            if len(splits) != config.n_splits:
                raise ValueError(f"{len(splits)} splits given for config.n_splits = {config.n_splits}")
            for tr, te in splits:
                if len(tr) < MIN_TRAIN_MODELS or len(te) < 1:
                    raise InputError(f"a split needs {MIN_TRAIN_MODELS} or more training models and a test "
                                     f"model; got {len(tr)} and {len(te)}", path=table.source or None)
        self.table, self.config = table, config
        # Each column is divided by a power of two near its largest magnitude, and standard deviations are
        # taken of deviations scaled the same way (see ``rms``): exact in floating point, so the z-scores are
        # bit for bit those of the unscaled column, but sums and squares cannot overflow or underflow (a
        # value of 1e300 once made every mean, std and score NaN). ``scale`` maps back to the table's unit.
        self.scale = column_scale(table.values)
        raw = table.oriented() / self.scale
        n = raw.shape[0]
        if splits is None:
            cv = ShuffleSplit(n_splits=config.n_splits, test_size=config.test_size, random_state=config.cv_seed)
            splits = list(cv.split(np.zeros((n, 1))))
        self.splits = [(np.sort(np.asarray(tr, dtype=int)), np.sort(np.asarray(te, dtype=int))) for tr, te in splits]
        table_unit = config.loss_scale == "table" and not config.leaky
        if table_unit:  # each metric's spread over the whole table (the unit of the test loss, see below)
            cnt = np.maximum((~np.isnan(raw)).sum(0), 1)
            sd_table = rms(raw - np.nansum(raw, 0) / cnt, cnt)
            sd_table = np.where(sd_table > 0, sd_table, 1.0 / self.scale)
        zs, obs_all, means, stds, fixed = [], [], [], [], []
        unit = sd_table if table_unit else 1.0 / self.scale  # of a column constant over the training models
        for tr, _ in self.splits:
            z, obs, mu, sd, const = self._leaky_zscores(table, config) if config.leaky else \
                self._train_zscores(raw, tr, unit)
            zs.append(z)
            obs_all.append(obs)
            means.append(mu)
            stds.append(sd)
            fixed.append(const)
        # per split and column, the training mean and std in the scaled unit (used below and to map predictions
        # back) and, as ``mean`` and ``std``, in the table's unit
        self.scaled_mean, self.scaled_std = np.array(means), np.array(stds)
        with np.errstate(over="ignore"):
            self.mean, self.std = self.scaled_mean * self.scale, self.scaled_std * self.scale
        self._check_finite(zs, obs_all)
        # A column constant over a split's training models is predicted as that constant: its output weights
        # and bias start (and, with zero gradient, stay) at zero, so the meta-model's prediction is exactly
        # the training value rather than the noise of a random output unit in a unit (sd = 1) of no meaning.
        self.out_mask = torch.tensor(~np.array(fixed), dtype=torch.float32)     # (splits, M)
        # Test errors are measured in the unit of ``loss_scale``. The meta-model is fitted in its split's
        # training z-units (nothing of the test models enters its normalisation, imputation or training);
        # with "table" its test errors are re-expressed in each metric's spread over the whole table, a
        # fixed unit per metric: the losses of all splits are then in one unit (and in the reference's),
        # and a test model far outside the few training models' range is not magnified by their small std.
        if table_unit:
            test_unit = (self.scaled_std / sd_table[None, :]) ** 2    # (splits, M) factor on squared errors
        else:
            test_unit = np.ones_like(self.std)

        def weights(obs_rows: np.ndarray) -> np.ndarray:
            cnt = obs_rows.sum(0)
            cw = table.column_weights(cnt > 0)
            return obs_rows * (cw / np.maximum(cnt, 1))[None, :]

        f = torch.float32
        self.Xtr = torch.tensor(np.stack([z[tr] for z, (tr, _) in zip(zs, self.splits)]), dtype=f)
        self.Xte = torch.tensor(np.stack([z[te] for z, (_, te) in zip(zs, self.splits)]), dtype=f)
        # as inputs, test models see the training value (0) of a column constant over the training models:
        # nothing about it could have been learned, and its deviation (in the fallback unit sd = 1) would
        # only pass through the untrained weights of that input (as targets they keep their true values)
        self.Xte_in = self.Xte * torch.tensor(~np.array(fixed), dtype=f)[:, None, :]
        self.Atr = torch.tensor(np.stack([weights(o[tr]) for o, (tr, _) in zip(obs_all, self.splits)]), dtype=f)
        self.Ate = torch.tensor(np.stack([weights(o[te]) * u[None, :] for o, (_, te), u in
                                          zip(obs_all, self.splits, test_unit)]), dtype=f)
        self._draws: dict[int, tuple] = {}
        self.bench_cols = {b: [j for j, bb in enumerate(table.benchmarks) if bb == b]
                           for b in table.benchmark_names}

    def _leaky_zscores(self, table: Table, config: MetaConfig):
        """(z, observed, mean, std, constant) of the leaky reference: the table filled as read (before any
        sign flip) and z-scored over every model; sets ``scale`` to these z-scores' unit."""
        n, m = table.values.shape
        # the reference fills the table as read (before any sign flip), then z-scores
        sign = np.where(np.asarray(table.lower_is_better), -1.0, 1.0)
        filled = np.where(np.isnan(table.values), config.fill_value, table.values) * sign
        self.scale = column_scale(filled)  # the unit of these z-scores' means and stds
        filled = filled / self.scale
        mu = filled.mean(0)
        sd = rms(filled - mu, n)                    # filled.std(0), without overflow or underflow
        sd = np.where(sd > 0, sd, 1.0 / self.scale)  # 1 in the table's unit, as before the scaling
        with np.errstate(over="ignore"):  # beyond Z_MAX anyway: a located error below
            z = (filled - mu) / sd
        obs = np.ones((n, m), dtype=bool)
        const = np.zeros(m, dtype=bool)
        return z, obs, mu, sd, const

    def _train_zscores(self, raw: np.ndarray, tr: np.ndarray, unit):
        """(z, observed, mean, std, constant) of one split: z-scores over the split's training models; a column
        constant over them (or unobserved) keeps that constant as mean and ``unit`` as std."""
        obs = ~np.isnan(raw)
        trv = raw[tr]
        cnt = (~np.isnan(trv)).sum(0)
        mu = np.where(cnt > 0, np.nansum(trv, 0) / np.maximum(cnt, 1), 0.0)
        sd = np.where(cnt > 0, rms(trv - mu, np.maximum(cnt, 1)), 1.0)
        # one value (or none) among the training models: no scale to learn. Compared exactly, since
        # the mean of equal floats can be off by an ulp and give a spurious sd of ~1e-17.
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            lo, hi = np.nanmin(trv, 0), np.nanmax(trv, 0)
        const = (cnt == 0) | (lo == hi)
        mu = np.where(const & (cnt > 0), lo, mu)
        # the unit of a test model's deviation from that constant: the metric's spread over the table
        # when test losses are measured in it (the same loss as any fixed unit converted to it, and no
        # overflow from a unit astronomically far from the values' own, e.g. 1 for values ~1e-259);
        # else 1 in the table's unit
        sd = np.where(const, unit, sd)
        with np.errstate(over="ignore"):  # beyond Z_MAX anyway: a located error below
            z = np.where(obs, (raw - mu) / sd, 0.0)  # missing = the training mean (0 in z-space)
        return z, obs, mu, sd, const

    def initial_draws(self, hidden: int) -> tuple:
        """Per split, the uniform(-1, 1) draws a network's initial weights are made from, for ``hidden`` hidden
        units: ``(U1, u1, U2, u2)`` of shapes (splits, M, hidden), (splits, hidden), (splits, hidden, M),
        (splits, M), seeded by ``config.seed`` and the split (drawn on first use, for the MLP meta-model)."""
        if hidden not in self._draws:
            import torch  # lazy: torch

            m, config = self.Xtr.shape[2], self.config
            U1, u1, U2, u2 = [], [], [], []
            for s in range(config.n_splits):
                g = torch.Generator().manual_seed(int(np.random.SeedSequence([config.seed, s]).generate_state(1)[0]))
                U1.append(torch.rand(m, hidden, generator=g) * 2 - 1)
                u1.append(torch.rand(hidden, generator=g) * 2 - 1)
                U2.append(torch.rand(hidden, m, generator=g) * 2 - 1)
                u2.append(torch.rand(m, generator=g) * 2 - 1)
            self._draws[hidden] = (torch.stack(U1), torch.stack(u1), torch.stack(U2), torch.stack(u2))
        return self._draws[hidden]

    def _check_finite(self, zs: list[np.ndarray], obs_all: list[np.ndarray]) -> None:
        """A located error for the first value whose z-score (in some split) is beyond :data:`Z_MAX`."""
        for (tr, _), z, obs in zip(self.splits, zs, obs_all):
            with np.errstate(invalid="ignore"):
                bad = obs & ~(np.abs(z) <= Z_MAX)
            if bad.any():
                i, j = map(int, np.argwhere(bad)[0])
                t = self.table
                raise InputError(
                    f"model {t.models[i]!r}: value {t.values[i, j]:g} is more than {Z_MAX:g} standard deviations "
                    f"(of {len(tr)} training models of a cross-validation split) from their mean: too far to "
                    f"standardise (a unit or typing error?)", path=t.source or None, field=shown(t.columns[j]))

    def columns(self, subset: Sequence[str]) -> list[int]:
        unknown = [b for b in subset if b not in self.bench_cols]
        if unknown:
            raise InputError(f"unknown benchmark(s): {', '.join(unknown)}; the table has "
                             f"{', '.join(list(self.bench_cols)[:10])}{'...' if len(self.bench_cols) > 10 else ''}",
                             field="benchmarks")
        return sorted(j for b in subset for j in self.bench_cols[b])
