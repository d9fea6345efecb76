"""Print every registered estimator's score on features scaled by 1, 1e200 and 1e-200 (a markdown table).

    python benchmarks/estimators_scale.py

A 120 x 12, 3-class Gaussian case (seed 0); probability estimators get a softmax over 6 source classes.
An estimator declaring scale invariance must repeat its unscaled score; the others give the value of their
formula or an InputError (see docs/results/inference.md).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import modelseek.retrieval.estimators as est  # noqa: E402
from modelseek.core.errors import InputError  # noqa: E402


def main() -> None:
    rng = np.random.default_rng(0)
    n = 120
    y = np.arange(n) % 3
    X = rng.standard_normal((3, 12))[y] + rng.standard_normal((n, 12))
    logits = rng.standard_normal((n, 6))
    logits[np.arange(n), y] += 4.0
    P = np.exp(logits)
    P /= P.sum(1, keepdims=True)
    print("| estimator | scale-invariant | unscaled | x 1e200 | x 1e-200 |\n|---|---|---:|---:|---:|")
    for name in est.names():
        info = est.info(name)
        A = X if info.input.value == "features" else P
        cells = []
        for scale in (1.0, 1e200, 1e-200):
            try:
                cells.append(f"{info.fn(A * scale, y):.6g}")
            except InputError:
                cells.append("InputError")
        inv = "n/a (probabilities)" if info.input.value == "probs" else ("yes" if info.scale_invariant else "no")
        print(f"| {name} | {inv} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
