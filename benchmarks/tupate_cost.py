"""Cost per task of building ``tupate``'s task matrix in each mode: seconds and peak memory.

``published`` is the paper's full prompt tuning (prompts at the input of a frozen encoder, gradients through
every layer, every training text, 20 epochs); ``approx`` is the CPU approximation (read-only prompts in the
last 2 layers, at most 32 texts, 10 epochs). Each mode runs in its own process, through the ranker's own
code (``TuPaTERanker.task_matrix``, no cache), on one generated task of ``--texts`` training texts.

The encoder is ``--encoder PATH_OR_ID`` (a local folder, or a Hub id in the local Hugging Face cache), or a
BERT with random weights generated here and saved with ``save_pretrained`` (no download): ``--size base``
has bert-base's shape (12 layers, hidden 768, 12 heads, feed-forward 3072, 512 positions), ``--size small``
(4 layers, hidden 256) is for quick CPU runs. Random weights cost the same as trained ones.

Memory: on a CPU the process's peak resident set (and what tuning added to it after loading); on CUDA the
peak of ``torch.cuda.max_memory_allocated`` during tuning. ``s / text-epoch`` is the tuning time divided
by texts x epochs; the last column extrapolates it linearly to the paper's setting (800 training texts, as in
the NTCIR-19 Subtask A tasks, x 20 epochs) for the published mode.

    python benchmarks/tupate_cost.py --size small --texts 16
    python benchmarks/tupate_cost.py --size base --texts 16 --epochs 2          # CPU: a few minutes
    python benchmarks/tupate_cost.py --device cuda --size base --texts 800      # the paper's setting on a GPU
    python benchmarks/tupate_cost.py --device cuda --encoder bert-base-multilingual-uncased --texts 800
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

SIZES = {  # BertConfig fields; "base" is bert-base's shape
    "small": dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024,
                  max_position_embeddings=512),
    "base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
                 max_position_embeddings=512),
}
PAPER_TEXTS, PAPER_EPOCHS = 800, 20


def _task(n: int):
    from modelseek.testing import make_text_task

    return make_text_task("bench", n_classes=4, n_train=n, n_val=8, n_test=8, seed=0)


def make_bert(folder: Path, size: str, seed: int = 0) -> Path:
    """A random-weight BERT of ``size`` with a WordPiece tokenizer, saved with ``save_pretrained``: the vocabulary of
    the offline all-MiniLM-L6-v2 package when it is installed, else one trained here on generated texts."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    try:
        from modelseek.retrieval.features.text import offline_minilm_path

        tok = BertTokenizerFast(vocab_file=str(offline_minilm_path() / "vocab.txt"), model_max_length=512)
    except Exception:  # noqa: BLE001 - the package is optional (a bare GPU machine has no copy)
        from tokenizers import BertWordPieceTokenizer

        wp = BertWordPieceTokenizer(lowercase=True)
        texts = list(_task(400).train.texts) + ["the cat sat on the mat", "a stock rose sharply today"]
        wp.train_from_iterator(texts, vocab_size=30522, min_frequency=1, show_progress=False)
        tok = BertTokenizerFast(tokenizer_object=wp._tokenizer, model_max_length=512)
    cfg = BertConfig(vocab_size=max(len(tok), 30522), **SIZES[size])
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = BertModel(cfg)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def worker(args) -> dict:
    """One mode in this process: load, then build one task matrix (timed; memory measured)."""
    import numpy as np
    import torch

    from modelseek.retrieval.rankers import make

    task = _task(args.texts)
    params = dict(mode=args.mode, device=args.device, encoder_path=args.encoder, cache_dir=None, seed=0)
    if args.epochs:
        params["pt_epochs"] = args.epochs
    r = make("tupate", **params)
    t0 = time.perf_counter()
    tuner = r._tuner()
    load_s = time.perf_counter() - t0
    dev = torch.device(tuner.device) if hasattr(tuner, "device") else torch.device("cpu")
    cuda = dev.type == "cuda"
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base_gpu = torch.cuda.memory_allocated()
    rss_loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    t0 = time.perf_counter()
    mat = r.task_matrix(task)
    if cuda:
        torch.cuda.synchronize()
    tune_s = time.perf_counter() - t0
    rss_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    used = len(task.train) if tuner.max_texts <= 0 else min(len(task.train), tuner.max_texts)
    out = {"mode": tuner.mode, "device": str(dev), "texts": used, "epochs": tuner.epochs,
           "layers": "all" if tuner.mode == "published" else tuner.layers, "hidden": int(mat.shape[1]),
           "matrix_finite": bool(np.isfinite(mat).all()), "load_s": load_s, "tune_s": tune_s,
           "rss_peak": rss_peak, "rss_added": max(0, rss_peak - rss_loaded)}
    if cuda:
        out["gpu_peak"] = torch.cuda.max_memory_allocated()
        out["gpu_added"] = torch.cuda.max_memory_allocated() - base_gpu
        out["gpu_name"] = torch.cuda.get_device_name(dev)
    return out


