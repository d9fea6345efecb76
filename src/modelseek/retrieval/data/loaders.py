"""Loading tasks from files and from Hugging Face ``datasets``.

Supported layouts:

* NTCIR-19 Model Retrieval: ``<root>/task-data/<group>/<id>/{train,val,test}.jsonl`` (fields ``text`` and
  ``labels``) with metadata from ``<root>/tasks.csv``; or a folder of ``<id>/`` task folders; or one task
  folder.
* One table file (CSV, TSV, JSONL, Parquet) with a text column and a label column and an optional split
  column (``train``/``val``/``validation``/``dev``/``test``); without one, the organisers' split rules apply.
* A ``datasets.Dataset``/``DatasetDict``, split by the organisers' download rules (:func:`from_hf_dataset`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...core.errors import InputError
from ...core.io import check_file, csv_dict_reader, iter_jsonl, keyed_rows, open_text, read_json, suffix_of
from .task import Criticality, LabelKind, Split, Task, TaskSet

SPLIT_CAP = 5000
SPLIT_SEED = 0
_SPLIT_ALIASES = {"train": "train", "val": "val", "valid": "val", "validation": "val", "dev": "val",
                  "test": "test"}


# ----------------------------------------------------------------------------------------------- checks
def _check_splits(task_id: str, splits: Mapping[str, Split], path: Path | str) -> None:
    """A task needs at least two classes in train and a non-empty validation split."""
    train = splits.get("train")
    if train is None or len(train) == 0:
        raise InputError(f"task {task_id!r} has no training examples", path=path, field="train")
    classes = set(train.labels)
    if len(classes) < 2:
        only = next(iter(classes))
        raise InputError(f"task {task_id!r} has only one class ({only!r}) in train; need at least 2",
                         path=path, field="labels")



def unpadded(name: str) -> str:
    """A zero-padded number without its padding (``0007`` -> ``7``); any other text as it is. String work, not
    ``int()``: a folder or id of 5,000 digits stays a name (``int()`` refuses over 4,300), and ``isdigit()`` digits
    that are not ASCII (``²``) are no number."""
    return (name.lstrip("0") or "0") if name.isascii() and name.isdigit() else name


def padded(name: str, width: int) -> str:
    """A number zero-padded to ``width`` (``7`` -> ``0007``), as ``f"{int(name):0{width}d}"`` without ``int()``;
    any other text as it is."""
    return unpadded(name).zfill(width) if name.isascii() and name.isdigit() else name

def read_jsonl_split(path: Path, text_field: str = "text", label_field: str = "labels") -> Split:
    """Read one JSONL split; every bad line is an error naming file, line and field."""
    texts: list[str] = []
    labels: list[str] = []
    for lineno, rec in iter_jsonl(path):
        if not isinstance(rec, dict):
            raise InputError("expected a JSON object", path=path, line=lineno)
        for f in (text_field, label_field):
            if f not in rec:
                raise InputError(f"missing (fields present: {', '.join(rec)})", path=path, line=lineno, field=f)
        text, label = rec[text_field], rec[label_field]
        if not isinstance(text, str) or not text.strip():
            raise InputError("empty text", path=path, line=lineno, field=text_field)
        if label is None or (isinstance(label, str) and not label.strip()):
            raise InputError("empty label", path=path, line=lineno, field=label_field)
        texts.append(text)
        labels.append(str(label))
    return Split(tuple(texts), tuple(labels))


# ----------------------------------------------------------------------------------------------- NTCIR
def read_tasks_csv(path: Path) -> dict[str, dict[str, str]]:
    """``tasks.csv`` of the NTCIR layout -> {task_id: row}."""
    out: dict[str, dict[str, str]] = {}
    with open_text(path, "tasks file") as fh:
        reader = csv_dict_reader(fh, path)  # long fields read, errors located, a column named twice refused
        if reader.fieldnames is None or "task_id" not in reader.fieldnames:
            raise InputError("missing column", path=path, line=1, field="task_id")
        for lineno, tid, row in keyed_rows(reader, "task_id", path, "empty task id",
                                           "task {key!r} is listed again (first on line {first})"):
            crit = (row.get("task_criticalness") or "").strip()
            if crit:  # checked here, where the line is known (a repeated header row, a typo)
                try:
                    Criticality.parse(crit)
                except InputError as exc:
                    raise InputError(exc.message, path=path, line=lineno, field="task_criticalness") from None
            out[tid] = row
    return out


def _meta_kwargs(row: Mapping[str, str] | None, path: Path | None) -> dict[str, Any]:
    if not row:
        return {}
    kw: dict[str, Any] = {
        "name": row.get("task_name") or "",
        "instruction": row.get("task_instruction") or "",
        "source": row.get("task_source") or "",
        "metadata": {k: v for k, v in row.items() if k and v not in (None, "")},
    }
    crit = (row.get("task_criticalness") or "").strip()
    if crit:
        try:
            kw["criticality"] = Criticality.parse(crit)
        except InputError as exc:
            raise InputError(exc.message, path=path, field="task_criticalness") from None
    try:  # classification or regression as tasks.csv declares it (task_class_count), never from the labels' look
        kw["label_kind"] = LabelKind.declared(row)
    except InputError as exc:
        raise InputError(exc.message, path=path, field="label_kind") from None
    return kw


def load_ntcir_task(folder: str | Path, meta: Mapping[str, str] | None = None,
                    meta_path: Path | None = None) -> Task:
    """One task folder with ``train.jsonl``, ``val.jsonl`` and optional ``test.jsonl``."""
    folder = Path(folder)
    splits: dict[str, Split] = {}
    for name in ("train", "val", "test"):
        p = folder / f"{name}.jsonl"
        if p.exists():
            splits[name] = read_jsonl_split(p)
            if name == "test" and len(splits[name]) == 0:  # absent is fine (the test tasks); empty is damage
                raise InputError("test.jsonl holds no examples (remove it if the task has no test split)", path=p)
    if "train" not in splits:
        raise InputError("task folder has no train.jsonl", path=folder)
    if "val" not in splits:
        raise InputError("task folder has no val.jsonl", path=folder)
    _check_splits(folder.name, splits, folder / "train.jsonl")
    return Task(id=folder.name, train=splits["train"], val=splits["val"], test=splits.get("test"),
                **_meta_kwargs(meta, meta_path))


def _task_folders(root: Path) -> list[Path]:
    if (root / "train.jsonl").exists():
        return [root]
    for candidate in (root / "task-data" / "train-tasks", root / "task-data", root / "train-tasks", root):
        if candidate.is_dir():
            subs = [p for p in candidate.iterdir() if p.is_dir() and (p / "train.jsonl").exists()]
            if subs:
                return sorted(subs, key=lambda p: (len(p.name), p.name))
    return []


def find_tasks_csv(root: Path) -> Path | None:
    for p in (root, *root.parents[:3]):
        if (p / "tasks.csv").exists():
            return p / "tasks.csv"
    return None


def load_ntcir_tasks(root: str | Path, ids: Iterable[str] | None = None) -> TaskSet:
    """All task folders under an NTCIR subtask-A root (or a folder of task folders, or one task folder)."""
    root = Path(root)
    if not root.exists():
        raise InputError("no such file or folder", path=root)
    folders = _task_folders(root)
    if not folders:
        raise InputError("no task folders (<id>/train.jsonl) found", path=root)
    wanted = None if ids is None else {str(i) for i in ids}
    tasks_csv = find_tasks_csv(root)
    meta = read_tasks_csv(tasks_csv) if tasks_csv else {}
    tasks = []
    for f in folders:
        # the organisers' downloader pads test-task folders ({task_id:04d}): 0001 is tasks.csv's task 1
        tid = f.name if f.name in meta or unpadded(f.name) not in meta else unpadded(f.name)
        if wanted is not None and tid not in wanted:
            continue
        task = load_ntcir_task(f, meta.get(tid), tasks_csv)
        tasks.append(task if tid == f.name else dataclasses.replace(task, id=tid))
    return TaskSet(tasks)


# ----------------------------------------------------------------------------------------------- tables
def _read_table(path: Path):
    """A table file as a DataFrame; text formats go through the one reader (:mod:`modelseek.core.io`), so a
    wrong encoding, a directory or a JSON number too large for a float is a located ``InputError``."""
    import pandas as pd  # lazy: pandas

    suffix = suffix_of(path)  # a symlink is judged by its target's suffix
    if suffix in (".csv", ".tsv"):
        text = open_text(path, "table file")
        try:
            return pd.read_csv(text, sep="\t" if suffix == ".tsv" else ",", dtype=str, keep_default_na=False)
        except pd.errors.EmptyDataError:
            raise InputError("empty table (no header line)", path=path, line=1) from None
        except (ValueError, pd.errors.ParserError) as exc:
            raise InputError(f"cannot read table: {str(exc).strip().splitlines()[-1]}", path=path) from None
    if suffix == ".jsonl":
        records = []
        for ln, rec in iter_jsonl(path, "table file"):
            if not isinstance(rec, dict):
                raise InputError("expected a JSON object", path=path, line=ln)
            records.append(rec)
        return pd.DataFrame.from_records(records)
    if suffix == ".json":
        data = read_json(path, "table file")
        if isinstance(data, list) and all(isinstance(r, dict) for r in data):
            return pd.DataFrame.from_records(data)
        if isinstance(data, dict) and all(isinstance(v, list) for v in data.values()):
            if len({len(v) for v in data.values()}) > 1:
                raise InputError("columns of different lengths", path=path)
            return pd.DataFrame(data)
        raise InputError("expected a list of records or a mapping of column: list", path=path)
    if suffix in (".parquet", ".pq"):
        check_file(path, "table file")
        try:
            return pd.read_parquet(path)
        except (ValueError, OSError) as exc:
            raise InputError(f"cannot read table: {exc}", path=path) from None
    raise InputError(f"unsupported file type {suffix!r} (use .csv, .tsv, .jsonl, .json or .parquet)",
                     path=path)


def load_table_task(path: str | Path, text_col: str | Sequence[str] = "text",
                    label_col: str | Sequence[str] = "label", split_col: str | None = "split",
                    task_id: str | None = None, seed: int = SPLIT_SEED,
                    label_kind: LabelKind | str | None = None) -> Task:
    """A task from one table file.

    ``label_kind`` (``class`` | ``number``) says whether the labels are classes or numeric targets (a regression
    task); a table declares nothing else, so without it the task is a classification task whatever its values look
    like.

    ``text_col`` may name several columns (joined with ". "), ``label_col`` several one-hot columns.
    If ``split_col`` exists in the file its values choose the split; otherwise the organisers' rules apply
    (80/10/10 stratified, seed 0, each split capped at 5,000 rows).
    """
    path = Path(path)
    if not path.exists():
        raise InputError("no such file", path=path)
    df = _read_table(path)
    header_line = 1
    text_cols = [text_col] if isinstance(text_col, str) else list(text_col)
    label_cols = [label_col] if isinstance(label_col, str) else list(label_col)
    if "labels" in df.columns and label_cols == ["label"] and "label" not in df.columns:
        label_cols = ["labels"]
    for c in text_cols + label_cols:
        if c not in df.columns:
            which = "text" if c in text_cols else "label"
            raise InputError(f"unknown column (columns: {', '.join(map(str, df.columns))}; name the "
                             f"{which} column with `{which}_col`)", path=path,
                             line=header_line, field=c)
    if len(df) == 0:
        raise InputError("no data rows (the file has only a header)", path=path, line=header_line)
    # Row i of the frame is line i + 2 of a CSV (header) and line i + 1 of a JSONL file.
    offset = 2 if suffix_of(path) in (".csv", ".tsv") else 1
    texts = _join_text(df, text_cols, path, offset)
    labels = _labels(df, label_cols, path, offset)
    tid = task_id or path.stem
    if split_col and split_col in df.columns:
        splits: dict[str, tuple[list[str], list[str]]] = {"train": ([], []), "val": ([], []), "test": ([], [])}
        for i, value in enumerate(df[split_col]):
            # a row without the split (a JSONL line lacking the key, an empty CSV cell) is missing, not "nan"
            if value is None or (isinstance(value, float) and math.isnan(value)) or not str(value).strip():
                raise InputError("missing split (use train, val, test)", path=path, line=i + offset,
                                 field=split_col)
            key = _SPLIT_ALIASES.get(str(value).strip().lower())
            if key is None:
                raise InputError(f"unknown split {value!r} (use train, val, test)", path=path,
                                 line=i + offset, field=split_col)
            splits[key][0].append(texts[i])
            splits[key][1].append(labels[i])
        built = {k: _canonical(Split(tuple(v[0]), tuple(v[1]))) for k, v in splits.items() if v[0]}
        if "val" not in built:
            test = {"test": built["test"]} if "test" in built else {}
            built = _organiser_splits({"train": built["train"], **test}, seed)
    else:
        try:
            built = _organiser_splits({"train": _canonical(Split(tuple(texts), tuple(labels)))}, seed)
        except InputError as exc:
            raise InputError(exc.message, path=path, field=exc.field) from None
    _check_splits(tid, built, path)
    return Task(id=tid, train=built["train"], val=built["val"], test=built.get("test"), source=str(path),
                label_kind=None if label_kind is None else LabelKind.parse(label_kind, field="label_kind"))


def _join_text(df, cols: list[str], path: Path, offset: int) -> list[str]:
    out = []
    for i, row in enumerate(df[cols].itertuples(index=False)):
        parts = [str(v).strip() for v in row if v is not None and str(v).strip() and str(v) != "nan"]
        if not parts:
            raise InputError("empty text", path=path, line=i + offset, field=cols[0])
        out.append(". ".join(parts))
    return out


def _labels(df, cols: list[str], path: Path, offset: int) -> list[str]:
    if len(cols) == 1:
        out = []
        for i, v in enumerate(df[cols[0]]):
            if v is None or str(v).strip() in ("", "nan", "None"):
                raise InputError("empty label", path=path, line=i + offset, field=cols[0])
            out.append(str(v).strip())
        return out
    return _one_hot_to_labels(df[cols].to_numpy(), cols, path, offset)


def _one_hot_to_labels(values, cols: list[str], path: Path | str | None, offset: int) -> list[str]:
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise InputError("one-hot label columns must be numeric", path=path, field=cols[0]) from None
    out = []
    for i, row in enumerate(arr):
        if not np.isfinite(row).all() or row.max() <= 0:
            raise InputError("no label set in one-hot columns", path=path, line=i + offset, field=cols[0])
        out.append(str(cols[int(np.argmax(row))]))
    return out


# ------------------------------------------------------------------------------------------ split rules
def _cap(split: Split, rng_seed: int, cap: int = SPLIT_CAP) -> Split:
    if len(split) <= cap:
        return split
    rng = np.random.default_rng(rng_seed)
    idx = np.sort(rng.choice(len(split), size=cap, replace=False))
    return Split(tuple(split.texts[i] for i in idx), tuple(split.labels[i] for i in idx))


def _canonical(split: Split) -> Split:
    """The rows of a user's table in a canonical order (by label, then text; stable for duplicates), so that the
    seeded hold-out and every later step give the same answer for any order of the file's rows. (Hugging Face
    data sets keep their own order: the organisers' split rules are defined on it.)"""
    order = sorted(range(len(split)), key=lambda i: (split.labels[i], split.texts[i]))
    return _take(split, order)


