"""Shared machinery of the rankers that learn from past tasks' text and ground truth.

:class:`LearnedRanker` turns ``fit(tasks, truth)`` into aligned arrays (task representations from
:mod:`modelseek.retrieval.taskrep` and the tasks x models normalized-F1 matrix), maps a pool onto the trained
candidates (an unknown candidate is an error that names it), and saves/loads artifacts: one JSON file with
the parameters, the trained candidate ids and training task ids, and numeric arrays (base64 little-endian),
never task text.
"""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Integral
from typing import ClassVar

import numpy as np

from ..data.pool import Candidate, Pool, load_pool
from ..data.task import Task, TaskSet
from ..data.truth import GradingScheme, GroundTruth
from ...core.config import Interval
from ...core.errors import InputError
from ..metrics.ndcg import ndcg
from ...core.progress import progress_bar
from ..taskrep import TaskRep, get_encoder, represent
from ._artifact import Persistable
from .base import Constraints, Trained


def card_text(c: Candidate) -> str:
    """A one-line model card: name, family, domain, pre-training and prior fine-tuning data."""
    clean = lambda xs: ", ".join(x.replace("-", " ") for x in xs)  # noqa: E731
    parts = [c.hf_id or c.id]
    if c.family:
        parts.append(f"a {c.family} model")
    if c.domain:
        parts.append(f"domain: {c.domain.replace('-', ' ')}")
    if c.language:
        parts.append(f"language: {c.language}")
    if c.pretraining_data:
        parts.append(f"pre-trained on {clean(c.pretraining_data)}")
    if c.finetuning_data:
        parts.append(f"fine-tuned on {clean(c.finetuning_data)}")
    return ". ".join(parts)


def _has_card(c: Candidate) -> bool:
    return bool(c.family or c.domain or c.pretraining_data or c.finetuning_data)


def with_cards(pool: Pool, reference: Pool | str | None) -> Pool:
    """``pool`` where candidates without model-card metadata (e.g. from an NTCIR ``models.csv``) take it from
    the same candidate (same id, same or no hf_id) in ``reference`` (a pool or pool file)."""
    if reference is None:
        return pool
    ref = load_pool(reference) if isinstance(reference, str) else reference
    out = []
    for c in pool:
        r = ref.get(c.id) if c.id in ref else None
        if r is not None and not _has_card(c) and (not c.hf_id or not r.hf_id or c.hf_id == r.hf_id):
            out.append(r)
        else:
            out.append(c)
    return Pool(out, name=pool.name)


def ndcg_matrix(scores: np.ndarray, targets: np.ndarray, k: int = 5,
                scheme: GradingScheme = GradingScheme.NTCIR) -> np.ndarray:
    """Per-row nDCG@k of ``scores`` against normalized-F1 ``targets`` (same conventions as the official
    scorer: ties in score keep column order; ideal from all columns)."""
    gains = np.vectorize(lambda v: scheme.gain(scheme.grade(v)), otypes=[np.float64])(np.asarray(targets))
    return ndcg(scores, gains, k)


