"""The operator's reference: the benchmark's facts that no uploader can fix.

A board is created with a reference (``modelseek duel db init --reference FILE``) that fixes, per task, the
sample ids (``doc_id``\\ s, hence their number) and, for classification tasks (``avg_mcauroc``), each sample's
gold class and the number of classes. Every upload is checked against it before anything is computed: a
missing or extra ``doc_id``, a gold label or a class count that differs is a located error. The first
uploader fixes nothing.

The reference file is either a submission the operator trusts (a compiled submission: its doc_ids and gold
labels are taken, its scores ignored) or a gold file::

    {"reference": {"<task>": {"doc_ids": [0, 1, ...], "gold": [2, 0, ...], "n_classes": 3}, ...}}

``doc_ids`` are integers or names (as in submissions); ``gold`` (one class index per doc_id, in the order of
``doc_ids``) and ``n_classes`` are required on ``avg_mcauroc`` tasks and refused elsewhere (the per-sample
records of other metrics carry no label). The reference is stored in the board's ``meta`` rows, so it is
covered by the hash chain's row 0 and cannot be changed after creation.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import InputError
from .config import LeaderboardConfig, Metric
from .submission import MAX_BYTES, MAX_WORDS, Submission, _doc_ids, id_difference, parse_bytes, validate_submission

#: the meta key holding the reference (JSON) and the keys of the board's trust settings
META_REFERENCE, META_REVIEW, META_DEMO = "reference", "review", "demo"


@dataclass(frozen=True)
class TaskReference:
    """One task's facts: ``ids`` in submission order (integers before names, each sorted), and on
    classification tasks ``gold`` (class index per sample, same order) and ``n_classes``."""

    ids: tuple
    gold: np.ndarray | None = None
    n_classes: int | None = None
    words: np.ndarray | None = None     # word_perplexity: each document's number of words (same order)

    @property
    def n(self) -> int:
        return len(self.ids)


@dataclass(frozen=True)
class Reference:
    tasks: dict[str, TaskReference]

    # ------------------------------------------------------------------------------------ building
    @classmethod
    def from_submission(cls, sub: Submission) -> Reference:
        out = {}
        for task, d in sub.data.items():
            if d.metric is Metric.AVG_MCAUROC:
                out[task] = TaskReference(d.doc_ids, d.need("gold").astype(np.int64),
                                          int(d.need("probs").shape[1]))
            elif d.metric is Metric.WORD_PERPLEXITY:
                out[task] = TaskReference(d.doc_ids, words=d.need("words").astype(np.int64))
            else:
                out[task] = TaskReference(d.doc_ids)
        return cls(out)

    @classmethod
    def from_mapping(cls, obj: Any, config: LeaderboardConfig, source: str = "<reference>") -> Reference:
        """From a gold file's parsed JSON (see the module docstring); every task of ``config`` is required."""
        if not isinstance(obj, Mapping) or not isinstance(obj.get("reference"), Mapping):
            raise InputError("a reference file is a compiled submission or {\"reference\": {task: {\"doc_ids\": "
                             "[...], ...}}}", path=source, field="reference")
        ref = obj["reference"]
        for task in ref:
            if task not in set(config.task_ids):
                raise InputError(f"task {str(task)[:80]!r} is not on this leaderboard", path=source,
                                 field="reference")
        return cls({t: _task_from_mapping(t, ref.get(t), config.spec(t).metric, source) for t in config.task_ids})

    @classmethod
    def load(cls, path: str | Path, config: LeaderboardConfig, max_bytes: int = 4 * MAX_BYTES) -> Reference:
        """A reference file: a trusted compiled submission (has ``predictions``) or a gold file."""
        p = Path(path)
        if not p.is_file():
            raise InputError("no such reference file", path=p)
        obj = parse_bytes(p.read_bytes(), str(p), max_bytes)
        if isinstance(obj, Mapping) and "predictions" in obj:
            return cls.from_submission(validate_submission(obj, config, source=str(p)))
        return cls.from_mapping(obj, config, str(p))

    # ------------------------------------------------------------------------------------ storing
    def to_json(self) -> str:
        return json.dumps({"reference": {t: {"doc_ids": list(r.ids),
                                             **({"gold": r.gold.tolist(), "n_classes": r.n_classes}
                                                if r.gold is not None else {}),
                                             **({"words": r.words.tolist()} if r.words is not None else {})}
                                         for t, r in self.tasks.items()}},
                          sort_keys=True, ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str, config: LeaderboardConfig) -> Reference:
        return cls.from_mapping(json.loads(text), config, "stored reference")

    # ------------------------------------------------------------------------------------ checking
    def check(self, sub: Submission, source: str = "<upload>") -> None:
        """Raise a located :class:`InputError` at the first sample id, count, gold label or class count of
        ``sub`` that differs from the reference."""
        for task, ref in self.tasks.items():
            d = sub.data[task]
            fld = f"predictions.{task}"
            diff = id_difference(ref.ids, d.doc_ids)
            if diff is not None:
                raise InputError(f"task {task!r}: {diff} (the operator's reference has {ref.n} samples, this upload "
                                 f"{d.n})", path=source, field=fld)
            if ref.words is not None:
                bad = np.flatnonzero(d.need("words") != ref.words)
                if bad.size:
                    i = int(bad[0])
                    raise InputError(f"task {task!r}: doc_id {ref.ids[i]!r} counts {d.need('words')[i]:g} words, the "
                                     f"operator's reference {int(ref.words[i])} (word counts are the reference's, not "
                                     "the uploader's)", path=source, field=f"{fld}[{i}]")
            if ref.gold is None:
                continue
            k = int(d.need("probs").shape[1])
            if k != ref.n_classes:
                raise InputError(f"task {task!r}: {k} class probabilities per sample, the operator's reference has "
                                 f"{ref.n_classes} classes", path=source, field=fld)
            bad = np.flatnonzero(d.need("gold") != ref.gold)
            if bad.size:
                i = int(bad[0])
                raise InputError(f"task {task!r}: doc_id {ref.ids[i]!r} has gold class {int(d.need('gold')[i])}, the "
                                 f"operator's reference {int(ref.gold[i])}", path=source, field=f"{fld}[{i}]")


