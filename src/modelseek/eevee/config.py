"""The meta-model protocol's settings (:class:`MetaConfig`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from ..errors import InputError


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
    model: str = "mlp"             # the meta-model: a name of :data:`modelseek.eevee.models.META_MODELS`
    ridge_alphas: tuple[float, ...] = tuple(float(a) for a in np.logspace(-2, 4, 13))  # chosen per fit by LOO
    chunk: int = 128               # networks per block of the batched computation (0 = all at once); the
                                   # blocks stay in cache: measured ~1.5x faster than one block of 10,000

    def __post_init__(self) -> None:
        from ..registry import UnknownNameError
        from .models import META_MODELS

        try:
            META_MODELS.get(self.model)
        except UnknownNameError as exc:
            raise InputError(str(exc), field="model") from None
        if self.model == "ridge" and (not self.ridge_alphas or min(self.ridge_alphas) <= 0):
            raise InputError("ridge_alphas must be a non-empty list of positive numbers", field="ridge_alphas")
        if self.loss_scale not in ("table", "split"):
            raise InputError(f"loss_scale must be 'table' or 'split', got {self.loss_scale!r}", field="loss_scale")

    def to_dict(self) -> dict:
        return asdict(self)