def _take(split: Split, idx) -> Split:
    return Split(tuple(split.texts[i] for i in idx), tuple(split.labels[i] for i in idx))


def _holdout(split: Split, fraction: float, seed: int) -> tuple[Split, Split]:
    """Split off ``fraction`` of ``split``, stratified where every class has at least 2 examples."""
    from sklearn.model_selection import train_test_split  # lazy: sklearn

    if len(split) < 10:  # _organiser_splits checks the whole first; this guards other callers
        raise InputError(f"only {len(split)} examples: too few to hold out validation/test examples (at least 10)")
    idx = np.arange(len(split))
    labels = np.asarray(split.labels)
    _, counts = np.unique(labels, return_counts=True)
    n_hold = max(1, round(fraction * len(split)))
    stratify = labels if counts.min() >= 2 and n_hold >= len(counts) else None
    keep, hold = train_test_split(idx, test_size=n_hold, random_state=seed, shuffle=True, stratify=stratify)
    return _take(split, np.sort(keep)), _take(split, np.sort(hold))


def _organiser_splits(splits: Mapping[str, Split], seed: int = SPLIT_SEED) -> dict[str, Split]:
    """The organisers' rules: own train/val/test where they exist; train+test -> 10% of train becomes
    validation; train only -> 80/10/10 (stratified where possible, seed 0); each split capped at 5,000."""
    out = dict(splits)
    if "train" not in out:
        raise InputError("data set has no train split")
    need = 10 if "test" in out else 11  # 11: 1 test row, then 1 validation row of the other 10
    if "val" not in out and len(out["train"]) < need:
        # the data itself is the problem (a one-row table), not an option: say so, and how to give the splits
        raise InputError(f"only {len(out['train'])} example(s) to train on: too few to hold out validation"
                         f"{'' if 'test' in out else ' and test'} examples (at least {need}), or give each row's "
                         f"split (train/val/test) in a 'split' column")
    if "val" not in out:
        if "test" in out:
            out["train"], out["val"] = _holdout(out["train"], 0.10, seed)
        else:
            rest, test = _holdout(out["train"], 0.10, seed)
            # 10% of the whole = 1/9 of the remaining 90%
            train, val = _holdout(rest, 1.0 / 9.0, seed)
            out.update(train=train, val=val, test=test)
    return {k: _cap(v, seed) for k, v in out.items()}