class LearnedRanker(Persistable):
    """Base of text-aware learned rankers (``needs_text``); subclasses implement ``_fit``, ``_scores`` and the
    artifact state (``_state``/``_set_state``)."""

    needs_text = True
    # a non-positive sample size would silently embed one text per class
    _parameter_constraints: ClassVar[Constraints] = {"max_texts": [Interval(Integral, 1, None, closed="left")]}

    def __init__(self, encoder: str = "minilm", max_texts: int = 256, cache_dir: str | None = "auto",
                 seed: int = 0) -> None:
        self.encoder = encoder
        self.max_texts = max_texts
        self.cache_dir = cache_dir
        self.seed = seed

    # -------------------------------------------------------------------------------- representations
    def _enc(self):
        if getattr(self, "_encoder_obj", None) is None:
            self._encoder_obj = get_encoder(self.encoder)
        return self._encoder_obj

    def _rep(self, task: Task) -> TaskRep:
        task.require_data(f"method {self.name!r}")
        return represent(task, self._enc(), self.max_texts, self.seed, self.cache_dir)

    def card_embeddings(self, pool: Pool) -> np.ndarray:
        """Embeddings of the candidates' model cards (:func:`card_text`; metadata completed from the ranker's
        ``pool`` parameter where it has one), memoised per card text."""
        cache = self.__dict__.setdefault("_card_cache", {})
        texts = [card_text(c) for c in with_cards(pool, getattr(self, "pool", None))]
        todo = [t for t in dict.fromkeys(texts) if t not in cache]
        if todo:
            for t, e in zip(todo, self._enc()(todo)):
                cache[t] = e
        return np.stack([cache[t] for t in texts])

    def _reps(self, tasks: Sequence[Task], progress: bool = False) -> list[TaskRep]:
        return [self._rep(t) for t in progress_bar(list(tasks), desc=f"{self.name}: tasks", disable=not progress)]

    # -------------------------------------------------------------------------------- fitting
    def _learn(self, tasks: TaskSet | None, truth: GroundTruth, *, pool: Pool | None, progress: bool) -> None:
        """Learn from ``tasks`` (their text) and ``truth``. ``pool`` ties the ground truth's model ids to HF
        ids (see :class:`~modelseek.retrieval.rankers.base.Trained`); without it only pools known by the same ids
        match."""
        if tasks is None:
            raise InputError(f"method {self.name!r} learns from the training tasks' text: give the task folder")
        ids = [t for t in truth.task_ids]
        missing = [t for t in ids if t not in tasks]
        if missing:
            raise InputError(f"{len(missing)} ground-truth task(s) have no task data: {', '.join(missing[:5])}",
                             path=truth.source or None, field="task_id")
        if len(ids) < 2:
            raise InputError(f"method {self.name!r} needs at least 2 training tasks, got {len(ids)}",
                             path=truth.source or None, field="task_id")
        y = truth.matrix("normalized_f1")
        if y.isna().any().any():
            t = y.index[y.isna().any(axis=1)][0]
            raise InputError(f"ground truth is incomplete: task {t!r} lacks some models' F1", path=truth.source or None,
                             field="f1")
        self.trained_ = Trained.from_truth([str(m) for m in y.columns],
                                           pool if pool is not None else self._default_pool())
        self.fitted_task_ids_ = list(ids)
        task_list = [tasks.get(t) for t in ids]
        self._fit(task_list, self._reps(task_list, progress), y.to_numpy(float), progress)

    def _default_pool(self) -> Pool | None:
        """The pool that ties ground-truth ids to HF ids when ``fit`` is given none: the ranker's own ``pool``
        parameter for the methods that read model cards, else none."""
        pool = getattr(self, "pool", None)
        if pool is None:
            return None
        return load_pool(pool) if isinstance(pool, str) else pool

    def _cards_pool(self, what: str) -> Pool:
        """The trained candidates, in ``model_ids_`` order, as described by the ranker's ``pool`` parameter
        (rankers that read model cards need them); a candidate that pool does not describe is an error."""
        train_pool = self._default_pool()
        if train_pool is None:
            raise InputError(f"{self.name}: {what} come from the ranker's pool; give the pool file that describes "
                             f"the ground truth's models", field="pool")
        missing = [m for m in self.model_ids_ if m not in train_pool]
        if missing:
            raise InputError(f"{self.name}: {what} of candidate(s) {', '.join(missing)} are not in pool "
                             f"{getattr(self, 'pool', None)!r}; give the pool file that describes the ground truth's "
                             f"models",
                             field="pool")
        return Pool([train_pool.get(m) for m in self.model_ids_])

    def _fit(self, tasks: list[Task], reps: list[TaskRep], y: np.ndarray, progress: bool) -> None:
        raise NotImplementedError  # pragma: no cover

    # -------------------------------------------------------------------------------- ranking
    @property
    def model_ids_(self) -> list[str]:
        return list(self.trained_.model_ids)

    def pool_index(self, pool: Pool) -> np.ndarray:
        """Positions of the pool's candidates among the trained ones (matched by HF id); unknown candidates
        are an error that names them."""
        self._check_fitted()
        return self.trained_.index(pool, self.name, self.artifact_)

    def rank(self, task: Task, pool: Pool) -> dict[str, float]:
        idx = self.pool_index(pool)
        scores = self._scores(task, self._rep(task), pool, idx)
        return {c.id: float(s) for c, s in zip(pool, scores)}

    def _scores(self, task: Task, rep: TaskRep, pool: Pool, idx: np.ndarray) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover
