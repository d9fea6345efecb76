"""``modelseek validate``: check run files against the official submission rules."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..retrieval import find_layout, GroundTruth, load_pool, load_tasks, read_tasks_csv, test_topics, validate_run
from ..core.errors import InputError, ValidationError
from ..core.io import open_text, read_text
from ._common import declare_paths

#: the runs a participant may submit per subtask (NTCIR-19 Model Retrieval)
MAX_RUNS = 5


def register(sub) -> None:
    p = sub.add_parser("validate", help="check run files against the submission rules",
                       description="Checks columns, ranks and scores, duplicates, at most 5 run ids, every "
                                   "candidate per topic (and every topic, when the task set is given). With "
                                   "--official ROOT (the organisers' repository or its data/): every official test "
                                   "topic (tasks.csv's test task_ids; Subtask B: every test image) ranks every model "
                                   "of models.csv exactly once, and the files together hold at most 5 distinct run "
                                   "ids. Prints one 'ok' line and exits 0 when valid (nothing with --quiet); one "
                                   "line per violation and exit 1 otherwise. Strict where evaluate is lenient: a "
                                   "line with more than six columns is refused, naming the extra columns.")
    p.add_argument("run", nargs="+", help="TREC run file(s): one participant's submission")
    p.add_argument("--subtask", choices=["A", "B"], type=str.upper,
                   help="A (default) or B; with --official, the layout of ROOT decides")
    p.add_argument("--official", metavar="ROOT",
                   help="check against what the organisers will score: the test topics of ROOT's tasks.csv "
                        "(task_type test) and the model_ids of its models.csv; a Subtask B root: every image of "
                        "data/test/ against every model of models.csv")
    p.add_argument("--pool", help="candidates that every topic must rank (Subtask A default: the 20 NTCIR "
                                  "models; Subtask B: a models.csv)")
    p.add_argument("--topics", help="file with one topic id per line that the run must cover")
    p.add_argument("--ground-truth", help="take the topics from a ground-truth CSV")
    p.add_argument("--tasks", help="take the topics from a task folder or table, or a tasks.csv (its task_ids)")
    p.add_argument("--test-images", help="Subtask B: the organisers' data/ folder or a test folder; the run must "
                                         "rank every test image against every model of models.csv")
    p.add_argument("--quiet", "-q", action="store_true", help="print nothing when valid (default prints 'ok')")
    declare_paths(p, inputs=["run", "official", "pool", "topics", "ground_truth", "tasks", "test_images"])
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    given = [o for o, v in (("--official", args.official), ("--topics", args.topics),
                            ("--ground-truth", args.ground_truth), ("--tasks", args.tasks),
                            ("--test-images", args.test_images)) if v]
    if len(given) > 1:
        raise InputError(f"{' and '.join(given)} each name the topics; give one", field=given[1])
    if args.official:
        subtask, topics, docs, what = _official(args)
    elif args.test_images:  # Subtask B against the organisers' test folder (issue #22)
        from ..style import test_folder_topics  # lazy: pandas, scipy

        subtask = "B"
        topics, docs = test_folder_topics(args.test_images, args.pool)
        what = f"each ranking the {len(docs)} models for all {len(topics):,} test images"
    else:
        subtask = args.subtask or "A"
        topics, docs = _topics(args), _docs(args, subtask)
        what = ""
    runs = _validate_all(args.run, topics, docs, subtask)
    if not args.quiet:
        n = sum(len(r) for per in runs.values() for r in per.values())
        ids = sum(len(per) for per in runs.values())
        files = f"{len(runs)} files" if len(runs) > 1 else str(args.run[0])
        print(f"ok: {files}: {ids} run(s), " + (what or f"{n} topic ranking(s)"))
    return 0


def _validate_all(paths: list[str], topics, docs, subtask: str) -> dict[str, dict]:
    """Every file on its own, then the files together: distinct run ids, at most :data:`MAX_RUNS` of them."""
    problems: list[InputError] = []
    runs: dict[str, dict] = {}
    for path in paths:
        if path in runs:
            raise InputError("given twice", path=path)
        try:
            runs[path] = validate_run(path, topics=topics, docs=docs, subtask=subtask)
        except ValidationError as exc:
            problems += exc.problems
    if subtask == "B" and topics is None:
        for path, per in runs.items():
            problems += _looks_like_a(path, per)
    first: dict[str, str] = {}
    for path, per in runs.items():
        for rid in per:
            if rid in first:
                problems.append(InputError(f"run id {rid!r} is also in {first[rid]}; each run needs its own id",
                                           path=path, field="RunID"))
            first.setdefault(rid, path)
    if len(first) > MAX_RUNS:
        problems.append(InputError(f"{len(first)} runs in these files ({', '.join(first)}); a participant submits "
                                   f"at most {MAX_RUNS}", path=paths[-1], field="RunID"))
    if problems:
        raise ValidationError(paths[0] if len(paths) == 1 else f"{len(paths)} run files", problems)
    return runs


def _looks_like_a(path: str, per: dict) -> list[InputError]:
    """A Subtask B run whose topics are all numbers and whose topics each rank exactly the 20 Subtask A docIDs is a
    Subtask A run given to the wrong check (Subtask B topics are test image names, its docIDs 85 style models)."""
    a_docs = {str(i) for i in range(1, 21)}
    for rid, r in per.items():
        topics = list(r)
        if topics and all(t.isdigit() for t in topics) and all(set(r.ranking(t)) == a_docs for t in topics):
            return [InputError(f"run {rid!r} looks like a Subtask A run (numeric topics, each ranking docIDs 1-20); "
                               f"Subtask B topics are test image names — check it with --subtask A, or give "
                               f"--official ROOT", path=path, field="topicID")]
    return []


def _official(args: argparse.Namespace) -> tuple[str, list[str] | None, list[str] | None, str]:
    """(subtask, topics, docIDs, what the ok line says) of the organisers' ROOT."""
    from ..style import organiser_root  # lazy: pandas, scipy

    root = Path(args.official)
    if not root.is_dir():
        raise InputError("no such folder (the organisers' repository or its data/)", path=root, field="--official")
    layout = find_layout(root, need_tasks=False)
    b_root = organiser_root(root)
    if args.subtask == "B" or (layout is None and b_root is not None):
        from ..style import test_folder_topics  # lazy: pandas, scipy

        topics, docs = test_folder_topics(root, args.pool)
        return "B", topics, docs, f"each ranking the {len(docs)} models for all {len(topics):,} test images"
    if layout is None:
        raise InputError("not the organisers' layout: no tasks.csv here or in data/ (Subtask A), no data/test/ with "
                         "models.csv (Subtask B)", path=root, field="--official")
    topics = test_topics(layout)
    if not topics:
        raise InputError("tasks.csv lists no test task (task_type test)", path=layout.tasks_csv, field="task_type")
    if args.pool:
        docs = load_pool(args.pool).ids
    elif layout.models_csv is not None:
        docs = load_pool(layout.models_csv).ids
    else:
        raise InputError("no models.csv here or in data/: the official docIDs are its model_ids; give --pool",
                         path=root, field="--official")
    return "A", topics, docs, f"each ranking the {len(docs)} models for all {len(topics)} official test topics"


def _topics(args: argparse.Namespace) -> list[str] | None:
    if args.topics:
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
        return topics
    if args.ground_truth:
        return GroundTruth.from_csv(args.ground_truth).task_ids
    if args.tasks:
        p = Path(args.tasks)
        if p.is_file() and p.suffix.lower() == ".csv" and _is_tasks_csv(p):
            return list(read_tasks_csv(p))
        return load_tasks(args.tasks).ids
    return None


def _is_tasks_csv(path: Path) -> bool:
    """A CSV whose header names ``task_id`` (tasks.csv), not a data table."""
    with open_text(path, "tasks file") as fh:
        header = fh.readline()
    return "task_id" in [c.strip().strip('"') for c in header.split(",")]


def _docs(args: argparse.Namespace, subtask: str) -> list[str] | None:
    if args.pool:
        return load_pool(args.pool).ids
    return load_pool("ntcir19").ids if subtask == "A" else None
