"""Ground truth at scale: the fine-tuning protocol, a resumable job store, run by any executor of
:mod:`modelseek.retrieval.executors` (local, Ray, or one of your own).

    from modelseek.retrieval.finetune import Recipe, finetune, run_grid
    result = finetune(task, candidate)                         # one job under the protocol
    grid = run_grid(tasks, pool, "jobs.sqlite", executor="ray")  # resumable pool x task grid
    grid.ground_truth(tasks).to_csv("ground-truth.csv")

Heavy libraries (torch, transformers, ray) are imported only when a job runs.
"""

from __future__ import annotations

from ..executors import EXECUTORS, make_executor
from .executors import JobOutcome, job_unit, run_job
from .grid import GridResult, Job, build_jobs, collect_ground_truth, run_grid
from .metrics import macro_f1
from .protocol import CandidateLoadError, FinetuneResult, ModelSpec, TaskData, finetune
from .recipe import PROTOCOL, Device, Precision, Recipe
from .stopping import EarlyStopper
from .store import JobRecord, JobStore

__all__ = [
    "EXECUTORS", "PROTOCOL", "CandidateLoadError", "Device", "EarlyStopper", "FinetuneResult", "GridResult", "Job",
    "JobOutcome", "JobRecord", "JobStore", "ModelSpec", "Precision", "Recipe", "TaskData", "build_jobs",
    "collect_ground_truth", "finetune", "job_unit", "macro_f1", "make_executor", "run_grid", "run_job",
]
