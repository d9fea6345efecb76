"""modelseek — which pre-trained model should I fine-tune on my data?

Model selection as retrieval: tasks are queries, candidate models are documents. The top level holds a few
verbs and nouns::

    from modelseek import load_tasks, load_pool, GroundTruth, rank, evaluate
    truth = GroundTruth.from_csv("ground-truth.csv")
    run = rank(tasks, pool, method="avgrank", train_truth=truth)
    print(evaluate(run, truth))
    fused = fuse([run, other_run], method="wsum", norm="min-max", weights=[0.7, 0.3])

Importing modelseek changes no global state and imports no heavy library.
"""

from __future__ import annotations

from .data.loaders import from_hf_dataset, load_ntcir_tasks, load_table_task, load_tasks
from .data.pool import Candidate, Pool, load_pool
from .data.report import Report
from .data.run import Run, read_run, read_runs, validate_run, write_runs
from .data.task import Criticality, Split, Task, TaskSet
from .data.truth import GradingScheme, GroundTruth
from .errors import InputError, ModelseekError, ValidationError
from .evaluate import evaluate
from .fusion import fuse
from .api import rank
from .funnel import select
from ._version import __version__

__all__ = [
    "Candidate", "Criticality", "GradingScheme", "GroundTruth", "InputError", "ModelseekError", "Pool", "Report", "Run",
    "Split", "Task", "TaskSet", "ValidationError", "__version__", "evaluate", "from_hf_dataset", "fuse",
    "load_ntcir_tasks", "load_pool", "load_table_task", "load_tasks", "rank", "read_run", "read_runs", "select",
    "validate_run", "write_runs",
]
