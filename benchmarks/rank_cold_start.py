"""Wall time of ``modelseek rank one-task.csv`` on a 1,000-row task, cold and warm, for the default ranker
against the previous learned path (``--method ltr-ntcir19``) in the same run.

    python benchmarks/rank_cold_start.py [--rows 1000] [--repeats 3] [--methods default ltr-ntcir19]

*Cold*: a new process with an empty modelseek cache (the task must be embedded: the encoder is loaded and the
task's label-stratified sample of at most 256 training texts is encoded). *Warm*: a new process again, with the
cache the cold run left (the task's representation is read from disk). Each figure is the median of
``--repeats`` runs (every cold run gets a fresh cache folder). The task is generated (seeded), written as one CSV
with text, label and split columns. Goals (issue 13): cold < 10 s, warm < 2 s on 2 CPU cores.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed(cmd: list[str], env: dict) -> float:
    t0 = time.perf_counter()
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr[-2000:]}")
    return dt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--methods", nargs="+", default=["default", "ltr-ntcir19"])
    args = ap.parse_args()

    from modelseek.testing import make_text_task, write_task_table

    work = Path(tempfile.mkdtemp(prefix="rank-cold-"))
    n_train = int(args.rows * 0.8)
    n_val = (args.rows - n_train) // 2
    task = make_text_task("one-task", n_classes=4, n_train=n_train, n_val=n_val, n_test=args.rows - n_train - n_val,
                          domain="reviews", seed=0)
    csv = write_task_table(task, work / "one-task.csv")
    print(f"task: {args.rows} rows ({n_train} train), 4 classes; {os.cpu_count()} CPUs; "
          f"load average {os.getloadavg()[0]:.1f}")
    env0 = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    print("| method | cold (median) | warm (median) | runs |")
    print("|---|---:|---:|---:|")
    for method in args.methods:
        cold, warm = [], []
        for i in range(args.repeats):
            env = {**env0, "MODELSEEK_CACHE": str(work / f"cache-{method}-{i}")}
            cmd = [sys.executable, "-m", "modelseek", "rank", str(csv), "--method", method, "-o",
                   str(work / f"run-{method}.txt")]
            cold.append(timed(cmd, env))
            warm.append(timed(cmd, env))
        print(f"| {method} | {statistics.median(cold):.2f} s | {statistics.median(warm):.2f} s | {args.repeats} |",
              flush=True)
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
