"""The meta-model protocol's settings (:class:`MetaConfig`), a :class:`modelseek.core.config.Config`: built from a
mapping or a YAML/JSON file with located errors, every field coerced and checked against its constraints.

It holds the protocol shared by every meta-model (the splits over models, the seed, the normalisation, the unit of
the loss, the block size) and which meta-model to fit; the member's own parameters (the ridge's penalties, the
MLP's width and optimiser) are its ``Params`` (:class:`~modelseek.eevee.models.MetaModel`), given here as
``model_params`` and checked by that member."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from numbers import Integral, Real
from typing import Any, Literal

from ..core.config import Config, Interval
from ..core.errors import InputError
from ..core.registry import UnknownNameError
from .models import META_MODELS

_NONNEG_INT = [Interval(Integral, 0, None, closed="left")]
_SEED = [Interval(Integral, 0, 2**32 - 1, closed="both")]


@dataclass(frozen=True)
class MetaConfig(Config):
    """The meta-model protocol. Defaults are the issue's (GATE's) values.

    ``model_params``: the meta-model's own parameters, a mapping of name -> value (None or ``{}``: its defaults),
    e.g. ``MetaConfig(model="ridge", model_params={"alphas": [0.1, 1, 10]})``. It is checked by the member's
    ``Params`` config at construction and stored as that config's instance (the kernel reads
    ``cfg.model_params.alphas``); an unknown name or a bad value is an ``InputError`` naming the member and the
    parameter and listing its parameters.
    """

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
    model: str = "mlp"             # the meta-model: a name of :data:`modelseek.eevee.models.META_MODELS`
    model_params: Any = None       # the meta-model's own parameters (see above)
    chunk: int = 128               # networks per block of the batched computation (0 = all at once); the
                                   # blocks stay in cache: measured ~1.5x faster than one block of 10,000

    _constraints = {
        "n_splits": [Interval(Integral, 1, 1000, closed="both")],
        "test_size": [Interval(Real, 0, 1, closed="neither")], "cv_seed": _SEED,
        "seed": _SEED, "chunk": _NONNEG_INT,
    }

    def _check(self) -> None:
        try:
            member = META_MODELS.get(self.model)
        except UnknownNameError as exc:
            raise InputError(str(exc), field="model") from None
        object.__setattr__(self, "model_params", member.make_params(self.model_params))

    def to_dict(self) -> dict:
        return asdict(self)
