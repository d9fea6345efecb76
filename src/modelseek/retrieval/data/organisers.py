"""The NTCIR-19 Subtask A repository as the organisers' downloader leaves it, and the topic ids it defines.

After ``main.py download_test_tasks --all`` and ``download_models --all`` a participant's clone holds::

    data/tasks.csv                          task_id, task_type (train | test), task_criticalness, ...
    data/models.csv                         model_id 1..20, model_name (the Hugging Face id)
    data/task-data/train-tasks/<id>/        train.jsonl, val.jsonl, test.jsonl  (ids 1001..1100)
    data/task-data/test-tasks/{id:04d}/     train.jsonl, val.jsonl               (0001..0048)
    data/models/{id:02d}/                   a Hub snapshot of candidate <id> (config, weights, tokenizer, README)

The official topicID of a task is its ``task_id`` in ``tasks.csv``: the folder ``0001`` is task ``1``. ROOT may be
the repository root (it holds ``data/``) or ``data/`` itself.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ...core.errors import InputError
from .loaders import _task_folders, load_ntcir_task, padded, read_tasks_csv, unpadded
from .task import TaskSet

#: the organisers' split names -> the folder under ``task-data``
SPLITS = {"train": "train-tasks", "test": "test-tasks"}


@dataclass(frozen=True)
class OrganisersLayout:
    """Where the parts of an organisers' Subtask A clone are (None: absent)."""

    data: Path
    tasks_csv: Path | None
    models_csv: Path | None
    models_dir: Path | None
    splits: dict[str, Path] = field(default_factory=dict)

    def split_folder(self, split: str | None, given: Path) -> tuple[str, Path]:
        """(split, its folder): ``split`` as asked, or the only one present; both present and none asked is an
        error naming ``--split``."""
        if split is None:
            if len(self.splits) > 1:
                raise InputError(f"holds both the training tasks ({self._rel('train')}) and the test tasks "
                                 f"({self._rel('test')}); choose one with `split` (test or train)", path=given,
                                 field="split")
            split = next(iter(self.splits))
        if split not in SPLITS:
            raise InputError(f"unknown split {split!r}; valid: {', '.join(SPLITS)}", field="split")
        if split not in self.splits:
            raise InputError(f"no {split} tasks here (no folder {self.data / 'task-data' / SPLITS[split]}; the "
                             f"organisers' main.py download_{'test_' if split == 'test' else ''}tasks writes it)",
                             path=given, field="split")
        return split, self.splits[split]

    def _rel(self, split: str) -> str:
        return f"task-data/{SPLITS[split]}"


def find_layout(path: str | Path, need_tasks: bool = True) -> OrganisersLayout | None:
    """The organisers' layout at ``path`` (the repository root, its ``data/``), or None when neither holds a
    ``task-data`` folder with a split in it (with ``need_tasks=False``: nor a tasks.csv)."""
    path = Path(path)
    for data in (path, path / "data"):
        td = data / "task-data"
        splits = {s: td / f for s, f in SPLITS.items() if (td / f).is_dir()}
        if splits or (not need_tasks and (data / "tasks.csv").is_file()):
            return OrganisersLayout(
                data=data,
                tasks_csv=data / "tasks.csv" if (data / "tasks.csv").is_file() else None,
                models_csv=data / "models.csv" if (data / "models.csv").is_file() else None,
                models_dir=data / "models" if (data / "models").is_dir() else None,
                splits=splits)
    return None


def official_task_id(folder: Path, known: Mapping[str, object] | None, tasks_csv: Path | None) -> str:
    """The topicID of a task folder: its name when ``tasks.csv`` lists it, else the number the downloader padded
    (``0001`` -> ``1``) when tasks.csv lists that; a folder that is no task of tasks.csv is an error naming both.
    Without a tasks.csv, a zero-padded number is read as the number."""
    name = folder.name
    bare = unpadded(name)
    if known is None:
        return bare
    for tid in (name, bare):
        if tid in known:
            return tid
    raise InputError(f"task folder {name!r} is no task_id of {tasks_csv} (tasks.csv lists "
                     f"{_some(list(known))})", path=folder, field="task_id")


def absent_test_tasks(layout: OrganisersLayout) -> list[str]:
    """The official test topics of tasks.csv that have no task folder on disk (``0007/`` or ``7/`` with a
    ``train.jsonl``): the downloader skips a task whose download fails. Read from the folder names only (no task is
    loaded), so a command can name them before any work; [] without a tasks.csv or a test-tasks folder."""
    if layout.tasks_csv is None or "test" not in layout.splits:
        return []
    folder = layout.splits["test"]
    present = {unpadded(f.name) for f in _task_folders(folder) if f != folder}
    return [t for t in test_topics(layout) if unpadded(t) not in present]


def describe_absent(layout: OrganisersLayout, absent: list[str]) -> str:
    """One line naming the test tasks of tasks.csv that are not downloaded, and where they should be."""
    folder = layout.splits.get("test", layout.data / "task-data" / SPLITS["test"])
    first = absent[0]
    name = padded(first, 4)
    return (f"{len(absent)} official test task(s) of {layout.tasks_csv} are not downloaded: {_some(absent, 8)} (no "
            f"folder {folder / name}); rerun the organisers' 'python main.py download_test_tasks --all'")


def _some(ids: list[str], n: int = 6) -> str:
    return ", ".join(ids[:n]) + (f" ... ({len(ids)} in all)" if len(ids) > n else "")


def load_split(layout: OrganisersLayout, split: str) -> TaskSet:
    """Every task folder of ``split``, each with its official id and every tasks.csv field (name, instruction,
    criticality, metadata)."""
    folder = layout.splits[split]
    folders = [f for f in _task_folders(folder) if f != folder]
    if not folders:
        raise InputError("no task folders (<id>/train.jsonl) found", path=folder)
    meta = read_tasks_csv(layout.tasks_csv) if layout.tasks_csv else None
    tasks = []
    seen: dict[str, Path] = {}
    for f in folders:
        tid = official_task_id(f, meta, layout.tasks_csv)
        if tid in seen:
            raise InputError(f"task folders {seen[tid].name!r} and {f.name!r} are both task {tid}", path=f,
                             field="task_id")
        seen[tid] = f
        task = load_ntcir_task(f, (meta or {}).get(tid), layout.tasks_csv)
        tasks.append(dataclasses.replace(task, id=tid) if task.id != tid else task)
    return TaskSet(sorted(tasks, key=lambda t: (len(t.id), t.id)))


def test_topics(layout: OrganisersLayout) -> list[str]:
    """The official test topics: the task_ids of tasks.csv whose ``task_type`` is ``test`` (every row when the
    file has no such column)."""
    if layout.tasks_csv is None:
        raise InputError(f"no tasks.csv in {layout.data}: the official test topics are its task_ids",
                         path=layout.data, field="tasks.csv")
    rows = read_tasks_csv(layout.tasks_csv)
    if any("task_type" in r for r in rows.values()):
        return [t for t, r in rows.items() if (r.get("task_type") or "").strip().lower() == "test"]
    return list(rows)


__all__ = ["SPLITS", "OrganisersLayout", "absent_test_tasks", "describe_absent", "find_layout", "load_split",
           "official_task_id", "test_topics"]
