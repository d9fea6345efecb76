"""``modelseek evaluate``: score a run file against ground truth (the official scorer).

The ground truth is the official CSV (``task_id,model_id,f1``) or a TREC qrels file (``topic iter docno
grade``), told apart by their form or named with ``--truth-format``. Run docIDs and ground-truth model ids
are matched through the pool (``--pool``, default the NTCIR pool): a Hugging Face id and its NTCIR docID are
the same model. This module imports only what scoring needs (no torch, no transformers, no SciPy unless
``kendall`` is asked for).
"""

from __future__ import annotations

import argparse
import sys

from ..retrieval import DEFAULT_METRICS as _DEFAULT
from ._common import declare_paths
from ._common import RUN_FILE, print_json
from ._truth import add_truth_args, check_shared_topics, load_runs, read_truth
from ..core.errors import InputError
from ..retrieval import evaluate, is_style_truth

DEFAULT_METRICS = ",".join(_DEFAULT)  # the library's default (ms.evaluate's): nDCG@1,3,5, MRR, weighted Kendall tau


def register(sub) -> None:
    p = sub.add_parser("evaluate", help="score a run file against ground truth (nDCG@1,3,5, MRR, weighted "
                                        "Kendall tau, per tier)")
    p.add_argument("run", type=RUN_FILE,
                   help="TREC run file (may hold several run ids; files written by other tools, e.g. "
                        "ranx, are read too; columns after the sixth are ignored, as trec_eval does)")
    add_truth_args(p)
    p.add_argument("--metrics", default=DEFAULT_METRICS,
                   help=f"comma-separated: ndcg@k, mrr, kendall, regret@k (default {DEFAULT_METRICS})")
    p.add_argument("--run-id", help="evaluate only this run id")
    p.add_argument("--per-topic", action="store_true", help="also print per-topic values")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 when the run holds topics or docIDs that the ground truth does not know")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true")
    fmt.add_argument("--csv", action="store_true")
    fmt.add_argument("--markdown", action="store_true")
    fmt.add_argument("--trec", action="store_true",
                     help="trec_eval -q layout: measure<TAB>topic<TAB>value with trec_eval's names (ndcg_cut_5, "
                          "recip_rank) and an 'all' line per measure; per-topic lines with --per-topic")
    declare_paths(p, inputs=["pool"])
    p.set_defaults(func=run)


def _names_image_id(path: str) -> bool:
    """Whether the file's first 64 KiB name ``image_id``: only then can it be Subtask B truth, whose package
    is imported only then (it costs about 0.4 s of start-up: SciPy and the style pipeline)."""
    import os
    import stat

    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # never open a FIFO or a device here
            return False
        with open(path, "rb") as fh:
            return b"image_id" in fh.read(65536)
    except OSError:
        return False


def _style(args: argparse.Namespace) -> int:
    """``evaluate RUN --ground-truth train.csv`` on a Subtask B truth: MRR per run with its interval."""
    from ..style import evaluate_style_runs  # lazy: pandas, scipy

    scores = evaluate_style_runs(args.run, args.ground_truth, getattr(args, "run_id", None))
    if args.json:
        print_json({s.run_id: s.to_dict() for s in scores})
        return 0
    width = max(12, *(len(s.run_id) for s in scores))
    n = len(scores[0].per_query)  # every image of the truth is a query of every score
    print(f"Subtask B: MRR over the {n:,} images of {args.ground_truth} (95% bootstrap interval)")
    print(f"{'run':<{width}}  {'MRR':>6}  {'interval':>16}  {'missing':>7}")
    for s in scores:
        print(f"{s.run_id:<{width}}  {s.mrr:>6.4f}  [{s.low:.4f}, {s.high:.4f}]  {s.missing:>7,}")
    if getattr(args, "per_topic", False):
        for s in scores:
            for q, v in s.per_query.items():
                print(f"{s.run_id}\t{q}\t{v:.4f}")
    return 0


def run(args: argparse.Namespace) -> int:
    # Subtask B truth (image_id,model_id: train.csv), issue #22
    if args.ground_truth and _names_image_id(args.ground_truth) and is_style_truth(args.ground_truth):
        return _style(args)
    truth = read_truth(args)
    runs = load_runs(args.run, args.run_id)
    metrics = [m for m in args.metrics.split(",") if m.strip()]
    check_shared_topics(runs, truth, args.run)
    reports = [evaluate(r, truth, metrics, args.scheme, order=args.order, relevance_level=args.relevance_level,
                        pool=args.pool) for r in runs]
    notes = [(rep.run_id, n) for rep in reports for n in rep.notes()]
    if args.json:
        print_json({r.run_id: r.to_dict() for r in reports})
    else:
        for rep in reports:
            if args.csv:
                print(rep.to_csv(per_topic=args.per_topic), end="")
            elif args.trec:
                print(rep.to_trec(per_topic=args.per_topic), end="")
            elif args.markdown:
                print(f"**{rep.run_id}**\n\n{rep.to_markdown()}\n")
                for n in rep.notes():
                    print(f"> note: {n}\n")
            else:
                print(rep.table())
                if args.per_topic:
                    print(rep.per_topic.to_string(float_format=lambda x: f"{x:.4f}"))
                print()
        if args.csv or args.trec:  # stdout stays machine-readable: the notes go to stderr
            for rid, n in notes:
                print(f"note: run {rid}: {n}", file=sys.stderr)
    if args.strict:
        unknown = [(rep.run_id, n) for rep in reports for n in rep.notes()
                   if "not in the ground truth" in n]
        if unknown:
            sys.stdout.flush()
            rid, first = unknown[0]
            raise InputError(f"--strict: run {rid}: {first}" + (f" (and {len(unknown) - 1} more)" if len(unknown) > 1
                                                                 else ""), path=args.run)
    return 0
