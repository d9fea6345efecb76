"""Subtask B at the real image size: ``rank-style`` on the organisers' layout (7,565 files at 1024 x 1024 PNG),
cold and with a warm feature cache, against a straightforward PIL open-resize loop, in the same run.

    PYTHONPATH=src python benchmarks/style_organisers.py --dest /tmp/style-bench            # the full listing
    PYTHONPATH=src python benchmarks/style_organisers.py --dest /tmp/sb-small --size 256 --models 10 --test-contents 2

1. Generation (untimed): the files of ``../shared/data/ntcir19-mr/subtask-b/image-files.txt`` beside the
   organisers' ``train.csv`` and ``models.csv`` (:func:`modelseek.style.synthetic.write_organiser_layout`:
   content and style drawn by code, about 1 MB per 1024-px PNG like the real renders; the hidden test models
   in ``DEST/test-truth.csv``). Kept between runs.
2. Baseline: a child process reads every image with ``Image.open(p).convert("RGB").resize((S, S))`` into a
   list, then fits and ranks the same method on those arrays (no cache, no read-ahead).
3. ``modelseek rank-style DEST -o run.txt --cache CACHE`` in a child process with an empty cache (cold), then
   again (warm); the two runs must be identical.
Each child's wall time and peak resident memory (``wait4``'s ``ru_maxrss``) are measured; MRR of each run
against the hidden test models; then a profile: milliseconds per image of each stage on a sample of files.
Prints Markdown (for README and docs/results/style.md) with the machine and its load (``uptime``).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "ntcir19-mr" / "subtask-b"


def _child(cmd: list[str], log: Path) -> tuple[float, float, int, float]:
    """Run ``cmd``; (wall seconds, peak RSS in GiB, exit code, CPU seconds: user + system). stderr (progress
    bars) goes to ``log``. On a shared machine the CPU seconds are the load-independent figure."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[1] / "src"),
                                                       os.environ.get("PYTHONPATH", "")]))
    with open(log, "w") as err:
        t = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t
    p.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_maxrss / 2**20, p.returncode, usage.ru_utime + usage.ru_stime


def naive(dest: str, out: str, method: str, size: int) -> None:
    """The baseline: PIL open-resize loop into memory, then the same method on the arrays."""
    from PIL import Image

    from modelseek.retrieval.data.run import normalize_b_id, write_runs
    from modelseek.style.data import StyleDataset, load_models
    from modelseek.style.layout import organiser_root
    from modelseek.style.pipeline import StyleRanker

    data = organiser_root(dest)
    models = load_models(data / "models.csv")
    rows = list(csv.DictReader(open(data / "train.csv", newline="")))

    def load(p):
        return np.asarray(Image.open(p).convert("RGB").resize((size, size), Image.BILINEAR))

    train = StyleDataset([normalize_b_id(r["image_id"]) for r in rows], models,
                         arrays=[load(data / "train" / f"{int(r['model_id']):04d}" / r["image_id"]) for r in rows],
                         labels=[normalize_b_id(r["model_id"]) for r in rows])
    tests = sorted((data / "test").glob("*.png"))
    test = StyleDataset([normalize_b_id(p.stem) for p in tests], models, arrays=[load(p) for p in tests])
    write_runs(out, [StyleRanker(method, size=size).fit(train).rank(test, run_id=method)])


