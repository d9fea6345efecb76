"""``mlp``: the EEVEE protocol's meta-model (kernel: :func:`modelseek.eevee.kernels.mlp_block`)."""

from __future__ import annotations

from ..kernels import mlp_block
from ..models import MetaModel, register_meta_model

register_meta_model(MetaModel(
    "mlp", "the protocol's MLP (Linear -> LeakyReLU -> LayerNorm -> Linear, AdamW, 20 full-batch epochs)",
    seeded=True, parallel=True, fit=mlp_block))
