"""Fine-tuning throughput (training examples per second) of the protocol on the offline MiniLM model.

Baseline (measured in the same run): every batch padded to a fixed length (``pad_to_length``), as a
pipeline that tokenizes with ``padding="max_length"`` does. Compared: the protocol's dynamic padding, and
dynamic padding with gradient accumulation (4 micro-batches per batch of 16, same updates, less memory).
On a GPU the protocol's bf16 autocast is compared with fp32 as well.

    python benchmarks/finetune_throughput.py [--n-train 256] [--epochs 2] [--static-length 128]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def main() -> None:
    import torch

    from modelseek.retrieval.features.text import offline_minilm_path
    from modelseek.retrieval.finetune import Recipe, finetune
    from modelseek.testing import make_text_task

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-train", type=int, default=256)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--static-length", type=int, default=128)
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    ap.add_argument("--repeats", type=int, default=2, help="rounds over all configurations (interleaved, so "
                                                          "that a busy machine slows each alike); best is kept")
    args = ap.parse_args()

    model = str(offline_minilm_path())
    task = make_text_task("bench", n_classes=4, n_train=args.n_train, n_val=64, n_test=64, seed=0)
    base = Recipe(max_epochs=args.epochs, patience=args.epochs, cpu_threads=args.threads)
    cuda = torch.cuda.is_available()
    static = base.replace(pad_to_length=args.static_length, precision="fp32")
    configs = [(f"static padding to {args.static_length} (baseline)", static),
               ("dynamic padding (protocol)", base.replace(precision="fp32")),
               ("dynamic padding + grad_accum 4", base.replace(grad_accum=4, precision="fp32"))]
    if cuda:
        configs.append(("dynamic padding + bf16 autocast (protocol on GPU)", base.replace(precision="bf16")))
    device = torch.cuda.get_device_name(0) if cuda else f"CPU ({platform.machine()}, {os.cpu_count()} cores)"
    print(f"model: all-MiniLM-L6-v2 (offline, {model})")
    print(f"device: {device}; torch {torch.__version__}; threads {args.threads or torch.get_num_threads()}")
    print(f"task: {args.n_train} training examples, 4 classes; {args.epochs} epoch(s); batch 16\n")
    best: dict[str, tuple[str, str, float]] = {}
    for r in range(args.repeats):
        for name, recipe in configs:
            res = finetune(task, model, recipe, seed=0)
            eps = res.train_examples_per_s
            if name not in best or eps > best[name][2]:
                best[name] = (res.device, res.precision, eps)
            print(f"  round {r + 1}: {name}: {eps:.1f} examples/s", file=sys.stderr)
    baseline = best[configs[0][0]][2]
    print(f"best of {args.repeats} interleaved round(s); load average at the end: "
          f"{', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print("| configuration | device | precision | train examples/s | vs baseline |")
    print("|---|---|---|---:|---:|")
    for name, _ in configs:
        dev, prec, eps = best[name]
        print(f"| {name} | {dev} | {prec} | {eps:.1f} | {eps / baseline:.2f}x |")


if __name__ == "__main__":
    main()
