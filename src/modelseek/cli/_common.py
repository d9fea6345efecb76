"""Helpers shared by the command modules."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ..errors import InputError


def print_json(obj: Any) -> None:
    json.dump(obj, sys.stdout, indent=2, default=_default)
    sys.stdout.write("\n")


def _default(o: Any):
    import numpy as np

    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if hasattr(o, "value"):
        return o.value
    raise TypeError(f"not JSON serialisable: {type(o)}")


def find_in_root(root: Path, name: str) -> Path | None:
    for p in (root, *list(root.parents)[:3]):
        if (p / name).exists():
            return p / name
    return None


def load_truth(path: str | None, root: Path | None = None, tasks_csv: str | None = None, any_score: bool = False):
    from ..data.truth import GroundTruth

    if path is None:
        found = find_in_root(root, "ground-truth.csv") if root is not None else None
        if found is None:
            raise InputError("no ground truth given (--ground-truth) and none found beside the tasks")
        path = str(found)
    return GroundTruth.from_csv(path, tasks_csv=tasks_csv, any_score=any_score)


def load_pool_arg(value: str | None, root: Path | None = None):
    from ..data.pool import load_pool

    if value is None:
        found = find_in_root(root, "models.csv") if root is not None and root.is_dir() else None
        return load_pool(found if found is not None else "ntcir19")
    return load_pool(value)


def add_scheme(p) -> None:
    p.add_argument("--scheme", default="ntcir", choices=["ntcir", "paper"],
                   help="relevance grading: ntcir (official; gain 2^rel-1) or paper (gain rel)")
