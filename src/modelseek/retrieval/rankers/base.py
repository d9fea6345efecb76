"""The ranker contract (one written contract, checked by mypy and by ``tests/contracts``).

A ranker follows scikit-learn's habits: the constructor stores its parameters only (each under its own
name); :meth:`Ranker.fit` ``(tasks, truth, *, pool=None, progress=False) -> Self`` learns from past tasks and
their ground truth; :meth:`Ranker.rank` scores every candidate of a pool for a task (higher = expected to
fine-tune better); :meth:`Ranker.explain` says what a ranking rests on (``None`` by default: nothing beyond the
scores). Randomness comes from an explicit seed.

* **Parameters** are the constructor's signature, nothing else (:meth:`Ranker.param_names`); their rules are
  declared per class in ``_parameter_constraints`` (scikit-learn's shape, with the constraints of
  :mod:`modelseek.core.config`) and checked in one place, :meth:`Ranker.validate_params` (on fit and on load; the
  resolver also checks them when it builds a ranker from a name).
* **Learning**: a ranker with ``needs_fit`` implements :meth:`Ranker._learn`; :meth:`Ranker.fit` (final)
  checks the parameters, calls it and marks the ranker fitted.
* **Persistence** is optional, through one mixin: :class:`modelseek.retrieval.rankers._artifact.Persistable` (``save``,
  ``load`` and the one artifact reader).
* **Registration**: ``@register`` (:mod:`modelseek.retrieval.rankers._registry`) on the class, in its own module of
  :mod:`modelseek.retrieval.rankers`; the registry discovers the package's modules, so a new ranker is one file.

Rankers that learn from a ground truth know their candidates by **Hugging Face id** (:class:`Trained`): a pool
is matched to the trained candidates by HF id, never by its docID numbers, so a pool whose ids 1, 2, 3 name
other models is an error naming them, not a silent misattribution.
"""

from __future__ import annotations

import abc
import inspect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, final

import numpy as np

from ...core.config import Constraint, check
from ..data.pool import Pool
from ..data.run import Run
from ..data.task import Task, TaskSet
from ..data.truth import GroundTruth
from ...core.errors import InputError, NotFittedError

if TYPE_CHECKING:
    from typing_extensions import Self  # typing.Self is 3.11+; the package supports 3.10

#: what ``_parameter_constraints`` maps a parameter to: constraints (any one satisfies), ``None`` = may be None
Constraints = Mapping[str, Sequence["Constraint | None"]]


def failures_allowed(ranker: Ranker) -> Ranker:
    """``ranker`` set to leave failed candidates out of its runs (a copy; the caller's instance is unchanged).

    Rankers without candidate failures (learned rankers read no model; their ``allow_failures`` is None) are
    returned as they are.
    """
    if ranker.allow_failures is False:
        import copy

        ranker = copy.copy(ranker)
        ranker.allow_failures = True
    return ranker


