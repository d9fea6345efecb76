"""``modelseek finetune``: fine-tune every candidate of a pool on every task (resumable, local or Ray) and
write the ground truth. Also the ``--verify-top`` / ``--halving`` options of ``modelseek rank``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..retrieval import GradingScheme, load_pool, load_tasks
from ..core.errors import InputError
from ..core import TASK_READS
from ._common import declare_paths
from ._common import EXECUTOR_REGISTRY, OUTPUT_FILE, SEED, add_registry_option, choice, metavar, print_json
from ._finetune import load_recipe


def add_recipe_args(p) -> None:
    p.add_argument("--recipe", help="recipe YAML (keys of modelseek.retrieval.finetune.Recipe; default: the protocol)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override one recipe key, e.g. --set max_epochs=20 (repeatable)")
    p.add_argument("--seeds", type=SEED, nargs="+", default=[0], help="seeds; F1 is their mean (default: 0)")
    add_registry_option(p, "--executor", EXECUTOR_REGISTRY, default="local",
                   help="local (sequential, default) or ray (one Ray task per job)")
    p.add_argument("--address", help="Ray cluster address ('auto' joins a running cluster; default: start a "
                                     "local instance)")
    p.add_argument("--retry-failed", action="store_true", help="run again the jobs that failed before")


def register(sub) -> None:
    p = sub.add_parser("finetune", help="fine-tune a pool on a task set and write the ground truth",
                       description="Fine-tune every candidate of a pool on every task under one protocol "
                                   "(defaults: AdamW lr 2e-5, wd 0.01, batch 16, early stopping patience 10 on "
                                   "validation loss, macro-F1 on test). Finished jobs are kept in a SQLite store "
                                   "and skipped when the command runs again; several finetune processes on one "
                                   "store share its grid (each job is claimed by one of them).")
    p.add_argument("--pool", required=True, help="pool file (models.csv or YAML) or built-in pool name")
    p.add_argument("--tasks", required=True, help="NTCIR root or task folder, or one table file")
    p.add_argument("--text-col", default="text", help="text column(s) of a table file, comma-separated")
    p.add_argument("--label-col", default="label", help="label column(s) of a table file, comma-separated")
    p.add_argument("--out", required=True, type=OUTPUT_FILE,
                   help="ground-truth CSV to write (official format + criticality)")
    p.add_argument("--store", help="job store (default: OUT with suffix .jobs.sqlite)")
    p.add_argument("--scheme", default=GradingScheme.NTCIR, type=choice(GradingScheme), metavar=metavar(GradingScheme),
                   help="relevance grading of the output")
    p.add_argument("--plot", metavar="PNG", type=OUTPUT_FILE,
                   help="also draw the validation-loss curves of the grid's jobs")
    add_recipe_args(p)
    p.add_argument("--json", action="store_true", help="print a machine-readable summary")
    declare_paths(p, inputs={"pool": (), "tasks": TASK_READS, "recipe": ()}, databases=["store"])
    p.set_defaults(func=run, map_params=("overrides",))  # library errors naming these show the flag


#: the head policy in words, said once per run (issue #48)
HEAD_POLICY = {"fresh": "a new randomly initialised head for every task, also where a checkpoint carries one of the "
                        "task's size: the NTCIR protocol; --set head=keep keeps such a head",
               "keep": "a checkpoint's own head kept, relabelled, where its size equals the task's class count"}


def _first_line(text: str) -> str:
    return (text or "").strip().splitlines()[0] if (text or "").strip() else "unknown error"


def run(args: argparse.Namespace) -> int:
    from ..retrieval import run_grid  # lazy: pandas

    recipe = load_recipe(args)
    if args.executor == "local" and recipe.device.value == "cuda":  # before the pool and tasks are read
        from ..retrieval import resolve_device  # lazy: pandas; (run_grid checks it too, for the API)

        resolve_device(recipe)
    pool = load_pool(args.pool)
    for c in pool:  # a pool for ranking may list bare ids; fine-tuning has to load each candidate
        if not c.source:
            raise InputError(f"candidate {c.id!r} has neither hf_id nor path (fine-tuning loads it)",
                             path=args.pool, field="hf_id")
    cols = {k: (v.split(",") if "," in v else v) for k, v in (("text_col", args.text_col),
                                                              ("label_col", args.label_col))}
    tasks = load_tasks(args.tasks, **cols)  # the columns apply to a table file
    out = Path(args.out)
    store = Path(args.store) if args.store else out.with_suffix(".jobs.sqlite")
    grid = run_grid(tasks, pool, store, recipe=recipe, seeds=args.seeds, executor=args.executor,
                    address=args.address, retry_failed=args.retry_failed, progress=not args.json)
    failed = grid.failed_jobs()
    wrote = False
    if grid.n_done:
        grid.ground_truth(tasks).to_csv(out, scheme=args.scheme)
        wrote = True
    if args.plot and grid.n_done:
        from ..retrieval import plot_learning_curves  # lazy: pandas

        plot_learning_curves(grid.store.records(j.key for j in grid.jobs), args.plot)
    summary = {"jobs": len(grid.jobs), "skipped": grid.skipped, "ran": grid.ran, "elsewhere": grid.elsewhere,
               "done": grid.n_done,
               "failed": len(failed), "recipe": recipe.digest, "store": str(store), "out": str(out) if wrote else None,
               "failures": [{"task_id": j.task.task_id, "model_id": j.model.model_id, "seed": j.seed,
                             "error": _first_line(e)} for j, e in failed]}
    if args.json:
        print_json(summary)
    else:
        others = f", {grid.elsewhere} run meanwhile by other workers on the store" if grid.elsewhere else ""
        print(f"{len(grid.jobs)} job(s): {grid.skipped} already in {store}, {grid.ran} run now{others}; "
              f"{grid.n_done} done, {len(failed)} failed (recipe {recipe.digest})")
        if wrote:
            print(f"wrote ground truth for {grid.n_done} job(s) to {out}")
        print(f"classification head: {recipe.head.value} ({HEAD_POLICY[recipe.head.value]})")
    for j, e in failed:
        print(f"error: task {j.task.task_id} model {j.model.model_id} seed {j.seed}: {_first_line(e)}",
              file=sys.stderr)
    if failed:
        hint = "" if args.retry_failed else "; rerun with --retry-failed to try them again"
        print(f"{len(failed)} job(s) failed{hint}", file=sys.stderr)
        return 1
    return 0
