"""How did each candidate with a card domain do on the past tasks that match its card best?

    python benchmarks/card_matched_tasks.py [--method default] [--top 8]

Reads the fitted default ranker (or ``--method``: an ``adaptive`` artifact), takes each candidate's card match
``z`` on its training tasks as the default computes it (leave-one-out standardised affinity), and prints for the
``--top`` best-matching tasks: the candidate's ranks there, its mean rank there and overall, how often it was in
the top 3, the place its mean there takes among all candidates on the same tasks, and its fitted domain slope
with its standard error. The table in ``docs/results/learned-rankers.md`` is this script's output for the shipped
default (70 NTCIR-19 training tasks). Nothing is read from ../shared: the artifact holds the training ranks.
"""

from __future__ import annotations

import argparse

import numpy as np


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--method", default="default")
    ap.add_argument("--top", type=int, default=8)
    args = ap.parse_args()
    from modelseek.retrieval.rankers.adaptive import AdaptiveRanker, card_matches
    from modelseek.retrieval.rankers.resolve import resolve

    r = resolve(args.method)
    if not isinstance(r, AdaptiveRanker):
        raise SystemExit(f"{args.method}: not an adaptive ranker ({type(r).__name__})")
    z, carded = card_matches(r)
    u = r.utility_                      # minus rank, training tasks x trained candidates
    slopes, ses, _ = r.trained_slopes()
    names = r.trained_.hf_ids
    k = min(args.top, len(u))
    print(f"{len(u)} training tasks; each candidate's {k} best-matching tasks by its card match z")
    print("| candidate | ranks on its best-matching tasks | mean there | mean overall | top 3 | place there | "
          "slope ± SE |")
    print("|---|---|---|---|---|---|---|")
    for j in sorted(carded, key=lambda j: (-u[np.argsort(-z[:, j], kind="stable")[:k], j]).mean()):
        top = np.argsort(-z[:, j], kind="stable")[:k]
        ranks = -u[top, j]
        means = (-u[top]).mean(axis=0)
        place = int(np.flatnonzero(np.argsort(means, kind="stable") == j)[0]) + 1
        print(f"| {names[j]} | {', '.join(str(int(x)) for x in ranks)} | {ranks.mean():.1f} | "
              f"{(-u[:, j]).mean():.1f} | {int((ranks <= 3).sum())}/{k} | {place} | {slopes[j]:+.2f} ± {ses[j]:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
