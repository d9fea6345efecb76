"""``ridge``: closed-form ridge meta-models (kernel: :func:`modelseek.eevee.kernels.ridge_block`)."""

from __future__ import annotations

from ..kernels import ridge_block
from ..models import MetaModel, register_meta_model

register_meta_model(MetaModel(
    "ridge", "closed-form ridge regression, alpha chosen per fit by leave-one-out over the training models "
             "(seconds per search)",
    seeded=False, parallel=False, fit=ridge_block))
