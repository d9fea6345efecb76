"""One resolver from what a user points a command at to the tasks, the pool and the ground truth it holds.

A user names the same data in several ways: the organisers' repository root (``ROOT``, which holds ``data/``), its
``ROOT/data`` folder, a generated layout (``ground-truth.csv``, ``tasks.csv``, ``models.csv`` and
``task-data/train-tasks/<id>/`` side by side), or the ground-truth CSV itself. :func:`resolve_folder` reads any of
them into one :class:`ResolvedFolder`, so that ``train-ranker``, ``rank`` (its training truth) and ``submission``
find the same files whichever form was given::

    f = resolve_folder("modelretrieval-1-subtask-a")      # or .../data, or .../data/ground-truth.csv
    truth = f.truth()                                      # data/ground-truth.csv
    tasks = f.training_tasks(truth.task_ids)               # data/task-data/train-tasks/<id>/
    pool = f.pool()                                        # data/models.csv (else the built-in ntcir19 pool)
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ...core.errors import InputError
from .organisers import OrganisersLayout, find_layout
from .truth import GroundTruth
from .loaders import load_ntcir_tasks
from .pool import load_pool
from .organisers import absent_test_tasks, load_split
from .organisers import describe_absent
from ...core.io import utf16_bom

if TYPE_CHECKING:
    from .pool import Pool
    from .task import TaskSet
    from .truth import GroundTruth

#: the ground truth's file name in the organisers' data/ folder (and in a generated layout)
TRUTH_NAME = "ground-truth.csv"
#: the columns that make a CSV a ground truth rather than a task table
TRUTH_COLUMNS = ("task_id", "model_id")


@dataclass(frozen=True)
class ResolvedFolder:
    """What a path holds. ``kind``: ``organisers`` (the organisers' layout, at its root or its data/), ``folder`` (a
    folder of task folders, or one with only a ground truth), ``ground truth`` (a CSV named directly). ``data`` is
    the folder the files sit in; absent parts are None."""

    given: Path
    kind: str
    data: Path
    ground_truth: Path | None
    tasks_csv: Path | None
    models_csv: Path | None
    layout: OrganisersLayout | None = None

    def truth(self, any_score: bool = False) -> GroundTruth:
        """The ground truth, or an error naming where it was looked for."""

        if self.ground_truth is None:
            raise InputError(f"no ground truth here (no {TRUTH_NAME} in {self.data}); give its path "
                             f"(`ground_truth`, or the CSV itself)", path=self.given)
        return GroundTruth.from_csv(self.ground_truth, any_score=any_score)  # criticality: tasks.csv beside it

    def training_tasks(self, ids=None) -> TaskSet:
        """The task folders beside the ground truth (the organisers' ``task-data/train-tasks``), those of ``ids``
        only when given."""

        return load_ntcir_tasks(self.data, ids=ids)

    def pool(self, given: str | Path | None = None) -> Pool:
        """``given`` (a pool file or name), else the ``models.csv`` beside the data, else the built-in ntcir19."""

        if given is not None:
            return load_pool(given)
        return load_pool(self.models_csv if self.models_csv is not None else "ntcir19")

    def ranking_tasks(self, split: str | None = None) -> RankingTasks:
        """The tasks a ``rank`` of this path ranks: the organisers' ``split`` (``test`` | ``train``; the only one
        present when None) with tasks.csv's ids and fields, else every task folder under the path. ``split`` on a
        path without the organisers' layout is an error."""

        if not self.given.is_dir():
            raise InputError("not a folder of tasks (a table file is ranked as one task: load_table_task)",
                             path=self.given)
        layout = find_layout(self.given)
        if layout is None:
            if split:
                raise InputError(f"`split` takes the organisers' layout: a folder holding task-data/test-tasks or "
                                 f"task-data/train-tasks (or data/ with them), not {self.given}", field="split")
            return RankingTasks(list(load_ntcir_tasks(self.given)), None, self.given, [], None)
        which, folder = layout.split_folder(split, self.given)
        absent = absent_test_tasks(layout) if which == "test" else []
        return RankingTasks(list(load_split(layout, which)), which, folder, absent, layout)

    def describe(self) -> str:
        """Where the ground truth came from, in words."""
        return str(self.ground_truth) if self.ground_truth is not None else f"{self.data} (no ground truth)"


