"""The ranker contract.

A ranker follows scikit-learn's habits: the constructor stores parameters only; :meth:`fit` learns from
past tasks and their ground truth and returns ``self``; :meth:`rank` scores every candidate of a pool for a
task (higher = expected to fine-tune better). Randomness comes from an explicit seed.
"""

from __future__ import annotations

import inspect
from typing import Any

from ..data.pool import Pool
from ..data.run import Run
from ..data.task import Task, TaskSet
from ..data.truth import GroundTruth
from ..errors import NotFittedError  # noqa: F401  (the one not-fitted error; re-exported here)


class Ranker:
    #: registry name
    name: str = "ranker"
    #: whether :meth:`rank` reads the task's text (otherwise a task known by id is enough)
    needs_text: bool = False
    #: whether :meth:`fit` must be called before :meth:`rank`
    needs_fit: bool = True

    def fit(self, tasks: TaskSet | None, truth: GroundTruth) -> "Ranker":
        return self

    def rank(self, task: Task, pool: Pool) -> dict[str, float]:  # pragma: no cover - abstract
        raise NotImplementedError

    def rank_tasks(self, tasks, pool: Pool, run_id: str | None = None, progress: bool = False) -> Run:
        """A run over several tasks."""
        from ..progress import progress_bar

        scores = {}
        for task in progress_bar(list(tasks), desc=f"rank {self.name}", disable=not progress):
            scores[task.id] = self.rank(task, pool)
        return Run.from_scores(scores, run_id or self.name)

    def get_params(self) -> dict[str, Any]:
        sig = inspect.signature(type(self).__init__)
        return {p: getattr(self, p) for p in sig.parameters if p != "self" and hasattr(self, p)}

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({params})"
