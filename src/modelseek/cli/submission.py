"""``modelseek submission``: a participant's NTCIR-19 Subtask A runs in one command
(:mod:`modelseek.retrieval.submission`)."""

from __future__ import annotations

import argparse
import shlex
import sys

from ..retrieval import MAX_RUNS, METHODS, make_submission
from ..core import FOLDER_READS
from ._common import declare_paths
from ._common import EXISTING_DIR, SEED


def register(sub) -> None:
    p = sub.add_parser("submission", help="NTCIR-19 Subtask A: write up to five validated runs for the official "
                                          "test tasks, and METHODS.md declaring each",
                       description="Rank the official test tasks of the organisers' repository (after their "
                                   "download_test_tasks, and download_models for the inference-based runs) with each "
                                   "method, check every run as the organisers will (every test task_id of tasks.csv "
                                   "ranks every model_id of models.csv once; distinct run ids), then write "
                                   "OUT/<team>-<method>.txt and OUT/METHODS.md (per run: inference-based or -free, "
                                   "whether candidates were fine-tuned, the data used, the modelseek version and "
                                   "this command). Every method's preconditions are checked on every test task "
                                   "before any model is loaded; a run that cannot be made on a task ranks it by the "
                                   "avgrank prior (said in METHODS.md), one that cannot be made at all is left out "
                                   "with its reason. Nothing is written unless every run passes.")
    p.add_argument("root", type=EXISTING_DIR, help="the organisers' Subtask A repository (or its data/ folder)")
    p.add_argument("--out", "-o", required=True, help="folder for the run files and METHODS.md")
    p.add_argument("--methods", nargs="+", metavar="METHOD",
                   help=f"runs to make, at most {MAX_RUNS} (default: every one that can run here: "
                        f"{', '.join(METHODS)}; the inference-based ones need every candidate's weights, in "
                        f"data/models/NN or the Hugging Face cache)")
    p.add_argument("--team", default="modelseek", help="team name, the first part of each run id (default: modelseek)")
    p.add_argument("--pool", help="models.csv (default: the organisers' data/models.csv)")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], help="where frozen features are computed")
    p.add_argument("--budget", help="add the fine-tuning run 'funnel' (modelseek select per test task) with this "
                                    "time budget for all test tasks together, shared equally (e.g. 48h); its state "
                                    "is kept in OUT/funnel-work, so rerunning resumes")
    p.add_argument("--seed", type=SEED, default=0, help="seed of the funnel's fine-tuning")
    p.add_argument("--train-truth", metavar="PATH",
                   help="the ground truth of the avgrank prior: a repository root, its data/ folder or the CSV "
                        "(default: ROOT's data/ground-truth.csv when it holds more training tasks than the 70 "
                        "shipped with modelseek, else the shipped one; METHODS.md says which)")
    declare_paths(p, inputs={"root": FOLDER_READS, "pool": (), "train_truth": FOLDER_READS},
                  output_dirs={"out": ("*.txt", "METHODS.md")})
    p.set_defaults(func=run, map_params=True)  # library errors name parameters: shown as flags


def run(args: argparse.Namespace) -> int:
    command = shlex.join(["modelseek", *sys.argv[1:]]) if sys.argv[1:2] == ["submission"] else None
    sub = make_submission(args.root, args.out, methods=args.methods, team=args.team, pool=args.pool,
                          device=args.device, command=command, progress=True,
                          echo=lambda s: print(s, file=sys.stderr), budget=args.budget, seed=args.seed,
                          train_truth=args.train_truth)
    for name, why in sub.skipped.items():
        print(f"not made: {name} — {why}")
    for r in sub.runs:
        if r.fallback:
            print(f"{r.run_id}: {len(r.fallback)} topic(s) ranked by the avgrank prior instead of {r.method} "
                  f"({', '.join(list(r.fallback)[:8])}; see METHODS.md)")
    print(f"{'run id':<28} {'kind':<16} {'fine-tuned':<10} file")
    for r in sub.runs:
        print(f"{r.run_id:<28} {r.info.inference:<16} {f'yes ({r.finetuned})' if r.finetuned else 'no':<10} {r.path}")
    print(f"wrote {len(sub.runs)} run(s), each ranking the {sub.runs[0].topics} official test topics (validated), "
          f"and {sub.methods_file}")
    return 0
