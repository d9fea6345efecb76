"""``custom`` source: ``model_parameters.arch`` names a factory of :mod:`modelseek.retrieval.vision.zoo` or
``"package.module:factory"``; the other keys are its keyword arguments. Weights: random (seeded) or a
local checkpoint."""

from __future__ import annotations

import importlib

from ....core.errors import InputError
from ..zoo import ZOO
from ....core.kinds import register
from .base import LoadedModel, ModelSource, load_state_dict, seeded


@register("model source")
class CustomSource(ModelSource):
    name = "custom"
    package = "torch"

    def build(self, entry, spec) -> LoadedModel:
        arch = spec.arch
        if ":" in arch:
            mod, attr = arch.split(":", 1)
            try:
                factory = getattr(importlib.import_module(mod), attr)
            except (ImportError, AttributeError) as exc:
                raise InputError(f"model {entry.model_name!r}: cannot import {arch!r}: {exc}",
                                 field="model_parameters.arch") from None
        elif arch in ZOO:
            factory = ZOO[arch]
        else:
            raise InputError(f"model {entry.model_name!r}: unknown custom arch {arch!r}; built-in: "
                             f"{', '.join(sorted(ZOO))}, or 'package.module:factory'", field="model_parameters.arch")
        try:
            module = seeded(lambda: factory(**spec.params), spec.seed)
        except TypeError as exc:
            raise InputError(f"model {entry.model_name!r}: {arch}: {exc}", field="model_parameters") from None
        if spec.weights_file:
            load_state_dict(module, spec.weights_file, entry.model_name)
            note = f"checkpoint {spec.weights_file}"
        elif not spec.random:
            raise InputError(f"model {entry.model_name!r}: custom weights must be null/'random' or an existing "
                             f"file, got {entry.weights!r}", field="weights")
        else:
            note = f"random (seed {spec.seed})"
        return LoadedModel(entry, module, self.std_call(module, spec), None, weights_note=note)
