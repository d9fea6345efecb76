"""Generated style benchmark (Subtask B pipeline, offline): MRR of every retriever against the colour-histogram
baseline and chance, measured in the same run, plus feature-extraction speed against the histogram's.

    PYTHONPATH=src python benchmarks/style_generated.py --styles 20 --contents 20 --size 64 --folds 5 --seed 0

Prints Markdown tables (for docs/results/style.md): MRR with its 95% bootstrap interval, top-1 accuracy, the
paired-bootstrap difference to ``hist-centroid``; MRR per style family for the best method and the baseline;
images per second of each feature extractor.
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--styles", type=int, default=20)
    ap.add_argument("--contents", type=int, default=20)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--content-source", default="shapes", choices=["shapes", "mixed"])
    ap.add_argument("--cache", help="feature cache folder")
    args = ap.parse_args()

    from modelseek.style import BASELINE, DEFAULT_METHODS, cross_validate_style, generated_style_dataset
    from modelseek.style.descriptors import extract, make_extractor

    data = generated_style_dataset(args.styles, args.contents, args.size, args.seed, args.content_source)
    print(f"# generated style benchmark: {args.styles} styles x {args.contents} content images "
          f"({args.content_source}), {args.size}px, {args.folds}-fold CV grouped by content, seed {args.seed}")
    print(f"machine: {platform.machine()} {platform.processor() or ''}, python {platform.python_version()}\n")

    # speed of each extractor (no cache), the histogram as the baseline
    speed = {}
    for name in ("hist", "colour", "texture", "gram", "moments"):
        ext = make_extractor(name, seed=args.seed)
        extract(data.subset(range(8)), ext, size=args.size)  # warm-up (imports, weights)
        t = time.perf_counter()
        extract(data, ext, size=args.size)
        speed[name] = len(data) / (time.perf_counter() - t)

    t = time.perf_counter()
    res = cross_validate_style(data, DEFAULT_METHODS, folds=args.folds, seed=args.seed, size=args.size,
                               cache=args.cache)
    elapsed = time.perf_counter() - t
    iv = res.intervals(seed=args.seed)
    vs = res.versus(BASELINE, seed=args.seed)
    print("| method | MRR [95% CI] | top-1 | MRR − hist-centroid [95% CI] |")
    print("|---|---|---:|---|")
    for m in sorted(res.methods, key=lambda x: -res.mrr[x]):
        diff = "baseline" if m == BASELINE else f"{vs[m].mean_diff:+.3f} [{vs[m].low:+.3f}, {vs[m].high:+.3f}]"
        print(f"| {m} | {res.mrr[m]:.3f} [{iv[m][0]:.3f}, {iv[m][1]:.3f}] | {res.top1[m]:.3f} | {diff} |")
    print(f"| chance | {res.chance:.3f} | {1 / res.n_models:.3f} | |")
    print(f"\n{len(data)} images; CV of {len(res.methods)} methods took {elapsed:.0f} s\n")

    best = max(res.methods, key=lambda m: res.mrr[m])
    per = res.per_model()
    print(f"| style | {BASELINE} | {best} |")
    print("|---|---:|---:|")
    for mid, row in per.iterrows():
        print(f"| {data.models.name(mid)} | {row[BASELINE]:.2f} | {row[best]:.2f} |")

    print("\n| features | images/s | × hist |")
    print("|---|---:|---:|")
    for name, v in speed.items():
        print(f"| {name} | {v:.0f} | {v / speed['hist']:.2f} |")
    assert np.isfinite(list(res.mrr.values())).all()


if __name__ == "__main__":
    main()