# ------------------------------------------------------------------------------------------ HF datasets
def from_hf_dataset(ds: Any, text_columns: str | Sequence[str] = "text",
                    label_columns: str | Sequence[str] = "label", task_id: str = "hf-task",
                    seed: int = SPLIT_SEED, **task_kw: Any) -> Task:
    """A task from a ``datasets.Dataset`` or ``DatasetDict`` by the organisers' download rules.

    Several text columns are joined with ". "; several label columns are read as one-hot and become one
    label (the column name); a ``ClassLabel`` feature contributes its names.
    """
    text_cols = [text_columns] if isinstance(text_columns, str) else list(text_columns)
    label_cols = [label_columns] if isinstance(label_columns, str) else list(label_columns)
    if hasattr(ds, "keys") and callable(ds.keys):
        raw = {name: ds[name] for name in ds.keys()}  # noqa: SIM118 - duck-typed DatasetDict: iterate what keys() says
    else:
        raw = {"train": ds}
    named: dict[str, Any] = {}
    for name, part in raw.items():
        key = _SPLIT_ALIASES.get(name.lower())
        if key and key not in named:
            named[key] = part
    if "train" not in named:
        raise InputError(f"data set has no train split (splits: {', '.join(raw)})", field="split")
    splits: dict[str, Split] = {}
    for key, part in named.items():
        cols = list(part.column_names)
        for c in text_cols + label_cols:
            if c not in cols:
                raise InputError(f"unknown column in split {key!r} (columns: {', '.join(cols)})", field=c)
        columns = {c: list(part[c]) for c in text_cols}  # plain lists: Column indexing is slow
        texts = []
        for i in range(len(part)):
            pieces = [str(columns[c][i]).strip() for c in text_cols
                      if columns[c][i] is not None and str(columns[c][i]).strip()]
            if not pieces:
                raise InputError(f"empty text in split {key!r} row {i}", field=text_cols[0])
            texts.append(". ".join(pieces))
        if len(label_cols) == 1:
            feature = part.features[label_cols[0]]
            names = getattr(feature, "names", None)
            labels = [names[v] if names is not None and isinstance(v, (int, np.integer)) and v >= 0 else str(v)
                      for v in list(part[label_cols[0]])]
        else:
            matrix = np.column_stack([np.asarray(list(part[c]), dtype=float) for c in label_cols])
            labels = _one_hot_to_labels(matrix, label_cols, None, 0)
        splits[key] = Split(tuple(texts), tuple(labels))
    built = _organiser_splits(splits, seed)
    _check_splits(task_id, built, f"<dataset {task_id}>")
    return Task(id=task_id, train=built["train"], val=built["val"], test=built.get("test"), **task_kw)


def load_tasks(path: str | Path, **kw: Any) -> TaskSet:
    """A task set from a path: an NTCIR root or task folder, or a single table file."""
    p = Path(path)
    if not p.exists():
        raise InputError("no such file or folder", path=p)
    if p.is_file():
        return TaskSet([load_table_task(p, **kw)])
    return load_ntcir_tasks(p)
