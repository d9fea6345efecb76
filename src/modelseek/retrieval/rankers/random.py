"""``random`` — a seeded random order per task (the chance baseline).

The permutation of a task depends only on (seed, task id), not on the order in which tasks are ranked.
"""

from __future__ import annotations

import zlib

import numpy as np

from ..data.pool import Pool
from ..data.task import Task
from ...core.kinds import register
from .base import Ranker


@register("ranker")
class RandomRanker(Ranker):
    name = "random"
    needs_fit = False

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def rank(self, task: Task, pool: Pool) -> dict[str, float]:
        rng = np.random.default_rng([int(self.seed), zlib.crc32(task.id.encode("utf-8"))])
        values = rng.random(len(pool))
        return {c.id: float(v) for c, v in zip(pool, values)}
