"""``modelseek train-ranker``: fit a learned ranker on a task folder with ground truth and save its artifact
(numbers only: weights and training-task representations, no task text). ``--install-default`` makes it the
default that ``modelseek rank`` uses."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..errors import InputError
from ._common import load_pool_arg, load_truth


def parse_params(items: list[str] | None) -> dict[str, Any]:
    """``["k=10", "view=label"]`` -> ``{"k": 10, "view": "label"}`` (the parsing of ``modelseek rank --param``)."""
    from .rank import _parse_params

    return _parse_params(list(items or []))


def params_for(method: str, params: dict[str, Any], strict: bool = True) -> dict[str, Any]:
    """The subset of ``params`` that ``method``'s constructor accepts (all of them when ``strict``)."""
    import inspect

    from ..rankers import RANKERS

    accepted = set(inspect.signature(RANKERS.get(method).__init__).parameters) - {"self"}
    unknown = sorted(set(params) - accepted)
    if strict and unknown:
        raise InputError(f"method {method!r} has no parameter {unknown[0]!r}; valid: {', '.join(sorted(accepted))}",
                         field="--param")
    return {k: v for k, v in params.items() if k in accepted}


def card_pool(pool, source):
    """What a card-reading method (``metadata``, ``ltr``) should use as its ``pool`` parameter: the built-in
    ``ntcir19`` pool (it has model-card metadata) when ``pool`` holds the same candidates, else ``source``."""
    from ..data.pool import ntcir_pool

    ref = ntcir_pool()
    same = all(c.id in ref and (not c.hf_id or c.hf_id == ref.get(c.id).hf_id) for c in pool)
    return "ntcir19" if same else source


def register(sub) -> None:
    p = sub.add_parser("train-ranker", help="fit a learned ranker on tasks with ground truth; save its artifact",
                       description="Fit METHOD on every task of PATH (an NTCIR subtask-A root) and save the fitted "
                                   "ranker as a JSON artifact (numbers only). With --install-default it becomes "
                                   "the ranker that 'modelseek rank' uses by default.")
    p.add_argument("path", help="NTCIR subtask-A root (ground-truth.csv, tasks.csv, task-data/)")
    p.add_argument("-m", "--method", default="task_knn", help="learned method (default: task_knn)")
    p.add_argument("--ground-truth", "-g", help="ground-truth CSV (default: PATH/ground-truth.csv)")
    p.add_argument("--pool", help="pool the ground truth's models come from (default: PATH/models.csv or ntcir19)")
    p.add_argument("-p", "--param", action="append", metavar="KEY=VALUE", help="method parameter (repeatable)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("-o", "--output", help="artifact path (default: METHOD.json)")
    p.add_argument("--install-default", action="store_true",
                   help="write the artifact into the package and make it the default ranker")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import inspect

    from ..data.loaders import load_ntcir_tasks
    from ..rankers import RANKERS, make
    from ..rankers.default import install_default

    root = Path(args.path)
    truth = load_truth(args.ground_truth, root)
    pool = load_pool_arg(args.pool, root)
    cls = RANKERS.get(args.method)
    if not hasattr(cls, "save"):
        raise InputError(f"method {args.method!r} cannot be saved as an artifact", field="--method")
    params = params_for(args.method, parse_params(args.param))
    accepted = inspect.signature(cls.__init__).parameters
    if "seed" in accepted:
        params.setdefault("seed", args.seed)
    if "pool" in accepted and "pool" not in params:
        from ._common import find_in_root

        params["pool"] = card_pool(pool, str(args.pool or find_in_root(root, "models.csv") or "ntcir19"))
    unknown = [m for m in truth.model_ids if m not in pool]
    if unknown:
        raise InputError(f"ground-truth model(s) {', '.join(unknown)} are not in the pool", field="--pool")
    tasks = load_ntcir_tasks(root, ids=truth.task_ids) if getattr(cls, "needs_text", False) else None
    ranker = make(args.method, **params)
    ranker.fit(tasks, truth, **({"progress": True} if "progress" in inspect.signature(ranker.fit).parameters else {}))
    info = {"trained_on": f"{len(truth.task_ids)} tasks x {len(truth.model_ids)} models", "source": root.name}
    if args.install_default:
        path = install_default(ranker, f"{args.method}: trained by 'modelseek train-ranker' on {info['trained_on']}")
    else:
        path = Path(args.output or f"{args.method}.json")
        ranker.save(path, **info) if "info" not in inspect.signature(ranker.save).parameters else ranker.save(path)
    size = path.stat().st_size
    print(f"trained {args.method} on {info['trained_on']}; wrote {path} ({size / 1024:.0f} KiB)")
    return 0
