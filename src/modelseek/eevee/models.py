"""The EEVEE meta-models: a registry of :class:`MetaModel` records (name, description, whether the seed
matters, whether a batch is worth splitting across processes, and the batched kernel that fits a block of
them). ``--meta-model`` lists its names.

The contract is :class:`MetaModelKernel` (a ``typing.Protocol``, for mypy; :class:`MetaModel` checks the
kernel's signature when it is built). Each meta-model registers itself with :func:`register_meta_model` in
its own module of :mod:`modelseek.eevee.meta_models` (``mlp.py``, ``ridge.py``); the registry discovers that
package's modules on first use, so a new meta-model is one file.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..registry import PluginRegistry

if TYPE_CHECKING:
    from .config import MetaConfig
    from .data import SplitData

#: the kernel's parameters, in order (see :class:`MetaModelKernel`)
KERNEL_PARAMETERS = ("d", "cfg", "cand", "split", "idx", "mask", "fan", "return_pred")


class MetaModelKernel(Protocol):
    """Fits one block of (subset, split) meta-models together.

    ``d``: the table's splits (:class:`~modelseek.eevee.data.SplitData`); ``cfg``: the
    :class:`~modelseek.eevee.config.MetaConfig`; network ``p`` of the block is subset ``cand[p]`` on split
    ``split[p]``, its input columns ``idx[cand[p]]`` where ``mask[cand[p]]`` is 1 (``fan``: their number, the
    initialisation scale). Returns the ``P`` test losses, or ``(losses, test predictions)`` with
    ``return_pred=True``.
    """

    def __call__(self, d: SplitData, cfg: MetaConfig, cand: Any, split: Any, idx: Any, mask: Any, fan: Any,
                 return_pred: bool = False) -> Any: ...


@dataclass(frozen=True)
class MetaModel:
    """A meta-model and its properties.

    ``fit``: the kernel (:class:`MetaModelKernel`). ``seeded``: whether ``MetaConfig.seed`` (the initial
    weights) changes its scores. ``parallel``: whether a batch is worth splitting across worker processes (a
    closed form costs less than starting them).
    """

    name: str
    description: str
    seeded: bool
    parallel: bool
    fit: MetaModelKernel

    def __post_init__(self) -> None:
        if not self.name or not isinstance(self.name, str):
            raise ValueError("a meta-model's name must be a non-empty string")
        if not self.description:
            raise ValueError(f"meta-model {self.name!r}: give a description (--help lists it)")
        params = list(inspect.signature(self.fit).parameters)
        if tuple(params[: len(KERNEL_PARAMETERS)]) != KERNEL_PARAMETERS:
            raise TypeError(f"meta-model {self.name!r}: the kernel must take ({', '.join(KERNEL_PARAMETERS)}), "
                            f"got ({', '.join(params)})")


#: registered meta-models; the modules of :mod:`modelseek.eevee.meta_models` are imported on first use
META_MODELS: PluginRegistry[MetaModel] = PluginRegistry("meta-model", "modelseek.eevee.meta_models")


def register_meta_model(model: MetaModel) -> MetaModel:
    if not isinstance(model, MetaModel):
        raise TypeError(f"register_meta_model takes a MetaModel, got {model!r}")
    return META_MODELS.add(model.name, model)


def fit_columns(d, cols: list[list[int]], width: int):
    """Per-split test losses of the subsets given by their input columns (column indices of ``d``'s table),
    shape (len(cols), n_splits), with ``d.config``'s meta-model. Every (subset, split) pair is one network;
    the networks are fitted ``config.chunk`` at a time, their inputs padded to ``width`` columns."""
    import torch  # lazy: torch

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
