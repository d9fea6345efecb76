"""Model sources of the alignment part: one :class:`~.base.ModelSource` subclass per library, each registered by
``@register`` in its own module of this package (a new source is one file; the registry discovers the package's
modules on first use, then the ``modelseek.sources`` entry points of installed distributions). A registry
entry is valid when its ``source`` is registered here. The modules import their model library only when a model
is loaded: listing the sources imports none."""

from __future__ import annotations

from typing import TypeVar

from ...registry import PluginRegistry
from .base import LoadedModel, ModelSource, Spec, WeightsUnavailable, offline

S = TypeVar("S", bound=type[ModelSource])


def _plugin(name: str, obj: object) -> type[ModelSource]:
    """A model source from an entry point (group ``modelseek.sources``): a :class:`ModelSource` subclass."""
    if not (isinstance(obj, type) and issubclass(obj, ModelSource)):
        raise TypeError(f"a model-source entry point names a ModelSource subclass, got {obj!r}")
    return obj


SOURCES: PluginRegistry[type[ModelSource]] = PluginRegistry("model source", __name__, group="modelseek.sources",
                                                            adapt=_plugin)


def register(cls: S) -> S:
    """Class decorator: register a :class:`ModelSource` subclass under its ``name``."""
    if not (isinstance(cls, type) and issubclass(cls, ModelSource)):
        raise TypeError(f"@register takes a ModelSource subclass, got {cls!r}")
    SOURCES.add(cls.name, cls)
    return cls


def get_source(name: str) -> ModelSource:
    """An instance of the source registered as ``name`` (a registry entry's ``source``)."""
    return SOURCES.get(name)()


__all__ = ["SOURCES", "LoadedModel", "ModelSource", "Spec", "WeightsUnavailable", "get_source", "offline",
           "register"]
