"""``task_knn`` — rank candidates by how well they fine-tuned on the most similar past tasks.

Similarity is the cosine between task representations (default: the mean text embedding; ``"label"``: the
mean label-name embedding; ``"mean+label"``: both, concatenated). The score of candidate ``m`` is the
softmax(similarity / temperature)-weighted mean of its normalized F1 over the ``k`` nearest training tasks —
graded targets, so tied winners share the credit. A nearest-neighbour baseline of task-transfer work
(e.g. Achille et al., Task2Vec, ICCV 2019).
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np

from ..data.pool import Pool
from ..data.task import Task
from ...core.errors import InputError
from ...core.config import Interval, Options
from ..taskrep import TaskRep
from ._learned import LearnedRanker
from ...core.kinds import register
from .base import Constraints

_VIEWS = ("mean", "label", "mean+label")


def task_vector(rep: TaskRep, view: str) -> np.ndarray:
    def unit(v):
        return v / max(float(np.linalg.norm(v)), 1e-12)

    if view == "mean":
        return unit(rep.mean)
    if view == "label":
        return unit(rep.label_emb.mean(axis=0))
    if view == "mean+label":
        return unit(np.concatenate([unit(rep.mean), unit(rep.label_emb.mean(axis=0))]))
    raise InputError(f"unknown task view {view!r}; valid: {', '.join(_VIEWS)}", field="view")


def knn_predict(query: np.ndarray, keys: np.ndarray, targets: np.ndarray, k: int, temperature: float) -> np.ndarray:
    """Softmax-weighted mean of ``targets`` rows of the ``k`` keys most cosine-similar to ``query``."""
    sims = keys @ query
    k = min(k, len(keys))
    top = np.argsort(-sims, kind="stable")[:k]
    w = np.exp((sims[top] - sims[top].max()) / temperature)
    w /= w.sum()
    return w @ targets[top]


@register("ranker")
class TaskKNN(LearnedRanker):
    name = "task_knn"
    _parameter_constraints: ClassVar[Constraints] = {
        **LearnedRanker._parameter_constraints,
        "k": [Interval(Integral, 1, None, closed="left")],
        "temperature": [Interval(Real, 0, None, closed="neither")],
        "view": [Options(*_VIEWS)],
    }

    def __init__(self, k: int = 10, temperature: float = 0.05, view: str = "mean", encoder: str = "minilm",
                 max_texts: int = 256, cache_dir: str | None = "auto", seed: int = 0) -> None:
        super().__init__(encoder, max_texts, cache_dir, seed)
        self.k = k
        self.temperature = temperature
        self.view = view

    def _fit(self, tasks, reps, y, progress) -> None:
        self.keys_ = np.stack([task_vector(r, self.view) for r in reps])
        self.targets_ = y

    def _scores(self, task: Task, rep: TaskRep, pool: Pool, idx: np.ndarray) -> np.ndarray:
        pred = knn_predict(task_vector(rep, self.view), self.keys_, self.targets_, int(self.k), float(self.temperature))
        return pred[idx]

    def _state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        return {"keys": self.keys_.astype(np.float32), "targets": self.targets_.astype(np.float32)}, {}

    def _set_state(self, arrays, extra) -> None:
        self.keys_, self.targets_ = arrays["keys"].astype(np.float64), arrays["targets"].astype(np.float64)
