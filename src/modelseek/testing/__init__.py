"""Mocks shipped with the package, so that the whole pipeline runs offline in seconds.

* :func:`make_text_task` — a synthetic text-classification task whose labels are carried by keywords.
* :func:`make_ground_truth` — a plausible task x model F1 table (latent model quality + task noise).
* :func:`make_ntcir_layout` — a small folder in the NTCIR-19 Subtask A layout (tasks.csv, models.csv,
  ground-truth.csv, task-data/train-tasks/<id>/{train,val,test}.jsonl).
"""

from ..retrieval.data.synthetic import make_ground_truth, make_ntcir_layout, make_text_task, write_task_table
from ..core.kinds import check_member as check
from ..core.kinds import kind as declared, own_name
from .contract import check_behaviour

__all__ = ["make_ground_truth", "make_ntcir_layout", "make_text_task", "write_task_table"]


def check_member(kind: str, obj, name: str | None = None):
    """Kind ``kind``'s whole contract on ``obj``, for a plugin author's tests and this package's: the one load-time
    check (:func:`modelseek.core.kinds.check_member`: what every built-in passes when it registers and every plugin when
    it is loaded), then the member called on generated data (:mod:`modelseek.testing.contract`: types, finiteness,
    order independence, seeded determinism). Returns the member as registered; a broken contract raises
    ``TypeError``/``ValueError`` saying what is wrong."""

    k = declared(kind)
    member = check(kind, obj, name)
    check_behaviour(k.name, own_name(k, obj) if name is None else name, member)
    return member


__all__ += ["check_member"]
