"""The EEVEE meta-model and the score of a benchmark subset.

Protocol (GATE's EEVEE, with the normalisation leak fixed):

* inputs: every metric column of the chosen benchmarks; targets: every metric column of the table;
* ShuffleSplit over models (10 splits, test size 0.5, seed 42); per split, z-scores (and the mean that fills
  missing values, 0 in z-space) are fitted on the **training models only**. Missing targets are left out of
  the loss. ``leaky=True`` reproduces the reference code instead: missing cells filled with the constant 5,
  z-scores fitted on all models (test models included), filled cells scored like real ones;
* MLP ``Linear(in -> 100) -> LeakyReLU -> LayerNorm(100) -> Linear(100 -> M)``, initialised like
  ``torch.nn.Linear``, trained with AdamW (lr 0.01, weight decay 0.01) for 20 full-batch epochs;
* loss = MSE per column, averaged per benchmark, per task group, then over groups with the group weights
  (:meth:`Table.column_weights`), for training (in the split's training z-units) and testing;
* the score of a subset: the mean test loss over the splits (std, min and max reported too). The test
  loss is measured in each metric's spread over the whole table (``loss_scale="table"``, the unit of the
  reference's z-scores and the same in every split); the meta-model itself is normalised, imputed and
  trained on the training models only. ``loss_scale="split"`` measures it in the split's training z-units
  instead, where a test model far outside the 8 training models' range weighs in by tens of SDs.

:class:`BatchedEvaluator` trains the meta-models of many subsets at once: every (subset, split) pair is one
network in a stack of batched matmuls. Subsets of different sizes share one padded input layer (the input
columns of each subset gathered into the first ``D`` slots, padding masked to zero). The initial weights
come from one uniform draw per split (``seed``, split) over the full width, scaled by each subset's fan-in
as ``nn.Linear`` does, so a subset's score depends only on the subset, the split and the seed — never on
which other subsets share its batch — and scores can be cached. :class:`LoopEvaluator` is the plain
one-network-at-a-time version with ``torch.nn`` modules and ``torch.optim.AdamW`` (same initial weights),
kept as the baseline the batched one is checked and timed against.
"""

from __future__ import annotations

import math
import warnings
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Iterable, Sequence

import numpy as np

from ..errors import InputError
from .table import Table

Subset = tuple[str, ...]


@dataclass(frozen=True)
class MetaConfig:
    """The meta-model protocol. Defaults are the issue's (GATE's) values."""

    hidden: int = 100
    lr: float = 0.01
    weight_decay: float = 0.01
    epochs: int = 20
    n_splits: int = 10
    test_size: float = 0.5
    cv_seed: int = 42
    seed: int = 0                  # initial weights of the meta-models
    leaky: bool = False            # the reference's normalisation (z-scores on all models, missing = 5)
    fill_value: float = 5.0        # the reference's constant for missing cells (leaky mode only)
    loss_scale: str = "table"      # unit of the test loss: "table" = each metric's std over all models (the
                                   # reference's unit, the same in every split); "split" = the training
                                   # models' std of the split (the z-units the meta-model is trained in)
    negative_slope: float = 0.01   # LeakyReLU
    ln_eps: float = 1e-5           # LayerNorm
    betas: tuple[float, float] = (0.9, 0.999)
    adam_eps: float = 1e-8
    model: str = "mlp"             # the meta-model: "mlp" (the protocol) or "ridge" (closed form, see below)
    ridge_alphas: tuple[float, ...] = tuple(float(a) for a in np.logspace(-2, 4, 13))  # chosen per fit by LOO
    chunk: int = 128               # networks per block of the batched computation (0 = all at once); the
                                   # blocks stay in cache: measured ~1.5x faster than one block of 10,000

    def __post_init__(self) -> None:
        if self.model not in ("mlp", "ridge"):
            raise InputError(f"meta-model must be 'mlp' or 'ridge', got {self.model!r}", field="model")
        if self.model == "ridge" and (not self.ridge_alphas or min(self.ridge_alphas) <= 0):
            raise InputError("ridge_alphas must be a non-empty list of positive numbers", field="ridge_alphas")
        if self.loss_scale not in ("table", "split"):
            raise InputError(f"loss_scale must be 'table' or 'split', got {self.loss_scale!r}", field="loss_scale")

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Score:
    """A subset's cross-validated loss: mean over splits, with std, min and max, and the per-split values."""

    subset: Subset
    mean: float
    std: float
    min: float
    max: float
    per_split: tuple[float, ...]

    @classmethod
    def of(cls, subset: Subset, losses: np.ndarray) -> "Score":
        losses = np.asarray(losses, dtype=float)
        return cls(tuple(subset), float(losses.mean()), float(losses.std()), float(losses.min()),
                   float(losses.max()), tuple(float(x) for x in losses))

    def to_dict(self) -> dict:
        return {"benchmarks": list(self.subset), "score": self.mean, "std": self.std, "min": self.min,
                "max": self.max}


