"""``avgrank`` — the NTCIR-19 organisers' baseline: order candidates by their mean ``model_rank`` over the
training tasks (rank 1 = best fine-tuned F1; ties share the lowest rank). Score = -mean rank.

It ignores the task, so it is the "best model on average" prior that every task-aware method must beat. It
works for any pool with a fine-tuning history: fit it on a ground truth (``task_id,model_id,f1``) whose model
ids are the pool's ids or its HF ids; candidates are matched by HF id.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from ..data.pool import Pool
from ..data.task import Task, TaskSet
from ..data.truth import GroundTruth
from ..errors import InputError
from .base import NotFittedError, Ranker, Trained


class AvgRank(Ranker):
    name = "avgrank"
    parameters = ()

    def __init__(self) -> None:
        pass

    def fit(self, tasks: TaskSet | None, truth: GroundTruth, pool: Pool | None = None,
            progress: bool = False) -> "AvgRank":
        if tasks is not None:
            truth = truth.subset([t.id for t in tasks])
        ranks = truth.matrix("model_rank")
        self.trained_ = Trained.from_truth([str(m) for m in ranks.columns], pool)
        self.mean_rank_ = np.asarray(ranks.mean(axis=0).to_numpy(float))
        self.fitted_task_ids_ = list(truth.task_ids)
        return self

    def rank(self, task: Task, pool: Pool) -> dict[str, float]:
        if not hasattr(self, "trained_"):
            raise NotFittedError("avgrank is not fitted; call fit(tasks, ground_truth) first")
        idx = self.trained_.index(pool, "avgrank", getattr(self, "artifact_", None))
        return {c.id: -float(self.mean_rank_[j]) for c, j in zip(pool, idx)}

    # a fitted avgrank is a few numbers per candidate: saved as JSON
    def save(self, path: str | Path, **info: Any) -> None:
        from ..io import atomic_write_text

        if not hasattr(self, "trained_"):
            raise NotFittedError("avgrank is not fitted; nothing to save")
        doc = {"method": "avgrank", "params": {},
               "mean_rank": {m: float(v) for m, v in zip(self.trained_.model_ids, self.mean_rank_)},
               "model_hf_ids": dict(zip(self.trained_.model_ids, self.trained_.hf_ids)),
               "fitted_task_ids": self.fitted_task_ids_, "info": info}
        atomic_write_text(path, json.dumps(doc, indent=1) + "\n")

    @classmethod
    def load(cls, path: str | Path, **overrides: Any) -> "AvgRank":
        if overrides:
            raise InputError(f"avgrank has no parameter {next(iter(overrides))!r}", field="--param")
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
            r = cls()
            ids = [str(k) for k in data["mean_rank"]]
            hf = data.get("model_hf_ids", {})  # absent in artifacts written before HF-id matching
            r.trained_ = Trained(tuple(ids), tuple(str(hf.get(m, "")) for m in ids))
            r.mean_rank_ = np.array([float(data["mean_rank"][m]) for m in ids])
            r.fitted_task_ids_ = [str(t) for t in data.get("fitted_task_ids", [])]
            r.info_ = data.get("info", {})
            return r
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise InputError(f"not a valid avgrank artifact: {exc}", path=path) from None
