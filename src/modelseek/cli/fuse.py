"""``modelseek fuse``: combine runs (from modelseek or any TREC-writing tool) into one run.

Three modes: a stated fusion (``--method/--norm/--weights``), a learned one (``--optimize --ground-truth``:
method, normalisation and weights chosen by task-level cross-validation, reported against each input and
plain RRF, optionally saved with ``--save``), or a saved one applied to new topics (``--apply``). A learned
fusion's weights may differ per task (each run's spread; task size and number of classes from ``--tasks``; any
numbers per task from ``--task-features``); ``--no-per-task`` keeps one set of weights for every task.
"""

from __future__ import annotations

import argparse
from numbers import Real

from ..core import Interval
from ..retrieval import (check_shared_candidates, fuse, FusionMethod, LearnedFusion, Norm, optimize_fusion, PLAIN_RRF,
                         read_runs, read_task_features, Run, task_features_from_tasks, TaskFeatures)
from ..core.errors import InputError
from ._common import declare_paths
from ._common import (INPUT_FILE, NON_NEGATIVE_FLOAT, OUTPUT_FILE, RUN_FILE, SEED, TASKS_FILE, TRUTH_FILE, add_scheme,
                      choice, input_file_of, int_at_least, metavar, number, print_json, load_truth, registry_metavar,
                      set_lazy)

STEP = number(Interval(Real, 0, 1, closed="right"))


def register(sub) -> None:
    p = sub.add_parser(
        "fuse", help="fuse several runs into one (rrf, combsum, combmnz, wsum; learned weights with --optimize)",
        description="Fuse TREC runs (any tool's: 'topic Q0 doc rank score run_id', spaces or tabs) into one run. "
                    "A candidate missing from a run adds nothing from it (0 after normalisation for combsum/wsum, "
                    "not counted by combmnz, no RRF term); topics are the union of the inputs'; ties go to the "
                    "natural docID order.")
    # input files are read by the located readers (a missing file or a folder: exit 1, as in evaluate)
    p.add_argument("runs", nargs="+", metavar="RUN", type=RUN_FILE,
                   help="run files; every run id in each file is one input")
    p.add_argument("-o", "--output", required=True, type=OUTPUT_FILE, help="write the fused run here")
    p.add_argument("--names", help="comma-separated new run ids for the inputs, in order (when ids clash)")
    p.add_argument("--run-id", help="run id of the fused run (default fused-METHOD, or fused-learned)")
    set_lazy(p.add_argument("--method", type=choice(FusionMethod), help="rrf (default), combsum, combmnz or wsum"),
             # plugins by name, none imported
             metavar=registry_metavar("modelseek.retrieval.fusion.methods:FUSION_METHODS"))
    p.add_argument("--norm", type=choice(Norm), metavar=metavar(Norm),
                   help="score normalisation for combsum/combmnz/wsum: min-max (default), zmuv, rank, sum or none")
    p.add_argument("--weights", help="comma-separated weights, one per input run in order (rrf and wsum)")
    p.add_argument("--rrf-k", type=NON_NEGATIVE_FLOAT, default=60.0, help="RRF's constant k (default 60)")
    g = p.add_argument_group("learned fusion")
    mode = g.add_mutually_exclusive_group()
    mode.add_argument("--optimize", action="store_true",
                      help="choose method, normalisation and weights by task-level CV on the topics with ground "
                           "truth; needs --ground-truth")
    mode.add_argument("--apply", metavar="FUSION_JSON", type=INPUT_FILE,
                      help="apply a fusion saved by --optimize --save")
    g.add_argument("--ground-truth", "-g", type=TRUTH_FILE, help="ground truth (task_id, model_id, f1) for --optimize")
    g.add_argument("--any-score", action="store_true",
                   help="the ground truth's f1 column holds any higher-is-better score (accuracy in %%, ...)")
    g.add_argument("--tasks-csv", type=TASKS_FILE,
                   help="tasks.csv giving criticality (default: beside the ground truth)")
    g.add_argument("--metric", default="ndcg@5", help="what the search maximises: ndcg@k (default ndcg@5)")
    add_scheme(g)
    g.add_argument("--folds", type=int_at_least(2), default=5, help="cross-validation folds over topics (default 5)")
    g.add_argument("--seed", type=SEED, default=0, help="seed of the folds (and of a sampled weight grid)")
    g.add_argument("--step", type=STEP, default=0.1,
                   help="weight grid step on the simplex, dividing 1 (default 0.1)")
    g.add_argument("--selection", default="vs-rrf", choices=["vs-rrf", "1se", "best"],
                   help="vs-rrf (default): plain RRF unless the learned choice beats it in an inner "
                        "cross-validation by more than one standard error; 1se: among fusions within one standard "
                        "error of the best on the training topics, the one using the fewest runs (weights that "
                        "differ per task only when they beat that choice in an inner cross-validation); best: the "
                        "best mean")
    g.add_argument("--tasks", metavar="DIR",
                   help="the tasks' data (NTCIR root or task folders, or a table file): task size (training rows) "
                        "and number of classes become task features that fusion weights may follow (--optimize, "
                        "--apply)")
    g.add_argument("--task-features", metavar="CSV", type=input_file_of("task features file"),
                   help="task features: a topic (or task_id) column and one numeric column (> 0) per feature; an "
                        "empty cell is a missing value (the topic then gets the base weights)")
    g.add_argument("--no-per-task", dest="per_task", action="store_false",
                   help="search only fusions with the same weights for every task (default: also weights that "
                        "follow each run's spread and the task features)")
    g.add_argument("--save", metavar="FUSION_JSON", type=OUTPUT_FILE,
                   help="save the learned fusion (versioned, checksummed JSON)")
    p.add_argument("--json", action="store_true", help="machine-readable summary on stdout")
    declare_paths(p, inputs=["tasks"])
    p.set_defaults(func=run, param_flags={"features": "--tasks DIR or --task-features CSV"})


