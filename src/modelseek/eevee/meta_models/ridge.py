"""``ridge``: closed-form ridge meta-models (kernel: :func:`modelseek.eevee.kernels.ridge_block`) and their own
parameter (:class:`RidgeParams`: ``--meta-param alphas=0.1,1,10``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core.config import Config
from ...core.errors import InputError
from ..kernels import ridge_block
from ...core.kinds import register
from ..models import MetaModel


@dataclass(frozen=True)
class RidgeParams(Config):
    """The candidate penalties (in z-units), one chosen per fit by leave-one-out; one value fixes it."""

    alphas: tuple[float, ...] = tuple(float(a) for a in np.logspace(-2, 4, 13))

    def _check(self) -> None:
        if not self.alphas:
            raise InputError("must be a non-empty list of positive numbers, got []", field="alphas")
        for i, a in enumerate(self.alphas):
            if not a > 0:
                raise InputError(f"must be a number > 0, got {a:g}", field=f"alphas[{i}]")


register("meta-model", MetaModel(
    "ridge", "closed-form ridge regression, alpha chosen per fit by leave-one-out over the training models "
             "(seconds per search)",
    seeded=False, parallel=False, fit=ridge_block, params=RidgeParams))
