"""``modelseek rank``: rank the candidates of a pool for a task (or a task set) and write a run file."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import InputError
from ._common import load_pool_arg, load_truth, print_json
from .finetune import add_verify_args, verify_after_rank


def register(sub) -> None:
    p = sub.add_parser("rank", help="rank candidate models for a task or task set; write a TREC run",
                       description="Rank the candidates of a pool for a data set (CSV/JSONL/Parquet with text "
                                   "and label columns), an NTCIR task folder or a whole NTCIR task set.")
    p.add_argument("path", help="a table file, an NTCIR task folder, or an NTCIR subtask-A root")
    p.add_argument("-m", "--method", nargs="+", default=["default"],
                   help="method name(s); 'default' is the shipped pre-trained ranker; a .json path is a ranker "
                        "artifact from 'modelseek train-ranker' (one run id per method)")
    p.add_argument("--pool", help="pool file (models.csv or YAML) or built-in name (default: ntcir19, or "
                                  "models.csv beside the tasks)")
    p.add_argument("-o", "--output", help="write the run file here")
    p.add_argument("--run-id", help="run id (default: the method name)")
    p.add_argument("--train-truth", help="ground truth of past tasks for methods that learn "
                                         "(default with --cv: ground-truth.csv beside the tasks)")
    p.add_argument("--cv", type=int, metavar="K", help="cross-fit: rank each task with a model fitted on the "
                                                       "other folds (the folds of 'bench')")
    p.add_argument("--seed", type=int, default=0, help="seed for folds and random methods")
    p.add_argument("--text-col", default="text", help="text column(s) of a table file, comma-separated")
    p.add_argument("--label-col", default="label", help="label column(s) of a table file, comma-separated")
    p.add_argument("--fusion", choices=["rrf"], help="fuse the rankings of the --method estimators into one run "
                                                     "by reciprocal-rank fusion (feature methods: logme, knn...)")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="a method parameter, passed to every method that takes it (repeatable), e.g. "
                        "pooling=cls, layer=mean, max_examples=2000, cache_dir=/tmp/feats, device=cpu")
    p.add_argument("--allow-failures", action="store_true",
                   help="rank the candidates that work when some fail (cannot be downloaded, loaded or "
                        "featurised): failed candidates are left out of the run and named in a warning. Without "
                        "it such a rank exits 1 naming every failure; failed candidates never get a score")
    p.add_argument("--show", type=int, default=3, help="print the rankings of at most this many tasks")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    add_verify_args(p)
    p.set_defaults(func=run)


def _tasks(args):
    from ..data.loaders import load_ntcir_tasks, load_table_task

    path = Path(args.path)
    if not path.exists():
        raise InputError("no such file or folder", path=path)
    if path.is_file():
        return [load_table_task(path, text_col=args.text_col.split(",") if "," in args.text_col else args.text_col,
                                label_col=args.label_col.split(",") if "," in args.label_col else args.label_col)]
    return list(load_ntcir_tasks(path))


def _parse_params(items: list[str]) -> dict:
    import yaml

    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"--param needs KEY=VALUE, got {item!r}", field="--param")
        out[key.strip()] = yaml.safe_load(value) if value.strip() else None
    return out


def _params(method: str, seed: int, extra: dict | None = None) -> dict:
    import inspect

    from ..rankers import RANKERS

    from ..rankers.default import builtin_artifact

    if method == "default" or method.endswith(".json") or (method not in RANKERS and builtin_artifact(method)):
        return {}
    cls = RANKERS.get(method)
    accepted = inspect.signature(cls.__init__).parameters
    params = {"seed": seed} if "seed" in accepted else {}
    params.update({k: v for k, v in (extra or {}).items() if k in accepted})
    return params


def run(args: argparse.Namespace) -> int:
    from ..api import rank
    from ..bench import cross_validate
    from ..data.run import write_runs
    from ..data.task import TaskSet

    if args.json and (args.verify_top or args.halving):
        raise InputError("--verify-top/--halving print tables; use them without --json")
    root = Path(args.path)
    pool = load_pool_arg(args.pool, root if root.is_dir() else None)
    tasks = _tasks(args)
    if len(args.method) > 1 and args.run_id and not args.fusion:
        raise InputError("--run-id needs a single --method")
    extra = _parse_params(args.param)
    if args.fusion:
        plan = [("rrf", {"methods": list(args.method)}, "rrf-" + "-".join(args.method))]
    else:
        plan = [(m, {}, None) for m in args.method]
    runs = []
    for method, fixed, default_id in plan:
        params = {**_params(method, args.seed, extra), **fixed}
        if args.cv:
            truth = load_truth(args.train_truth, root if root.is_dir() else root.parent)
            res = cross_validate(method, truth, pool, tasks=TaskSet(tasks), folds=args.cv, seed=args.seed,
                                 method_params=params)
            r = res.runs[0]
        else:
            truth = None
            if method != "default" and args.train_truth:
                truth = load_truth(args.train_truth)
            r = rank(tasks, pool, method=method, train_truth=truth, progress=not args.json,
                     allow_failures=args.allow_failures, **params)
        run_id = args.run_id or default_id
        runs.append(r.with_id(run_id) if run_id else r)
    if args.output:
        write_runs(args.output, runs)
    if args.json:
        print_json({r.run_id: {t: [{"doc": e.doc, "rank": e.rank, "score": e.score,
                                     "model": pool.get(e.doc).hf_id} for e in r[t]] for t in r} for r in runs})
        return 0
    for r in runs:
        for t in list(r)[: args.show]:
            print(f"task {t} — method {r.run_id}")
            print(f"{'rank':>4}  {'docID':>5}  {'score':>10}  model")
            for e in r[t]:
                print(f"{e.rank:>4}  {e.doc:>5}  {e.score:>10.4f}  {pool.get(e.doc).hf_id}")
        if len(r) > args.show:
            print(f"... and {len(r) - args.show} more task(s)")
    if args.output:
        print(f"wrote {sum(len(r) for r in runs)} ranking(s) of {len(pool)} candidates to {args.output}")
    return verify_after_rank(args, runs, tasks, pool)
