"""A stand-in of the organisers' NTCIR-19 Subtask A repository as a participant has it after the organisers'
``main.py download_test_tasks --all`` and ``download_models`` (see :mod:`modelseek.retrieval.data.organisers`).

What it reproduces, so that the participant's journey is tested on the layout they really have:

* ``data/tasks.csv`` with the organisers' columns: test tasks ``1..n_test`` (``task_type`` test, the tiers
  cycling High, Medium, Low) and training tasks ``1001..``; ``data/models.csv`` with the 20 candidates (and the
  byte-order mark the organisers' file starts with);
* ``data/task-data/test-tasks/{task_id:04d}/`` with ``train.jsonl`` and ``val.jsonl`` only, whose ``labels`` are
  what the downloader writes: class names, JSON integers (a data set without names), digit strings, one task
  with ``wide_classes`` classes (clinc_oos has 151), and one whose labels are JSON floats ``0.0`` ... ``1.0`` that
  tasks.csv declares 11 classes (task 33, google_wellformed_query's ratings as pandas writes a float column);
* ``data/task-data/train-tasks/<id>/`` with train/val/test and ``data/ground-truth.csv`` for them;
* ``data/models/NN/`` snapshots (a tiny random BERT saved with ``save_pretrained``, its tokenizer and a model
  card ``README.md``) for the candidates in ``snapshots``.
"""

from __future__ import annotations

import csv
import json
import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..retrieval.data.pool import ntcir_pool
from ..retrieval.data.synthetic import DOMAINS, make_ground_truth, make_text_task
from .tiny_models import make_tiny_bert

TIERS = ("High Criticalness", "Medium Criticalness", "Low Criticalness")
COLUMNS = ["task_id", "task_name", "task_source", "task_class_count", "task_type", "text_col", "label_col",
           "task_hf_dataset_name", "task_hf_subset_name", "task_hf_url", "task_instruction", "task_criticalness"]


def _write_jsonl(path: Path, texts: Sequence[str], labels: Sequence[object]) -> None:
    with open(path, "w", encoding="utf-8") as out:
        for text, y in zip(texts, labels):
            out.write(json.dumps({"text": text, "labels": y}) + "\n")


def _wide_split(rng: np.random.Generator, n_classes: int, per_class: int) -> tuple[list[str], list[str]]:
    """A task of many intents (as clinc_oos): each class has its own keyword among shared words."""
    ys = np.repeat(np.arange(n_classes), per_class)
    rng.shuffle(ys)
    words = DOMAINS["reviews"]
    texts = [f"please {words[int(rng.integers(len(words)))]} intent{y:03d} {words[int(rng.integers(len(words)))]}"
             for y in ys]
    return texts, [f"intent_{y:03d}" for y in ys]


def _rating_split(rng: np.random.Generator, per_class: int) -> tuple[list[str], list[float]]:
    """Ratings 0.0, 0.1 ... 1.0 as JSON floats (google_wellformed_query): a word per rating among shared words."""
    ys = np.repeat(np.arange(11), per_class)
    rng.shuffle(ys)
    words = DOMAINS["reviews"]
    texts = [f"how {words[int(rng.integers(len(words)))]} is query{y:02d} {words[int(rng.integers(len(words)))]}"
             for y in ys]
    return texts, [round(int(y) / 10, 1) for y in ys]


def _test_task(folder: Path, i: int, rng: np.random.Generator, n_train: int, n_val: int, wide: bool,
               wide_classes: int, ratings: bool = False) -> tuple[int, str]:
    """Write test task ``i``; -> (number of classes, instruction)."""
    folder.mkdir(parents=True, exist_ok=True)
    if ratings:
        for name, per in (("train", 3), ("val", 2)):
            _write_jsonl(folder / f"{name}.jsonl", *_rating_split(rng, per))
        return 11, ("Classify each question based on its complexity or specificity using a numerical label from 0.0 "
                    "to 1.0, where 1.0 indicates straightforward questions.")
    if wide:
        for name, per in (("train", 2), ("val", 1)):
            _write_jsonl(folder / f"{name}.jsonl", *_wide_split(rng, wide_classes, per))
        return wide_classes, f"Classify the request into one of {wide_classes} intents."
    n_classes = 2 + i % 4
    domain = list(DOMAINS)[i % len(DOMAINS)]
    task = make_text_task(str(i), n_classes, n_train, n_val, 0, domain=domain, seed=int(rng.integers(1 << 30)))
    names = list(dict.fromkeys(task.train.labels + task.val.labels))
    kind = i % 3  # what the downloader writes: names (ClassLabel), JSON integers, digit strings (raw values)
    for name, sp in (("train", task.train), ("val", task.val)):
        labels: list[object] = list(sp.labels)
        if kind == 1:
            labels = [names.index(y) for y in sp.labels]
        elif kind == 2:
            labels = [str(names.index(y)) for y in sp.labels]
        _write_jsonl(folder / f"{name}.jsonl", sp.texts, labels)
    return n_classes, task.instruction


