"""``modelseek evaluate``: score a run file against ground truth (the official scorer)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ._common import add_scheme, load_truth, print_json

DEFAULT_METRICS = "ndcg@1,ndcg@3,ndcg@5,mrr,kendall"


def register(sub) -> None:
    p = sub.add_parser("evaluate", help="score a run file against ground truth (nDCG@1,3,5, MRR, weighted "
                                        "Kendall tau, per tier)")
    p.add_argument("run", help="TREC run file (may hold several run ids; files written by other tools, e.g. "
                               "ranx, are read too)")
    p.add_argument("--ground-truth", "-g", help="ground-truth CSV (task_id, model_id, f1, ...)")
    p.add_argument("--any-score", action="store_true",
                   help="the f1 column holds any higher-is-better score (accuracy in %%, BLEU ...), e.g. a "
                        "published model zoo's records: values outside [0, 1] are accepted")
    p.add_argument("--tasks-csv", help="tasks.csv giving criticality (default: beside the ground truth)")
    p.add_argument("--metrics", default=DEFAULT_METRICS,
                   help=f"comma-separated: ndcg@k, mrr, kendall, regret@k (default {DEFAULT_METRICS})")
    add_scheme(p)
    p.add_argument("--run-id", help="evaluate only this run id")
    p.add_argument("--per-topic", action="store_true", help="also print per-topic values")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true")
    fmt.add_argument("--csv", action="store_true")
    fmt.add_argument("--markdown", action="store_true")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..data.run import read_run, read_runs
    from ..errors import InputError
    from ..evaluate import evaluate

    from ..style.evaluation import is_style_truth  # Subtask B truth (image_id,model_id: train.csv), issue #22
    if args.ground_truth and is_style_truth(args.ground_truth):
        from ..style.evaluation import run_evaluate
        return run_evaluate(args)
    truth = load_truth(args.ground_truth, Path(args.run).parent, args.tasks_csv, any_score=args.any_score)
    runs = [read_run(args.run, args.run_id)] if args.run_id else list(read_runs(args.run).values())
    metrics = [m for m in args.metrics.split(",") if m.strip()]
    topics = set(truth.task_ids)
    for r in runs:
        if not any(t in topics for t in r):
            raise InputError(f"run {r.run_id!r} shares no topic with the ground truth (run: "
                             f"{', '.join(list(r)[:3])} ...; ground truth: {', '.join(truth.task_ids[:3])} ...)",
                             path=args.run, field="topicID")
    reports = [evaluate(r, truth, metrics, args.scheme) for r in runs]
    if args.json:
        print_json({r.run_id: r.to_dict() for r in reports})
        return 0
    for rep in reports:
        if args.csv:
            print(rep.to_csv(per_topic=args.per_topic), end="")
        elif args.markdown:
            print(f"**{rep.run_id}**\n\n{rep.to_markdown()}\n")
        else:
            print(rep.table())
            if args.per_topic:
                print(rep.per_topic.to_string(float_format=lambda x: f"{x:.4f}"))
            print()
    return 0
