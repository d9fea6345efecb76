"""Linear in topics: µs per topic of run validation, fusion, duel submission checks and bench at 1k, 10k and
100k topics (issue #28: no per-item rebuild of collections anywhere a run, submission, fusion, bench or
EEVEE table is processed).

Each stage runs in process on generated, seeded inputs (runs of the 20 NTCIR candidates per topic; a duel
leaderboard of N accuracy tasks with 5 samples each; a ground truth of N tasks x 20 models):

* ``validate`` — :func:`modelseek.validate_run` with the topic list and the NTCIR pool;
* ``fuse`` — ``modelseek fuse`` of two runs (RRF), reading and writing the files;
* ``duel submission`` — :func:`modelseek.duel.submission.validate_submission` of one submission;
* ``bench`` — :func:`modelseek.retrieval.bench.cross_validate` of ``avgrank`` (5 folds; no task text needed).

A stage is linear when its cost per topic at the largest size is at most twice its smallest cost per topic
(quadratic code grows 100x from 1k to 100k). Run: ``python benchmarks/scaling.py [--sizes 1000,10000,100000]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

MODELS = [str(i) for i in range(1, 21)]


def make_run(path: Path, n_topics: int, seed: int, run_id: str) -> list[str]:
    rng = np.random.default_rng(seed)
    topics = [f"t{i}" for i in range(n_topics)]
    lines = []
    for t in topics:
        order = rng.permutation(20)
        scores = np.sort(rng.random(20))[::-1]
        lines += [f"{t} Q0 {MODELS[j]} {r + 1} {scores[r]:.6f} {run_id}" for r, j in enumerate(order)]
    path.write_text("\n".join(lines) + "\n")
    return topics


def stage_validate(folder: Path, n: int) -> float:
    from modelseek import validate_run

    run = folder / f"v-{n}.txt"
    topics = make_run(run, n, 0, "a")
    t = time.perf_counter()
    validate_run(run, topics=topics, docs=MODELS)
    return time.perf_counter() - t


def stage_fuse(folder: Path, n: int) -> float:
    from modelseek.cli.main import main

    a, b = folder / f"fa-{n}.txt", folder / f"fb-{n}.txt"
    make_run(a, n, 1, "a")
    make_run(b, n, 2, "b")
    import contextlib
    import io

    t = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(["fuse", str(a), str(b), "-o", str(folder / f"fused-{n}.txt"), "--json"])
    dt = time.perf_counter() - t
    assert code == 0
    return dt


def stage_duel(folder: Path, n: int) -> float:
    from modelseek.duel.config import LeaderboardConfig
    from modelseek.duel.submission import validate_submission

    rng = np.random.default_rng(3)
    config = LeaderboardConfig.from_dict({"tasks": {f"task{i}": {"category": f"c{i % 7}", "metric": "acc",
                                                                  "name": f"Task {i}"} for i in range(n)}})
    preds, results = {}, {}
    for i in range(n):
        v = (rng.random(5) < 0.6).astype(float)
        preds[f"task{i}"] = [{"acc": float(x)} for x in v]
        results[f"task{i}"] = {"acc": float(v.mean())}
    obj = json.loads(json.dumps({"metadata": {"model": "m", "precision": "bf16", "n_params": 1e9,
                                              "source": "https://example.org/m"},
                                 "results": results, "predictions": preds}))
    t = time.perf_counter()
    validate_submission(obj, config, source="bench.json")
    return time.perf_counter() - t


def stage_bench(folder: Path, n: int) -> float:
    import pandas as pd

    from modelseek import GroundTruth
    from modelseek.retrieval.bench import cross_validate
    from modelseek.retrieval.data.pool import ntcir_pool

    rng = np.random.default_rng(4)
    frame = pd.DataFrame({"task_id": np.repeat([f"t{i}" for i in range(n)], 20), "model_id": MODELS * n,
                          "f1": rng.uniform(0.3, 0.9, 20 * n)})
    truth = GroundTruth(frame)
    pool = ntcir_pool()
    t = time.perf_counter()
    cross_validate("avgrank", truth, pool, folds=5, seed=0)
    return time.perf_counter() - t


STAGES = {"validate": stage_validate, "fuse": stage_fuse, "duel submission": stage_duel, "bench": stage_bench}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--stages", default=",".join(STAGES))
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    stages = [s.strip() for s in args.stages.split(",")]
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    print(f"machine: {os.cpu_count()} CPUs, load average {', '.join(f'{x:.2f}' for x in load) if load else '?'}")
    folder = Path(tempfile.mkdtemp(prefix="modelseek-scaling-"))
    print("\n| stage | " + " | ".join(f"{n:,} topics (µs/topic)" for n in sizes) + " | linear |")
    print("|---|" + "---:|" * len(sizes) + "---|")
    ok = True
    for name in stages:
        per = [STAGES[name](folder, n) / n * 1e6 for n in sizes]
        linear = per[-1] <= 2.0 * min(per)
        ok &= linear
        print(f"| {name} | " + " | ".join(f"{p:,.1f}" for p in per) + f" | {'yes' if linear else 'NO'} |", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
