"""modelseek — which pre-trained model should I fine-tune on my data?

Model selection as retrieval: tasks are queries, candidate models are documents. The top level holds a few
verbs and nouns::

    from modelseek import load_tasks, load_pool, GroundTruth, rank, evaluate
    truth = GroundTruth.from_csv("ground-truth.csv")
    run = rank(tasks, pool, method="avgrank", train_truth=truth)
    print(evaluate(run, truth))
    fused = fuse([run, other_run], method="wsum", norm="min-max", weights=[0.7, 0.3])

Importing modelseek changes no global state and imports no heavy library; each name above is imported on
first use.
"""

from __future__ import annotations

import importlib as _importlib
from typing import TYPE_CHECKING

from ._version import __version__
# imported now, not on first use: the submodule of the same name would otherwise shadow the function as soon as
# anything imports it (its import binds ``modelseek.evaluate`` to the module, and __getattr__ is then not asked)
from .retrieval.evaluation import evaluate

# The other nouns and verbs are imported when first used (PEP 562): ``modelseek evaluate`` needs few of them and
# no longer pays for all (22 modules, 20 ms of its start-up). Type checkers read the imports below;
# tests/test_imports.py checks that they name the same things as _LAZY.
if TYPE_CHECKING:
    from .retrieval.api import rank, rank_explained
    from .retrieval.data.loaders import from_hf_dataset, load_ntcir_tasks, load_table_task, load_tasks
    from .retrieval.data.pool import Candidate, Pool, load_pool
    from .retrieval.data.report import Report
    from .retrieval.data.run import Run, read_run, read_runs, validate_run, write_runs
    from .retrieval.data.task import Criticality, Split, Task, TaskSet
    from .retrieval.data.truth import GradingScheme, GroundTruth
    from .core.errors import InputError, ModelseekError, ValidationError
    from .retrieval.funnel import select
    from .retrieval.fusion import fuse
    from .core.kinds import register

_LAZY = {
    ".retrieval.api": ("rank", "rank_explained"),
    ".retrieval.data.loaders": ("from_hf_dataset", "load_ntcir_tasks", "load_table_task", "load_tasks"),
    ".retrieval.data.pool": ("Candidate", "Pool", "load_pool"),
    ".retrieval.data.report": ("Report",),
    ".retrieval.data.run": ("Run", "read_run", "read_runs", "validate_run", "write_runs"),
    ".retrieval.data.task": ("Criticality", "Split", "Task", "TaskSet"),
    ".retrieval.data.truth": ("GradingScheme", "GroundTruth"),
    ".core.errors": ("InputError", "ModelseekError", "ValidationError"),
    ".retrieval.funnel": ("select",),
    ".retrieval.fusion": ("fuse",),
    ".core.kinds": ("register",),
}
_MODULE_OF = {name: module for module, names in _LAZY.items() for name in names}


#: the layers and products, reachable as attributes (``modelseek.retrieval``, ``modelseek.duel``) and imported on
#: first use; none of them is shadowed by a function of the same name
SUBPACKAGES = ("align", "cli", "core", "duel", "eevee", "retrieval", "style", "testing")


def __getattr__(name: str) -> object:
    if name in SUBPACKAGES:
        return _importlib.import_module(f"{__name__}.{name}")
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'modelseek' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module, __name__), name)
    globals()[name] = value  # once: later uses are plain attribute look-ups
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_MODULE_OF) | set(SUBPACKAGES))


__all__ = [
    "Candidate", "Criticality", "GradingScheme", "GroundTruth", "InputError", "ModelseekError", "Pool", "Report", "Run",
    "Split", "Task", "TaskSet", "ValidationError", "__version__", "evaluate", "from_hf_dataset", "fuse",
    "load_ntcir_tasks", "load_pool", "load_table_task", "load_tasks", "rank", "rank_explained", "read_run",
    "read_runs", "register", "select", "validate_run", "write_runs",
]
