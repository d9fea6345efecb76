"""Evaluators: the score of a benchmark subset under the meta-model protocol.

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
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import replace

import numpy as np

from ..core.errors import InputError
from .config import MetaConfig
from .data import SplitData
from .models import META_MODELS, fit_columns
from .pool import WorkerPool, torch_threads, usable_cpus
from .score import Score, Subset, normalise_subset
from .table import Table


class Evaluator:
    """Scores subsets (mean test loss over splits), caching each subset's per-split losses."""

    def __init__(self, table: Table, config: MetaConfig | None = None, threads: int | None = 1,
                 splits: Sequence[tuple[np.ndarray, np.ndarray]] | None = None) -> None:
        self.config = config or MetaConfig()
        if splits is not None:  # fixed (training rows, test rows) of the canonical table instead of the protocol's
            self.config = replace(self.config, n_splits=len(splits))
        self.threads = threads
        table = table.canonical()  # the order of the file's rows and columns changes nothing
        self.data = SplitData(table, self.config, splits)
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
            with torch_threads(self.threads):
                out = self._train(todo)
            bad = [s for s, row in zip(todo, out) if not np.isfinite(row).all()]
            if bad:  # never a NaN score: data the standardisation admitted but the float32 loss cannot hold
                raise InputError(f"the meta-model's test loss is not finite for the subset {', '.join(bad[0])}: "
                                 f"the table's values span too wide a range to score it",
                                 path=self.table.source or None)
            for s, row in zip(todo, out):
                self.cache[s] = row
            self.n_trained += len(todo)
        return np.array([self.cache[s] for s in subs]).reshape(len(subs), self.config.n_splits)

    def scores(self, subsets: Sequence[Iterable[str]]) -> list[Score]:
        subs = [normalise_subset(s) for s in subsets]
        return [Score.of(s, row) for s, row in zip(subs, self.losses(subs))]

    def score(self, subset: Iterable[str]) -> Score:
        return self.scores([subset])[0]

    def baseline(self) -> Score:
        """The score every subset must beat: each test model's every metric predicted by the mean of the
        training models of its split (no meta-model, no input), in the same splits, unit and loss weights as
        the meta-model's test loss (a missing training value is the training mean as for the meta-model; a
        column constant over the training models is predicted as that constant). Its subset is empty."""
        d = self.data
        mean = d.Xtr.double().mean(1, keepdim=True)                     # (splits, 1, M), 0 without the leak
        losses = ((mean - d.Xte.double()) ** 2 * d.Ate.double()).sum((1, 2)).numpy()
        return Score.of((), losses)

    def baseline_given(self, subsets: Sequence[Iterable[str]]) -> np.ndarray:
        """Per-split losses of :meth:`baseline` with each subset's own metrics measured, shape (len(subsets),
        n_splits): the training means predict only the other metrics (what a subset must beat to predict
        anything: the meta-model's loss counts the subset's own metrics too, which measuring it reveals)."""
        d = self.data
        mean = d.Xtr.double().mean(1, keepdim=True)
        per_col = ((mean - d.Xte.double()) ** 2 * d.Ate.double()).sum(1).numpy()      # (splits, M)
        total = per_col.sum(1)
        return np.array([total - per_col[:, d.columns(normalise_subset(s))].sum(1) for s in subsets]
                        ).reshape(-1, self.config.n_splits)

    def _train(self, subsets: list[Subset]) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError


