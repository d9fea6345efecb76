"""Subtask B's truth table (image -> the style-LoRA that made it): recognised and read here, outside the style
package, so that :func:`modelseek.evaluate` routes a Subtask B truth without importing that package (no cycle)."""

from __future__ import annotations

import csv
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...core.errors import InputError
from ...core.stats.bootstrap import bootstrap_ci
from ...core.io import csv_dict_reader, open_text
from .run import Run, normalize_b_id


def read_csv_rows(path: Path, required: Sequence[str]) -> list[tuple[int, dict[str, str]]]:
    """The rows of a CSV with their line numbers; each ``required`` column present and non-empty."""
    with open_text(path) as fh:  # missing, a directory, not UTF-8: located InputErrors
        reader = csv_dict_reader(fh, path)  # a cell of any length, a malformed row: one located line
        fields = reader.fieldnames or []
        for col in required:
            if col not in fields:
                raise InputError("missing column", path=path, line=1, field=col)
        rows = []
        for lineno, row in enumerate(reader, start=2):
            for col in required:
                if not (row.get(col) or "").strip():
                    raise InputError("empty", path=path, line=lineno, field=col)
            rows.append((lineno, {k: (v or "").strip() for k, v in row.items() if k is not None}))
    if not rows:
        raise InputError("no rows", path=path)
    return rows


def is_style_truth(path: str | Path) -> bool:
    """True when ``path`` is a readable CSV whose header names ``image_id`` and ``model_id`` and no ``f1``
    (Subtask B truth); any problem reading it is False (the general loader then reports it)."""
    try:
        # only a regular file is sniffed: opening a FIFO without a writer would block for ever, and a device
        # never ends; anything else is left to the general loader, which refuses it in one line
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False
        with open(path, newline="", encoding="utf-8") as fh:
            header = next(csv.reader([fh.readline(65536)]), [])
    except (OSError, UnicodeDecodeError, csv.Error, ValueError):
        return False
    cols = {c.strip().lstrip("\ufeff") for c in header}
    return {"image_id", "model_id"} <= cols and "f1" not in cols


def load_style_truth(path: str | Path) -> dict[str, str]:
    """``query id -> model id`` of a Subtask B truth table (ids as in runs: no ``.png``, no leading zeros)."""
    path = Path(path)
    truth: dict[str, str] = {}
    first: dict[str, int] = {}
    for lineno, row in read_csv_rows(path, ["image_id", "model_id"]):
        q = normalize_b_id(row["image_id"])
        if q in truth:
            raise InputError(f"image {row['image_id']!r} is listed twice (first on line {first[q]})", path=path,
                             line=lineno, field="image_id")
        truth[q], first[q] = normalize_b_id(row["model_id"]), lineno
    return truth


@dataclass
class StyleScore:
    run_id: str
    per_query: dict[str, float]
    missing: int
    mrr: float
    low: float
    high: float

    def to_dict(self) -> dict:
        return {"mrr": self.mrr, "mrr_interval": [self.low, self.high], "queries": len(self.per_query),
                "missing": self.missing}


def score_style_run(run: Run, truth: dict[str, str], n_resamples: int = 1000, seed: int = 0) -> StyleScore:
    rr, missing = {}, 0
    for q, model in truth.items():
        if q not in run:
            rr[q] = 0.0
            missing += 1
            continue
        ranking = run.ranking(q)
        rr[q] = 1.0 / (ranking.index(model) + 1) if model in ranking else 0.0
    ci = bootstrap_ci(np.array(list(rr.values())), n_resamples=n_resamples, seed=seed)
    return StyleScore(run.run_id, rr, missing, ci.mean, ci.low, ci.high)
