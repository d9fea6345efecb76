"""Generated example data: synthetic text tasks, ground truth and NTCIR-style layouts, seeded. Used by
``modelseek demo`` and re-exported by :mod:`modelseek.testing` (whose mocks build on it)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pandas as pd

from ...core.io import atomic_write_text
from .task import Criticality, Split, Task
from .truth import GroundTruth

DOMAINS = {
    "reviews": ["product", "delivery", "price", "quality", "support", "package", "refund", "store"],
    "news": ["election", "market", "storm", "court", "minister", "league", "vaccine", "budget"],
    "finance": ["shares", "earnings", "inflation", "bond", "dividend", "merger", "rates", "forecast"],
    "medical": ["patient", "dose", "symptom", "trial", "therapy", "clinic", "diagnosis", "infection"],
    "social": ["friends", "weekend", "party", "selfie", "trip", "concert", "coffee", "game"],
}
CLASS_WORDS = [
    ["excellent", "wonderful", "great", "love"], ["terrible", "awful", "broken", "hate"],
    ["neutral", "average", "okay", "fine"], ["urgent", "immediately", "asap", "now"],
    ["question", "wonder", "how", "why"], ["thanks", "grateful", "appreciate", "kind"],
    ["angry", "furious", "outraged", "annoyed"], ["funny", "hilarious", "joke", "laugh"],
]
FILLER = ["the", "a", "this", "my", "our", "was", "is", "really", "quite", "very", "today", "again", "with",
          "about", "for", "and", "it", "we", "they", "after"]


def _sentence(rng: np.random.Generator, domain: list[str], cls_words: list[str], noise: float) -> str:
    n = int(rng.integers(6, 30))
    words = list(rng.choice(FILLER, size=n))
    for _ in range(int(rng.integers(1, 3))):
        words.insert(int(rng.integers(0, len(words) + 1)), str(rng.choice(domain)))
    if rng.random() >= noise:
        words.insert(int(rng.integers(0, len(words) + 1)), str(rng.choice(cls_words)))
    else:
        other = CLASS_WORDS[int(rng.integers(0, len(CLASS_WORDS)))]
        words.insert(int(rng.integers(0, len(words) + 1)), str(rng.choice(other)))
    text = " ".join(words)
    return text[0].upper() + text[1:] + "."


def make_text_task(task_id: str = "demo", n_classes: int = 3, n_train: int = 120, n_val: int = 30,
                   n_test: int = 30, domain: str = "reviews", noise: float = 0.15, seed: int = 0,
                   criticality: str | None = None) -> Task:
    """A keyword-driven text-classification task (labels like ``label_0`` or class words)."""
    if not 2 <= n_classes <= len(CLASS_WORDS):
        raise ValueError(f"n_classes must be in 2..{len(CLASS_WORDS)}")
    rng = np.random.default_rng(seed)
    vocab = DOMAINS[domain]
    names = [CLASS_WORDS[c][0] for c in range(n_classes)]

    def split(n: int) -> Split:
        ys = np.arange(n) % n_classes
        rng.shuffle(ys)
        texts = tuple(_sentence(rng, vocab, CLASS_WORDS[y], noise) for y in ys)
        return Split(texts, tuple(names[y] for y in ys))

    return Task(id=str(task_id), train=split(n_train), val=split(n_val), test=split(n_test) if n_test else None,
                name=f"synthetic {domain} ({n_classes} classes)", source="synthetic",
                instruction=f"Classify the {domain} text into: {', '.join(names)}.",
                criticality=None if criticality is None else Criticality.parse(criticality))


def write_task_table(task: Task, path: str | Path) -> Path:
    """Write a task as one CSV with columns text, label, split."""
    rows = []
    for name, sp in (("train", task.train), ("val", task.val), ("test", task.test)):
        if sp is None:
            continue
        rows += [{"text": t, "label": y, "split": name} for t, y in zip(sp.texts, sp.labels)]
    path = Path(path)
    atomic_write_text(path, pd.DataFrame(rows).to_csv(index=False))
    return path


def make_ground_truth(task_ids: list[str], model_ids: list[str], seed: int = 0, spread: float = 0.04,
                      noise: float = 0.03) -> GroundTruth:
    """F1 = base(task) + quality(model) + noise, clipped to [0.05, 1]."""
    rng = np.random.default_rng(seed)
    quality = rng.normal(0, spread, size=len(model_ids))
    rows = []
    for t in task_ids:
        base = rng.uniform(0.55, 0.9)
        task_noise = noise * rng.uniform(0.3, 2.0)
        f1 = np.clip(base + quality + rng.normal(0, task_noise, size=len(model_ids)), 0.05, 1.0)
        rows += [(str(t), str(m), float(round(v, 6))) for m, v in zip(model_ids, f1)]
    return GroundTruth(pd.DataFrame(rows, columns=["task_id", "model_id", "f1"]))


def make_ntcir_layout(root: str | Path, n_tasks: int = 12, n_models: int = 6, seed: int = 0,
                      n_train: int = 60, n_val: int = 20, n_test: int = 20) -> Path:
    """Write a small NTCIR-19 Subtask A folder; returns ``root``."""
    root = Path(root)
    rng = np.random.default_rng(seed)
    task_ids = [str(1001 + i) for i in range(n_tasks)]
    model_ids = [str(i + 1) for i in range(n_models)]
    truth = make_ground_truth(task_ids, model_ids, seed=seed)
    (root / "task-data" / "train-tasks").mkdir(parents=True, exist_ok=True)
    models = io.StringIO(newline="")
    w = csv.writer(models)
    w.writerow(["model_id", "model_name", "model_hf_url"])
    for m in model_ids:
        w.writerow([m, f"test-org/model-{m}", f"https://example.invalid/test-org/model-{m}"])
    atomic_write_text(root / "models.csv", models.getvalue())
    domains = list(DOMAINS)
    tasks = io.StringIO(newline="")
    w = csv.writer(tasks)
    w.writerow(["task_id", "task_name", "task_source", "task_class_count", "task_type", "task_instruction",
                "task_criticalness"])
    for i, t in enumerate(task_ids):
        n_classes = int(rng.integers(2, 6))
        domain = domains[i % len(domains)]
        task = make_text_task(t, n_classes, n_train, n_val, n_test, domain=domain, seed=seed * 1000 + i)
        folder = root / "task-data" / "train-tasks" / t
        for name, sp in (("train", task.train), ("val", task.val), ("test", task.test)):
            if sp is None:  # n_test=0: no test split, no test file
                continue
            atomic_write_text(folder / f"{name}.jsonl", "".join(json.dumps({"text": text, "labels": y}) + "\n"
                                                               for text, y in zip(sp.texts, sp.labels)))
        crit = Criticality.from_regret(truth.regret(t)).value.capitalize() + " Criticalness"
        w.writerow([t, t, "llm", n_classes, "train", task.instruction, crit])
    atomic_write_text(root / "tasks.csv", tasks.getvalue())
    atomic_write_text(root / "ground-truth.csv", truth.to_frame().drop(columns=["criticality"]).to_csv(index=False))
    return root