def check_table(table: Table, config: MetaConfig) -> None:
    n = table.n_models
    if n < 2:
        raise InputError(f"EEVEE needs at least 2 models (rows) to cross-validate over models; the table has {n}",
                         path=table.source or None)
    n_test = math.ceil(config.test_size * n) if isinstance(config.test_size, float) else int(config.test_size)
    if n_test < 1 or n - n_test < 1:
        raise InputError(f"test size {config.test_size} leaves no training or no test model among {n}",
                         path=table.source or None)


class _Data:
    """Per-split tensors: z-scored inputs/targets and loss weights for the training and test models, and the
    per-split initial weight draws."""

    def __init__(self, table: Table, config: MetaConfig) -> None:
        import torch
        from sklearn.model_selection import ShuffleSplit

        check_table(table, config)
        self.table, self.config = table, config
        raw = table.oriented()
        n, m = raw.shape
        cv = ShuffleSplit(n_splits=config.n_splits, test_size=config.test_size, random_state=config.cv_seed)
        self.splits = [(np.sort(tr), np.sort(te)) for tr, te in cv.split(np.zeros((n, 1)))]
        zs, obs_all, means, stds, fixed = [], [], [], [], []
        for tr, _ in self.splits:
            if config.leaky:
                # the reference fills the table as read (before any sign flip), then z-scores
                sign = np.where(np.asarray(table.lower_is_better), -1.0, 1.0)
                filled = np.where(np.isnan(table.values), config.fill_value, table.values) * sign
                mu, sd = filled.mean(0), filled.std(0)
                sd = np.where(sd > 0, sd, 1.0)
                z = (filled - mu) / sd
                obs = np.ones_like(raw, dtype=bool)
                const = np.zeros(m, dtype=bool)
            else:
                obs = ~np.isnan(raw)
                trv = raw[tr]
                cnt = (~np.isnan(trv)).sum(0)
                mu = np.where(cnt > 0, np.nansum(trv, 0) / np.maximum(cnt, 1), 0.0)
                var = np.where(cnt > 0, np.nansum((trv - mu) ** 2, 0) / np.maximum(cnt, 1), 1.0)
                sd = np.sqrt(var)
                # one value (or none) among the training models: no scale to learn. Compared exactly, since
                # the mean of equal floats can be off by an ulp and give a spurious sd of ~1e-17.
                with np.errstate(all="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    lo, hi = np.nanmin(trv, 0), np.nanmax(trv, 0)
                const = (cnt == 0) | (lo == hi)
                mu = np.where(const & (cnt > 0), lo, mu)
                sd = np.where(const, 1.0, sd)
                z = np.where(obs, (raw - mu) / sd, 0.0)  # missing = the training mean (0 in z-space)
            zs.append(z)
            obs_all.append(obs)
            means.append(mu)
            stds.append(sd)
            fixed.append(const)
        self.mean, self.std = np.array(means), np.array(stds)
        # A column constant over a split's training models is predicted as that constant: its output weights
        # and bias start (and, with zero gradient, stay) at zero, so the meta-model's prediction is exactly
        # the training value rather than the noise of a random output unit in a unit (sd = 1) of no meaning.
        self.out_mask = torch.tensor(~np.array(fixed), dtype=torch.float32)     # (splits, M)
        # Test errors are measured in the unit of ``loss_scale``. The meta-model is fitted in its split's
        # training z-units (nothing of the test models enters its normalisation, imputation or training);
        # with "table" its test errors are re-expressed in each metric's spread over the whole table, a
        # fixed unit per metric: the losses of all splits are then in one unit (and in the reference's),
        # and a test model far outside the few training models' range is not magnified by their small std.
        if config.loss_scale == "table" and not config.leaky:
            cnt = np.maximum((~np.isnan(raw)).sum(0), 1)
            dev = raw - np.nansum(raw, 0) / cnt
            sd_table = np.sqrt(np.nansum(dev * dev, 0) / cnt)
            sd_table = np.where(sd_table > 0, sd_table, 1.0)
            test_unit = (self.std / sd_table[None, :]) ** 2           # (splits, M) factor on squared errors
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
        h = config.hidden
        self.U1, self.u1, self.U2, self.u2 = [], [], [], []
        for s in range(config.n_splits):
            g = torch.Generator().manual_seed(int(np.random.SeedSequence([config.seed, s]).generate_state(1)[0]))
            self.U1.append(torch.rand(m, h, generator=g) * 2 - 1)
            self.u1.append(torch.rand(h, generator=g) * 2 - 1)
            self.U2.append(torch.rand(h, m, generator=g) * 2 - 1)
            self.u2.append(torch.rand(m, generator=g) * 2 - 1)
        self.U1, self.u1 = torch.stack(self.U1), torch.stack(self.u1)
        self.U2, self.u2 = torch.stack(self.U2), torch.stack(self.u2)
        self.bench_cols = {b: [j for j, bb in enumerate(table.benchmarks) if bb == b]
                           for b in table.benchmark_names}

    def columns(self, subset: Sequence[str]) -> list[int]:
        unknown = [b for b in subset if b not in self.bench_cols]
        if unknown:
            raise InputError(f"unknown benchmark(s): {', '.join(unknown)}; the table has "
                             f"{', '.join(list(self.bench_cols)[:10])}{'...' if len(self.bench_cols) > 10 else ''}",
                             field="benchmarks")
        return sorted(j for b in subset for j in self.bench_cols[b])


def usable_cpus(cap: int | None = None) -> int:
    """CPUs this process may run on (its affinity mask where the OS has one), at most ``cap``."""
    import os

    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        n = os.cpu_count() or 1
    return max(1, min(n, cap) if cap else n)


@contextmanager
def _threads(n: int | None):
    """Run with ``n`` intra-op torch threads, restoring the setting after. The meta-models are tiny: with
    OpenMP threads spinning on a loaded 2-core machine we measured a 9x slowdown against one thread."""
    if n is None:
        yield
        return
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)


