"""``modelseek validate``: check a run file against the official submission rules."""

from __future__ import annotations

import argparse

from ..errors import InputError


def register(sub) -> None:
    p = sub.add_parser("validate", help="check a run file against the submission rules",
                       description="Checks columns, ranks and scores, duplicates, at most 5 run ids, every "
                                   "candidate per topic (and every topic, when the task set is given). Prints "
                                   "one 'ok' line and exits 0 when valid (nothing with --quiet); one line per "
                                   "violation and exit 1 otherwise. Strict where evaluate is lenient: a line "
                                   "with more than six columns is refused, naming the extra columns.")
    p.add_argument("run", help="TREC run file")
    p.add_argument("--subtask", default="A", choices=["A", "B"], type=str.upper)
    p.add_argument("--pool", help="candidates that every topic must rank (Subtask A default: the 20 NTCIR "
                                  "models; Subtask B: a models.csv)")
    p.add_argument("--topics", help="file with one topic id per line that the run must cover")
    p.add_argument("--ground-truth", help="take the topics from a ground-truth CSV")
    p.add_argument("--tasks", help="take the topics from a task folder or table")
    p.add_argument("--test-images", help="Subtask B: the organisers' data/ folder or a test folder; the run must "
                                         "rank every test image against every model of models.csv")
    p.add_argument("--quiet", "-q", action="store_true", help="print nothing when valid (default prints 'ok')")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..data.pool import load_pool
    from ..data.run import validate_run

    if args.test_images:  # Subtask B against the organisers' test folder (issue #22)
        from ..style.evaluation import run_validate
        return run_validate(args)
    topics = None
    if args.topics:
        from ..io import read_text

        topics = []
        for lineno, ln in enumerate(read_text(args.topics, "topics file").split("\n"), 1):
            topic = ln.strip()
            if not topic:
                continue
            if any(c.isspace() or not c.isprintable() for c in topic):
                # a run's columns are separated by white space: such an id can never be matched
                raise InputError(f"topic id {topic!r} holds white space or a control character", path=args.topics,
                                 line=lineno, field="topicID")
            topics.append(topic)
    elif args.ground_truth:
        from ..data.truth import GroundTruth

        topics = GroundTruth.from_csv(args.ground_truth).task_ids
    elif args.tasks:
        from ..data.loaders import load_tasks

        topics = load_tasks(args.tasks).ids
    if args.pool:
        docs = load_pool(args.pool).ids
    elif args.subtask == "A":
        docs = load_pool("ntcir19").ids
    else:
        docs = None
    runs = validate_run(args.run, topics=topics, docs=docs, subtask=args.subtask)
    if not args.quiet:
        n = sum(len(r) for r in runs.values())
        print(f"ok: {args.run}: {len(runs)} run(s), {n} topic ranking(s)")
    return 0
