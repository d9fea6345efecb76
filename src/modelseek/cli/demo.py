"""``modelseek demo``: the main job on its embedded default, offline.

Generates a small example task, ranks the 20 NTCIR-19 candidates for it with the shipped default ranker,
writes a run file, validates it and prints the ranking.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..retrieval import load_table_task, ntcir_pool, rank, validate_run
from ._common import OUTPUT_DIR, SEED


def register(sub) -> None:
    p = sub.add_parser("demo", help="rank the NTCIR-19 candidates for a generated example task (offline)")
    p.add_argument("--out", type=OUTPUT_DIR, default="out", help="output folder (default: out/)")
    p.add_argument("--seed", type=SEED, default=0, help="seed of the generated task (0 <= SEED < 2**32)")
    p.add_argument("--layout", action="store_true",
                   help="also write OUT/subtask-a: a generated NTCIR-19 Subtask A folder (24 tasks with text, 8 "
                        "models, ground-truth.csv, tasks.csv, models.csv) to try bench, train-ranker, fuse, "
                        "evaluate and eevee without the organisers' data")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..retrieval import make_text_task, write_task_table  # lazy: pandas

    out = Path(args.out)
    data = write_task_table(make_text_task("demo", n_classes=4, seed=args.seed), out / "demo-task.csv")
    task = load_table_task(data, task_id="demo")
    pool = ntcir_pool()
    run_ = rank(task, pool)
    run_path = out / "demo-run.txt"
    run_.write(run_path)
    validate_run(run_path, topics=[task.id], docs=pool.ids)
    print(f"example task: {data} ({len(task.train)} train / {len(task.val)} val texts, "
          f"{task.num_classes} classes)")
    print(f"ranked {len(pool)} candidates with the default ranker ({run_.run_id}):")
    # the default ranker's score is minus the expected fine-tuned rank (a TREC run ranks higher scores first):
    # shown as the rank it is, and said
    expected = run_.run_id == "adaptive"
    print(f"{'rank':>4}  {'docID':>5}  {'exp. rank' if expected else 'score':>9}  model")
    for e in run_[task.id]:
        print(f"{e.rank:>4}  {e.doc:>5}  {(-e.score if expected else e.score):>9.2f}  {pool.get(e.doc).hf_id}")
    if expected:
        print(f"exp. rank: the candidate's expected rank among the {len(pool)} after fine-tuning; the run file's "
              f"score is its negative (TREC runs rank higher scores first)")
    print(f"run file (valid TREC format): {run_path}")
    if args.layout:
        from ..retrieval import make_ntcir_layout  # lazy: pandas

        root = make_ntcir_layout(out / "subtask-a", n_tasks=24, n_models=8, seed=args.seed)
        print(f"generated NTCIR-19 Subtask A layout (24 tasks x 8 models): {root}")
    return 0