class Ranker(abc.ABC):
    """The contract every ranker keeps (see the module docstring)."""

    #: registry name
    name: ClassVar[str] = "ranker"
    #: whether :meth:`rank` reads the task's text (otherwise a task known by id is enough)
    needs_text: ClassVar[bool] = False
    #: whether :meth:`fit` must be called before :meth:`rank`
    needs_fit: ClassVar[bool] = True
    #: per constructor parameter, the constraints its value must satisfy (one of them; ``None``: may be None)
    _parameter_constraints: ClassVar[Constraints] = {}
    #: candidate failures policy of rankers that read models (``None``: this ranker has no failures)
    allow_failures: bool | None = None
    #: the artifact the ranker was loaded from (errors about candidates it was not trained on name it)
    artifact_: str | None = None
    _fitted: bool = False

    # ------------------------------------------------------------------------------------ the contract
    @final
    def fit(self, tasks: TaskSet | None, truth: GroundTruth, *, pool: Pool | None = None,
            progress: bool = False) -> Self:
        """Learn from ``tasks`` and their ground truth ``truth`` (``pool`` ties the ground truth's model ids
        to HF ids); a ranker that needs no history only checks its parameters. Returns ``self``."""
        self.validate_params()
        if self.needs_fit:
            self._learn(tasks, truth, pool=pool, progress=progress)
            self._fitted = True
        return self

    def _learn(self, tasks: TaskSet | None, truth: GroundTruth, *, pool: Pool | None, progress: bool) -> None:
        """What :meth:`fit` learns; every ranker with ``needs_fit`` implements it."""
        raise NotImplementedError(f"{type(self).__name__} declares needs_fit but does not implement _learn")

    @abc.abstractmethod
    def rank(self, task: Task, pool: Pool) -> dict[str, float]:
        """Score of every candidate of ``pool`` for ``task`` (by candidate id; higher = better)."""

    def explain(self, task: Task, pool: Pool) -> dict[str, Any] | None:
        """What the ranking of ``pool`` for ``task`` rests on (JSON-ready), or None: nothing beyond the scores."""
        return None

    def rank_tasks(self, tasks: Iterable[Task], pool: Pool, run_id: str | None = None,
                   progress: bool = False) -> Run:
        """A run over several tasks."""
        from ...core.progress import progress_bar  # lazy: start-up

        scores = {}
        for task in progress_bar(list(tasks), desc=f"rank {self.name}", disable=not progress):
            scores[task.id] = self.rank(task, pool)
        return Run.from_scores(scores, run_id or self.name)

    # ------------------------------------------------------------------------------------ parameters
    @classmethod
    def param_names(cls) -> tuple[str, ...]:
        """The constructor's parameters: its signature is the one declaration."""
        sig = inspect.signature(cls.__init__).parameters
        return tuple(p for p, v in sig.items() if p != "self" and v.kind not in (v.VAR_KEYWORD, v.VAR_POSITIONAL))

    def get_params(self) -> dict[str, Any]:
        return {p: getattr(self, p) for p in self.param_names()}

    def validate_params(self) -> None:
        """Every parameter against its declared constraints (the one check; an ``InputError`` naming it)."""
        for name, rules in self._parameter_constraints.items():
            value = getattr(self, name)
            if value is None and None in rules:
                continue
            try:
                check(value, [r for r in rules if r is not None], field=name)
            except InputError as exc:
                raise InputError(f"{name} {exc.message}", field=name) from None

    # ------------------------------------------------------------------------------------ fitted state
    @property
    def is_fitted(self) -> bool:
        return not self.needs_fit or self._fitted

    def _check_fitted(self) -> None:
        if not self.is_fitted:
            raise NotFittedError(f"{self.name} is not fitted; call fit(tasks, ground_truth) first")

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({params})"


# ------------------------------------------------------------------------------------------ candidates
def _norm(hf_id: str) -> str:
    """An HF id as matched against a ranker's trained candidates: case aside, and the Hub's current name of a model
    once published without an organisation (``google-bert/bert-base-uncased``) is its old name."""
    from ..profiles import canonical_hf_id  # lazy: start-up (profiles reads YAML and JSON)

    return canonical_hf_id(hf_id).strip().lower()


def _find(c, by_hf: dict[str, int], by_id: dict[str, int]) -> int | None:
    """A pool candidate's position among trained ones: by HF id (the Hub's current names included), else by its id;
    a folder the organisers' downloader wrote (``data/models/NN`` beside ``models.csv``) is the model it names."""
    from ..profiles import folder_identity  # lazy: start-up

    j = by_hf.get(_norm(c.hf_id)) if c.hf_id else by_id.get(c.id)
    if j is None and getattr(c, "path", None):
        same = folder_identity(c.path)
        j = by_hf.get(_norm(same)) if same else None
    return j


@dataclass(frozen=True)
class Trained:
    """The candidates a ranker learned about: ground-truth model ids and, where known, their HF ids."""

    model_ids: tuple[str, ...]
    hf_ids: tuple[str, ...]  # "" where the ground truth's model id could not be tied to an HF id

    @classmethod
    def from_truth(cls, model_ids: Sequence[str], pool: Pool | None) -> Trained:
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
        out = [_find(c, by_hf, by_id) for c in pool]
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
            j = _find(c, by_hf, by_id)
            if j is None:
                unknown.append(c)
            else:
                out.append(j)
        if unknown:
            names = ", ".join(f"{c.id}" + (f" ({c.hf_id})" if c.hf_id and c.hf_id != c.id else "") for c in unknown)
            known = ", ".join(h or m for m, h in zip(self.model_ids, self.hf_ids))
            raise InputError(
                f"{who} was not trained on candidate(s) {names}: it has fine-tuning history only for {known}. "
                f"Rank a pool with new models by a frozen-feature `method` (logme, knn ...), fine-tune the top K "
                f"(modelseek.retrieval.finetune.verify.verify_top; rank --verify-top K), or retrain with "
                f"`modelseek train-ranker`",
                path=source)
        if len(set(out)) != len(out):
            raise InputError(f"{who}: two pool candidates are the same trained model", path=source)
        return np.asarray(out, dtype=int)
