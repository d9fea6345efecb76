"""The ranker registry: every ranker registers itself with ``@register("ranker")`` in its own module.

The registry discovers the public modules of :mod:`modelseek.retrieval.rankers` the first time it is asked for a name
it does not hold (as the estimator registry does), so a new ranker is one file. The feature ranker of every
registered estimator is derived on lookup (:func:`modelseek.retrieval.rankers.features.feature_ranker`), so a new
estimator needs no line here either.
"""

from __future__ import annotations

import importlib

from ...core.registry import PluginRegistry
from .base import Ranker
from ...core.kinds import named, takes

#: derives the ranker of a registered estimator
FEATURE_RANKER = "modelseek.retrieval.rankers.features:feature_ranker"


class RankerRegistry(PluginRegistry["type[Ranker]"]):
    """Registered rankers (discovered in their modules), plus the feature ranker of every estimator."""

    def __init__(self, package: str) -> None:
        super().__init__("ranker", package)

    @staticmethod
    def _estimators():
        from ..estimators import ESTIMATORS  # lazy: start-up

        return ESTIMATORS

    def _check_new(self, name: str) -> None:
        super()._check_new(name)
        if name in self._estimators()._builtin_names():
            raise ValueError(f"duplicate method name: {name!r} is a registered estimator")

    def get(self, name: str) -> type[Ranker]:
        self._refuse_broken(name)  # a broken plugin of this namespace (an estimator's too): its one line
        if name not in self._items and name not in self._lazy and name not in self._plugins \
                and name in self._estimators():
            # by name, as discovery imports the ranker modules: features.py registers its rankers here
            mod, attr = FEATURE_RANKER.split(":")
            return getattr(importlib.import_module(mod), attr)(name)
        return super().get(name)

    def names(self) -> list[str]:
        return sorted(set(super().names()) | set(self._estimators().names()))

    def __contains__(self, name: object) -> bool:
        return super().__contains__(name) or name in self._estimators()


def check_ranker(name: str, obj: object) -> type[Ranker]:
    """The ranker kind's one check (:data:`modelseek.core.kinds.KINDS`): a :class:`Ranker` subclass whose ``name`` is
    ``name``, with ``rank(task, pool)`` and ``explain(task, pool)``, and ``_learn`` when it needs fitting."""

    if not (isinstance(obj, type) and issubclass(obj, Ranker)):
        raise TypeError(f"a ranker is a Ranker subclass (modelseek.retrieval.rankers.base), got {obj!r}")
    named(f"ranker {obj.__name__}", obj.name, name)
    for method in ("rank", "explain"):
        takes(f"{obj.__name__}.{method}", getattr(obj, method), ("task", "pool"))
    if getattr(obj, "__abstractmethods__", None):
        raise TypeError(f"ranker {obj.__name__} does not implement {', '.join(sorted(obj.__abstractmethods__))}")
    return obj


RANKERS = RankerRegistry(__package__)
