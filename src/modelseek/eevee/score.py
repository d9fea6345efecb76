"""A benchmark subset and its cross-validated score."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from ..core.errors import InputError

Subset = tuple[str, ...]


def normalise_subset(subset: Iterable[str]) -> Subset:
    """The subset as a sorted tuple (its identity in caches and results). A benchmark named twice is an error:
    a subset is a set of benchmarks, and a silent de-duplication would score a different subset than asked."""
    items = list(subset)
    seen: set[str] = set()
    for b in items:
        if b in seen:
            raise InputError(f"benchmark {b!r} is named twice in the subset", field="benchmarks")
        seen.add(b)
    return tuple(sorted(seen))


@dataclass(frozen=True)
class Score:
    """A subset's cross-validated loss: mean over splits, with std, min and max, and the per-split values."""

    subset: Subset
    mean: float
    std: float
    min: float
    max: float
    per_split: tuple[float, ...]

    @classmethod
    def of(cls, subset: Subset, losses: np.ndarray) -> Score:
        losses = np.asarray(losses, dtype=float)
        return cls(tuple(subset), float(losses.mean()), float(losses.std()), float(losses.min()),
                   float(losses.max()), tuple(float(x) for x in losses))

    def to_dict(self) -> dict:
        return {"benchmarks": list(self.subset), "score": self.mean, "std": self.std, "min": self.min,
                "max": self.max}
