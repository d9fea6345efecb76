"""The nouns: tasks, pools of candidates, ground truth, runs and reports."""

from .pool import Candidate, Pool, load_pool
from .run import Run, read_run, read_runs, validate_run, write_runs
from .task import Criticality, Split, Task, TaskSet
from .truth import GradingScheme, GroundTruth

__all__ = [
    "Candidate", "Criticality", "GradingScheme", "GroundTruth", "Pool", "Run", "Split", "Task",
    "TaskSet", "load_pool", "read_run", "read_runs", "validate_run", "write_runs",
]