def normalise_subset(subset: Iterable[str]) -> Subset:
    return tuple(sorted(set(subset)))


class _Evaluator:
    """Scores subsets (mean test loss over splits), caching each subset's per-split losses."""

    def __init__(self, table: Table, config: MetaConfig | None = None, threads: int | None = 1) -> None:
        self.config = config or MetaConfig()
        self.threads = threads
        self.data = _Data(table, self.config)
        self.table = table
        self.cache: dict[Subset, np.ndarray] = {}
        self.n_trained = 0  # subsets trained (cache misses)

    def losses(self, subsets: Sequence[Iterable[str]]) -> np.ndarray:
        """Per-split test losses, shape (len(subsets), n_splits)."""
        subs = [normalise_subset(s) for s in subsets]
        todo = list(dict.fromkeys(s for s in subs if s not in self.cache))
        for s in todo:
            self.data.columns(s)  # validate names before any training
        if todo:
            with _threads(self.threads):
                out = self._train(todo)
            for s, row in zip(todo, out):
                self.cache[s] = row
            self.n_trained += len(todo)
        return np.array([self.cache[s] for s in subs]).reshape(len(subs), self.config.n_splits)

    def scores(self, subsets: Sequence[Iterable[str]]) -> list[Score]:
        subs = [normalise_subset(s) for s in subsets]
        return [Score.of(s, row) for s, row in zip(subs, self.losses(subs))]

    def score(self, subset: Iterable[str]) -> Score:
        return self.scores([subset])[0]

    def _train(self, subsets: list[Subset]) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError


