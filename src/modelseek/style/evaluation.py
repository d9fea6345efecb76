"""Subtask B evaluation on the organisers' files: a run scored against ``train.csv`` (or any
``image_id,model_id`` table) by MRR with a bootstrap interval, and a run checked against the test folder.

Truth: each image has exactly one relevant model, the one that made it; the reciprocal rank of a query is
``1 / rank`` of that model in the run's ranking (ranks as the run orders them), 0 when the run does not rank
it. MRR is the mean over the truth's images; an image of the truth that the run lacks counts 0 and is
reported as missing (the official scorer's rule for a missing topic). The interval is a 95% percentile
bootstrap over images (:func:`modelseek.stats.bootstrap.bootstrap_ci`, seeded).

``modelseek evaluate RUN --ground-truth train.csv`` comes here when the ground truth has ``image_id`` and
``model_id`` columns and no ``f1``; ``modelseek validate RUN --test-images data/`` checks that the run ranks
every image of the test folder against every model of ``models.csv``.
"""

from __future__ import annotations

import csv
import os
import stat
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..data.run import Run, normalize_b_id, read_run, read_runs
from ..errors import InputError
from ..stats.bootstrap import bootstrap_ci
from .data import _read_csv, load_models
from .layout import load_organiser_test, organiser_root


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
    for lineno, row in _read_csv(path, ["image_id", "model_id"]):
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


def evaluate_style_runs(run_path: str | Path, truth_path: str | Path, run_id: str | None = None) -> list[StyleScore]:
    """Every run of ``run_path`` (or the one named ``run_id``) scored on a Subtask B ground truth (``train.csv``:
    image_id, model_id): MRR with its bootstrap interval. A run that shares no image with the truth is an error."""
    truth = load_style_truth(truth_path)
    runs = [read_run(run_path, run_id)] if run_id else list(read_runs(run_path).values())
    for r in runs:
        if not any(q in truth for q in r):
            raise InputError(f"run {r.run_id!r} shares no image with the ground truth (run: {', '.join(list(r)[:3])} "
                             f"...; ground truth: {', '.join(list(truth)[:3])} ...)", path=run_path, field="topicID")
    return [score_style_run(r, truth) for r in runs]


def test_folder_topics(path: str | Path, models_csv: str | Path | None = None) -> tuple[list[str], list[str]]:
    """The topicIDs (test image names without ``.png``) and docIDs (``models.csv`` ids) a Subtask B run must
    cover: ``path`` is the organisers' ``data/`` folder, their repository root, or a test folder (then
    ``models_csv``, or ``models.csv`` beside or above it)."""
    path = Path(path)
    data = organiser_root(path)
    if data is not None:
        models = load_models(models_csv or data / "models.csv")
        return load_organiser_test(data, models=models).ids, list(models.ids)
    if not path.is_dir():
        raise InputError("no such folder (the test images: data/test/, or the organisers' data/ folder)", path=path)
    if models_csv is None:
        for cand in (path / "models.csv", path.parent / "models.csv"):
            if cand.is_file():
                models_csv = cand
                break
        else:
            raise InputError("no models.csv beside the test folder; give --pool models.csv", path=path)
    models = load_models(models_csv)
    return load_organiser_test(path.parent, folder=path, models=models).ids, list(models.ids)
