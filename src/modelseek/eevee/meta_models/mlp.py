"""``mlp``: the EEVEE protocol's meta-model (kernel: :func:`modelseek.eevee.kernels.mlp_block`) and its own
parameters (:class:`MLPParams`: ``--meta-param hidden=50``)."""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral, Real

from ...core.config import Config, Interval
from ...core.errors import InputError
from ..kernels import mlp_block
from ...core.kinds import register
from ..models import MetaModel

#: the work one fit may cost: every subset the search scores trains n_splits networks of ``hidden`` units for
#: ``epochs`` full-batch steps, so each is bounded (100x and 500x the protocol's 100 and 20)
MAX_HIDDEN = 10_000
MAX_EPOCHS = 10_000
_POS = [Interval(Real, 0, None, closed="neither")]
_NONNEG = [Interval(Real, 0, None, closed="left")]


@dataclass(frozen=True)
class MLPParams(Config):
    """The MLP's architecture and optimiser; the defaults are the issue's (GATE's) values."""

    hidden: int = 100              # units of the hidden layer
    lr: float = 0.01               # AdamW
    weight_decay: float = 0.01
    epochs: int = 20               # full-batch epochs
    negative_slope: float = 0.01   # LeakyReLU
    ln_eps: float = 1e-5           # LayerNorm
    betas: tuple[float, float] = (0.9, 0.999)
    adam_eps: float = 1e-8

    _constraints = {"hidden": [Interval(Integral, 1, MAX_HIDDEN, closed="both")], "lr": _POS,
                    "weight_decay": _NONNEG, "epochs": [Interval(Integral, 0, MAX_EPOCHS, closed="both")],
                    "negative_slope": _NONNEG, "ln_eps": _POS, "adam_eps": _POS}

    def _check(self) -> None:
        for i, b in enumerate(self.betas):
            if not 0 <= b < 1:
                raise InputError(f"must be a number in [0, 1), got {b}", field=f"betas[{i}]")


register("meta-model", MetaModel(
    "mlp", "the protocol's MLP (Linear -> LeakyReLU -> LayerNorm -> Linear, AdamW, 20 full-batch epochs)",
    seeded=True, parallel=True, fit=mlp_block, params=MLPParams))
