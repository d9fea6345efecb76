"""Rankers by name (:data:`RANKERS`; register a new one with one line in :mod:`modelseek.rankers.registry`)."""

from __future__ import annotations

from typing import Any

from .base import NotFittedError, Ranker
from .registry import RANKERS


def make(name: str, **params: Any) -> Ranker:
    """Instantiate the ranker registered as ``name`` with ``params`` (checked against its declared parameters;
    the one road from a method to a fitted ranker is :func:`modelseek.rankers.resolve.resolve`)."""
    from .resolve import make as _make

    return _make(name, **params)


def names() -> list[str]:
    return RANKERS.names()


__all__ = ["NotFittedError", "RANKERS", "Ranker", "make", "names"]
