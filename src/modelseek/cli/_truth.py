"""Options and readers shared by ``evaluate`` and ``compare``: the ground truth (CSV or qrels), run files, and
the pool that makes a Hugging Face id and a pool id the same model."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..retrieval import GroundTruth, read_run, read_runs
from ..retrieval import check_shared_topics as shared_topics
from ..retrieval import Order, harmonise, pool_aliases  # noqa: F401  (the library's policy; re-exported for commands)
from ._common import TASKS_FILE, TRUTH_FILE, add_scheme, choice, int_at_least, load_truth, metavar

TRUTH_FORMATS = ("auto", "csv", "qrels")


def add_truth_args(p) -> None:
    """Ground-truth options shared by ``evaluate`` and ``compare``."""
    p.add_argument("--ground-truth", "-g", type=TRUTH_FILE,
                   help="ground truth: the official CSV (task_id, model_id, f1, ...) or a "
                        "TREC qrels file (topic iter docno grade; negative grades are "
                        "judged non-relevant)")
    p.add_argument("--truth-format", choices=TRUTH_FORMATS, default="auto",
                   help="format of the ground truth (default: told by its form)")
    p.add_argument("--any-score", action="store_true",
                   help="the f1 column holds any higher-is-better score (accuracy in %%, BLEU ...), e.g. a "
                        "published model zoo's records: values outside [0, 1] are accepted")
    p.add_argument("--tasks-csv", type=TASKS_FILE,
                   help="tasks.csv giving criticality (default: beside the ground truth)")
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


def read_truth(args):
    """The ground truth of ``args`` (CSV or qrels)."""
    fmt = args.truth_format
    if args.ground_truth and fmt == "auto":
        fmt = GroundTruth.detect_format(args.ground_truth)
    if fmt == "qrels":
        if not args.ground_truth:
            raise argparse.ArgumentTypeError("--truth-format qrels needs --ground-truth")
        return GroundTruth.from_qrels(args.ground_truth)
    return load_truth(args.ground_truth, Path(args.run if hasattr(args, "run") else args.runs[0]).parent,
                      args.tasks_csv, any_score=args.any_score)


def load_runs(path, run_id=None):
    if run_id:
        return [read_run(path, run_id, extra_columns=True)]
    return list(read_runs(path, extra_columns=True).values())


def check_shared_topics(runs, truth, path) -> None:
    """The library's rule (:func:`~modelseek.retrieval.evaluation.check_shared_topics`) on every run read from
    ``path``."""
    for r in runs:
        shared_topics(r, truth, path)
