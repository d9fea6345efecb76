"""Task representations: what a learned ranker knows about a task before any candidate is loaded.

For a :class:`~modelseek.retrieval.data.task.Task`, :func:`represent` computes, with an offline text encoder
(:mod:`modelseek.retrieval.taskrep.encoders`; default all-MiniLM-L6-v2):

* ``mean`` — the mean embedding of (a seeded, class-stratified sample of at most ``max_texts``) training texts;
* ``prototypes`` — one mean embedding per class (the "task tokens" of Model Spider), classes in first-seen order;
* ``label_emb`` — the embeddings of the label names themselves;
* ``meta`` — encoder-free meta-features (:data:`META_FEATURES`): number of classes, train size, text length
  statistics, class entropy and imbalance, vocabulary richness, share of non-ASCII characters.

Representations are cached: in memory for the process, and on disk under ``cache_dir`` (one ``.arrays`` file per
task, keyed by a hash of the encoder, the options and the sampled texts and labels; the package's one
verified cache format, :mod:`modelseek.core.cache` — a corrupt file is recomputed). No task text is stored.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..data.task import Task, Split
from ...core.errors import InputError
from ...core.progress import progress_bar
from .encoders import ENCODERS, Encoder, get_encoder

#: bump when the computation changes, so that old cache files are not reused
VERSION = 2  # 2: the training split is read in a canonical row order (by label, then text)

META_FEATURES = ("log2_classes", "log10_train", "log1p_mean_words", "log1p_p10_words", "log1p_p50_words",
                 "log1p_p90_words", "class_entropy", "log_imbalance", "type_token_ratio", "non_ascii_frac",
                 "mean_label_words")


@dataclass(frozen=True)
class TaskRep:
    """Numbers only (no text): safe to store in a shipped artifact."""

    task_id: str
    mean: np.ndarray          # (d,)
    prototypes: np.ndarray    # (C, d)
    class_counts: np.ndarray  # (C,) training examples per class
    label_emb: np.ndarray     # (C, d)
    meta: np.ndarray          # (len(META_FEATURES),)
    encoder: str = ""

    @property
    def num_classes(self) -> int:
        return int(self.prototypes.shape[0])


def default_cache_dir() -> Path:
    """The task-representation cache folder: :func:`modelseek.core.cache.cache_dir` ``("taskrep")``."""
    from ...core.cache import cache_dir  # lazy: start-up

    return cache_dir("taskrep")


def resolve_cache_dir(cache_dir: str | Path | None) -> Path | None:
    """``"auto"`` -> :func:`default_cache_dir`; ``None`` -> no disk cache; else the path."""
    if cache_dir is None:
        return None
    if str(cache_dir) == "auto":
        return default_cache_dir()
    return Path(cache_dir)


# ------------------------------------------------------------------------------------------ meta-features
def _words(text: str) -> list[str]:
    return text.lower().split()


def meta_features(task: Task) -> np.ndarray:
    """The :data:`META_FEATURES` of a task's training split (no encoder needed)."""
    _check_task(task)
    texts, labels = task.train.texts, task.train.labels
    lengths = np.array([len(_words(t)) for t in texts], float)
    _, counts = np.unique(np.asarray(labels), return_counts=True)
    p = counts / counts.sum()
    n_classes = len(counts)
    entropy = float(-(p * np.log(p)).sum() / np.log(n_classes)) if n_classes > 1 else 0.0
    sample = texts[:2000]
    tokens = [w for t in sample for w in _words(t)]
    ttr = len(set(tokens)) / max(1, len(tokens))
    chars = "".join(sample)
    non_ascii = sum(1 for c in chars if ord(c) > 127) / max(1, len(chars))
    label_words = np.mean([len(str(y).replace("_", " ").split()) for y in task.label_names])
    return np.array([
        np.log2(n_classes), np.log10(len(texts)), np.log1p(lengths.mean()),
        *np.log1p(np.percentile(lengths, [10, 50, 90])), entropy, np.log(counts.max() / counts.min()),
        ttr, non_ascii, label_words,
    ], dtype=np.float64)


def _check_task(task: Task) -> None:
    task.require_data("a task representation")
    for i, t in enumerate(task.train.texts):
        if not isinstance(t, str) or not t.strip():
            raise InputError(f"task {task.id!r}: training text #{i + 1} is empty", field="text")
    classes = set(task.train.labels)
    if len(classes) < 2:
        raise InputError(f"task {task.id!r} has a single class ({next(iter(classes))!r}) in train; "
                         f"model ranking needs a classification task with at least 2 classes", field="label")


# ------------------------------------------------------------------------------------------ sampling
def sample_indices(labels: Sequence[str], max_texts: int, seed: int = 0) -> np.ndarray:
    """A seeded class-stratified sample of at most ``max_texts`` row indices (every class keeps >= 1 row)."""
    n = len(labels)
    if n <= max_texts:
        return np.arange(n)
    rng = np.random.default_rng(seed)
    arr = np.asarray(labels)
    out = []
    for c in dict.fromkeys(arr.tolist()):
        idx = np.flatnonzero(arr == c)
        k = max(1, round(max_texts * len(idx) / n))
        out.append(rng.choice(idx, size=min(k, len(idx)), replace=False))
    return np.sort(np.concatenate(out))


# ------------------------------------------------------------------------------------------ cache
_MEMORY: OrderedDict[str, TaskRep] = OrderedDict()
_MEMORY_MAX = 1024
_ARRAYS = ("mean", "prototypes", "class_counts", "label_emb", "meta")


