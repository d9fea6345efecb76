"""``modelseek submission`` on a stand-in of the organisers' Subtask A repository: where the wall time goes.

The stand-in is laid out as a participant has it after the organisers' ``download_test_tasks --all`` and
``download_models --all``: ``data/tasks.csv`` (the organisers' own, from ``../shared/data/ntcir19-mr/subtask-a``:
the 48 test tasks with their class counts, the training tasks), ``data/models.csv``, ``data/ground-truth.csv``,
``data/task-data/test-tasks/NNNN/{train,val}.jsonl`` and ``data/models/NN`` — the 20 candidates' stand-ins of the
right model types (:mod:`modelseek.testing.candidate_kinds`: BERT, RoBERTa, XLM-R, DistilBERT, ALBERT, DeBERTa
with their heads and tokenizers, tiny random weights, saved with ``save_pretrained``). Each test task's labels are
written as the downloader writes them: class names, JSON integers, digit strings, JSON floats (tasks 22 and 33:
``0.0`` ...), JSON booleans (task 46); its texts are ``--words`` words long.

What it measures (one process, a cold feature cache):

* the whole ``make_submission`` (the runs ``default avgrank logme knn rrf``), wall time;
* the time inside the models' forward passes (every ``encode``/``head_probs`` call) and inside the estimators
  (every ``estimator_score`` call), measured by wrapping those functions;
* their share of the whole, the rest ("other": loading, tokenizing, checks, writing);
* each method's up-front estimate (the submission's probe) against its measured time;
* with ``--src DIR``: the same through another source tree (the previous commit's, for the before/after table).

    python benchmarks/bench_submission.py                         # the full size: 48 tasks, 20 models
    python benchmarks/bench_submission.py --tasks 6 --rows 48 --words 300 --keep /tmp/standin   # a reduced one
    git archive HEAD~1 src | tar -x -C /tmp/before   # the baseline: the same stand-in, the previous code
    python benchmarks/bench_submission.py --tasks 6 --rows 48 --words 300 --keep /tmp/standin --src /tmp/before/src
    python benchmarks/bench_submission.py --profile prof.out       # cProfile of the submission too

Needs ``../shared/data/ntcir19-mr/subtask-a`` and the ``text`` extra. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

NTCIR_CANDIDATES = [ROOT.parent / "shared" / "data" / "ntcir19-mr" / "subtask-a",
                    Path("/work/shared/data/ntcir19-mr/subtask-a")]
FLOAT_TASKS = {22, 33}
BOOL_TASKS = {46}


def _ntcir() -> Path:
    for p in NTCIR_CANDIDATES:
        if (p / "tasks.csv").is_file():
            return p
    raise SystemExit("needs ../shared/data/ntcir19-mr/subtask-a (the organisers' tasks.csv)")


def _labels(task_id: int, classes: int, ys):
    """The class indices ``ys`` as the organisers' downloader writes task ``task_id``'s labels."""
    if task_id in FLOAT_TASKS:  # a float column as pandas writes it
        step = 1.0 if classes <= 3 else 1.0 / (classes - 1)
        return [round(float(y) * step, 1) for y in ys]
    if task_id in BOOL_TASKS:
        return [bool(y) for y in ys]
    kind = task_id % 3
    if kind == 0:
        return [f"class_{int(y):03d}" for y in ys]
    if kind == 1:
        return [int(y) for y in ys]
    return [str(int(y)) for y in ys]


def build(root: Path, n_tasks: int = 48, rows: int = 200, words: int = 2000, n_models: int = 20,
          seed: int = 0) -> Path:
    """The stand-in under ``root``; returns ``root``."""
    import numpy as np

    from modelseek.retrieval.data.synthetic import DOMAINS
    from modelseek.testing.candidate_kinds import KINDS, make_candidate_snapshot

    src = _ntcir()
    data = root / "data"
    data.mkdir(parents=True, exist_ok=True)
    with open(src / "tasks.csv", newline="", encoding="utf-8") as fh:
        table = list(csv.DictReader(fh))
    test = [r for r in table if r["task_type"] == "test"][:n_tasks]
    keep = {r["task_id"] for r in test} | {r["task_id"] for r in table if r["task_type"] != "test"}
    with open(data / "tasks.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(table[0]))
        w.writeheader()
        w.writerows(r for r in table if r["task_id"] in keep)
    shutil.copy(src / "ground-truth.csv", data / "ground-truth.csv")
    rng = np.random.default_rng(seed)
    vocab = [w for ws in DOMAINS.values() for w in ws]
    for r in test:
        tid, classes = int(r["task_id"]), max(2, int(r["task_class_count"]))
        folder = data / "task-data" / "test-tasks" / f"{tid:04d}"
        folder.mkdir(parents=True, exist_ok=True)
        for split, n in (("train", max(rows, 2 * classes)), ("val", max(rows // 4, classes))):
            ys = np.arange(n) % classes
            rng.shuffle(ys)
            with open(folder / f"{split}.jsonl", "w", encoding="utf-8") as out:
                for y, lab in zip(ys, _labels(tid, classes, ys)):
                    body = " ".join(vocab[int(i)] for i in rng.integers(len(vocab), size=words - 1))
                    out.write(json.dumps({"text": f"topic{int(y)} {body}", "labels": lab}) + "\n")
    ids = list(range(1, n_models + 1))
    with open(data / "models.csv", "w", newline="", encoding="utf-8-sig") as fh:
        fh.write("model_id,model_name,model_hf_url\n")
        fh.writelines(f"{m},{KINDS[m].hf_id},https://huggingface.co/{KINDS[m].hf_id}\n" for m in ids)
    for m in ids:
        make_candidate_snapshot(data / "models" / f"{m:02d}", m)
    return root


class Clock:
    """Time spent inside the wrapped functions (forward passes, estimator math), outermost calls only."""

    def __init__(self) -> None:
        self.spent = {"forward": 0.0, "estimators": 0.0}
        self._depth = 0

    def wrap(self, module, name: str, part: str) -> None:
        fn = getattr(module, name)

        def timed(*args, **kwargs):
            if self._depth:
                return fn(*args, **kwargs)
            self._depth += 1
            t = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.spent[part] += time.perf_counter() - t
                self._depth -= 1

        setattr(module, name, timed)


def measure(root: Path, out: Path, cache: Path, methods: list[str], profile: str | None) -> dict:
    """One submission (cold cache) -> its figures."""
    from modelseek import submission
    from modelseek.retrieval.features import lean_bert, text
    from modelseek.retrieval.rankers import feature_jobs

    os.environ["MODELSEEK_CACHE"] = str(cache)
    clock = Clock()
    originals = (text._forward, feature_jobs.estimator_score, lean_bert.LeanBert.__call__)
    clock.wrap(text, "_forward", "forward")
    clock.wrap(lean_bert.LeanBert, "__call__", "forward")  # the default ranker's task encoder
    clock.wrap(feature_jobs, "estimator_score", "estimators")
    lines: list[str] = []
    prof = None
    if profile:
        import cProfile

        prof = cProfile.Profile()
    t0 = time.perf_counter()
    try:
        with (prof if prof is not None else contextlib.nullcontext()):
            sub = submission.make_submission(root, out, methods=methods, echo=lines.append)
    finally:
        text._forward, feature_jobs.estimator_score, lean_bert.LeanBert.__call__ = originals
    wall = time.perf_counter() - t0
    if prof is not None and profile:
        prof.dump_stats(profile)
    return {"wall": wall, **clock.spent, "runs": len(sub.runs), "lines": lines,
            "estimates": getattr(sub, "estimates", {}), "timings": getattr(sub, "timings", {})}


def _row(name: str, r: dict) -> str:
    parts = r["forward"] + r["estimators"]
    return (f"| {name} | {r['wall']:.1f} | {r['forward']:.1f} | {r['estimators']:.1f} | "
            f"{parts:.1f} | {100 * parts / r['wall']:.0f} % |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=48, help="test tasks (the first N of tasks.csv)")
    ap.add_argument("--rows", type=int, default=200, help="train rows per task (validation: a quarter)")
    ap.add_argument("--words", type=int, default=2000, help="words per text")
    ap.add_argument("--models", type=int, default=20, help="candidates (the first N)")
    ap.add_argument("--methods", nargs="+", default=["default", "avgrank", "logme", "knn", "rrf"])
    ap.add_argument("--src", help="import modelseek from this source folder (e.g. the previous commit's src/, "
                                  "made with `git archive HEAD~N src | tar -x -C DIR`): the baseline")
    ap.add_argument("--label", default="this tree", help="the row's name in the table")
    ap.add_argument("--profile", help="write cProfile stats of the submission here")
    ap.add_argument("--keep", help="build the stand-in here and keep it (reused when it is there)")
    args = ap.parse_args()
    if args.src:
        sys.path.insert(0, str(Path(args.src).resolve()))
    import torch

    import modelseek

    with tempfile.TemporaryDirectory(prefix="bench-submission-") as tmp:
        root = Path(args.keep) if args.keep else Path(tmp) / "repo"
        if not (root / "data" / "tasks.csv").is_file():
            t = time.perf_counter()
            build(root, args.tasks, args.rows, args.words, args.models)
            print(f"built the stand-in in {time.perf_counter() - t:.0f}s: {args.tasks} tasks, {args.rows} rows, "
                  f"{args.words} words, {args.models} models", file=sys.stderr)
        r = measure(root, Path(tmp) / "out", Path(tmp) / "cache", args.methods, args.profile)
    print(f"\n{args.tasks} test tasks x {args.models} candidates, {args.rows} train rows, {args.words} words; "
          f"modelseek from {Path(modelseek.__file__).parents[1]}; torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads, {os.cpu_count()} cores\n")
    print("| code path | submission (s) | forward passes (s) | estimator math (s) | sum of parts (s) | share |")
    print("|---|---|---|---|---|---|")
    print(_row(args.label, r))
    if r["estimates"]:
        print("\n| method | estimated (s) | measured (s) | measured / estimated |\n|---|---|---|---|")
        for m, est in r["estimates"].items():
            got = r["timings"].get(m)
            if got is not None and est > 0:
                print(f"| {m} | {est:.1f} | {got:.1f} | {got / est:.2f} |")
    print("\nstderr of the run:\n" + "\n".join("    " + s for s in r["lines"]))


if __name__ == "__main__":
    main()
