"""Mocks shipped with the package, so that the whole pipeline runs offline in seconds.

* :func:`make_text_task` — a synthetic text-classification task whose labels are carried by keywords.
* :func:`make_ground_truth` — a plausible task x model F1 table (latent model quality + task noise).
* :func:`make_ntcir_layout` — a small folder in the NTCIR-19 Subtask A layout (tasks.csv, models.csv,
  ground-truth.csv, task-data/train-tasks/<id>/{train,val,test}.jsonl).
"""

from ..data.synthetic import make_ground_truth, make_ntcir_layout, make_text_task, write_task_table

__all__ = ["make_ground_truth", "make_ntcir_layout", "make_text_task", "write_task_table"]
