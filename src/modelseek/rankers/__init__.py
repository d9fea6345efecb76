"""Rankers by name. Register a new one with one line here (lazily, by import string)."""

from __future__ import annotations

from typing import Any

from ..registry import Registry
from .base import NotFittedError, Ranker

RANKERS: Registry[type] = Registry("method")
RANKERS.register_lazy("avgrank", "modelseek.rankers.avgrank:AvgRank")
RANKERS.register_lazy("random", "modelseek.rankers.random:RandomRanker")
RANKERS.register_lazy("task_knn", "modelseek.rankers.task_knn:TaskKNN")
RANKERS.register_lazy("metadata", "modelseek.rankers.metadata:MetadataRanker")
RANKERS.register_lazy("ltr", "modelseek.rankers.ltr:LTRRanker")
RANKERS.register_lazy("spider", "modelseek.rankers.spider:SpiderRanker")
RANKERS.register_lazy("tupate", "modelseek.rankers.tupate:TuPaTERanker")


def make(name: str, **params: Any) -> Ranker:
    """Instantiate the ranker registered as ``name`` with ``params``."""
    cls = RANKERS.get(name)
    return cls(**params)


def names() -> list[str]:
    return RANKERS.names()


__all__ = ["NotFittedError", "RANKERS", "Ranker", "make", "names"]
