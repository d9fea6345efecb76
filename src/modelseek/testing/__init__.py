"""Mocks shipped with the package, so that the whole pipeline runs offline in seconds.

* :func:`make_text_task` — a synthetic text-classification task whose labels are carried by keywords.
* :func:`make_ground_truth` — a plausible task x model F1 table (latent model quality + task noise).
* :func:`make_ntcir_layout` — a small folder in the NTCIR-19 Subtask A layout (tasks.csv, models.csv,
  ground-truth.csv, task-data/train-tasks/<id>/{train,val,test}.jsonl).
"""

from ..data.synthetic import make_ground_truth, make_ntcir_layout, make_text_task, write_task_table
from ..kinds import check_member as check

__all__ = ["make_ground_truth", "make_ntcir_layout", "make_text_task", "write_task_table"]


def check_member(kind: str, obj, name: str | None = None):
    """The one check of kind ``kind`` (:func:`modelseek.kinds.check_member`), for a plugin author's tests: what
    every built-in passes when it registers and every plugin when it is loaded. Returns the member as registered;
    a broken contract raises ``TypeError``/``ValueError`` saying what is wrong."""

    return check(kind, obj, name)


__all__ += ["check_member"]
