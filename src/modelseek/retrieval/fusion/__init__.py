"""Fusion of runs, Run x ... -> Run: normalisations, methods, learned fusion, persistence.

One implementation for every part of modelseek (the estimator ranker's ``rrf`` and Subtask B's fusion
retriever call it). ``fuse(runs, method=..., norm=..., weights=...)`` combines runs from anywhere (TREC files
written by other tools included); ``optimize_fusion(runs, truth)`` chooses the method, normalisation and
weights by task-level cross-validation and returns a :class:`LearnedFusion` that can be saved, loaded and
applied to new topics; with ``per_task=True`` (default) the weights may also differ per task, following each
run's spread or task features such as size and number of classes (:mod:`modelseek.retrieval.fusion.gates`). The rules
for missing candidates, partial topics and ties are in :mod:`modelseek.retrieval.fusion.core`; the normalisations in
:mod:`modelseek.retrieval.fusion.norms`.
"""

from __future__ import annotations

from .core import DEFAULT_RRF_K, Fusion, FusionMethod, fuse, normalize_run
from .features import TaskFeatures, read_task_features, task_features_from_tasks
from .gates import Gate
from .learned import (FoldResult, FusionCV, LearnedFusion, candidate_fusions, choose, load_fusion, optimize_fusion,
                      simplex_weights)
from .norms import Norm, normalize_block
from .persist import save_fusion

__all__ = ["DEFAULT_RRF_K", "FoldResult", "Fusion", "FusionCV", "FusionMethod", "Gate", "LearnedFusion", "Norm",
           "TaskFeatures", "candidate_fusions", "choose", "fuse", "load_fusion", "normalize_block", "normalize_run",
           "optimize_fusion", "read_task_features", "save_fusion", "simplex_weights", "task_features_from_tasks"]
