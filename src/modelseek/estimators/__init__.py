"""Transferability estimators: ``score(features, labels) -> float`` (higher = better), by name.

>>> import modelseek.estimators as est
>>> "logme" in est.names()
True

Every estimator computes in float64, remaps labels to 0..C-1 (sorted order) first, never modifies its
inputs, and raises :class:`modelseek.errors.InputError` for NaN/inf features, a single class, mismatched
shapes, or too few examples of a class where the method needs them. ``leep`` and ``nce`` take the source
head's class probabilities instead of features (``INPUT_KIND`` tells which). Estimators with a ``seed``
keyword are deterministic under it. Adding one: a module with the function and one line below.
"""

from __future__ import annotations

from typing import Callable

from ..registry import Registry

ESTIMATORS: Registry[Callable[..., float]] = Registry("estimator")
for _name in ("logme", "hscore", "hscore_reg", "knn", "knn_loo", "linear_probe", "nleep", "sfda", "transrate",
              "gbc", "pactran_gauss", "leep", "nce"):
    ESTIMATORS.register_lazy(_name, f"modelseek.estimators.{_name}:{_name}")
del _name

#: what the first argument is: frozen ``features`` or the source head's class ``probs``
INPUT_KIND: dict[str, str] = {"leep": "probs", "nce": "probs"}
#: estimators that fit on a training split and score a validation split when given one
USES_VALIDATION: frozenset[str] = frozenset({"knn", "linear_probe"})


def get(name: str) -> Callable[..., float]:
    """The estimator registered as ``name`` (unknown names raise with suggestions)."""
    return ESTIMATORS.get(name)


def names() -> list[str]:
    return ESTIMATORS.names()


def input_kind(name: str) -> str:
    ESTIMATORS.get(name)
    return INPUT_KIND.get(name, "features")


__all__ = ["ESTIMATORS", "INPUT_KIND", "USES_VALIDATION", "get", "input_kind", "names"]
