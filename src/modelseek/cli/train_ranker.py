"""``modelseek train-ranker``: fit a learned ranker on a task folder with ground truth and save its artifact
(numbers only: weights and training-task representations, no task text). ``--install-default`` makes it the
default that ``modelseek rank`` uses, in the user's data folder (never the package), and only when its CV is not
below avgrank (else ``--force``); ``--reset-default`` returns to the shipped default."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ..core import FOLDER_READS, parse_overrides
from ..retrieval import (artifact_dir, build, describe_methods, install_default, Persistable, ranker_class,
                         reset_default, resolve_folder, split_params, user_dir, with_card_pool)
from ..core.errors import InputError
from ._common import declare_paths
from ._common import OUTPUT_FILE, POSITIVE_INT, SEED, int_at_least, load_pool_arg

if TYPE_CHECKING:
    from ..retrieval import RefitCheck


def register(sub) -> None:
    p = sub.add_parser("train-ranker", help="fit a learned ranker on tasks with ground truth; save its artifact",
                       description="Fit METHOD on every task of PATH (an NTCIR subtask-A root) and save the fitted "
                                   "ranker as a JSON artifact (numbers only). With --install-default it becomes "
                                   "the ranker that 'modelseek rank' uses by default.")
    p.add_argument("path", nargs="?",
                   help="the data to fit on: the organisers' Subtask A repository root, its data/ folder, a "
                        "generated layout (ground-truth.csv, tasks.csv, task-data/) or the ground-truth CSV itself")
    p.add_argument("-m", "--method", default="adaptive",
                   help=f"learned method (default: adaptive, the default ranker's method). {describe_methods()}")
    p.add_argument("--ground-truth", "-g", help="ground-truth CSV (default: ground-truth.csv in PATH or PATH/data)")
    p.add_argument("--pool", help="pool the ground truth's models come from (default: PATH/models.csv or ntcir19)")
    p.add_argument("-p", "--param", action="append", metavar="KEY=VALUE", help="method parameter (repeatable)")
    p.add_argument("--seed", type=SEED, default=0)
    p.add_argument("-o", "--output", type=OUTPUT_FILE, help="artifact path (default: METHOD.json)")
    p.add_argument("--install-default", action="store_true",
                   help="make the fitted ranker the default of 'modelseek rank' for this user: written to the user "
                        "data folder ($MODELSEEK_DATA/rankers, else e.g. ~/.local/share/modelseek/rankers), never "
                        "into the package. Needs --cv K (its CV must not be below avgrank) or --force")
    p.add_argument("--force", action="store_true",
                   help="with --install-default: install even without --cv, or when the CV puts the refit below "
                        "avgrank")
    p.add_argument("--reset-default", action="store_true",
                   help="return to the shipped default (the installed one is moved aside, not deleted); takes no "
                        "PATH")
    p.add_argument("--cv", type=int_at_least(2), metavar="K", default=None,
                   help="before fitting on every task, cross-validate the method against avgrank (K folds over "
                        "tasks, --repeats seeds) and print nDCG@1/3/5 per tier with the paired difference")
    p.add_argument("--repeats", type=POSITIVE_INT, default=1, help="repeats of --cv with seeds seed..")
    declare_paths(p, inputs={"path": FOLDER_READS, "ground_truth": FOLDER_READS, "pool": ()})
    p.set_defaults(func=run, map_params=True)  # library errors name parameters: shown as flags


def run(args: argparse.Namespace) -> int:
    if args.reset_default:
        return _reset(args)
    if args.path is None:
        raise InputError("give the NTCIR subtask-A root to fit on (or --reset-default)", field="path")
    if args.install_default and not args.cv and not args.force:
        raise InputError("--install-default replaces the default of every later 'rank': give --cv K to check the "
                         "refit against avgrank first (or --force to install it unchecked)", field="--install-default")
    cls = ranker_class(args.method)
    if not issubclass(cls, Persistable) or not cls.needs_fit:
        raise InputError(f"method {args.method!r} learns nothing from past tasks, so there is no artifact to save; "
                         f"use it directly: modelseek rank DATA --method {args.method}", field="--method")
    folder = resolve_folder(args.path, args.ground_truth)  # ROOT, ROOT/data or the CSV: the same files
    root = folder.data
    truth = folder.truth()
    pool = load_pool_arg(args.pool, root)
    params = split_params([args.method], parse_overrides(args.param or [], "--param"), args.seed)[args.method]
    params = with_card_pool(args.method, params, pool)  # the library's one card-pool rule
    unknown = [m for m in truth.model_ids if m not in pool and not any(c.hf_id == m for c in pool)]
    if unknown:
        raise InputError(f"model(s) {', '.join(unknown)} are not in the pool {args.pool or 'beside it'}",
                         path=truth.source or None, field="model_id")
    tasks = folder.training_tasks(truth.task_ids) if cls.needs_text else None
    if args.cv:
        from ..retrieval import check_refit  # lazy: pandas

        check = check_refit(args.method, truth, pool, tasks=tasks, folds=args.cv, seed=args.seed,
                            repeats=args.repeats, method_params=params, progress=True)
        _print_cv(check, len(truth.task_ids))
        if args.install_default:
            check.check_install(force=args.force)  # the library's policy: below avgrank is not installed
        elif args.method != "avgrank":
            # the library names its function (modelseek.retrieval.rankers.default.install_default), the CLI its flag
            print(check.verdict().replace("`install_default`", "--install-default"))
    ranker = build(args.method, params)
    assert isinstance(ranker, Persistable)  # its class was checked above
    ranker.fit(tasks, truth, pool=pool, progress=True)
    info = {"trained_on": f"{len(truth.task_ids)} tasks x {len(truth.model_ids)} models", "source": root.name}
    if args.install_default:
        how = f"CV {args.cv}-fold" if args.cv else "not cross-validated (--force)"
        path = install_default(ranker, f"{ranker.name}: trained by 'modelseek train-ranker' on "
                                       f"{info['trained_on']} of {root.resolve()}; {how}")
    else:
        path = Path(args.output or f"{ranker.name}.json")
        ranker.save(path, **info)
    size = path.stat().st_size
    print(f"trained {ranker.name} on {info['trained_on']}; wrote {path} ({size / 1024:.0f} KiB)")
    if args.install_default:
        print(f"installed as the default of 'modelseek rank' for this user ({path.parent / 'default.json'}); "
              f"'modelseek train-ranker --reset-default' returns to the shipped default")
    return 0


def _reset(args: argparse.Namespace) -> int:
    if args.path is not None or args.install_default:
        raise InputError("--reset-default takes no PATH and no --install-default", field="--reset-default")
    removed = reset_default()
    if removed is None:
        print(f"no installed default in {user_dir()}: 'modelseek rank' already uses the shipped default "
              f"({artifact_dir()})")
    else:
        print(f"removed the installed default ({removed} moved to {removed.with_name('default.removed.json')}); "
              f"'modelseek rank' uses the shipped default again")
    return 0


def _print_cv(check: RefitCheck, n_tasks: int) -> None:
    """The CV of :func:`modelseek.retrieval.bench.check_refit`: nDCG@1/3/5 per tier, mean [95% bootstrap interval], and
    method − avgrank."""
    print(f"{n_tasks} tasks, {check.folds}-fold CV x {check.repeats} seed(s); mean [95% interval]")
    print(f"{'method':<10} {'tier':<7} {'nDCG@1':>21} {'nDCG@3':>21} {'nDCG@5':>21}  nDCG@5 − avgrank [95%]")
    diffs = check.diffs
    for m, r in check.results.items():
        s = r.summary(n_resamples=1000, seed=0)
        cell = {(row.tier, row.metric): f"{row['mean']:.3f} [{row['low']:.3f}, {row['high']:.3f}]"
                for _, row in s.iterrows()}
        for tier in ("low", "medium", "high", "all"):
            if (tier, "ndcg@5") not in cell:
                continue
            d = ""
            if diffs is not None and m == check.method and tier in diffs.index:
                low, high = diffs.loc[tier, "low"], diffs.loc[tier, "high"]
                d = f"{diffs.loc[tier, 'mean_diff']:+.3f} [{low:+.3f}, {high:+.3f}]"
            print(f"{m:<10} {tier:<7} {cell[(tier, 'ndcg@1')]:>21} {cell[(tier, 'ndcg@3')]:>21} "
                  f"{cell[(tier, 'ndcg@5')]:>21}  {d}")