class BatchedEvaluator(Evaluator):
    """Trains every (subset, split) network of a call as one batched computation.

    ``workers > 1`` splits a call's subsets into up to that many contiguous parts (at least
    ``MIN_PER_WORKER`` subsets each, so small calls stay in this process) trained by as many worker
    processes (one torch thread each), so that every core works; each part is still one batched
    computation, and the padded input width is that of the whole call, so the scores are the same as with
    one process. ``workers=0`` means one per usable CPU (at most 8).
    """

    MIN_PER_WORKER = 8

    def __init__(self, table: Table, config: MetaConfig | None = None, threads: int | None = 1,
                 workers: int = 1, splits: Sequence[tuple[np.ndarray, np.ndarray]] | None = None) -> None:
        super().__init__(table, config, threads, splits)
        self._splits = splits
        if workers < 0:
            raise InputError(f"workers must be >= 0 (0 = one per CPU), got {workers}", field="workers")
        self.workers = workers or usable_cpus(8)
        self._pool: WorkerPool | None = None
        self.spawn = True  # whether a call may start the worker processes (False: only use them if running)

    def _train(self, subsets: list[Subset]) -> np.ndarray:
        cols = [self.data.columns(s) for s in subsets]
        width = max(1, max(len(c) for c in cols))
        n_parts = min(self.workers, len(cols) // self.MIN_PER_WORKER)
        if n_parts <= 1 or not META_MODELS.get(self.config.model).parallel or \
                (self._pool is None and not self.spawn):
            return fit_columns(self.data, cols, width)
        if self._pool is None:
            self._pool = WorkerPool(self.table, self.config, self.workers, self._splits)
            weakref.finalize(self, self._pool.shutdown, wait=False, cancel_futures=True)
        parts = np.array_split(np.arange(len(cols)), n_parts)
        return self._pool.fit([[cols[i] for i in p] for p in parts], width)

    def close(self) -> None:
        """Stop the worker processes (if any)."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def predict(self, subset: Iterable[str]) -> np.ndarray:
        """Cross-validated predictions on the raw scale: shape (n_splits, n_models, M), NaN where a model is
        in the training part of the split. Rows and columns are those of ``self.table`` (the canonical order)."""
        import torch  # lazy: torch

        cfg, d = self.config, self.data
        c = d.columns(normalise_subset(subset))
        idx = torch.zeros(1, max(1, len(c)), dtype=torch.long)
        mask = torch.zeros_like(idx, dtype=torch.float32)
        idx[0, : len(c)] = torch.tensor(c, dtype=torch.long)
        mask[0, : len(c)] = 1.0
        S = cfg.n_splits
        with torch.no_grad(), torch_threads(self.threads), META_MODELS.calling(cfg.model, "fit (predict)"):
            _, pred = META_MODELS.get(cfg.model).fit(d, cfg, torch.zeros(S, dtype=torch.long), torch.arange(S),
                                                     idx, mask, mask.sum(1).clamp(min=1.0), return_pred=True)
        n, m = self.table.values.shape
        out = np.full((S, n, m), np.nan)
        sign = np.where(np.asarray(self.table.lower_is_better), -1.0, 1.0)
        for s, (_, te) in enumerate(d.splits):
            out[s, te] = (pred[s].double().numpy() * d.scaled_std[s] + d.scaled_mean[s]) * d.scale * sign
        return out


class LoopEvaluator(Evaluator):
    """The baseline: one ``torch.nn`` meta-model and one ``torch.optim.AdamW`` per (subset, split), trained
    one after the other, from the same initial weights as :class:`BatchedEvaluator`."""

    def __init__(self, table: Table, config: MetaConfig | None = None, threads: int | None = 1) -> None:
        if config is not None and config.model != "mlp":
            raise InputError(f"LoopEvaluator is the one-at-a-time baseline of the MLP meta-model; use "
                             f"BatchedEvaluator for model={config.model!r}", field="model")
        super().__init__(table, config, threads)

    def _train(self, subsets: list[Subset]) -> np.ndarray:
        import torch  # lazy: torch
        from torch import nn  # lazy: torch

        cfg, d = self.config, self.data
        hp = cfg.model_params  # the MLP's own parameters
        U1, u1, U2, u2 = d.initial_draws(hp.hidden)
        out = np.empty((len(subsets), cfg.n_splits))
        hs = 1.0 / math.sqrt(hp.hidden)
        for i, sub in enumerate(subsets):
            cols = d.columns(sub)
            fan = max(1, len(cols))
            for s in range(cfg.n_splits):
                first, last = nn.Linear(fan, hp.hidden), nn.Linear(hp.hidden, d.Xtr.shape[2])
                net = nn.Sequential(first, nn.LeakyReLU(hp.negative_slope),
                                    nn.LayerNorm(hp.hidden, eps=hp.ln_eps), last)
                with torch.no_grad():
                    w1 = U1[s, cols].T if cols else torch.zeros(hp.hidden, 1)
                    first.weight.copy_(w1 / math.sqrt(fan))
                    first.bias.copy_(u1[s] / math.sqrt(fan))
                    last.weight.copy_(U2[s].T * hs * d.out_mask[s][:, None])
                    last.bias.copy_(u2[s] * hs * d.out_mask[s])
                opt = torch.optim.AdamW(net.parameters(), lr=hp.lr, weight_decay=hp.weight_decay,
                                        betas=hp.betas, eps=hp.adam_eps)
                X = d.Xtr[s][:, cols] if cols else torch.zeros(d.Xtr.shape[1], 1)
                for _ in range(hp.epochs):
                    opt.zero_grad()
                    loss = ((net(X) - d.Xtr[s]) ** 2 * d.Atr[s]).sum()
                    loss.backward()
                    opt.step()
                with torch.no_grad():
                    Xte = d.Xte_in[s][:, cols] if cols else torch.zeros(d.Xte.shape[1], 1)
                    out[i, s] = float(((net(Xte) - d.Xte[s]) ** 2 * d.Ate[s]).sum())
        return out
