"""``avgrank`` — the NTCIR-19 organisers' baseline: order candidates by their mean ``model_rank`` over the
training tasks (rank 1 = best fine-tuned F1; ties share the lowest rank). Score = -mean rank.

It ignores the task, so it is the "best model on average" prior that every task-aware method must beat. It
works for any pool with a fine-tuning history: fit it on a ground truth (``task_id,model_id,f1``) whose model
ids are the pool's ids or its HF ids; candidates are matched by HF id.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..data.pool import Pool
from ..data.task import Task, TaskSet
from ..data.truth import GroundTruth
from ._artifact import Persistable, pack_array
from ...core.kinds import register
from .base import Trained


@register("ranker")
class AvgRank(Persistable):
    name = "avgrank"

    def __init__(self) -> None:
        pass

    def _learn(self, tasks: TaskSet | None, truth: GroundTruth, *, pool: Pool | None, progress: bool) -> None:
        if tasks is not None:
            truth = truth.subset([t.id for t in tasks])
        ranks = truth.matrix("model_rank")
        self.trained_ = Trained.from_truth([str(m) for m in ranks.columns], pool)
        self.mean_rank_ = np.asarray(ranks.mean(axis=0).to_numpy(float))
        self.fitted_task_ids_ = list(truth.task_ids)

    def rank(self, task: Task, pool: Pool) -> dict[str, float]:
        self._check_fitted()
        idx = self.trained_.index(pool, "avgrank", self.artifact_)
        return {c.id: -float(self.mean_rank_[j]) for c, j in zip(pool, idx)}

    # a fitted avgrank is one number per candidate
    def _state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        return {"mean_rank": self.mean_rank_.astype(np.float64)}, {}

    def _set_state(self, arrays: dict[str, np.ndarray], extra: dict[str, Any]) -> None:
        self.mean_rank_ = arrays["mean_rank"].astype(np.float64)

    @classmethod
    def _upgrade(cls, doc: dict[str, Any]) -> dict[str, Any]:
        """Artifacts written before the common layout: ``{"mean_rank": {model id: mean rank}, "model_hf_ids":
        {model id: HF id}}`` (no HF ids in the oldest: matched by id)."""
        if "mean_rank" not in doc:
            return doc
        ids = [str(k) for k in doc["mean_rank"]]
        hf = doc.get("model_hf_ids", {})
        return {**{k: v for k, v in doc.items() if k != "mean_rank"}, "model_ids": ids,
                "model_hf_ids": [str(hf.get(m, "")) for m in ids],
                "arrays": {"mean_rank": pack_array(np.array([float(doc["mean_rank"][m]) for m in ids]))}}
