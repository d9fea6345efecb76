"""The EEVEE meta-models: a registry of :class:`MetaModel` records (name, description, whether the seed
matters, and the batched kernel that fits a block of them). ``--meta-model`` lists its names; adding a
meta-model is one :func:`register_meta_model` call with a kernel of :mod:`modelseek.eevee.kernels`' signature.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..registry import Registry
from .kernels import mlp_block, ridge_block


@dataclass(frozen=True)
class MetaModel:
    """A meta-model and its properties.

    ``fit(data, config, cand, split, idx, mask, fan, return_pred=False)`` fits one block of (subset, split)
    meta-models and returns their test losses (see :mod:`modelseek.eevee.kernels`). ``seeded``: whether
    ``MetaConfig.seed`` (the initial weights) changes its scores. ``parallel``: whether a batch is worth
    splitting across worker processes (a closed form costs less than starting them).
    """

    name: str
    description: str
    seeded: bool
    parallel: bool
    fit: Callable


META_MODELS: Registry[MetaModel] = Registry("meta-model")


def register_meta_model(model: MetaModel) -> MetaModel:
    return META_MODELS.add(model.name, model)


register_meta_model(MetaModel(
    "mlp", "the protocol's MLP (Linear -> LeakyReLU -> LayerNorm -> Linear, AdamW, 20 full-batch epochs)",
    seeded=True, parallel=True, fit=mlp_block))
register_meta_model(MetaModel(
    "ridge", "closed-form ridge regression, alpha chosen per fit by leave-one-out over the training models "
             "(seconds per search)",
    seeded=False, parallel=False, fit=ridge_block))


def fit_columns(d, cols: list[list[int]], width: int):
    """Per-split test losses of the subsets given by their input columns (column indices of ``d``'s table),
    shape (len(cols), n_splits), with ``d.config``'s meta-model. Every (subset, split) pair is one network;
    the networks are fitted ``config.chunk`` at a time, their inputs padded to ``width`` columns."""
    import torch

    cfg = d.config
    fit = META_MODELS.get(cfg.model).fit
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
            out[sl] = fit(d, cfg, cand[sl], split[sl], idx, mask, fan)
    return out.view(C, S).double().numpy()