class BatchedEvaluator(_Evaluator):
    """Trains every (subset, split) network of a call as one batched computation.

    ``workers > 1`` splits a call's subsets into up to that many contiguous parts (at least
    ``MIN_PER_WORKER`` subsets each, so small calls stay in this process) trained by as many worker
    processes (one torch thread each), so that every core works; each part is still one batched
    computation, and the padded input width is that of the whole call, so the scores are the same as with
    one process. ``workers=0`` means one per usable CPU (at most 8).
    """

    MIN_PER_WORKER = 8

    def __init__(self, table: Table, config: MetaConfig | None = None, threads: int | None = 1,
                 workers: int = 1) -> None:
        super().__init__(table, config, threads)
        if workers < 0:
            raise InputError(f"workers must be >= 0 (0 = one per CPU), got {workers}", field="workers")
        self.workers = workers or usable_cpus(8)
        self._pool = None

    def _train(self, subsets: list[Subset]) -> np.ndarray:
        cols = [self.data.columns(s) for s in subsets]
        width = max(1, max(len(c) for c in cols))
        n_parts = min(self.workers, len(cols) // self.MIN_PER_WORKER)
        if n_parts <= 1 or self.config.model == "ridge":  # the closed form costs less than starting workers
            return _train_columns(self.data, cols, width)
        pool = self._get_pool()
        parts = np.array_split(np.arange(len(cols)), n_parts)
        futures = [pool.submit(_worker_train, [cols[i] for i in p], width) for p in parts]
        return np.concatenate([f.result() for f in futures])

    def _get_pool(self):
        if self._pool is None:
            import multiprocessing as mp
            import weakref
            from concurrent.futures import ProcessPoolExecutor

            self._pool = ProcessPoolExecutor(self.workers, mp_context=mp.get_context("spawn"),
                                             initializer=_worker_init, initargs=(self.table, self.config))
            weakref.finalize(self, self._pool.shutdown, wait=False, cancel_futures=True)
        return self._pool

    def close(self) -> None:
        """Stop the worker processes (if any)."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def predict(self, subset: Iterable[str]) -> np.ndarray:
        """Cross-validated predictions on the raw scale: shape (n_splits, n_models, M), NaN where a model is
        in the training part of the split."""
        import torch

        cfg, d = self.config, self.data
        c = d.columns(normalise_subset(subset))
        idx = torch.zeros(1, max(1, len(c)), dtype=torch.long)
        mask = torch.zeros_like(idx, dtype=torch.float32)
        idx[0, : len(c)] = torch.tensor(c, dtype=torch.long)
        mask[0, : len(c)] = 1.0
        S = cfg.n_splits
        with torch.no_grad(), _threads(self.threads):
            _, pred = _fit_block(d, cfg, torch.zeros(S, dtype=torch.long), torch.arange(S), idx, mask,
                                 mask.sum(1).clamp(min=1.0), return_pred=True)
        n, m = self.table.values.shape
        out = np.full((S, n, m), np.nan)
        sign = np.where(np.asarray(self.table.lower_is_better), -1.0, 1.0)
        for s, (_, te) in enumerate(d.splits):
            out[s, te] = (pred[s].double().numpy() * d.std[s] + d.mean[s]) * sign
        return out


def _train_columns(d: "_Data", cols: list[list[int]], width: int) -> np.ndarray:
    """Per-split test losses of the subsets given by their input columns, shape (len(cols), n_splits)."""
    import torch

    cfg = d.config
    S = cfg.n_splits
    C = len(cols)
    idx = torch.zeros(C, width, dtype=torch.long)
    mask = torch.zeros(C, width)
    for i, c in enumerate(cols):
        idx[i, : len(c)] = torch.tensor(c, dtype=torch.long)
        mask[i, : len(c)] = 1.0
    fan = mask.sum(1).clamp(min=1.0)
    P = C * S  # network p = (candidate p // S, split p % S)
    cand = torch.arange(P) // S
    split = torch.arange(P) % S
    out = torch.empty(P)
    block = P if cfg.chunk <= 0 else cfg.chunk
    with torch.no_grad():
        for lo in range(0, P, block):
            sl = slice(lo, min(P, lo + block))
            out[sl] = _fit_block(d, cfg, cand[sl], split[sl], idx, mask, fan)
    return out.view(C, S).double().numpy()


_WORKER: dict = {}


def _worker_init(table: Table, config: MetaConfig) -> None:
    import torch

    torch.set_num_threads(1)  # a worker process of our own: its thread setting is ours to choose
    _WORKER["data"] = _Data(table, config)


def _worker_train(cols: list[list[int]], width: int) -> np.ndarray:
    return _train_columns(_WORKER["data"], cols, width)


def _init_params(d: _Data, cfg: MetaConfig, cand, split, idx, mask, fan, out=None):
    """Initial weights of networks (cand, split): nn.Linear's U(-1/sqrt(fan_in), 1/sqrt(fan_in)) from the
    per-split full-width draws, restricted to each subset's input columns. With ``out`` (the six parameter
    tensors), the weights are written into them."""
    import torch

    ci = idx[cand]                                         # (P, D)
    cm = mask[cand]                                        # (P, D)
    scale = fan[cand].rsqrt()                              # (P,)
    W1 = d.U1[split.unsqueeze(1), ci] * (cm * scale.unsqueeze(1)).unsqueeze(2)   # (P, D, H)
    b1 = (d.u1[split] * scale.unsqueeze(1)).unsqueeze(1)                          # (P, 1, H)
    hs = 1.0 / math.sqrt(cfg.hidden)
    om = d.out_mask[split].unsqueeze(1)                                           # (P, 1, M)
    W2 = d.U2[split] * hs * om                                                    # (P, H, M)
    b2 = d.u2[split].unsqueeze(1) * hs * om                                       # (P, 1, M)
    g = torch.ones_like(b1)
    be = torch.zeros_like(b1)
    params = [W1, b1, g, be, W2, b2]
    if out is None:
        return [p.contiguous() for p in params]
    for dst, src in zip(out, params):
        dst.copy_(src)
    return out


def _fit_block(d: _Data, cfg: MetaConfig, cand, split, idx, mask, fan, return_pred: bool = False):
    """Fit the meta-models (cand[p], split[p]) of one block with ``cfg.model``; their test losses (and
    test predictions in the split's z-units)."""
    if cfg.model == "ridge":
        return _ridge_block(d, cfg, cand, split, idx, mask, return_pred)
    return _train_block(d, cfg, cand, split, idx, mask, fan, return_pred)


def _ridge_block(d: _Data, cfg: MetaConfig, cand, split, idx, mask, return_pred: bool = False):
    """Ridge meta-models: all target columns from the subset's input columns, in the split's training
    z-units, with an unpenalised intercept (missing training targets are the training mean, like missing
    inputs). Solved in the dual, W = X^T (X X^T + alpha I)^-1 Y, from one eigen-
    decomposition of each n x n Gram matrix (n = training models, so a few microseconds per fit); alpha is
    chosen per fit among ``cfg.ridge_alphas`` by the exact leave-one-out error of the training models,
    e_i = (y_i - yhat_i) / (1 - h_ii), weighted like the loss. Float64 throughout."""
    import torch

    f = torch.float64
    ci = idx[cand].unsqueeze(1)
    cm = mask[cand].unsqueeze(1).to(f)
    n, nte = d.Xtr.shape[1], d.Xte.shape[1]
    X = torch.gather(d.Xtr[split], 2, ci.expand(-1, n, -1)).to(f) * cm               # (P, n, D)
    Xte = torch.gather(d.Xte_in[split], 2, ci.expand(-1, nte, -1)).to(f) * cm        # (P, nte, D)
    Y, A = d.Xtr[split].to(f), d.Atr[split].to(f)                                      # (P, n, M)
    # an unpenalised intercept: centre on the training models (already ~0 without the leak; with --leaky
    # the z-scores are the whole table's), fit the centred data, add the training means back
    x_mean, y_mean = X.mean(1, keepdim=True), Y.mean(1, keepdim=True)
    X, Xte, Y = X - x_mean, Xte - x_mean, Y - y_mean
    s, U = torch.linalg.eigh(X @ X.transpose(1, 2))                                    # (P, n), (P, n, n)
    s = s.clamp(min=0.0)
    UtY = U.transpose(1, 2) @ Y                                                        # (P, n, M)
    alphas = torch.tensor(cfg.ridge_alphas, dtype=f)                                   # (G,)
    shrink = s.unsqueeze(1) / (s.unsqueeze(1) + alphas[None, :, None])                 # (P, G, n)
    fitted = torch.einsum("pij,pgj,pjm->pgim", U, shrink, UtY)                         # (P, G, n, M)
    # leverages of the model *with* its intercept: the centring is part of the fit, so leaving model i out
    # must re-centre without it (else x_i = -sum of the others' x leaks y_i): the intercept adds 1/n (the
    # centred columns of X are orthogonal to the ones vector)
    h = torch.einsum("pij,pgj->pgi", U * U, shrink) + 1.0 / n                          # (P, G, n)
    loo = (Y.unsqueeze(1) - fitted) / (1.0 - h).clamp(min=1e-12).unsqueeze(-1)
    crit = (loo * loo * A.unsqueeze(1)).sum((2, 3))                                   # (P, G)
    best = alphas[crit.argmin(1)]                                                      # (P,)
    coef = UtY / (s + best[:, None]).unsqueeze(-1)                                     # (K + aI)^-1 Y in U's basis
    yhat = (Xte @ X.transpose(1, 2)) @ (U @ coef) + y_mean                             # (P, nte, M)
    loss = ((yhat - d.Xte[split].to(f)) ** 2 * d.Ate[split].to(f)).sum((1, 2)).float()
    return (loss, yhat.float()) if return_pred else loss


def _flat_views(buf, shapes):
    """Consecutive views of the flat tensor ``buf`` with the given shapes."""
    views, o = [], 0
    for sh in shapes:
        size = math.prod(sh)
        views.append(buf[o: o + size].view(sh))
        o += size
    return views


def _train_block(d: _Data, cfg: MetaConfig, cand, split, idx, mask, fan, return_pred: bool = False):
    """Train networks (cand[p], split[p]) together; return each one's test loss (and test predictions).

    The forward and backward passes are written out as batched matmuls and elementwise passes into
    preallocated buffers; each linear layer's bias is one more row of its weight matrix, fed by a column of
    ones, so the matmul that computes the weight gradient computes the bias gradient too. AdamW is torch's
    fused CPU kernel applied once per epoch to all the networks' parameters, which live as views in one
    flat tensor (their gradients in another): the same elementwise update as one ``torch.optim.AdamW`` per
    network, in one kernel call. (Autograd would build and free a graph of ~20 (P x n x 100) buffers per
    epoch; ``tests/eevee`` checks the result against the nn.Module loop.)
    """
    import torch

    P, D = cand.shape[0], idx.shape[1]
    n, M, H = d.Xtr.shape[1], d.Xtr.shape[2], cfg.hidden
    shapes = [(P, D + 1, H), (P, 1, H), (P, 1, H), (P, H + 1, M)]
    total = sum(math.prod(sh) for sh in shapes)
    flat, gflat = torch.empty(total), torch.empty(total)
    exp_avg, exp_avg_sq, step = torch.zeros(total), torch.zeros(total), torch.zeros(())
    W1a, g, be, W2a = _flat_views(flat, shapes)            # W1a = [W1; b1], W2a = [W2; b2]
    gW1a, gg, gbe, gW2a = _flat_views(gflat, shapes)
    W1, b1, g0, be0, W2, b2 = _init_params(d, cfg, cand, split, idx, mask, fan)
    W1a[:, :D].copy_(W1), W1a[:, D:].copy_(b1), g.copy_(g0), be.copy_(be0)
    W2a[:, :H].copy_(W2), W2a[:, H:].copy_(b2)
    W2v = W2a[:, :H]                                       # the weights without the bias row

    ci = idx[cand].unsqueeze(1)                            # (P, 1, D)
    cm = mask[cand].unsqueeze(1)

    def inputs(Z):                                         # [X, 1] for the rows of Z
        Xa = torch.ones(P, Z.shape[1], D + 1)
        torch.gather(Z, 2, ci.expand(-1, Z.shape[1], -1), out=Xa[..., :D]).mul_(cm)
        return Xa

    Xa = inputs(d.Xtr[split])
    Xat = Xa.transpose(1, 2).contiguous()
    A2 = d.Atr[split] * 2.0                                # dLoss/dyhat = 2 A (yhat - Y)
    YA2 = d.Xtr[split] * A2
    slope, eps = cfg.negative_slope, cfg.ln_eps
    beta1, beta2 = cfg.betas
    leaky = torch._C._nn.leaky_relu
    leaky_back = torch.ops.aten.leaky_relu_backward.grad_input
    ln_back = torch.ops.aten.native_layer_norm_backward
    h, a, xhat, tmp, dl, dh = (torch.empty(P, n, H) for _ in range(6))
    mu, rstd = torch.empty(P, n, 1), torch.empty(P, n, 1)
    la = torch.ones(P, n, H + 1)                           # [LayerNorm output, 1]
    l = la[..., :H]
    r = torch.empty(P, n, M)
    ln_mask = [True, False, False]

    def layer_norm(x):                                     # xhat = (x - mean) * rstd, no affine
        torch.mean(x, -1, keepdim=True, out=mu)
        torch.sub(x, mu, out=xhat)
        torch.mean(torch.mul(xhat, xhat, out=tmp), -1, keepdim=True, out=rstd).add_(eps).rsqrt_()
        return xhat.mul_(rstd)

    for _ in range(cfg.epochs):
        torch.bmm(Xa, W1a, out=h)
        layer_norm(leaky(h, slope, out=a))
        torch.addcmul(be, xhat, g, out=l)
        torch.bmm(la, W2a, out=r).mul_(A2).sub_(YA2)
        torch.bmm(la.transpose(1, 2), r, out=gW2a)
        torch.bmm(r, W2v.transpose(1, 2), out=dl)
        torch.sum(torch.mul(dl, xhat, out=tmp), 1, keepdim=True, out=gg)
        torch.sum(dl, 1, keepdim=True, out=gbe)
        da = ln_back(dl.mul_(g), a, [H], mu, rstd, None, None, ln_mask)[0]
        leaky_back(da, h, slope, False, grad_input=dh)
        torch.bmm(Xat, dh, out=gW1a)
        step += 1
        torch._fused_adamw_([flat], [gflat], [exp_avg], [exp_avg_sq], [], [step], amsgrad=False, lr=cfg.lr,
                            beta1=beta1, beta2=beta2, weight_decay=cfg.weight_decay, eps=cfg.adam_eps,
                            maximize=False, grad_scale=None, found_inf=None)
    Xte = inputs(d.Xte_in[split])
    nte = Xte.shape[1]
    a = leaky(torch.bmm(Xte, W1a), slope)
    mu_t = a.mean(-1, keepdim=True)
    xc = a - mu_t
    lt = torch.ones(P, nte, H + 1)
    torch.addcmul(be, xc * torch.rsqrt((xc * xc).mean(-1, keepdim=True) + eps), g, out=lt[..., :H])
    yhat = torch.bmm(lt, W2a)
    loss = ((yhat - d.Xte[split]) ** 2 * d.Ate[split]).sum((1, 2))
    return (loss, yhat) if return_pred else loss


class LoopEvaluator(_Evaluator):
    """The baseline: one ``torch.nn`` meta-model and one ``torch.optim.AdamW`` per (subset, split), trained
    one after the other, from the same initial weights as :class:`BatchedEvaluator`."""

    def __init__(self, table: Table, config: MetaConfig | None = None, threads: int | None = 1) -> None:
        if config is not None and config.model != "mlp":
            raise InputError(f"LoopEvaluator is the one-at-a-time baseline of the MLP meta-model; use "
                             f"BatchedEvaluator for model={config.model!r}", field="model")
        super().__init__(table, config, threads)

    def _train(self, subsets: list[Subset]) -> np.ndarray:
        import torch
        from torch import nn

        cfg, d = self.config, self.data
        out = np.empty((len(subsets), cfg.n_splits))
        hs = 1.0 / math.sqrt(cfg.hidden)
        for i, sub in enumerate(subsets):
            cols = d.columns(sub)
            fan = max(1, len(cols))
            for s in range(cfg.n_splits):
                net = nn.Sequential(nn.Linear(fan, cfg.hidden), nn.LeakyReLU(cfg.negative_slope),
                                    nn.LayerNorm(cfg.hidden, eps=cfg.ln_eps), nn.Linear(cfg.hidden, d.Xtr.shape[2]))
                with torch.no_grad():
                    w1 = d.U1[s, cols].T if cols else torch.zeros(cfg.hidden, 1)
                    net[0].weight.copy_(w1 / math.sqrt(fan))
                    net[0].bias.copy_(d.u1[s] / math.sqrt(fan))
                    net[3].weight.copy_(d.U2[s].T * hs * d.out_mask[s][:, None])
                    net[3].bias.copy_(d.u2[s] * hs * d.out_mask[s])
                opt = torch.optim.AdamW(net.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay,
                                        betas=cfg.betas, eps=cfg.adam_eps)
                X = d.Xtr[s][:, cols] if cols else torch.zeros(d.Xtr.shape[1], 1)
                for _ in range(cfg.epochs):
                    opt.zero_grad()
                    loss = ((net(X) - d.Xtr[s]) ** 2 * d.Atr[s]).sum()
                    loss.backward()
                    opt.step()
                with torch.no_grad():
                    Xte = d.Xte_in[s][:, cols] if cols else torch.zeros(d.Xte.shape[1], 1)
                    out[i, s] = float(((net(Xte) - d.Xte[s]) ** 2 * d.Ate[s]).sum())
        return out
