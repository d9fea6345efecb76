"""Per-topic features for per-task fusion: each input run's *spread*, and task features given by the user.

**Spread** (:func:`spread`). For run ``r`` and topic ``t``, with ``x`` the run's raw scores of the candidates it
holds there (a failed or missing candidate is not held; see :mod:`modelseek.retrieval.fusion.core`),
``sd_r(t)`` is the population standard deviation of ``x`` -- undefined (NaN) when the run holds fewer than
two candidates at ``t``. The spread of the run at ``t`` is ``sd_r(t) / m_r``, where the reference ``m_r`` is
the run's median of ``sd_r`` over the topics it was learned on (topics with an undefined or zero ``sd`` left
out of the median); see :class:`~modelseek.retrieval.fusion.gates.Gate`. It is the raw scale of the run, so a run
whose scores scatter more than usual at a topic (as a noisy estimator does on a small task) has a spread
above 1. Flat runs (all scores equal) have ``sd = 0``; a run whose reference is undefined or 0 is never
gated by its spread.

**Task features** (:class:`TaskFeatures`): numbers per topic (task), such as ``size`` (training rows) and
``classes`` (number of classes), from the task data (:func:`task_features_from_tasks`, through the project's
task loaders) or from a CSV file (:func:`read_task_features`). Values must be finite and > 0. A topic without
a value of a feature is fused as if it sat at the feature's reference (its gate factor is 1: the fusion's
base weights apply); see :class:`~modelseek.retrieval.fusion.gates.Gate`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..data.loaders import load_tasks
from ...core.errors import InputError
from ...core.io import csv_dict_reader, keyed_rows, open_text

SPREAD = "spread"   # the per-run feature's name (a task feature cannot take it)
TOPIC_COLUMNS = ("topic", "task_id")


def spread(scores: np.ndarray) -> np.ndarray:
    """``R x T`` population standard deviation of each run's raw scores per topic (``scores`` is
    ``R x T x D`` with NaN where a run lacks a candidate); NaN where a run holds fewer than 2 candidates."""
    held = ~np.isnan(scores)
    n = held.sum(axis=-1)
    x = np.where(held, scores, 0.0)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        # divided by the largest magnitude first, as the normalisations do: scores near 1e300 do not overflow
        scale = np.max(np.abs(x), axis=-1)
        scale = np.where(scale > 0, scale, 1.0)
        z = x / scale[..., None]
        mean = z.sum(axis=-1) / n
        var = np.where(held, (z - mean[..., None]) ** 2, 0.0).sum(axis=-1) / n
        sd = np.sqrt(var) * scale
    return np.where(n >= 2, sd, np.nan)


@dataclass(frozen=True)
class TaskFeatures:
    """Numbers per topic: ``values[feature][topic]`` (finite, > 0). A topic may lack any feature."""

    values: Mapping[str, Mapping[str, float]] = field(default_factory=dict)

    @property
    def names(self) -> list[str]:
        return list(self.values)

    def __bool__(self) -> bool:
        return bool(self.values)

    def merged(self, other: TaskFeatures) -> TaskFeatures:
        """Both sets of features; a feature named by both is an error."""
        both = sorted(set(self.values) & set(other.values))
        if both:
            raise InputError(f"task feature(s) {', '.join(both)} given twice (by the tasks and the features table)",
                             field="task features")
        return TaskFeatures({**self.values, **other.values})

    @classmethod
    def of(cls, features: TaskFeatures | Mapping[str, Mapping[str, float]] | None) -> TaskFeatures:
        """``features`` as a checked :class:`TaskFeatures` (a mapping ``{feature: {topic: value}}`` is accepted)."""
        if features is None:
            return cls()
        if isinstance(features, TaskFeatures):
            return features
        if not isinstance(features, Mapping):
            raise InputError(f"task features must be a mapping {{feature: {{topic: value}}}}, got "
                             f"{type(features).__name__}", field="features")
        out: dict[str, dict[str, float]] = {}
        for name, per_topic in features.items():
            name = _feature_name(name)
            if not isinstance(per_topic, Mapping):
                raise InputError("must map topic ids to numbers", field=name)
            out[name] = {str(t): _value(v, name) for t, v in per_topic.items()}
        return cls(out)


def _feature_name(name: object) -> str:
    text = str(name).strip()
    if not text:
        raise InputError("a task feature needs a name", field="features")
    if text == SPREAD:
        raise InputError(f"{SPREAD!r} is the runs' own feature; name the task feature otherwise", field=text)
    return text


def _value(v: object, name: str) -> float:
    try:
        x = float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InputError(f"not a number: {v!r}", field=name) from None
    if not math.isfinite(x) or x <= 0:
        raise InputError(f"must be a finite number > 0, got {v!r}", field=name)
    return x


def read_task_features(path: str | Path) -> TaskFeatures:
    """A CSV file with a ``topic`` (or ``task_id``) column and one numeric column per feature; an empty cell is
    a missing value. Every problem is one located :class:`InputError` (file, line, column)."""
    path = Path(path)
    out: dict[str, dict[str, float]] = {}
    with open_text(path, "task features file") as fh:
        reader = csv_dict_reader(fh, path)
        names = [n for n in (reader.fieldnames or [])]
        key = next((c for c in TOPIC_COLUMNS if c in names), None)
        if key is None:
            raise InputError("missing column (topic or task_id)", path=path, line=1, field="topic")
        cols = [n for n in names if n != key]
        if not cols:
            raise InputError("no feature column besides the topic column", path=path, line=1)
        for c in cols:
            try:
                out[_feature_name(c)] = {}
            except InputError as exc:
                raise InputError(exc.message, path=path, line=1, field=exc.field) from None
        for lineno, topic, row in keyed_rows(reader, key, path, "empty topic id",
                                             "topic {key!r} is listed again (first on line {first})"):
            for c in cols:
                cell = row.get(c)
                if cell is None:
                    raise InputError("missing cell (short row)", path=path, line=lineno, field=c)
                if cell.strip():
                    try:
                        out[c.strip()][topic] = _value(cell.strip(), c)
                    except InputError as exc:
                        raise InputError(exc.message, path=path, line=lineno, field=c) from None
    return TaskFeatures(out)


def task_features_from_tasks(path: str | Path) -> TaskFeatures:
    """``size`` (training rows) and ``classes`` (number of classes) of every task under ``path``: an NTCIR root,
    a folder of task folders, one task folder or a table file, read by
    :func:`modelseek.retrieval.data.loaders.load_tasks`."""
    tasks = load_tasks(path)
    size = {t.id: float(len(t.train)) for t in tasks if len(t.train) > 0}
    classes = {t.id: float(t.num_classes) for t in tasks if t.num_classes > 0}
    return TaskFeatures({"size": size, "classes": classes})


__all__ = ["SPREAD", "TaskFeatures", "read_task_features", "spread", "task_features_from_tasks"]
