"""Rankers by name. Register a new one with one line here (lazily, by import string)."""

from __future__ import annotations

from typing import Any

from ..registry import Registry
from .base import NotFittedError, Ranker


# ---- feature rankers (issue #14): one per registered estimator, derived on lookup from modelseek.estimators,
# so that a new estimator module needs no line here. Everything else in this file is the plain registry.
class _MethodRegistry(Registry[type]):
    """Registered rankers, plus :func:`modelseek.rankers.features.feature_ranker` of every estimator."""

    @staticmethod
    def _estimators():
        from ..estimators import ESTIMATORS

        return ESTIMATORS

    def _check_new(self, name: str) -> None:
        super()._check_new(name)
        if name in self._estimators():
            raise ValueError(f"duplicate method name: {name!r} is a registered estimator")

    def get(self, name: str) -> type:
        if name not in self._items and name not in self._lazy and name in self._estimators():
            from .features import feature_ranker

            return feature_ranker(name)
        return super().get(name)

    def names(self) -> list[str]:
        return sorted(set(super().names()) | set(self._estimators().names()))

    def __contains__(self, name: object) -> bool:
        return super().__contains__(name) or name in self._estimators()
# ---- end of the feature-ranker registration


RANKERS: Registry[type] = _MethodRegistry("method")
RANKERS.register_lazy("avgrank", "modelseek.rankers.avgrank:AvgRank")
RANKERS.register_lazy("random", "modelseek.rankers.random:RandomRanker")
RANKERS.register_lazy("task_knn", "modelseek.rankers.task_knn:TaskKNN")
RANKERS.register_lazy("metadata", "modelseek.rankers.metadata:MetadataRanker")
RANKERS.register_lazy("ltr", "modelseek.rankers.ltr:LTRRanker")
RANKERS.register_lazy("spider", "modelseek.rankers.spider:SpiderRanker")
RANKERS.register_lazy("tupate", "modelseek.rankers.tupate:TuPaTERanker")
RANKERS.register_lazy("rrf", "modelseek.rankers.features:FusionRanker")


def make(name: str, **params: Any) -> Ranker:
    """Instantiate the ranker registered as ``name`` with ``params``."""
    cls = RANKERS.get(name)
    return cls(**params)


def names() -> list[str]:
    return RANKERS.names()


__all__ = ["NotFittedError", "RANKERS", "Ranker", "make", "names"]
