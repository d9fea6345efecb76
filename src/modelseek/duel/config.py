"""Leaderboard configuration: task -> category -> metric (BenCzechMark's ``metadata.json`` format).

``{"tasks": {"<task id>": {"category": "...", "metric": "acc", "name": "...", "abbreviation": "...",
...}}}``. The default is BenCzechMark's own file shipped in ``modelseek/resources/benczechmark`` (50 tasks,
9 categories). Each metric names the significance test of its duels (see :class:`Metric`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from importlib import resources
from pathlib import Path

from ..core.config import Config
from ..core.enums import Choice
from ..core.errors import InputError
from ..core.io import read_config


class Test(str, Enum):
    TTEST = "paired t-test"
    AUROC = "Bayesian AUROC test"
    BOOTSTRAP_MEAN = "paired bootstrap (mean)"
    BOOTSTRAP_PERPLEXITY = "paired bootstrap (perplexity)"


class Metric(Choice):
    """Per-sample metrics a duel knows how to test; values are the field names of per-sample records
    (parsed by the one :class:`~modelseek.core.enums.Choice` parser)."""

    ACC = "acc"
    EXACT_MATCH = "exact_match"
    AVG_MCAUROC = "avg_mcauroc"
    WORD_PERPLEXITY = "word_perplexity"
    ROUGE = "rouge_raw_r2_mid_f"
    NDCG5 = "ndcg@5"  # model-retrieval runs: per-topic nDCG@5

    @property
    def test(self) -> Test:
        return {Metric.ACC: Test.TTEST, Metric.EXACT_MATCH: Test.TTEST, Metric.NDCG5: Test.TTEST,
                Metric.AVG_MCAUROC: Test.AUROC, Metric.WORD_PERPLEXITY: Test.BOOTSTRAP_PERPLEXITY,
                Metric.ROUGE: Test.BOOTSTRAP_MEAN}[self]

    @property
    def higher_is_better(self) -> bool:
        return self is not Metric.WORD_PERPLEXITY


@dataclass(frozen=True)
class TaskSpec(Config):
    """One leaderboard task (built by the config layer: ``metric`` parsed by :class:`Metric`)."""

    task: str
    category: str
    metric: Metric
    name: str = ""
    abbreviation: str = ""

    def _check(self) -> None:
        for name in ("task", "category"):
            if not getattr(self, name).strip():
                raise InputError("must be a non-empty string", field=name)


@dataclass(frozen=True)
class LeaderboardConfig:
    tasks: tuple[TaskSpec, ...]

    def __post_init__(self) -> None:
        names = [t.task for t in self.tasks]
        if len(set(names)) != len(names):
            raise InputError("duplicate task in the leaderboard configuration")
        clash = set(names) & set(self.categories) | ({"overall"} & (set(names) | set(self.categories)))
        if clash:
            raise InputError(f"task and category names must differ (and not be 'overall'): {sorted(clash)}")
        object.__setattr__(self, "_by_task", {t.task: t for t in self.tasks})  # spec() in O(1), not a scan

    @property
    def task_ids(self) -> list[str]:
        return [t.task for t in self.tasks]

    @property
    def categories(self) -> list[str]:
        seen: dict[str, None] = {}
        for t in self.tasks:
            seen.setdefault(t.category, None)
        return list(seen)

    def spec(self, task: str) -> TaskSpec:
        hit = self._by_task.get(task)  # type: ignore[attr-defined]
        if hit is None:
            raise InputError(f"unknown task {task!r}", field="task")
        return hit

    def tasks_of(self, category: str) -> list[str]:
        return [t.task for t in self.tasks if t.category == category]

    def to_dict(self) -> dict:
        return {"tasks": {t.task: {"task": t.task, "name": t.name, "abbreviation": t.abbreviation,
                                   "category": t.category, "metric": t.metric.value} for t in self.tasks}}

    @classmethod
    def from_dict(cls, data: Mapping, path: str | None = None) -> LeaderboardConfig:
        """From BenCzechMark's ``metadata.json`` shape; each task's other fields (``source_url``,
        ``short_name``, ...) are BenCzechMark's own and ignored."""
        if not isinstance(data, Mapping) or not isinstance(data.get("tasks"), Mapping) or not data["tasks"]:
            raise InputError("metadata must be an object with a non-empty 'tasks' object", path=path, field="tasks")
        specs = []
        for tid, rec in data["tasks"].items():
            if not isinstance(rec, Mapping):
                raise InputError(f"task {tid!r} must be an object", path=path, field=f"tasks.{tid}")
            for key in ("category", "metric"):
                if not isinstance(rec.get(key), str) or not rec[key]:
                    raise InputError(f"task {tid!r} needs a '{key}' string", path=path, field=f"tasks.{tid}.{key}")
            fields = {k: rec[k] for k in ("category", "metric", "name", "abbreviation") if k in rec}
            try:
                specs.append(TaskSpec(task=str(tid), **fields))
            except InputError as exc:
                raise InputError(f"task {tid!r}: {exc.message}", path=path,
                                 field=f"tasks.{tid}.{exc.field}" if exc.field else f"tasks.{tid}") from None
        return cls(tuple(specs))

    @classmethod
    def load(cls, path: str | Path | None = None) -> LeaderboardConfig:
        """Load a metadata file; ``None`` is the shipped BenCzechMark configuration."""
        if path is None:
            text = resources.files("modelseek").joinpath("resources/benczechmark/metadata.json").read_text("utf-8")
            return cls.from_dict(json.loads(text), "benczechmark/metadata.json")
        data, _ = read_config(path, "metadata file")       # JSON (BenCzechMark's file) or YAML
        return cls.from_dict(data, str(path))
