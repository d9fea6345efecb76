"""Model sources of the alignment part: one :class:`~.base.ModelSource` subclass per library, each registered by
``@register("model source")`` (:func:`modelseek.core.kinds.register`) in its own module of this package (a new source is
one file; the registry discovers the package's modules on first use, then the ``modelseek.sources`` entry points of
installed distributions). A registry entry is valid when its ``source`` is registered here. The modules import their
model library only when a model is loaded: listing the sources imports none."""

from __future__ import annotations

from typing import Any, cast

from ....core.registry import PluginRegistry
from .base import LoadedModel, ModelSource, Spec, WeightsUnavailable, offline
from ....core.kinds import named, takes


def check_source(name: str, obj: object) -> type[ModelSource]:
    """The model-source kind's one check (:data:`modelseek.core.kinds.KINDS`), run when it registers and on every
    plugin: a :class:`ModelSource` subclass whose ``name`` is ``name``, with ``build(entry, spec)`` and
    ``defaults(entry)``, and string ``package`` and ``extra``."""

    if not (isinstance(obj, type) and issubclass(obj, ModelSource)):
        raise TypeError("a model source is a ModelSource subclass (modelseek.retrieval.vision.sources.base), "
                        f"got {obj!r}")
    named(f"model source {obj.__name__}", obj.name, name)
    takes(f"{obj.__name__}.build", obj.build, ("entry", "spec"))
    takes(f"{obj.__name__}.defaults", obj.defaults, ("entry",))
    for attr in ("package", "extra"):
        if not isinstance(getattr(obj, attr, None), str):
            raise TypeError(f"model source {obj.__name__}: {attr} must be a string")
    return obj


SOURCES: PluginRegistry[type[ModelSource]] = PluginRegistry("model source", __name__)


def get_source(name: str) -> ModelSource:
    """An instance of the source registered as ``name`` (a registry entry's ``source``); a plugin's is behind the
    kind's call boundary (:class:`Bounded`)."""
    cls = SOURCES.get(name)
    with SOURCES.calling(name, "construction"):
        source = cls()
    return source if SOURCES.distribution(name) is None else cast(ModelSource, Bounded(source, name))


class Bounded:
    """A plugin's model source whose ``build`` and ``defaults`` go through the kind's call boundary
    (:meth:`modelseek.core.registry.Registry.calling`): what they raise is one line naming the distribution, except
    :class:`WeightsUnavailable`, which the contract lets a source raise. Everything else is the source's."""

    def __init__(self, inner: ModelSource, name: str) -> None:
        self.inner, self.registered = inner, name

    def build(self, entry: Any, spec: Any) -> Any:
        with SOURCES.calling(self.registered, "build", keep=(WeightsUnavailable,)):
            return self.inner.build(entry, spec)

    def defaults(self, entry: Any) -> Any:
        with SOURCES.calling(self.registered, "defaults", keep=(WeightsUnavailable,)):
            return self.inner.defaults(entry)

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.inner, attr)


__all__ = ["SOURCES", "LoadedModel", "ModelSource", "Spec", "WeightsUnavailable", "check_source", "get_source",
           "offline"]
