"""The ranker contract.

A ranker follows scikit-learn's habits: the constructor stores parameters only; :meth:`fit` learns from
past tasks and their ground truth and returns ``self``; :meth:`rank` scores every candidate of a pool for a
task (higher = expected to fine-tune better). Randomness comes from an explicit seed.

Every ranker **declares** its constructor parameters (:attr:`Ranker.parameters`), so that commands and the
resolver (:mod:`modelseek.rankers.resolve`) validate ``--param`` values without inspecting signatures.

Rankers that learn from a ground truth know their candidates by **Hugging Face id** (:class:`Trained`): a pool
is matched to the trained candidates by HF id, never by its docID numbers, so a pool whose ids 1, 2, 3 name
other models is an error naming them, not a silent misattribution.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, ClassVar, Sequence

import numpy as np

from ..data.pool import Pool
from ..data.run import Run
from ..data.task import Task, TaskSet
from ..data.truth import GroundTruth
from ..errors import InputError, NotFittedError  # noqa: F401  (the one not-fitted error; re-exported here)


def failures_allowed(ranker: "Ranker") -> "Ranker":
    """``ranker`` set to leave failed candidates out of its runs (a copy; the caller's instance is unchanged).

    Rankers without candidate failures (learned rankers read no model) are returned as they are.
    """
    if getattr(ranker, "allow_failures", True) is False:
        import copy

        ranker = copy.copy(ranker)
        ranker.allow_failures = True
    return ranker


class Ranker:
    #: registry name
    name: str = "ranker"
    #: whether :meth:`rank` reads the task's text (otherwise a task known by id is enough)
    needs_text: bool = False
    #: whether :meth:`fit` must be called before :meth:`rank`
    needs_fit: bool = True
    #: the constructor's parameter names (declared; ``None``: a subclass that has not declared them yet)
    parameters: ClassVar[tuple[str, ...] | None] = None

    def fit(self, tasks: TaskSet | None, truth: GroundTruth, pool: Pool | None = None) -> "Ranker":
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

    @classmethod
    def param_names(cls) -> tuple[str, ...]:
        """The declared constructor parameters. Rankers that have not declared :attr:`parameters` fall back to
        their ``__init__`` signature here — the one place that looks at it."""
        if cls.parameters is not None:
            return tuple(cls.parameters)
        sig = inspect.signature(cls.__init__).parameters
        return tuple(p for p, v in sig.items() if p != "self" and v.kind not in (v.VAR_KEYWORD, v.VAR_POSITIONAL))

    def get_params(self) -> dict[str, Any]:
        return {p: getattr(self, p) for p in self.param_names() if hasattr(self, p)}

    @property
    def is_fitted(self) -> bool:
        return not self.needs_fit or hasattr(self, "trained_")

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({params})"


# ------------------------------------------------------------------------------------------ candidates
def _norm(hf_id: str) -> str:
    return hf_id.strip().lower()


@dataclass(frozen=True)
class Trained:
    """The candidates a ranker learned about: ground-truth model ids and, where known, their HF ids."""

    model_ids: tuple[str, ...]
    hf_ids: tuple[str, ...]  # "" where the ground truth's model id could not be tied to an HF id

    @classmethod
    def from_truth(cls, model_ids: Sequence[str], pool: Pool | None) -> "Trained":
        """HF ids of ``model_ids`` from ``pool`` (a candidate with that id, or with that HF id — ground truths
        may name models by HF id). Without a pool, a model id that looks like an HF id (``org/name``) is one."""
        hf = []
        for m in model_ids:
            m = str(m)
            if pool is not None and m in pool:
                hf.append(pool.get(m).hf_id or "")
            elif pool is not None and any(_norm(c.hf_id) == _norm(m) for c in pool if c.hf_id):
                hf.append(m)
            else:
                hf.append(m if "/" in m else "")
        return cls(tuple(str(m) for m in model_ids), tuple(hf))

    def to_json(self) -> dict[str, list[str]]:
        return {"model_ids": list(self.model_ids), "hf_ids": list(self.hf_ids)}

    def match(self, pool: Pool) -> np.ndarray:
        """Positions of ``pool``'s candidates among the trained ones (matched as :meth:`index` does), -1 for a
        candidate without fine-tuning history."""
        by_hf = {_norm(h): i for i, h in enumerate(self.hf_ids) if h}
        by_hf.update({_norm(m): i for i, (m, h) in enumerate(zip(self.model_ids, self.hf_ids)) if not h})
        by_id = {m: i for i, m in enumerate(self.model_ids)}
        out = [by_hf.get(_norm(c.hf_id)) if c.hf_id else by_id.get(c.id) for c in pool]
        return np.asarray([-1 if j is None else j for j in out], dtype=int)

    def index(self, pool: Pool, who: str, source: str | None = None) -> np.ndarray:
        """Positions of ``pool``'s candidates among the trained ones, matched by HF id (a candidate without an
        HF id by its id, against trained candidates that have none either). Unknown candidates are an error
        that names them and points to the methods that need no history (and ``source``, the artifact loaded)."""
        by_hf = {_norm(h): i for i, h in enumerate(self.hf_ids) if h}
        by_hf.update({_norm(m): i for i, (m, h) in enumerate(zip(self.model_ids, self.hf_ids)) if not h})
        by_id = {m: i for i, m in enumerate(self.model_ids)}
        out, unknown = [], []
        for c in pool:
            j = by_hf.get(_norm(c.hf_id)) if c.hf_id else by_id.get(c.id)
            if j is None:
                unknown.append(c)
            else:
                out.append(j)
        if unknown:
            names = ", ".join(f"{c.id}" + (f" ({c.hf_id})" if c.hf_id and c.hf_id != c.id else "") for c in unknown)
            known = ", ".join(h or m for m, h in zip(self.model_ids, self.hf_ids))
            raise InputError(
                f"{who} was not trained on candidate(s) {names}: it has fine-tuning history only for {known}. "
                f"Rank a pool with new models by a frozen-feature method (--method logme knn ...), add "
                f"--verify-top K to fine-tune the top K, or retrain with `modelseek train-ranker`", path=source)
        if len(set(out)) != len(out):
            raise InputError(f"{who}: two pool candidates are the same trained model", path=source)
        return np.asarray(out, dtype=int)
