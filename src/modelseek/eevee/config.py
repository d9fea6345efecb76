"""The meta-model protocol's settings (:class:`MetaConfig`), a :class:`modelseek.config.Config`: built from a
mapping or a YAML/JSON file with located errors, every field coerced and checked against its constraints."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from numbers import Integral, Real
from typing import Literal

import numpy as np

from ..config import Config, Interval
from ..errors import InputError
from ..registry import UnknownNameError
from .models import META_MODELS

_POS_INT = [Interval(Integral, 1, None, closed="left")]
_NONNEG_INT = [Interval(Integral, 0, None, closed="left")]
_POS = [Interval(Real, 0, None, closed="neither")]
_NONNEG = [Interval(Real, 0, None, closed="left")]
_SEED = [Interval(Integral, 0, 2**32 - 1, closed="both")]


@dataclass(frozen=True)
class MetaConfig(Config):
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
    loss_scale: Literal["table", "split"] = "table"
                                   # unit of the test loss: "table" = each metric's std over all models (the
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

    _constraints = {
        "hidden": _POS_INT, "lr": _POS, "weight_decay": _NONNEG, "epochs": _NONNEG_INT, "n_splits": _POS_INT,
        "test_size": [Interval(Real, 0, 1, closed="neither")], "cv_seed": _SEED, "seed": _SEED,
        "negative_slope": _NONNEG, "ln_eps": _POS, "adam_eps": _POS, "chunk": _NONNEG_INT,
    }

    def _check(self) -> None:
        try:
            META_MODELS.get(self.model)
        except UnknownNameError as exc:
            raise InputError(str(exc), field="model") from None
        for i, b in enumerate(self.betas):
            if not 0 <= b < 1:
                raise InputError(f"must be a number in [0, 1), got {b}", field=f"betas[{i}]")
        if not self.ridge_alphas or min(self.ridge_alphas) <= 0:
            raise InputError("ridge_alphas must be a non-empty list of positive numbers", field="ridge_alphas")

    def to_dict(self) -> dict:
        return asdict(self)
