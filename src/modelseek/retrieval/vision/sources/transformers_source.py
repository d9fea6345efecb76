"""``transformers`` source: ``AutoModel.from_pretrained(weights)`` (a Hub name or a local folder); with
``weights`` null/``random`` the model is built from ``AutoConfig.for_model(model_parameters.model_type,
**rest)`` with seeded random weights. Text models (``modality: text``) take a tokenizer from ``weights`` or
``model_parameters.tokenizer``."""

from __future__ import annotations

from pathlib import Path

from ....core.errors import InputError
from ..choices import Modality
from ....core.kinds import register
from .base import (LoadedModel, ModelSource, WeightsUnavailable, _first_line, import_package, offline,
                   offline_reason, seeded)


@register("model source")
class TransformersSource(ModelSource):
    name = "transformers"
    package = "transformers"
    extra = "align"

    def build(self, entry, spec) -> LoadedModel:
        tr = import_package("transformers", self.extra, self.name)
        name = entry.model_name
        if spec.random:
            if not spec.model_type:
                raise InputError(f"model {name!r}: random transformers weights need model_parameters.model_type "
                                 f"(e.g. 'vit', 'resnet', 'bert')", field="model_parameters.model_type")
            try:
                config = tr.AutoConfig.for_model(spec.model_type, **spec.params)
            except (ValueError, TypeError) as exc:
                raise InputError(f"model {name!r}: {_first_line(exc)}", field="model_parameters") from None
            module = seeded(lambda: tr.AutoModel.from_config(config), spec.seed)
            note = f"random (seed {spec.seed})"
        else:
            local = Path(entry.weights).expanduser().exists()
            try:
                module = seeded(lambda: tr.AutoModel.from_pretrained(
                    entry.weights, local_files_only=not local and offline(), **spec.params), spec.seed)
            except OSError as exc:
                cls = WeightsUnavailable if not local else InputError
                why = offline_reason() + " and not in the cache" if not local and offline() else _first_line(exc)
                raise cls(f"model {name!r}: cannot load {entry.weights!r}: {why}", field="weights") from None
            note = f"pretrained {entry.weights}"
        fwd = dict(spec.forward_args)
        if entry.modality is not Modality.TEXT:
            return LoadedModel(entry, module, lambda x: module(pixel_values=x, **fwd), None, weights_note=note)
        tname = spec.tokenizer or (None if spec.random else entry.weights)
        if not tname:
            raise InputError(f"model {name!r}: a text model needs a tokenizer (weights or model_parameters.tokenizer)",
                             field="model_parameters.tokenizer")
        try:
            tokenizer = tr.AutoTokenizer.from_pretrained(tname, local_files_only=offline()
                                                         and not Path(tname).expanduser().exists())
        except OSError as exc:
            raise InputError(f"model {name!r}: cannot load tokenizer {tname!r}: {_first_line(exc)}",
                             field="model_parameters.tokenizer") from None
        max_length = spec.max_length

        def call_texts(batch):
            enc = tokenizer(list(batch), padding=True, truncation=True, max_length=max_length, return_tensors="pt")
            return module(**enc, **fwd), enc["attention_mask"]

        return LoadedModel(entry, module, None, call_texts, weights_note=note)