def profile(data: Path, n: int, size: int, method: str) -> list[tuple[str, float]]:
    """Milliseconds per image of each stage on ``n`` training files (one thread)."""
    from PIL import Image

    from modelseek.style import images as imgio
    from modelseek.style.descriptors import make_extractor
    from modelseek.style.pipeline import parse_method

    files = sorted((data / "train").rglob("*.png"))[:: max(1, len(list((data / "train").rglob("*.png"))) // n)][:n]
    out = []
    t = time.perf_counter()
    blobs = [imgio.read_bytes(p) for p in files]
    out.append(("read file (page cache)", (time.perf_counter() - t) / len(files) * 1e3))
    t = time.perf_counter()
    for b in blobs:
        imgio.digest(b)
    out.append(("SHA-1 of the bytes", (time.perf_counter() - t) / len(files) * 1e3))
    import io

    t = time.perf_counter()
    for b in blobs:
        Image.open(io.BytesIO(b)).load()
    out.append(("PNG inflate alone (full size)", (time.perf_counter() - t) / len(files) * 1e3))
    t = time.perf_counter()
    imgs = [imgio.decode(b, size, path=p) for b, p in zip(blobs, files)]
    out.append((f"decode + reduce + resize to {size} (rank-style)", (time.perf_counter() - t) / len(files) * 1e3))
    t = time.perf_counter()
    for p in files:
        Image.open(p).convert("RGB").resize((size, size), Image.BILINEAR)
    out.append((f"open + convert + resize to {size} (baseline)", (time.perf_counter() - t) / len(files) * 1e3))
    X = np.stack(imgs)
    for f in parse_method(method).all_features():
        ext = make_extractor(f)
        ext(X[:8])
        t = time.perf_counter()
        for j in range(0, len(X), 32):
            ext(X[j:j + 32])
        out.append((f"feature {f} at {size} px", (time.perf_counter() - t) / len(files) * 1e3))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dest", default="/tmp/style-bench", help="where the generated repository and caches go")
    ap.add_argument("--size", type=int, default=1024, help="pixels of the generated files (default 1024)")
    ap.add_argument("--render", type=int, default=256, help="pixels at which content and style are drawn")
    ap.add_argument("--grain", type=float, default=2.5, help="per-image grain (sets the bytes per file)")
    ap.add_argument("--models", type=int, help="keep the first N models (default: all 85)")
    ap.add_argument("--test-contents", type=int, help="keep the first N test contents (default: all 45)")
    ap.add_argument("--workers", type=int, default=2, help="processes generating files (untimed)")
    ap.add_argument("-m", "--method", default="texture+colour+gram-logreg")
    ap.add_argument("--feature-size", type=int, default=128, help="rank-style --size (default 128)")
    ap.add_argument("--profile-sample", type=int, default=128)
    ap.add_argument("--skip-naive", action="store_true")
    ap.add_argument("--naive-child", nargs=2, metavar=("DEST", "OUT"), help=argparse.SUPPRESS)
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args()
    if args.naive_child:
        return naive(args.naive_child[0], args.naive_child[1], args.method, args.feature_size)

    from modelseek.retrieval.data.run import read_run
    from modelseek.style.evaluation import load_style_truth, score_style_run
    from modelseek.style.synthetic import write_organiser_layout

    dest = Path(args.dest)
    repo = dest / "repo"
    t = time.perf_counter()
    data = write_organiser_layout(repo, SHARED / "image-files.txt", SHARED / "train.csv", SHARED / "models.csv",
                                  size=args.size, render=args.render, grain=args.grain,
                                  models=None if args.models is None else range(1, args.models + 1),
                                  test_contents=args.test_contents, workers=args.workers, progress=True)
    gen = time.perf_counter() - t
    files = list((data / "train").rglob("*.png")) + list((data / "test").glob("*.png"))
    nbytes = sum(p.stat().st_size for p in files)
    n_test = len(list((data / "test").glob("*.png")))
    print(f"# Subtask B at {args.size} px: {len(files):,} PNG files ({nbytes / 2**30:.2f} GiB, "
          f"{nbytes / len(files) / 1e6:.2f} MB each), {n_test:,} test images; generated in {gen:.0f} s (untimed)")
    load_before = os.getloadavg()
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, python {platform.python_version()}; "
          f"load average before: {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}\n")
    sys.stdout.flush()

    truth = load_style_truth(repo / "test-truth.csv")
    rows = []
    py = sys.executable
    if not args.skip_naive:
        out = dest / "run-naive.txt"
        wall, rss, rc, cpu = _child([py, __file__, "--naive-child", str(repo), str(out), "-m", args.method,
                                     "--feature-size", str(args.feature_size)], dest / "naive.log")
        mrr = score_style_run(read_run(out), truth).mrr if rc == 0 else float("nan")
        rows.append(("PIL open-resize loop (baseline)", wall, rss, rc, mrr, cpu))
        print(f"baseline: {wall:.1f} s, CPU {cpu:.0f} s, peak {rss:.2f} GiB, exit {rc}", flush=True)
    cache = dest / "cache"
    shutil.rmtree(cache, ignore_errors=True)
    for label in ("rank-style, cold cache", "rank-style, warm cache"):
        out = dest / f"run-{label.split()[-2]}.txt"
        wall, rss, rc, cpu = _child([py, "-m", "modelseek", "rank-style", str(repo), "-o", str(out), "--cache", str(cache),
                                "-m", args.method, "--size", str(args.feature_size)],
                               dest / f"{label.split()[-2]}.log")
        mrr = score_style_run(read_run(out), truth).mrr if rc == 0 else float("nan")
        rows.append((label, wall, rss, rc, mrr, cpu))
        print(f"{label}: {wall:.1f} s, CPU {cpu:.0f} s, peak {rss:.2f} GiB, exit {rc}", flush=True)
    same = (dest / "run-cold.txt").read_text() == (dest / "run-warm.txt").read_text()
    load_after = os.getloadavg()
    up = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()

    base = rows[0][1] if not args.skip_naive else None
    print(f"\n| pipeline ({args.method}, {args.feature_size} px) | wall | CPU (user+sys) | images/s | peak memory | "
          f"MRR (hidden test models) | wall vs baseline |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, wall, rss, rc, mrr, cpu in rows:
        vs = f"{base / wall:.2f}x faster" if base and label != rows[0][0] else "—"
        status = "" if rc == 0 else f" (exit {rc})"
        print(f"| {label}{status} | {wall / 60:.1f} min ({wall:.0f} s) | {cpu:.0f} s | {len(files) / wall:.1f} | "
              f"{rss:.2f} GiB | {mrr:.3f} | {vs} |")
    print(f"\ncold and warm runs identical: {same}; chance MRR {sum(1 / k for k in range(1, 86)) / 85:.3f} "
          f"(85 models)" if args.models is None else f"\ncold and warm runs identical: {same}")
    print(f"load average after: {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}; uptime: {up}")

    prof = profile(data, args.profile_sample, args.feature_size, args.method)
    print(f"\nprofile (one thread, {args.profile_sample} training files; ms per image):\n")
    print("| stage | ms/image |\n|---|---:|")
    for name, ms in prof:
        print(f"| {name} | {ms:.1f} |")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "files": len(files), "bytes": nbytes, "size": args.size, "method": args.method,
            "runs": [{"pipeline": r[0], "wall_s": r[1], "peak_gib": r[2], "exit": r[3], "mrr": r[4], "cpu_s": r[5]}
                     for r in rows],
            "identical": same, "load_before": load_before, "load_after": load_after, "uptime": up,
            "profile_ms": dict(prof)}, indent=2))


if __name__ == "__main__":
    main()