@dataclass(frozen=True)
class RankingTasks:
    """What :meth:`ResolvedFolder.ranking_tasks` found: the tasks, the organisers' split they are (None for a plain
    folder), its folder, and the official test topics of tasks.csv that are not downloaded."""

    tasks: list
    split: str | None
    folder: Path
    absent: list[str]
    layout: OrganisersLayout | None

    def describe(self) -> str | None:
        """One line saying which tasks these are (None for a plain folder)."""
        if self.split is None:
            return None
        kind = "test tasks (the official topics)" if self.split == "test" else "training tasks"
        if self.absent:
            kind = (f"test tasks of the {len(self.tasks) + len(self.absent)} official topics ({len(self.absent)} "
                    f"not downloaded)")
        return f"ranking the {len(self.tasks)} {kind} of {self.folder}"

    def warning(self) -> str | None:
        """The official test tasks the run will miss, in one line (None when none is missing)."""
        if not self.absent or self.layout is None:
            return None

        return (f"{describe_absent(self.layout, self.absent)}; the run will miss them (validate --official refuses "
                f"it)")


def _near(folder: Path, name: str) -> Path | None:
    """``name`` in ``folder`` or up to three folders above it (a task folder inside a layout)."""
    for p in (folder, *list(folder.parents)[:3]):
        if (p / name).is_file():
            return p / name
    return None


def is_truth_csv(path: Path) -> bool:
    """Whether ``path`` is a file whose header names a ground truth's columns (task_id, model_id), whatever its
    suffix (``gt.txt``, ``truth``) and whether it is UTF-8 or UTF-16 (by its byte-order mark: the reader then names
    the encoding, instead of this saying it is no ground truth). Only a regular file is opened (a FIFO would
    block) and only its first 64 KiB are read."""
    import stat

    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False
        with open(path, "rb") as fh:
            head = fh.read(1 << 16)
    except OSError:
        return False
    bom = utf16_bom(head)
    text = head.decode(bom or "utf-8-sig", errors="replace").lstrip("\ufeff")
    first = text.split("\n", 1)[0]
    cols = {c.strip().strip('"') for c in first.strip().split(",")}
    return all(c in cols for c in TRUTH_COLUMNS)


def resolve_folder(path: str | Path, ground_truth: str | Path | None = None) -> ResolvedFolder:
    """Read ``path`` — the organisers' repository root, its ``data/``, a generated layout or a ground-truth CSV —
    into a :class:`ResolvedFolder`; ``ground_truth`` (a CSV, or a folder resolved the same way) overrides the one
    found there. A path that does not exist, or a file that is no ground truth, is an error naming it."""
    given = Path(path)
    if not given.exists():
        raise InputError("no such file or folder", path=given)
    if given.is_file():
        if not is_truth_csv(given):
            raise InputError(f"not a ground truth (a CSV with columns {', '.join(TRUTH_COLUMNS)}, f1) nor a folder",
                             path=given)
        data = given.parent
        layout = find_layout(data, need_tasks=False)
        found = ResolvedFolder(given, "ground truth", data, given, _near(data, "tasks.csv"),
                               _near(data, "models.csv"), layout)
    else:
        layout = find_layout(given, need_tasks=False)
        if layout is not None:
            found = ResolvedFolder(given, "organisers", layout.data, _near(layout.data, TRUTH_NAME),
                                   layout.tasks_csv, layout.models_csv or _near(given, "models.csv"), layout)
        else:
            data = given / "data" if (given / "data" / TRUTH_NAME).is_file() else given
            found = ResolvedFolder(given, "folder", data, _near(data, TRUTH_NAME), _near(data, "tasks.csv"),
                                   _near(data, "models.csv"))
    if ground_truth is not None:
        other = resolve_folder(ground_truth)
        if other.ground_truth is None:
            raise InputError(f"no ground truth there (no {TRUTH_NAME})", path=ground_truth)
        found = ResolvedFolder(found.given, found.kind, found.data, other.ground_truth,
                               found.tasks_csv or other.tasks_csv, found.models_csv, found.layout)
    return found


__all__ = ["TRUTH_NAME", "RankingTasks", "ResolvedFolder", "is_truth_csv", "resolve_folder"]
