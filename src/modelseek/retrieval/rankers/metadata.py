"""``metadata`` — match the task's text to each candidate's model card.

The model card is a line built from the pool file (name, family, domain, language, pre-training data and prior
fine-tuning data; see :func:`~modelseek.retrieval.rankers._learned.card_text`); candidates of a pool without card
metadata (an NTCIR ``models.csv``) take it from the ranker's ``pool`` file (default: the built-in ``ntcir19``).
The similarity of a task to candidate ``m`` is the cosine between the task's mean text embedding and the card's
embedding (same encoder). Alone, that similarity ignores how good a model is in general, so the score blends it
with the training prior (mean normalized F1 of ``m`` over the training tasks), both z-scored over the pool::

    score_m = (1 - alpha) * z(prior_m) + alpha * z(sim_m)

``alpha`` is chosen on the training tasks (grid 0, 0.1, ..., 1 maximising mean nDCG@5) unless given.
``alpha = 1`` is pure metadata matching; ``alpha = 0`` is the average-F1 prior.
"""

from __future__ import annotations

from numbers import Real
from typing import Any, ClassVar

import numpy as np

from ..data.pool import Pool
from ..data.task import Task
from ...core.config import Interval
from ..taskrep import TaskRep
from ._learned import LearnedRanker, ndcg_matrix
from ...core.kinds import register
from .base import Constraints


def _z(x: np.ndarray, axis: int = -1) -> np.ndarray:
    sd = x.std(axis=axis, keepdims=True)
    return (x - x.mean(axis=axis, keepdims=True)) / np.where(sd > 0, sd, 1.0)


@register("ranker")
class MetadataRanker(LearnedRanker):
    name = "metadata"
    _parameter_constraints: ClassVar[Constraints] = {**LearnedRanker._parameter_constraints,
                                                      "alpha": [Interval(Real, 0, 1, closed="both"), None]}

    def __init__(self, alpha: float | None = None, pool: str = "ntcir19", encoder: str = "minilm",
                 max_texts: int = 256, cache_dir: str | None = "auto", seed: int = 0) -> None:
        super().__init__(encoder, max_texts, cache_dir, seed)
        self.alpha = alpha
        self.pool = pool

    def similarity(self, rep: TaskRep, cards: np.ndarray) -> np.ndarray:
        q = rep.mean / max(float(np.linalg.norm(rep.mean)), 1e-12)
        return cards @ q

    def _fit(self, tasks, reps, y, progress) -> None:
        cards = self.card_embeddings(self._cards_pool("the model cards"))
        self.prior_ = y.mean(axis=0)
        sims = np.stack([self.similarity(r, cards) for r in reps])
        if self.alpha is not None:
            self.alpha_ = float(self.alpha)
            return
        grid = np.round(np.linspace(0, 1, 11), 2)
        prior_z = _z(self.prior_)[None, :]
        means = [ndcg_matrix((1 - a) * prior_z + a * _z(sims, 1), y).mean() for a in grid]
        self.alpha_ = float(grid[int(np.argmax(means))])

    def _scores(self, task: Task, rep: TaskRep, pool: Pool, idx: np.ndarray) -> np.ndarray:
        sims = self.similarity(rep, self.card_embeddings(pool))
        return (1 - self.alpha_) * _z(self.prior_[idx]) + self.alpha_ * _z(sims)

    def _state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        return {"prior": self.prior_}, {"alpha": self.alpha_}

    def _set_state(self, arrays, extra) -> None:
        self.prior_, self.alpha_ = arrays["prior"], float(extra["alpha"])
