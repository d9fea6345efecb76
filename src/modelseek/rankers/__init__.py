"""Rankers by name. Register a new one with one line here (lazily, by import string)."""

from __future__ import annotations

from typing import Any

from ..registry import Registry
from .base import NotFittedError, Ranker

RANKERS: Registry[type] = Registry("method")
RANKERS.register_lazy("avgrank", "modelseek.rankers.avgrank:AvgRank")
RANKERS.register_lazy("adaptive", "modelseek.rankers.adaptive:AdaptiveRanker")
RANKERS.register_lazy("random", "modelseek.rankers.random:RandomRanker")
RANKERS.register_lazy("task_knn", "modelseek.rankers.task_knn:TaskKNN")
RANKERS.register_lazy("metadata", "modelseek.rankers.metadata:MetadataRanker")
RANKERS.register_lazy("ltr", "modelseek.rankers.ltr:LTRRanker")
RANKERS.register_lazy("spider", "modelseek.rankers.spider:SpiderRanker")
RANKERS.register_lazy("tupate", "modelseek.rankers.tupate:TuPaTERanker")
RANKERS.register_lazy("logme", "modelseek.rankers.features:LogMERanker")
RANKERS.register_lazy("hscore", "modelseek.rankers.features:HScoreRanker")
RANKERS.register_lazy("hscore_reg", "modelseek.rankers.features:HScoreRegRanker")
RANKERS.register_lazy("knn", "modelseek.rankers.features:KNNRanker")
RANKERS.register_lazy("knn_loo", "modelseek.rankers.features:KNNLOORanker")
RANKERS.register_lazy("linear_probe", "modelseek.rankers.features:LinearProbeRanker")
RANKERS.register_lazy("nleep", "modelseek.rankers.features:NLEEPRanker")
RANKERS.register_lazy("sfda", "modelseek.rankers.features:SFDARanker")
RANKERS.register_lazy("transrate", "modelseek.rankers.features:TransRateRanker")
RANKERS.register_lazy("gbc", "modelseek.rankers.features:GBCRanker")
RANKERS.register_lazy("pactran_gauss", "modelseek.rankers.features:PACTranGaussRanker")
RANKERS.register_lazy("leep", "modelseek.rankers.features:LEEPRanker")
RANKERS.register_lazy("nce", "modelseek.rankers.features:NCERanker")
RANKERS.register_lazy("rrf", "modelseek.rankers.features:FusionRanker")


def make(name: str, **params: Any) -> Ranker:
    """Instantiate the ranker registered as ``name`` with ``params`` (checked against its declared parameters;
    the one road from a method to a fitted ranker is :func:`modelseek.rankers.resolve.resolve`)."""
    from .resolve import make as _make

    return _make(name, **params)


def names() -> list[str]:
    return RANKERS.names()


__all__ = ["NotFittedError", "RANKERS", "Ranker", "make", "names"]