def _read_inputs(paths: list[str], names: str | None):
    runs: list[Run] = []
    for path in paths:
        runs.extend(read_runs(path).values())
    if names is not None:
        new = [n.strip() for n in names.split(",")]
        if len(new) != len(runs):
            raise InputError(f"{len(new)} name(s) for {len(runs)} input run(s) "
                             f"({', '.join(r.run_id for r in runs)})", field="--names")
        runs = [r.with_id(n) for r, n in zip(runs, new)]
    ids = [r.run_id for r in runs]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise InputError(f"input runs share the run id(s) {', '.join(dup)} ({', '.join(map(str, paths))}); give "
                         f"each a name with --names", field="RunID")
    return runs


_OPTION_FIELDS = {"step", "metric", "seed", "selection", "k", "norm", "method", "max_weights"}


def _located(exc, path, files):
    """An error about how the inputs fit together, named by ``path`` and listing the input files."""
    if exc.path is not None or exc.field in _OPTION_FIELDS:  # a bad option value is not about the files
        return exc
    return InputError(f"{exc.message} (inputs: {', '.join(map(str, files))})", path=path, field=exc.field)


def _weights(text: str | None):
    if text is None:
        return None
    out = []
    for part in text.split(","):
        try:
            out.append(float(part))
        except ValueError:
            raise InputError(f"not a number: {part.strip()!r}", field="--weights") from None
    return out


def _task_features(args: argparse.Namespace):
    """The task features of ``--tasks`` and ``--task-features`` (None when neither is given)."""
    feats = TaskFeatures()
    if args.tasks:
        feats = feats.merged(task_features_from_tasks(args.tasks))
    if args.task_features:
        feats = feats.merged(read_task_features(args.task_features))
    return feats if feats else None


def _coverage_notes(features, topics) -> list[str]:
    """One note per task feature that leaves out some of ``topics`` (there the fusion uses its base weights): how
    many it covers and which it leaves out (at most 10 named)."""
    if not features:
        return []
    topics = sorted(set(topics))
    notes = []
    for name in features.names:
        missing = [t for t in topics if t not in features.values[name]]
        if missing:
            shown = ", ".join(missing[:10]) + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
            notes.append(f"task feature {name!r} covers {len(topics) - len(missing)} of {len(topics)} topics; left "
                         f"out (base weights there): {shown}")
    return notes


def _vs_plain_rrf(cv) -> str:
    row = cv.summary().loc[PLAIN_RRF]
    return (f"learned − plain RRF on held-out topics: {row['diff']:+.4f} "
            f"[95% interval {row['diff_low']:+.4f}, {row['diff_high']:+.4f}]")


