"""A fine-tuning job (task, model, recipe, seed) and the pool x task grid of them.

Its own module so that the grid (which runs jobs through executors) and the executors (which rebuild jobs on
Ray workers) both import it without importing each other.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..data.pool import Candidate
from ..data.task import Task
from ...core.errors import InputError
from .protocol import ModelSpec, TaskData
from .recipe import PROTOCOL, Recipe


@dataclass(frozen=True)
class Job:
    """One (task, model, recipe, seed) fine-tuning job; ``key`` names it in the store."""

    task: TaskData
    model: ModelSpec
    recipe: Recipe
    seed: int

    @property
    def key(self) -> str:
        parts = [self.task.task_id, self.task.fingerprint, self.model.model_id, self.model.source,
                 self.model.revision or "", self.recipe.digest, str(int(self.seed))]
        return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:24]


def build_jobs(tasks: Iterable[Task | TaskData], pool: Iterable[Candidate | ModelSpec], recipe: Recipe = PROTOCOL,
               seeds: Sequence[int] = (0,)) -> list[Job]:
    """Every (task, model, seed) combination, task-major (the order jobs are dispatched in)."""
    datas = [TaskData.from_task(t) for t in tasks]
    specs = [ModelSpec.from_candidate(c) for c in pool]
    if not datas:
        raise InputError("no tasks to fine-tune on")
    if not seeds:
        raise InputError("no seeds given")
    return [Job(d, m, recipe, int(s)) for d in datas for m in specs for s in seeds]
