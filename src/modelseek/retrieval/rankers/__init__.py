"""Rankers by name. A ranker registers itself with ``@register("ranker")`` in its own module of this package (see
:mod:`modelseek.retrieval.rankers._registry`); the contract it keeps is
:class:`modelseek.retrieval.rankers.base.Ranker`."""

from __future__ import annotations

from typing import Any

from ._registry import RANKERS
from .base import NotFittedError, Ranker


def make(name: str, **params: Any) -> Ranker:
    """Instantiate the ranker registered as ``name`` with ``params`` (checked against its parameters; the one
    road from a method to a fitted ranker is :func:`modelseek.retrieval.rankers.resolve.resolve`)."""
    from .resolve import make as _make  # lazy: start-up

    return _make(name, **params)


def names() -> list[str]:
    return RANKERS.names()


__all__ = ["RANKERS", "NotFittedError", "Ranker", "make", "names"]
