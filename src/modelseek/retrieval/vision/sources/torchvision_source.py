"""``torchvision`` source: ``torchvision.models.get_model(arch, weights=...)`` with ``arch`` =
``model_parameters.arch`` or ``model_name``. ``weights``: random (seeded), ``imagenet``/``pretrained``/
``DEFAULT`` (the architecture's default weights), a weights name (``IMAGENET1K_V2`` or
``ResNet50_Weights.IMAGENET1K_V2``) or a local checkpoint."""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlparse

from ....core.errors import InputError
from ....core.kinds import register
from .base import (LoadedModel, ModelSource, WeightsUnavailable, _first_line, is_default_pretrained, load_state_dict,
                   offline, offline_reason, seeded, Spec)


@register("model source")
class TorchvisionSource(ModelSource):
    name = "torchvision"
    package = "torchvision"

    def _models(self):
        return self.module("torchvision.models")

    def _arch(self, tvm, entry, arch: str) -> str:
        return self.check_arch(entry, arch, tvm.list_models())

    def _weights(self, tvm, entry, arch: str):
        """The weights enum member that ``entry.weights`` names (None for random / a checkpoint)."""
        enum = tvm.get_model_weights(arch)
        w = entry.weights.strip()
        if is_default_pretrained(w):
            return enum.DEFAULT
        name = w.split(".", 1)[1] if w.startswith(enum.__name__ + ".") else w
        try:
            return enum[name]
        except KeyError:
            raise InputError(f"model {entry.model_name!r}: {entry.weights!r} is not a checkpoint file nor a weights "
                             f"name of {arch} (valid: imagenet, pretrained, "
                             f"{', '.join(m.name for m in enum)}, random)", field="weights") from None

    def defaults(self, entry) -> dict:
        spec = Spec.of(entry)
        if spec.random or spec.weights_file:
            return {}
        tvm = self._models()
        w = self._weights(tvm, entry, self._arch(tvm, entry, spec.arch))
        kw = dict(getattr(w.transforms, "keywords", {}) or {})
        out: dict[str, Any] = {}
        if "crop_size" in kw:
            out["input_size"] = (int(kw["crop_size"]), int(kw["crop_size"]))
        if "resize_size" in kw:
            out["resize"] = int(kw["resize_size"])
        return out

    def build(self, entry, spec) -> LoadedModel:
        tvm = self._models()
        arch = self._arch(tvm, entry, spec.arch)
        if spec.random or spec.weights_file:
            module = seeded(lambda: tvm.get_model(arch, weights=None, **spec.params), spec.seed)
            note = f"random (seed {spec.seed})"
            if spec.weights_file:
                load_state_dict(module, spec.weights_file, entry.model_name)
                note = f"checkpoint {spec.weights_file}"
            return LoadedModel(entry, module, self.std_call(module, spec), weights_note=note)
        w = self._weights(tvm, entry, arch)
        import torch  # lazy: torch

        cached = os.path.join(torch.hub.get_dir(), "checkpoints", os.path.basename(urlparse(w.url).path))
        if not os.path.isfile(cached) and offline(urlparse(w.url).hostname or "download.pytorch.org"):
            raise WeightsUnavailable(f"model {entry.model_name!r}: pretrained weights {w} cannot be fetched: "
                                     f"{offline_reason()} and not in {os.path.dirname(cached)}", field="weights")
        try:
            module = tvm.get_model(arch, weights=w, **spec.params)
        except (OSError, RuntimeError) as exc:  # URLError is an OSError; a truncated download a RuntimeError
            raise WeightsUnavailable(f"model {entry.model_name!r}: pretrained weights {w} cannot be fetched: "
                                     f"{_first_line(exc)}", field="weights") from None
        return LoadedModel(entry, module, self.std_call(module, spec), weights_note=f"pretrained {w}")