def _apply(args: argparse.Namespace, runs, features) -> int:
    """``--apply``: a saved fusion on new runs."""
    learned = LearnedFusion.load(args.apply)
    try:
        fused = learned.apply(runs, args.run_id, features)
    except InputError as exc:
        raise _located(exc, args.apply, args.runs) from None
    fused.write(args.output)
    notes = _coverage_notes(features, fused)
    summary = {"fusion": learned.fusion.to_dict(), "describe": learned.fusion.describe(),
               "output": str(args.output), "topics": len(fused),
               "new_topics": len(set(fused) - set(learned.fitted_topics)), "notes": notes}
    if args.json:
        print_json(summary)
    else:
        print(f"applied {learned.fusion.describe()} (learned on {len(learned.fitted_topics)} topics) to "
              f"{len(fused)} topics ({summary['new_topics']} new); wrote {args.output}")
        for n in notes:
            print(f"note: {n}")
    return 0


def _optimize(args: argparse.Namespace, runs, features) -> int:
    """``--optimize``: learn the fusion, report its cross-validation, write (and save) it."""
    truth = load_truth(args.ground_truth, None, args.tasks_csv, any_score=args.any_score)
    try:
        learned = optimize_fusion(runs, truth, metric=args.metric, scheme=args.scheme, folds=args.folds,
                                  seed=args.seed, step=args.step, rrf_ks=(args.rrf_k,), selection=args.selection,
                                  progress=not args.json, features=features, per_task=args.per_task)
    except InputError as exc:
        raise _located(exc, args.ground_truth, args.runs) from None
    fused = learned.apply(runs, args.run_id, features)
    fused.write(args.output)
    if args.save:
        learned.save(args.save)
    notes = _coverage_notes(features, learned.fitted_topics)
    left = learned.info.get("left_out") or {}
    if left:  # a broken plugin fails alone: the search went on without it
        notes.insert(0, f"fusion method(s) left out of the search, not usable: {'; '.join(left.values())}")
    if args.json:
        print_json({"fusion": learned.fusion.to_dict(), "describe": learned.fusion.describe(),
                    "fitted_topics": learned.fitted_topics, "train_score": learned.train_score,
                    "cv": learned.cv.to_dict() if learned.cv is not None else None,
                    "output": str(args.output), "saved": None if args.save is None else str(args.save),
                    "notes": notes})
        return 0
    print(f"learned fusion: {learned.fusion.describe()}")
    print(f"  chosen on {len(learned.fitted_topics)} topics with ground truth "
          f"({learned.info['grid_size']} candidate fusions; mean {learned.metric} {learned.train_score:.4f} "
          f"on those topics, an optimistic figure)")
    if learned.cv is not None:
        print()
        print(learned.cv.table())
        print(_vs_plain_rrf(learned.cv))
        print()
        for f in learned.cv.folds:
            print(f"  fold {f.fold}: fitted on {len(f.fitted)} topics, chose {f.fusion.describe()}")
    print(f"wrote {args.output} ({len(fused)} topics)" + (f"; saved {args.save}" if args.save else ""))
    for n in notes:
        print(f"note: {n}")
    return 0


def run(args: argparse.Namespace) -> int:
    stated = [o for o, v in (("--method", args.method), ("--norm", args.norm), ("--weights", args.weights))
              if v is not None]
    if (args.optimize or args.apply) and stated:
        raise InputError(f"{', '.join(stated)} cannot be combined with "
                         f"{'--optimize' if args.optimize else '--apply'} (the fusion is learned or loaded)")
    if args.optimize and not args.ground_truth:
        raise InputError("--optimize needs --ground-truth", field="--ground-truth")
    if args.save and not args.optimize:
        raise InputError("--save needs --optimize", field="--save")
    given = [o for o, v in (("--tasks", args.tasks), ("--task-features", args.task_features)) if v]
    if given and not (args.optimize or args.apply):
        raise InputError(f"{', '.join(given)} needs --optimize or --apply (a stated fusion has fixed weights)")
    runs = _read_inputs(args.runs, args.names)
    try:
        check_shared_candidates(runs)  # runs over different pools: refused before any mode
    except InputError as exc:
        raise _located(exc, None, args.runs) from None
    features = _task_features(args)

    if args.apply:
        return _apply(args, runs, features)
    if args.optimize:
        return _optimize(args, runs, features)

    try:
        fused = fuse(runs, method=args.method or "rrf", norm=args.norm, weights=_weights(args.weights),
                     k=args.rrf_k, run_id=args.run_id)
    except InputError as exc:
        raise _located(exc, None, args.runs) from None
    fused.write(args.output)
    if args.json:
        print_json({"inputs": [r.run_id for r in runs], "run_id": fused.run_id, "topics": len(fused),
                    "output": str(args.output)})
    else:
        print(f"fused {len(runs)} runs ({', '.join(r.run_id for r in runs)}) into {fused.run_id}: "
              f"{len(fused)} topics; wrote {args.output}")
    return 0
