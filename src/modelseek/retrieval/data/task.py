"""Tasks: the queries of model retrieval.

A :class:`Task` is a text-classification data set (train, validation and optional test splits of
(text, label) pairs) with its metadata. Loading from files lives in :mod:`modelseek.retrieval.data.loaders`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import overload

import numpy as np

from ...core.enums import Choice
from ...core.errors import InputError


#: the expected-regret bounds of the criticality tiers (R = 1 - mean normalized F1): low below the first, medium
#: from the first, high from the second. The one definition: every tier computed from regret reads it.
CRITICALITY_BOUNDS: tuple[float, float] = (0.03, 0.10)

#: the longest text (characters) a task keeps per example: 100,000 characters is over ten times what the
#: longest-reading candidate takes (8,192 tokens); a longer text is cut (see :class:`Split`)
MAX_TEXT_CHARS = 100_000


class Criticality(Choice):
    """How much picking the wrong model costs on a task (expected regret tier)."""

    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"

    @classmethod
    def _normalise(cls, text: str) -> str:
        """Accepts ``low``, ``Low``, ``Low Criticalness`` ..."""
        return text.strip().lower().replace("criticalness", "").replace("criticality", "").strip()

    @classmethod
    def from_regret(cls, regret: float) -> Criticality:
        """Tier by expected regret R = 1 - mean normalized F1, with the bounds :data:`CRITICALITY_BOUNDS`."""
        return cls.from_regrets([regret])[0]

    @classmethod
    def from_regrets(cls, regrets) -> list[Criticality]:
        """:meth:`from_regret` of every value at once (NaN is high)."""
        levels = (cls.LOW, cls.MEDIUM, cls.HIGH)
        idx = np.searchsorted(np.asarray(CRITICALITY_BOUNDS), np.asarray(regrets, dtype=float), side="right")
        return [levels[i] for i in idx.tolist()]

    @staticmethod
    def rule() -> str:
        """The regret rule in words, with its bounds."""
        lo, hi = CRITICALITY_BOUNDS
        return f"the regret rule (R = 1 - mean normalized F1: low < {lo:g} <= medium < {hi:g} <= high)"


class LabelKind(Choice):
    """What a task's labels are, as the task declares it (never guessed from how the values look): ``class`` — a
    classification task (``0.0`` ... ``1.0`` are eleven class names when tasks.csv says 11 classes); ``number`` —
    a regression task (numeric targets)."""

    CLASS = "class"
    NUMBER = "number"

    @classmethod
    def declared(cls, row: Mapping[str, object] | None) -> LabelKind | None:
        """The kind a tasks.csv row declares: its ``label_kind`` column (class | number) where present, else
        ``task_class_count`` (a count of 2 or more: classes; 0 or 1 — no classes: numbers); None when it says
        nothing."""
        if not row:
            return None
        given = str(row.get("label_kind") or "").strip()
        if given:
            return cls.parse(given, field="label_kind")
        count = str(row.get("task_class_count") or "").strip()
        try:
            n = int(float(count)) if count else None
        except (ValueError, OverflowError):  # not a number, NaN, or a count of 5,000 digits (float: inf)
            return None
        if n is None:
            return None
        return cls.CLASS if n >= 2 else cls.NUMBER


def looks_numeric(labels: Iterable[str]) -> bool:
    """Whether labels read as non-integer numbers (``0.5``, ``3.0``): only for a hint to declare the kind, never to
    decide it."""
    integral, seen = True, False
    for v in labels:
        seen = True
        try:
            x = float(v)
        except (TypeError, ValueError):
            return False
        if x != x or x in (float("inf"), float("-inf")):
            return False
        integral = integral and str(v).strip().lstrip("+-").isdigit()
    return seen and not integral


@dataclass(frozen=True)
class Split:
    """Parallel tuples of texts and (string) labels. A text longer than :data:`MAX_TEXT_CHARS` characters is cut
    there (a warning says how many were): no candidate reads further, and every step after (tokenizers, encoders,
    hashing, task features) then works in bounded time and memory on a table with one 20 MB cell."""

    texts: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        texts = tuple(self.texts)
        long = [i for i, t in enumerate(texts) if isinstance(t, str) and len(t) > MAX_TEXT_CHARS]
        if long:
            import logging

            logging.getLogger(__name__).warning(
                "%d text(s) longer than %s characters (the longest %s) cut to their first %s: no candidate model "
                "reads further (tokenizers stop at max_length tokens)", len(long), f"{MAX_TEXT_CHARS:,}",
                f"{max(len(texts[i]) for i in long):,}", f"{MAX_TEXT_CHARS:,}")
            texts = tuple(t[:MAX_TEXT_CHARS] if len(t) > MAX_TEXT_CHARS else t for t in texts)
        object.__setattr__(self, "texts", texts)
        object.__setattr__(self, "labels", tuple(str(x) for x in self.labels))
        if len(self.texts) != len(self.labels):
            raise InputError(f"split has {len(self.texts)} texts but {len(self.labels)} labels")

    def __len__(self) -> int:
        return len(self.texts)


@dataclass(frozen=True)
class Task:
    """A text-classification task.

    ``label_names`` are the distinct labels in first-seen order over train, val, test.
    ``has_data`` is False for tasks known only by id (e.g. from a ground-truth table); rankers that need
    text refuse them with a clear error. ``label_kind`` is what the task declares (tasks.csv's class count, a
    table user's ``--label-kind``); undeclared (None) is a classification task: the look of the labels never
    decides (see :attr:`regression`).
    """

    id: str
    train: Split = field(default_factory=Split)
    val: Split = field(default_factory=Split)
    test: Split | None = None
    name: str = ""
    criticality: Criticality | None = None
    instruction: str = ""
    source: str = ""
    metadata: Mapping[str, object] = field(default_factory=dict, compare=False)
    label_kind: LabelKind | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "id", str(self.id))
        if self.label_kind is not None:
            object.__setattr__(self, "label_kind", LabelKind.parse(self.label_kind, field="label_kind"))
        if not self.name:
            object.__setattr__(self, "name", self.id)
        if self.criticality is not None:
            object.__setattr__(self, "criticality", Criticality.parse(self.criticality))
        object.__setattr__(self, "metadata", MappingProxyType(dict(self.metadata)))

    @classmethod
    def from_id(cls, task_id: str, criticality: Criticality | str | None = None, **kw) -> Task:
        """A task known by id only (no text)."""
        return cls(id=str(task_id), criticality=None if criticality is None else Criticality.parse(criticality),
                   **kw)

    @property
    def has_data(self) -> bool:
        return len(self.train) > 0

    @property
    def label_names(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for split in (self.train, self.val, self.test):
            if split is not None:
                for y in split.labels:
                    seen.setdefault(y, None)
        return tuple(seen)

    @property
    def regression(self) -> bool:
        """Whether the task is a regression task: only when it declares ``label_kind`` number."""
        return self.label_kind is LabelKind.NUMBER

    @property
    def num_classes(self) -> int:
        return len(self.label_names)

    def require_data(self, who: str = "this method") -> None:
        if not self.has_data:
            raise InputError(f"task {self.id!r} has no text data, which {who} needs")

    def __repr__(self) -> str:
        sizes = f"train={len(self.train)}, val={len(self.val)}, test={len(self.test) if self.test else 0}"
        return f"Task(id={self.id!r}, {sizes}, classes={self.num_classes})"


class TaskSet(Sequence[Task]):
    """An ordered collection of tasks with unique ids."""

    def __init__(self, tasks: Iterable[Task]) -> None:
        self._tasks: dict[str, Task] = {}
        for t in tasks:
            if t.id in self._tasks:
                raise InputError(f"duplicate task id {t.id!r}")
            self._tasks[t.id] = t

    @property
    def ids(self) -> list[str]:
        return list(self._tasks)

    def get(self, task_id: str) -> Task:
        try:
            return self._tasks[str(task_id)]
        except KeyError:
            raise InputError(f"unknown task id {task_id!r}") from None

    def subset(self, ids: Iterable[str]) -> TaskSet:
        return TaskSet(self.get(i) for i in ids)

    @overload
    def __getitem__(self, i: int | str) -> Task: ...
    @overload
    def __getitem__(self, i: slice) -> TaskSet: ...

    def __getitem__(self, i: int | str | slice) -> Task | TaskSet:
        if isinstance(i, str):
            return self.get(i)
        values = list(self._tasks.values())
        if isinstance(i, slice):
            return TaskSet(values[i])
        return values[i]

    def __iter__(self) -> Iterator[Task]:
        return iter(self._tasks.values())

    def __len__(self) -> int:
        return len(self._tasks)

    def __contains__(self, item: object) -> bool:
        return (item.id if isinstance(item, Task) else str(item)) in self._tasks

    def __repr__(self) -> str:
        return f"TaskSet({len(self)} tasks)"
