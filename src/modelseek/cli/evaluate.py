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
from pathlib import Path

from ..metrics import DEFAULT_METRICS as _DEFAULT
from ._common import add_scheme, choice, int_at_least, load_truth, metavar, print_json

DEFAULT_METRICS = ",".join((*_DEFAULT, "kendall"))  # the command also shows weighted Kendall tau by default
TRUTH_FORMATS = ("auto", "csv", "qrels")


def add_truth_args(p) -> None:
    """Ground-truth options shared by ``evaluate`` and ``compare``."""
    from ..evaluate import Order

    p.add_argument("--ground-truth", "-g", help="ground truth: the official CSV (task_id, model_id, f1, ...) or a "
                                                "TREC qrels file (topic iter docno grade; negative grades are "
                                                "judged non-relevant)")
    p.add_argument("--truth-format", choices=TRUTH_FORMATS, default="auto",
                   help="format of the ground truth (default: told by its form)")
    p.add_argument("--any-score", action="store_true",
                   help="the f1 column holds any higher-is-better score (accuracy in %%, BLEU ...), e.g. a "
                        "published model zoo's records: values outside [0, 1] are accepted")
    p.add_argument("--tasks-csv", help="tasks.csv giving criticality (default: beside the ground truth)")
    p.add_argument("--pool", default=None,
                   help="pool whose ids and Hugging Face ids name the same models, so that a run of NTCIR docIDs "
                        "scores against a ground truth of HF ids and back (default: ntcir19 for a CSV ground "
                        "truth, none for TREC qrels; 'none' to match ids as written)")
    add_scheme(p)
    p.add_argument("--relevance-level", type=int_at_least(1), default=1, metavar="N",
                   help="lowest grade counted as relevant by MRR and binary measures (trec_eval's -l; default 1)")
    p.add_argument("--order", type=choice(Order), default=Order.RANK, metavar=metavar(Order),
                   help="rank: by the Rank column, ties in line order (official; default); trec_eval: by Score "
                        "descending, then docID descending, as trec_eval does (Rank ignored)")


def register(sub) -> None:
    p = sub.add_parser("evaluate", help="score a run file against ground truth (nDCG@1,3,5, MRR, weighted "
                                        "Kendall tau, per tier)")
    p.add_argument("run", help="TREC run file (may hold several run ids; files written by other tools, e.g. "
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
    p.set_defaults(func=run)


def read_truth(args):
    """The ground truth of ``args`` (CSV or qrels)."""
    from ..data.truth import GroundTruth

    fmt = args.truth_format
    if args.ground_truth and fmt == "auto":
        fmt = GroundTruth.detect_format(args.ground_truth)
    if fmt == "qrels":
        if not args.ground_truth:
            raise argparse.ArgumentTypeError("--truth-format qrels needs --ground-truth")
        return GroundTruth.from_qrels(args.ground_truth)
    return load_truth(args.ground_truth, Path(args.run if hasattr(args, "run") else args.runs[0]).parent,
                      args.tasks_csv, any_score=args.any_score)


def pool_aliases(name: str | None) -> dict[str, str]:
    """Every Hugging Face id of the pool -> the pool's id (empty for ``none``)."""
    if not name or name.lower() == "none":
        return {}
    from ..data.pool import load_pool

    return {c.hf_id: c.id for c in load_pool(name) if c.hf_id and c.hf_id != c.id}


def harmonise(runs, truth, pool: str | None):
    """Runs and ground truth with every HF id of ``pool`` written as the pool's id (other ids unchanged).

    Default pool: ntcir19 for a CSV ground truth, none for TREC qrels (their docnos are not models). The pool
    is not even read when every docID of the runs is a model id of the ground truth already."""
    explicit = pool is not None
    if pool is None:
        pool = "none" if truth.explicit_grades else "ntcir19"
    if pool.lower() == "none":
        return runs, truth
    known = set(truth.model_ids)
    if all(d in known for r in runs for d in _docs(r)):
        if explicit:
            pool_aliases(pool)  # a bad --pool is still an error
        return runs, truth
    aliases = pool_aliases(pool)
    if not aliases:
        return runs, truth
    if any(m in aliases for m in truth.model_ids):
        truth = truth.rename_models(aliases)
    runs = [r.map_docs(aliases) if any(d in aliases for d in _docs(r)) else r for r in runs]
    return runs, truth


def _docs(run):
    a = run.arrays()
    if a.doc_names is not None:
        return a.doc_names.tolist()
    import pandas as pd

    return pd.unique(a.doc).tolist()


def load_runs(path, run_id=None):
    from ..data.run import read_run, read_runs

    return [read_run(path, run_id, extra_columns=True)] if run_id else list(read_runs(path, extra_columns=True).values())


def check_shared_topics(runs, truth, path) -> None:
    from ..errors import InputError

    for r in runs:
        if not any(truth.has_task(t) for t in r):
            raise InputError(f"run {r.run_id!r} shares no topic with the ground truth (run: "
                             f"{', '.join(list(r)[:3])} ...; ground truth: {', '.join(truth.task_ids[:3])} ...)",
                             path=path, field="topicID")


def run(args: argparse.Namespace) -> int:
    from ..errors import InputError
    from ..evaluate import evaluate

    from ..style.evaluation import is_style_truth  # Subtask B truth (image_id,model_id: train.csv), issue #22
    if args.ground_truth and is_style_truth(args.ground_truth):
        from ..style.evaluation import run_evaluate
        return run_evaluate(args)
    truth = read_truth(args)
    runs = load_runs(args.run, args.run_id)
    runs, truth = harmonise(runs, truth, args.pool)
    metrics = [m for m in args.metrics.split(",") if m.strip()]
    check_shared_topics(runs, truth, args.run)
    reports = [evaluate(r, truth, metrics, args.scheme, order=args.order, relevance_level=args.relevance_level)
               for r in runs]
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
