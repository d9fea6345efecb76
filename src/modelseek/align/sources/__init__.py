"""Model sources of the alignment part: one :class:`~.base.ModelSource` subclass per library, registered by name
(the registry entry's ``source``). This registry is the list of sources: a registry entry is valid when its
``source`` is registered here, so a new source is one file plus ``SOURCES.add(name, cls)`` (or a lazy line
below). Imports are lazy: listing the sources imports no model library."""

from __future__ import annotations

from ...registry import Registry
from .base import LoadedModel, ModelSource, Spec, WeightsUnavailable, offline

def _plugin(name: str, obj: object) -> type[ModelSource]:
    """A model source from an entry point (group ``modelseek.sources``): a :class:`ModelSource` subclass."""
    if not (isinstance(obj, type) and issubclass(obj, ModelSource)):
        raise TypeError(f"a model-source entry point names a ModelSource subclass, got {obj!r}")
    return obj


SOURCES: Registry[type[ModelSource]] = Registry("model source", group="modelseek.sources", adapt=_plugin)
SOURCES.register_lazy("custom", "modelseek.align.sources.custom:CustomSource")
SOURCES.register_lazy("torchvision", "modelseek.align.sources.torchvision_source:TorchvisionSource")
SOURCES.register_lazy("timm", "modelseek.align.sources.timm_source:TimmSource")
SOURCES.register_lazy("open_clip", "modelseek.align.sources.open_clip_source:OpenClipSource")
SOURCES.register_lazy("transformers", "modelseek.align.sources.transformers_source:TransformersSource")


def get_source(name: str) -> ModelSource:
    """An instance of the source registered as ``name`` (a registry entry's ``source``)."""
    return SOURCES.get(name)()


__all__ = ["SOURCES", "LoadedModel", "ModelSource", "Spec", "WeightsUnavailable", "get_source", "offline"]
