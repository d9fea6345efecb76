"""``open_clip`` source: ``open_clip.create_model(arch, pretrained=...)``; images through ``encode_image``, texts
through ``encode_text``. Layer paths are relative to the whole CLIP model (``visual.transformer``...)."""

from __future__ import annotations

from ....core.kinds import register
from .base import (LoadedModel, ModelSource, WeightsUnavailable, _first_line, offline, offline_reason, seeded)


@register("model source")
class OpenClipSource(ModelSource):
    name = "open_clip"
    package = "open_clip"

    def build(self, entry, spec) -> LoadedModel:
        oc = self.module()
        self.check_arch(entry, spec.arch, oc.list_models())
        pretrained = None if spec.random else (str(spec.weights_file) if spec.weights_file else entry.weights)
        if pretrained is not None and spec.weights_file is None and offline():
            raise WeightsUnavailable(f"model {entry.model_name!r}: pretrained weights {pretrained!r} cannot be "
                                     f"fetched: {offline_reason()}", field="weights")
        try:
            module = seeded(lambda: oc.create_model(spec.arch, pretrained=pretrained, **spec.params), spec.seed)
        except (OSError, RuntimeError) as exc:
            raise WeightsUnavailable(f"model {entry.model_name!r}: cannot load {pretrained!r}: {_first_line(exc)}",
                                     field="weights") from None
        tok = oc.get_tokenizer(spec.arch)
        fwd = dict(spec.forward_args)

        def texts(batch):
            return module.encode_text(tok(batch), **fwd), None

        note = f"random (seed {spec.seed})" if pretrained is None else f"pretrained {pretrained}"
        return LoadedModel(entry, module, lambda x: module.encode_image(x, **fwd), texts, weights_note=note)
