"""Model sources of the alignment part: one class per library, registered by name (the registry entry's
``source``). Imports are lazy: listing the sources imports no model library."""

from __future__ import annotations

from ...registry import Registry
from .base import LoadedModel, ModelSource, Spec, WeightsUnavailable, offline

SOURCES: Registry[type] = Registry("model source")
SOURCES.register_lazy("custom", "modelseek.align.sources.custom:CustomSource")
SOURCES.register_lazy("torchvision", "modelseek.align.sources.torchvision_source:TorchvisionSource")
SOURCES.register_lazy("timm", "modelseek.align.sources.timm_source:TimmSource")
SOURCES.register_lazy("open_clip", "modelseek.align.sources.open_clip_source:OpenClipSource")
SOURCES.register_lazy("transformers", "modelseek.align.sources.transformers_source:TransformersSource")


def get_source(name) -> ModelSource:
    """An instance of the source named ``name`` (a :class:`~modelseek.align.formats.Source` or its value)."""
    return SOURCES.get(getattr(name, "value", name))()


__all__ = ["SOURCES", "get_source", "LoadedModel", "ModelSource", "Spec", "WeightsUnavailable", "offline"]
