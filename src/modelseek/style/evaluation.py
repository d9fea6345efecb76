"""Subtask B evaluation on the organisers' files: a run scored against ``train.csv`` (or any
``image_id,model_id`` table) by MRR with a bootstrap interval, and a run checked against the test folder.

Truth: each image has exactly one relevant model, the one that made it; the reciprocal rank of a query is
``1 / rank`` of that model in the run's ranking (ranks as the run orders them), 0 when the run does not rank
it. MRR is the mean over the truth's images; an image of the truth that the run lacks counts 0 and is
reported as missing (the official scorer's rule for a missing topic). The interval is a 95% percentile
bootstrap over images (:func:`modelseek.core.stats.bootstrap.bootstrap_ci`, seeded).

``modelseek evaluate RUN --ground-truth train.csv`` comes here when the ground truth has ``image_id`` and
``model_id`` columns and no ``f1``; ``modelseek validate RUN --test-images data/`` checks that the run ranks
every image of the test folder against every model of ``models.csv``.
"""

from __future__ import annotations

from pathlib import Path

from ..retrieval.data.run import read_run, read_runs
# the truth table and one run's score live in modelseek.retrieval.data.style_truth (evaluate routes a Subtask B truth
# without importing this package); named here too, where they always were
from ..retrieval.data.style_truth import StyleScore, is_style_truth, load_style_truth, score_style_run
from ..core.errors import InputError
from .data import load_models
from .layout import load_organiser_test, organiser_root

__all__ = ["StyleScore", "evaluate_style_runs", "is_style_truth", "load_style_truth", "score_style_run",
           "test_folder_topics"]


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


def test_folder_topics(path: str | Path, pool: str | Path | None = None) -> tuple[list[str], list[str]]:
    """The topicIDs (test image names without ``.png``) and docIDs (``models.csv`` ids) a Subtask B run must
    cover: ``path`` is the organisers' ``data/`` folder, their repository root, or a test folder (then
    ``pool``, or ``models.csv`` beside or above it)."""
    path = Path(path)
    data = organiser_root(path)
    if data is not None:
        models = load_models(pool or data / "models.csv")
        return load_organiser_test(data, models=models).ids, list(models.ids)
    if not path.is_dir():
        raise InputError("no such folder (the test images: data/test/, or the organisers' data/ folder)", path=path)
    if pool is None:
        for cand in (path / "models.csv", path.parent / "models.csv"):
            if cand.is_file():
                pool = cand
                break
        else:
            raise InputError("no models.csv beside the test folder; give `pool` (the candidates' models.csv)",
                             path=path)
    models = load_models(pool)
    return load_organiser_test(path.parent, folder=path, models=models).ids, list(models.ids)
