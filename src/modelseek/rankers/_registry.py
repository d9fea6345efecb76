"""The ranker registry: every ranker registers itself with ``@register`` in its own module.

The registry discovers the public modules of :mod:`modelseek.rankers` the first time it is asked for a name
it does not hold (as the estimator registry does), so a new ranker is one file. The feature ranker of every
registered estimator is derived on lookup (:func:`modelseek.rankers.features.feature_ranker`), so a new
estimator needs no line here either.
"""

from __future__ import annotations

import importlib
from typing import TypeVar

from ..registry import PluginRegistry
from .base import Ranker

R = TypeVar("R", bound="type[Ranker]")
#: derives the ranker of a registered estimator
FEATURE_RANKER = "modelseek.rankers.features:feature_ranker"


class RankerRegistry(PluginRegistry["type[Ranker]"]):
    """Registered rankers (discovered in their modules), plus the feature ranker of every estimator."""

    def __init__(self, package: str) -> None:
        super().__init__("method", package, group="modelseek.rankers", adapt=_plugin)

    @staticmethod
    def _estimators():
        from ..estimators import ESTIMATORS  # lazy: start-up

        return ESTIMATORS

    def _check_new(self, name: str) -> None:
        super()._check_new(name)
        if name in self._estimators():
            raise ValueError(f"duplicate method name: {name!r} is a registered estimator")

    def get(self, name: str) -> type[Ranker]:
        if name not in self._items and name not in self._lazy:
            self.discover()
        if name not in self._items and name not in self._lazy and name in self._estimators():
            # by name, as discovery imports the ranker modules: features.py registers its rankers here
            mod, attr = FEATURE_RANKER.split(":")
            return getattr(importlib.import_module(mod), attr)(name)
        return super().get(name)

    def names(self) -> list[str]:
        return sorted(set(super().names()) | set(self._estimators().names()))

    def __contains__(self, name: object) -> bool:
        return super().__contains__(name) or name in self._estimators()


def _plugin(name: str, obj: object) -> type[Ranker]:
    """A ranker from an entry point (group ``modelseek.rankers``): a Ranker subclass whose ``name`` is the entry
    point's name."""
    if not (isinstance(obj, type) and issubclass(obj, Ranker)):
        raise TypeError(f"a ranker entry point names a Ranker subclass, got {obj!r}")
    if obj.name != name:
        raise TypeError(f"the class's name is {obj.name!r}; name the entry point {obj.name!r}")
    return obj


RANKERS = RankerRegistry("modelseek.rankers")


def register(cls: R) -> R:
    """Class decorator: register a :class:`~modelseek.rankers.base.Ranker` under its ``name``."""
    if not (isinstance(cls, type) and issubclass(cls, Ranker)):
        raise TypeError(f"@register takes a Ranker subclass, got {cls!r}")
    RANKERS.add(cls.name, cls)
    return cls
