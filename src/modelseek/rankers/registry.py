"""The registry of ranking methods: the rankers registered here (lazily, by import string) and the feature ranker
of every registered estimator. Register a new ranker with one line in :data:`BUILTIN`.

It lives apart from the package's ``__init__`` so that the modules of the package that look methods up
(:mod:`~modelseek.rankers.resolve`, :mod:`~modelseek.rankers.default`) import it without importing the package
back."""

from __future__ import annotations

from ..registry import Registry

#: the rankers of this package, by name (imported on first lookup)
BUILTIN = {
    "avgrank": "modelseek.rankers.avgrank:AvgRank",
    "adaptive": "modelseek.rankers.adaptive:AdaptiveRanker",
    "random": "modelseek.rankers.random:RandomRanker",
    "task_knn": "modelseek.rankers.task_knn:TaskKNN",
    "metadata": "modelseek.rankers.metadata:MetadataRanker",
    "ltr": "modelseek.rankers.ltr:LTRRanker",
    "spider": "modelseek.rankers.spider:SpiderRanker",
    "tupate": "modelseek.rankers.tupate:TuPaTERanker",
    "rrf": "modelseek.rankers.features:FusionRanker",
}


# ---- feature rankers (issue #14): one per registered estimator, derived on lookup from modelseek.estimators,
# so that a new estimator module needs no line here. Everything else in this file is the plain registry.
class _MethodRegistry(Registry[type]):
    """Registered rankers, plus :func:`modelseek.rankers.features.feature_ranker` of every estimator."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        # the names of BUILTIN are checked against the estimators' names on the first lookup, so that importing
        # modelseek imports no estimator module; any later registration is checked at once
        self._unchecked: list[str] = []
        self._deferring = False

    def _estimators(self):
        from ..estimators import ESTIMATORS

        if self._unchecked:
            pending, self._unchecked = self._unchecked, []
            for name in pending:
                if name in ESTIMATORS:
                    raise ValueError(f"duplicate method name: {name!r} is a registered estimator")
        return ESTIMATORS

    def _check_new(self, name: str) -> None:
        super()._check_new(name)
        if self._deferring:
            self._unchecked.append(name)
        elif name in self._estimators():
            raise ValueError(f"duplicate method name: {name!r} is a registered estimator")

    def _register_builtins(self, targets: dict[str, str]) -> None:
        self._deferring = True
        try:
            for name, target in targets.items():
                self.register_lazy(name, target)
        finally:
            self._deferring = False

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
RANKERS._register_builtins(BUILTIN)
