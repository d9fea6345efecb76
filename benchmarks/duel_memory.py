"""Peak memory and CPU of one pre-submission, by upload size (issue #35: at most 10x the upload, CPU linear).

Each size runs in a fresh process: a board (SQLite, the five-metric test configuration) with two published
models, then one pre-submission of a generated upload with ``--samples`` per task. Reported: the upload's
size, the peak resident memory the pre-submission added (peak RSS - RSS before it; the upload's bytes are
read before), its ratio to the upload, CPU seconds and CPU microseconds per sample. The baseline in the same
run is the smallest upload (what CPU per sample stays at when it is linear), and the load of the machine.
One-time costs (modules imported on first use) are paid by a small warm-up pre-submission first.

    python benchmarks/duel_memory.py                    # 10k, 50k, 115k samples per task (115k ~ 29 MB)
    python benchmarks/duel_memory.py --samples 150000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _status_kb(key: str) -> int:
    """``VmRSS`` (resident now) or ``VmHWM`` (peak resident since the last reset) of this process, in kB
    (getrusage's ru_maxrss would also count the parent's memory that a forked child had before exec)."""
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {key} in /proc/self/status")


def child(folder: str, upload: str, whole_plan: str = "0") -> None:
    """Runs in a fresh process: the measurement (``whole_plan`` "1": the baseline, the bootstrap plan held
    whole as before issue #35)."""
    if whole_plan == "1":
        from modelseek.duel import engine

        engine.PLAN_CELLS = 1 << 62
    from modelseek.duel.storage import Store
    from modelseek.testing.duel import small_config

    from modelseek.testing.duel import make_submission_dicts

    cfg = small_config()
    warm = Store(Path(folder) / "warm.db", config=cfg)      # one-time costs (lazy imports) before measuring
    for d in make_submission_dicts(cfg, n_models=2, n_samples=50, seed=1):
        warm.submit(json.dumps(d).encode())
    warm.close()
    store = Store(Path(folder) / "lb.db", config=cfg)
    data = Path(upload).read_bytes()
    import gc

    gc.collect()
    before = _status_kb("VmRSS")
    # VmHWM is the peak since the process started: reset it to now (Linux >= 4.0: write 5 to clear_refs)
    with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
        fh.write("5")
    t0 = time.process_time()
    store.presubmit(data, "bench.json")
    cpu = time.process_time() - t0
    peak = _status_kb("VmHWM")
    print(json.dumps({"added_mb": (peak - before) / 1024, "cpu_s": cpu}))


def run(samples: int, folder: Path, whole_plan: bool = False) -> dict:
    from modelseek.duel.storage import Store
    from modelseek.testing.duel import make_submission_dicts, small_config

    cfg = small_config()
    sub = folder / f"s{samples}{'-whole' if whole_plan else ''}"
    sub.mkdir()
    dicts = make_submission_dicts(cfg, n_models=3, n_samples=samples, seed=0)
    store = Store(sub / "lb.db", config=cfg)
    store.publish_many([__import__("modelseek.duel.submission", fromlist=["x"]).validate_submission(d, cfg)
                        for d in dicts[:2]])
    store.close()
    upload = sub / "upload.json"
    upload.write_text(json.dumps(dicts[2]), encoding="utf-8")
    size_mb = upload.stat().st_size / 2**20
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[1] / "src"),
                                                        os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, __file__, "--child", str(sub), str(upload), "1" if whole_plan else "0"],
                         capture_output=True,
                         text=True, env=env, check=True)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    return {"samples": samples, "plan": "whole (baseline)" if whole_plan else "chunked", "upload_mb": size_mb,
            **res, "ratio": res["added_mb"] / size_mb,
            "us_per_sample": res["cpu_s"] / (samples * len(cfg.tasks)) * 1e6}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, nargs="+", default=[10_000, 50_000, 115_000])
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    ap.add_argument("--no-baseline", action="store_true", help="skip the whole-plan baseline of the largest size")
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return
    print(f"load average (1, 5, 15 min): {os.getloadavg()}, {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as tmp:
        rows = [run(n, Path(tmp)) for n in args.samples]
        if not args.no_baseline:
            rows.append(run(max(args.samples), Path(tmp), whole_plan=True))
    print(f"{'plan':>17} {'samples/task':>12} {'upload MB':>10} {'added peak MB':>14} {'x upload':>9} {'CPU s':>7} "
          f"{'us/sample':>10}")
    for r in rows:
        print(f"{r['plan']:>17} {r['samples']:>12,} {r['upload_mb']:>10.1f} {r['added_mb']:>14.1f} "
              f"{r['ratio']:>9.1f} "
              f"{r['cpu_s']:>7.2f} {r['us_per_sample']:>10.2f}")
    base = rows[0]["us_per_sample"]
    print("CPU per sample relative to the smallest upload: "
          + ", ".join(f"{r['us_per_sample'] / base:.2f}" for r in rows if r["plan"] == "chunked"))
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