def read_arrays(path: Path | None) -> dict[str, np.ndarray] | None:
    """The arrays of a cache file written by :func:`write_arrays`, or None when it is missing or fails
    verification (the one verified format, :mod:`modelseek.core.cache`; the caller recomputes)."""
    from ...core.cache import load_arrays  # lazy: start-up

    return load_arrays(path, what="task representation cache")


def write_arrays(path: Path | None, arrays: dict[str, np.ndarray]) -> None:
    """Write arrays atomically in the verified cache format (checked by :func:`read_arrays`)."""
    if path is None:
        return
    from ...core.cache import write_arrays as write  # lazy: start-up

    write(path, arrays)


def _read_cache(path: Path, task_id: str, encoder: str) -> TaskRep | None:
    arrays = read_arrays(path)
    if arrays is None or set(arrays) != set(_ARRAYS):
        return None
    return TaskRep(task_id, encoder=encoder, **arrays)


def _write_cache(path: Path, rep: TaskRep) -> None:
    write_arrays(path, {k: getattr(rep, k) for k in _ARRAYS})


def text_hash(task: Task, *parts: object) -> str:
    """A hash of the task's training texts and labels and of ``parts`` (for cache keys)."""
    h = hashlib.sha256("|".join(map(str, (f"v{VERSION}", len(task.train), *parts))).encode())
    for t, y in zip(task.train.texts, task.train.labels):
        h.update(t.encode("utf-8") + b"\x00" + y.encode("utf-8") + b"\x01")
    return h.hexdigest()[:32]


def cache_key(task: Task, encoder: Encoder, max_texts: int, seed: int) -> str:
    idx = sample_indices(task.train.labels, max_texts, seed)
    h = hashlib.sha256(f"v{VERSION}|{encoder.name}|{max_texts}|{seed}|{len(task.train)}".encode())
    for t, y in zip(task.train.texts, task.train.labels):  # the whole split: meta-features read all of it
        h.update(t.encode("utf-8") + b"\x00" + y.encode("utf-8") + b"\x01")
    h.update(idx.tobytes())
    return h.hexdigest()[:32]


# ------------------------------------------------------------------------------------------ computing
def canonical_task(task: Task) -> Task:
    """``task`` with its training rows in a canonical order (by label, then text): a representation, its seeded
    sample and its cache key do not depend on the order of the rows a user's file happened to have."""
    import dataclasses


    tr = task.train
    order = sorted(range(len(tr)), key=lambda i: (tr.labels[i], tr.texts[i]))
    if order == list(range(len(tr))):
        return task
    return dataclasses.replace(task, train=Split(tuple(tr.texts[i] for i in order), tuple(tr.labels[i] for i in order)))


def represent(task: Task, encoder: str | Encoder = "minilm", max_texts: int = 256, seed: int = 0,
              cache_dir: str | Path | None = "auto") -> TaskRep:
    """The :class:`TaskRep` of ``task`` (cached; see module docstring). Rows are read in a canonical order
    (:func:`canonical_task`)."""
    _check_task(task)
    task = canonical_task(task)
    enc = get_encoder(encoder)
    key = cache_key(task, enc, max_texts, seed)
    if key in _MEMORY:
        _MEMORY.move_to_end(key)
        return _with_id(_MEMORY[key], task.id)
    folder = resolve_cache_dir(cache_dir)
    path = folder / f"{key}.arrays" if folder is not None else None
    rep = _read_cache(path, task.id, enc.name) if path is not None else None
    if rep is None:
        rep = _compute(task, enc, max_texts, seed)
        if path is not None:
            _write_cache(path, rep)
    _MEMORY[key] = rep
    if len(_MEMORY) > _MEMORY_MAX:
        _MEMORY.popitem(last=False)
    return _with_id(rep, task.id)


def _with_id(rep: TaskRep, task_id: str) -> TaskRep:
    if rep.task_id == task_id:
        return rep
    return TaskRep(task_id, rep.mean, rep.prototypes, rep.class_counts, rep.label_emb, rep.meta, rep.encoder)


def _compute(task: Task, enc: Encoder, max_texts: int, seed: int) -> TaskRep:
    idx = sample_indices(task.train.labels, max_texts, seed)
    texts = [task.train.texts[i] for i in idx]
    labels = np.asarray([task.train.labels[i] for i in idx])
    classes = list(dict.fromkeys(task.train.labels))
    x = enc(texts)
    protos = np.stack([x[labels == c].mean(axis=0) for c in classes])
    full = np.asarray(task.train.labels)
    counts = np.array([(full == c).sum() for c in classes], float)
    label_emb = enc([str(c).replace("_", " ") for c in classes])
    return TaskRep(task.id, x.mean(axis=0).astype(np.float32), protos.astype(np.float32), counts,
                   label_emb.astype(np.float32), meta_features(task), enc.name)


def represent_many(tasks: Iterable[Task], encoder: str | Encoder = "minilm", max_texts: int = 256,
                   seed: int = 0, cache_dir: str | Path | None = "auto", progress: bool = False) -> list[TaskRep]:
    enc = get_encoder(encoder)
    tasks = list(tasks)
    return [represent(t, enc, max_texts, seed, cache_dir)
            for t in progress_bar(tasks, desc="task representations", disable=not progress)]


__all__ = ["ENCODERS", "META_FEATURES", "Encoder", "TaskRep", "default_cache_dir", "get_encoder", "meta_features",
           "read_arrays", "represent", "represent_many", "sample_indices", "text_hash", "write_arrays"]