def _task_from_mapping(task: str, rec: Any, metric: Metric, source: str) -> TaskReference:
    fld = f"reference.{task}"
    if not isinstance(rec, Mapping):
        raise InputError(f"missing task {task!r}", path=source, field="reference")
    for k in rec:
        if k not in ("doc_ids", "gold", "n_classes", "words"):
            raise InputError(f"unknown key {str(k)[:80]!r} (doc_ids, gold, n_classes, words)", path=source, field=fld)
    raw = rec.get("doc_ids")
    if not isinstance(raw, list) or not raw:
        raise InputError("needs a non-empty 'doc_ids' list", path=source, field=f"{fld}.doc_ids")
    ids, order = _doc_ids([{"doc_id": i} for i in raw], source, f"{fld}.doc_ids")
    if ids is None or order is None:
        raise InputError("doc_ids must be integers or names, not null", path=source, field=f"{fld}.doc_ids")
    if metric is Metric.WORD_PERPLEXITY and "words" in rec:
        words = rec["words"]
        if not isinstance(words, list) or len(words) != len(raw):
            raise InputError(f"'words' needs one word count per doc_id ({len(raw)})", path=source, field=f"{fld}.words")
        for i, w in enumerate(words):
            if isinstance(w, bool) or not isinstance(w, int) or not 1 <= w <= MAX_WORDS:
                raise InputError(f"must be a whole number of words from 1 to {MAX_WORDS:,}, got {w!r}", path=source,
                                 field=f"{fld}.words[{i}]")
        if "gold" in rec or "n_classes" in rec:
            raise InputError("gold labels are only checked on avg_mcauroc tasks, this one is word_perplexity",
                             path=source, field=fld)
        return TaskReference(ids, words=np.asarray(words, dtype=np.int64)[np.asarray(order)])
    if "words" in rec:
        raise InputError(f"word counts are only checked on word_perplexity tasks, this one is {metric.value}",
                         path=source, field=fld)
    if metric is not Metric.AVG_MCAUROC:
        if "gold" in rec or "n_classes" in rec:
            raise InputError(f"gold labels are only checked on avg_mcauroc tasks, this one is {metric.value}",
                             path=source, field=fld)
        return TaskReference(ids)
    k, gold = rec.get("n_classes"), rec.get("gold")
    if isinstance(k, bool) or not isinstance(k, int) or k < 2:
        raise InputError("needs 'n_classes', an integer >= 2", path=source, field=f"{fld}.n_classes")
    if not isinstance(gold, list) or len(gold) != len(raw):
        raise InputError(f"needs 'gold', one class index per doc_id ({len(raw)})", path=source, field=f"{fld}.gold")
    for i, g in enumerate(gold):
        if isinstance(g, bool) or not isinstance(g, int) or not 0 <= g < k:
            raise InputError(f"must be a class index in 0..{k - 1}, got {g!r}", path=source, field=f"{fld}.gold[{i}]")
    return TaskReference(ids, np.asarray(gold, dtype=np.int64)[np.asarray(order)], k)