def _gib(n: float) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu", help="cpu, cuda, cuda:1, mps or auto (default cpu)")
    ap.add_argument("--encoder", default=None, help="a local folder or a cached Hub id (default: a generated BERT "
                                                   "of --size)")
    ap.add_argument("--size", choices=sorted(SIZES), default="small", help="the generated BERT's size")
    ap.add_argument("--texts", type=int, default=32, help="training texts in the task (default 32)")
    ap.add_argument("--epochs", type=int, default=0, help="prompt-tuning epochs (default: each mode's own, "
                                                          "published 20, approx 10)")
    ap.add_argument("--modes", nargs="+", choices=["published", "approx"], default=["published", "approx"])
    ap.add_argument("--workdir", default=None, help="where the generated BERT is saved (default: a temporary folder)")
    ap.add_argument("--json", default=None, help="also write the rows to this JSON file")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--mode", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args)))
        return

    import torch
    import transformers

    with tempfile.TemporaryDirectory(prefix="tupate-cost-") as tmp:
        if args.encoder:
            encoder, what = args.encoder, args.encoder
        else:
            folder = Path(args.workdir or tmp) / f"bert-{args.size}"
            t0 = time.perf_counter()
            encoder = str(make_bert(folder, args.size) if not (folder / "config.json").exists() else folder)
            s = SIZES[args.size]
            what = (f"generated BERT '{args.size}' (random weights; {s['num_hidden_layers']} layers, hidden "
                    f"{s['hidden_size']}, {s['num_attention_heads']} heads; built in {time.perf_counter() - t0:.0f} s)")
        rows = []
        for mode in args.modes:
            cmd = [sys.executable, __file__, "--worker", "--mode", mode, "--device", args.device, "--encoder",
                   encoder, "--texts", str(args.texts), "--epochs", str(args.epochs)]
            res = subprocess.run(cmd, capture_output=True, text=True)
            if res.returncode != 0:
                sys.exit(f"mode {mode} failed:\n{res.stderr[-3000:]}")
            rows.append(json.loads(res.stdout.strip().splitlines()[-1]))

    cuda = any(r["device"].startswith("cuda") for r in rows)
    load = os.getloadavg()
    device = f"CPU ({platform.machine()}, {os.cpu_count()} cores, torch threads {torch.get_num_threads()})"
    if cuda:
        device = next(r["gpu_name"] for r in rows if "gpu_name" in r) + "; " + device
    print(f"device: {device}; load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1/5/15 min)")
    print(f"torch {torch.__version__}, transformers {transformers.__version__}")
    print(f"encoder: {what}")
    print(f"task: {args.texts} training texts, 4 classes (generated); each mode in its own process, no cache\n")
    print(f"| mode | device | texts | epochs | prompt layers | load s | tune s | s / text-epoch | peak memory "
          f"(added by tuning) | "
          f"extrapolated to {PAPER_TEXTS} texts x {PAPER_EPOCHS} epochs |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        per = r["tune_s"] / max(1, r["texts"] * r["epochs"])
        peak = (f"GPU {_gib(r['gpu_peak'])} ({_gib(r['gpu_added'])})" if "gpu_peak" in r
                else f"RSS {_gib(r['rss_peak'])} ({_gib(r['rss_added'])})")
        extra = (f"{per * PAPER_TEXTS * PAPER_EPOCHS:.0f} s" if r["mode"] == "published"
                 else "n/a (uses <= 32 texts, 10 epochs by design)")
        print(f"| {r['mode']} | {r['device']} | {r['texts']} | {r['epochs']} | {r['layers']} | {r['load_s']:.1f} | "
              f"{r['tune_s']:.1f} | {per:.3f} | {peak} | {extra} |")
        if not r["matrix_finite"]:
            sys.exit(f"mode {r['mode']}: the task matrix is not finite")
    if args.json:
        Path(args.json).write_text(json.dumps({"device": device, "load_average": load, "encoder": what,
                                               "texts": args.texts, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
