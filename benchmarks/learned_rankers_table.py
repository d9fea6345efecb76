"""Turn ``modelseek bench --json`` outputs into the Markdown results table of docs/results/learned-rankers.md.

    modelseek bench ../shared/data/ntcir19-mr/subtask-a --method task_knn ltr --baseline avgrank --json > a.json
    python benchmarks/learned_rankers_table.py a.json [b.json ...]

Prints one row per (method, tier) with nDCG@1/3/5 and MRR as mean [95% bootstrap interval], then each method's
paired-bootstrap difference to the baseline on nDCG@5 per tier, and names the method with the best overall
nDCG@5.
"""

from __future__ import annotations

import json
import sys


def main(paths: list[str]) -> None:
    methods: dict = {}
    for p in paths:
        with open(p, encoding="utf-8") as fh:
            methods.update(json.load(fh)["methods"])
    metrics = ["ndcg@1", "ndcg@3", "ndcg@5", "mrr"]
    print("| method | tier | n | " + " | ".join(m.replace("ndcg", "nDCG").upper().replace("NDCG", "nDCG")
                                               for m in metrics) + " |")
    print("|---|---|---:|" + "---|" * len(metrics))
    for name, entry in methods.items():
        for tier, vals in entry["tiers"].items():
            cells = " | ".join(f"{vals[m]['mean']:.3f} [{vals[m]['low']:.3f}, {vals[m]['high']:.3f}]" for m in metrics)
            print(f"| {name} | {tier} | {vals['n']} | {cells} |")
    print()
    print("| method − avgrank (nDCG@5) | low | medium | high | all | P(better), all |")
    print("|---|---|---|---|---|---:|")
    for name, entry in methods.items():
        vs = entry.get("vs_baseline")
        if not vs:
            continue
        cells = " | ".join(f"{vs[t]['mean_diff']:+.3f} [{vs[t]['low']:+.3f}, {vs[t]['high']:+.3f}]"
                           for t in ("low", "medium", "high", "all"))
        print(f"| {name} | {cells} | {vs['all']['p_better']:.2f} |")
    best = max(methods, key=lambda m: methods[m]["tiers"]["all"]["ndcg@5"]["mean"])
    print(f"\nbest overall nDCG@5: {best} ({methods[best]['tiers']['all']['ndcg@5']['mean']:.3f})")


if __name__ == "__main__":
    main(sys.argv[1:])