def _snapshot(folder: Path, hf_id: str, seed: int) -> None:
    """A Hub snapshot stand-in: weights, config, tokenizer and the model card."""
    make_tiny_bert(folder, seed=seed, hidden_size=32, num_layers=2)
    (folder / "README.md").write_text(
        "---\nlanguage: en\nlicense: apache-2.0\ntags:\n- finance\n- sentiment\ndatasets:\n- financial_phrasebank\n"
        f"---\n# {hf_id}\n\nA stand-in of {hf_id}'s card: a BERT model further trained on financial news.\n",
        encoding="utf-8")


def make_organisers_layout(root: str | Path, n_test: int = 48, n_train_tasks: int = 6, snapshots: Sequence[int] = (5,),
                           seed: int = 0, n_train: int = 16, n_val: int = 8, wide_task: int | None = 3,
                           wide_classes: int = 151, n_models: int = 20, rating_task: int | None = 33,
                           absent: Sequence[int] = ()) -> Path:
    """Write the stand-in under ``root`` (the repository root; the data is in ``root/data``); returns ``root``.
    ``n_models`` < 20 lists only the first candidates in models.csv (a quicker pool for tests that fine-tune).
    ``rating_task`` is the test task whose labels are JSON floats 0.0 ... 1.0 (tasks.csv: 11 classes); the test
    tasks in ``absent`` are listed in tasks.csv but have no folder (a download that failed)."""
    root = Path(root)
    data = root / "data"
    rng = np.random.default_rng(seed)
    pool = ntcir_pool()[:n_models]
    (data / "task-data" / "test-tasks").mkdir(parents=True, exist_ok=True)
    with open(data / "models.csv", "w", newline="", encoding="utf-8-sig") as fh:  # the organisers' file has a BOM
        w = csv.writer(fh)
        w.writerow(["model_id", "model_name", "model_hf_url"])
        for c in pool:
            w.writerow([c.id, c.hf_id, f"https://huggingface.co/{c.hf_id}"])
    rows = []
    for i in range(1, n_test + 1):
        n_classes, instruction = _test_task(data / "task-data" / "test-tasks" / f"{i:04d}", i, rng, n_train, n_val,
                                            i == wide_task, wide_classes, i == rating_task)
        if i in absent:
            shutil.rmtree(data / "task-data" / "test-tasks" / f"{i:04d}")
        rows.append([i, f"stand-in/dataset-{i}", "hf", n_classes, "test", "text", "label", f"stand-in/dataset-{i}",
                     "", f"https://huggingface.co/datasets/stand-in/dataset-{i}", instruction, TIERS[(i - 1) % 3]])
    train_ids = [str(1001 + j) for j in range(n_train_tasks)]
    truth = make_ground_truth(train_ids, [c.id for c in pool], seed=seed)
    for j, t in enumerate(train_ids):
        task = make_text_task(t, 2 + j % 3, 40, 12, 12, domain=list(DOMAINS)[j % len(DOMAINS)], seed=seed * 100 + j)
        folder = data / "task-data" / "train-tasks" / t
        folder.mkdir(parents=True, exist_ok=True)
        for name, sp in (("train", task.train), ("val", task.val), ("test", task.test)):
            assert sp is not None
            _write_jsonl(folder / f"{name}.jsonl", sp.texts, sp.labels)
        rows.append([t, t, "llm", task.num_classes, "train", "text", "labels", "", "", "", task.instruction,
                     TIERS[j % 3]])
    with open(data / "tasks.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(COLUMNS)
        w.writerows(rows)
    truth.to_frame().drop(columns=["criticality"]).to_csv(data / "ground-truth.csv", index=False)
    for m in snapshots:
        _snapshot(data / "models" / f"{m:02d}", pool[m - 1].hf_id, seed=seed + m)
    return root


__all__ = ["make_organisers_layout"]
