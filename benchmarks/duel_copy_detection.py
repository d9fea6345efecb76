"""The copy rule (:mod:`modelseek.duel.copies`, issue #53): its false-positive rate on independent models of similar
skill, and what it catches, on generated boards with seeds.

Per seed, a board of ``--models`` independent models (``make_submission_dicts``: each model's outcomes drawn from
its own stream given the task's shared sample difficulty, skills ``0.5 + N(0, --spread)``, so their accuracies are
close and their errors correlated through the difficulty, as genuine models' are). False positives: each model
uploaded against the other ``--models - 1`` (its verdict ``copy``, or not). Detection: the best model with 5 % and
10 % of its answers flipped, its disguised copy (every metric unchanged), a task mix of the two best, and sparring
partners of the third (``--worse`` of its correct answers made wrong), each against the whole board.

    python benchmarks/duel_copy_detection.py                      # the example tasks (40-80 samples) and 400 samples
    python benchmarks/duel_copy_detection.py --seeds 50 --models 8
"""

from __future__ import annotations

import argparse

import numpy as np

from modelseek.duel.copies import TAU, TAU_POOLED, Z, answer_vectors, compare_task, find_copies
from modelseek.duel.examples import example_config, make_submission_dicts
from modelseek.duel.submission import validate_submission
from modelseek.testing.duel import small_config
from modelseek.testing.duel_attacks import disguised, flipped, task_mix


def _vec(d, cfg):
    return answer_vectors(validate_submission(d, cfg).data)


def _lowest_bound(vec, board) -> float:
    """The lowest per-task bound of ``vec`` against any entry of ``board`` (how close a genuine model comes)."""
    return min(m.upper for _, v in board for t in vec for m in [compare_task(vec[t], v[t])] if m is not None)


def run(cfg, n_samples, seeds: int, models: int, spread: float, worse: list[float], flips: list[float]) -> dict:
    counts = {"independent": [0, 0]}
    lowest = []
    for seed in range(seeds):
        skills = list(0.5 + np.random.default_rng(seed).normal(0.0, spread, models))
        dicts = make_submission_dicts(cfg, n_models=models, n_samples=n_samples, seed=1000 + seed, skills=skills)
        vecs = [_vec(d, cfg) for d in dicts]
        board = [(d["metadata"]["model"], v) for d, v in zip(dicts, vecs)]
        for j in range(models):
            counts["independent"][0] += bool(find_copies(vecs[j], board[:j] + board[j + 1:]))
            counts["independent"][1] += 1
            lowest.append(_lowest_bound(vecs[j], board[:j] + board[j + 1:]))
        order = np.argsort(skills)[::-1]
        lead, second, third = (dicts[k] for k in order[:3])
        attacks = {f"{f:.0%} flipped": flipped(lead, cfg, "x", f, seed) for f in flips}
        attacks |= {"disguised": disguised(lead, cfg, "x", seed),
                   "task mix": task_mix({t: (lead, second)[k % 2] for k, t in enumerate(cfg.task_ids)}, cfg, "x")}
        for w in worse:
            attacks[f"sparring ({w:.0%} worse)"] = flipped(third, cfg, "x", w, seed, worse=True)
        for name, d in attacks.items():
            c = counts.setdefault(name, [0, 0])
            c[0] += bool(find_copies(_vec(d, cfg), board))
            c[1] += 1
    counts["lowest"] = lowest
    return counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=30)
    ap.add_argument("--models", type=int, default=6)
    ap.add_argument("--spread", type=float, default=0.15, help="sd of the models' skills (similar accuracy)")
    ap.add_argument("--worse", type=float, nargs="*", default=[0.1, 0.2, 0.3])
    ap.add_argument("--flips", type=float, nargs="*", default=[0.05, 0.1, 0.2, 0.3])
    a = ap.parse_args()
    print(f"rule: a copy when a task's bound is under {TAU:.0%} or the pooled tasks' under {TAU_POOLED:.0%}, Z = {Z}")
    for label, cfg, n in (("example tasks (4, 40-80 samples)", example_config(), (40, 80)),
                          ("test tasks (5, 400 samples)", small_config(), 400)):
        counts = run(cfg, n, a.seeds, a.models, a.spread, a.worse, a.flips)
        lowest = np.asarray(counts.pop("lowest"))
        print(f"\n{label}: {a.seeds} seeds x {a.models} models; an independent model's lowest per-task bound: "
              f"min {lowest.min():.2f}, 1st percentile {np.quantile(lowest, 0.01):.2f}, median {np.median(lowest):.2f}")
        print("| upload | flagged | rate |\n|---|---:|---:|")
        for name, (hit, tot) in counts.items():
            print(f"| {name} | {hit} / {tot} | {hit / tot:.1%} |")


if __name__ == "__main__":
    main()
