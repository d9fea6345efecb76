"""Transferability estimators: ``score(features, labels) -> float``, by name, with their properties.

>>> import modelseek.retrieval.estimators as est
>>> "logme" in est.names()
True
>>> est.info("leep").input.value, est.info("knn").seeded
('probs', True)

Every estimator computes in float64, remaps labels to 0..C-1 (sorted order) first, never modifies its inputs, and
raises :class:`modelseek.core.errors.InputError` for NaN/inf features, a single class, mismatched shapes, or too few
examples of a class where the method needs them. Each one registers itself in its own module with
``@register("estimator", ...)`` (:func:`modelseek.core.kinds.register`; input kind ``features`` or ``probs``, whether it
takes a ``seed``, its direction, whether it fits on a train split and scores a validation split, whether it is
scale-invariant): adding an estimator is one file, and ``rank --method NAME`` works for it at once.
"""

from __future__ import annotations

from collections.abc import Callable

from ._registry import ESTIMATORS, Estimator, EstimatorInfo, InputKind


def get(name: str) -> Callable[..., float]:
    """The estimator function registered as ``name`` (unknown names raise with suggestions)."""
    return ESTIMATORS.get(name).fn


def info(name: str) -> EstimatorInfo:
    """The registration record of ``name``: function, input kind, seeding, direction..."""
    return ESTIMATORS.get(name)


def names() -> list[str]:
    return ESTIMATORS.names()


def input_kind(name: str) -> str:
    """``features`` or ``probs``."""
    return ESTIMATORS.get(name).input.value


__all__ = ["ESTIMATORS", "Estimator", "EstimatorInfo", "InputKind", "get", "info", "input_kind", "names"]
