"""``avgrank`` — the NTCIR-19 organisers' baseline: order candidates by their mean ``model_rank`` over the
training tasks (rank 1 = best fine-tuned F1; ties share the lowest rank). Score = -mean rank.

It ignores the task, so it is the "best model on average" prior that every task-aware method must beat.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..data.pool import Pool
from ..data.task import Task, TaskSet
from ..data.truth import GroundTruth
from ..errors import InputError
from .base import NotFittedError, Ranker


class AvgRank(Ranker):
    name = "avgrank"

    def __init__(self) -> None:
        pass

    def fit(self, tasks: TaskSet | None, truth: GroundTruth) -> "AvgRank":
        if tasks is not None:
            truth = truth.subset([t.id for t in tasks])
        ranks = truth.matrix("model_rank")
        self.mean_rank_ = {str(m): float(v) for m, v in ranks.mean(axis=0).items()}
        self.fitted_task_ids_ = list(truth.task_ids)
        return self

    def rank(self, task: Task, pool: Pool) -> dict[str, float]:
        if not hasattr(self, "mean_rank_"):
            raise NotFittedError("avgrank is not fitted; call fit(tasks, ground_truth) first")
        unknown = [c.id for c in pool if c.id not in self.mean_rank_]
        if unknown:
            raise InputError(f"avgrank was not trained on candidate(s) {', '.join(unknown)} "
                             f"(trained on {', '.join(self.mean_rank_)})")
        return {c.id: -self.mean_rank_[c.id] for c in pool}

    # a fitted avgrank is 20 numbers: saved as JSON
    def save(self, path: str | Path) -> None:
        from ..io import atomic_write_text

        atomic_write_text(path, json.dumps({"method": "avgrank", "mean_rank": self.mean_rank_,
                                            "fitted_task_ids": self.fitted_task_ids_}, indent=1) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> "AvgRank":
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
            r = cls()
            r.mean_rank_ = {str(k): float(v) for k, v in data["mean_rank"].items()}
            r.fitted_task_ids_ = list(data.get("fitted_task_ids", []))
            return r
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise InputError(f"not a valid avgrank artifact: {exc}", path=path) from None
