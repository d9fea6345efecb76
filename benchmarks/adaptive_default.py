"""The default ranker (``adaptive``) against avgrank, task_knn, spider and ltr on the NTCIR-19 Subtask A tasks,
and its criticality predictor against the majority-class baseline.

    python benchmarks/adaptive_default.py ../shared/data/ntcir19-mr/subtask-a [--repeats 3] [--folds 5]
        [--methods adaptive avgrank task_knn spider ltr] [--json out.json]

Repeated task-level k-fold CV (folds stratified by criticality tier, seeds 0..repeats-1; every method fitted on
the training folds only; ``adaptive`` chooses its blend weight and neighbourhood by leave-one-task-out inside
each training fold, so this is a nested CV). Per-topic scores are averaged over the repeats; intervals are 95%
bootstrap intervals over tasks (1,000 resamples, seed 0). Prints Markdown tables:

1. nDCG@1/3/5 per tier and overall, mean [95% interval];
2. each method minus avgrank on nDCG@5 (paired bootstrap);
3. the criticality predictor: balanced accuracy over the held-out tasks (every repeat), against always predicting
   the training folds' majority tier, with bootstrap intervals over tasks.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np


def criticality_cv(truth, pool, tasks, folds: int, repeats: int, n_boot: int = 1000) -> dict:
    from modelseek.retrieval.bench import make_folds
    from modelseek.retrieval.rankers.adaptive import TIERS, AdaptiveRanker

    ids = truth.task_ids
    true = np.array([TIERS.index(truth.criticality(t).value) for t in ids])
    preds, majority = np.zeros((repeats, len(ids)), int), np.zeros((repeats, len(ids)), int)
    pos = {t: i for i, t in enumerate(ids)}
    for r in range(repeats):
        for held in make_folds(ids, [TIERS[k] for k in true], folds, r):
            train = [t for t in ids if t not in set(held)]
            ranker = AdaptiveRanker().fit(tasks.subset(train), truth.subset(train), pool=pool)
            counts = np.bincount(true[[pos[t] for t in train]], minlength=3)
            for t in held:
                tier = ranker.explain(tasks.get(t), pool)["criticality"]["tier"]
                preds[r, pos[t]] = TIERS.index(tier)
                majority[r, pos[t]] = int(np.argmax(counts))

    def bal(idx, p):
        y, q = np.tile(true[idx], repeats), p[:, idx].ravel()
        return float(np.mean([(q[y == c] == c).mean() for c in np.unique(y)]))

    def acc(idx, p):
        return float((p[:, idx] == true[idx][None, :]).mean())

    rng = np.random.default_rng(0)
    boots = [rng.integers(0, len(ids), len(ids)) for _ in range(n_boot)]
    full = np.arange(len(ids))
    out = {}
    for name, p in (("predictor", preds), ("majority", majority)):
        bb = [bal(b, p) for b in boots]
        out[name] = {"balanced_accuracy": bal(full, p), "low": float(np.percentile(bb, 2.5)),
                     "high": float(np.percentile(bb, 97.5)), "accuracy": acc(full, p)}
    diff = [bal(b, preds) - bal(b, majority) for b in boots]
    out["difference"] = {"mean": out["predictor"]["balanced_accuracy"] - out["majority"]["balanced_accuracy"],
                         "low": float(np.percentile(diff, 2.5)), "high": float(np.percentile(diff, 97.5))}
    out["tiers"] = {t: int((true == i).sum()) for i, t in enumerate(TIERS)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root")
    ap.add_argument("--methods", nargs="+", default=["adaptive", "avgrank", "task_knn", "spider", "ltr"])
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args()

    from modelseek.retrieval.bench import compare, cross_validate
    from modelseek.retrieval.data.loaders import load_ntcir_tasks
    from modelseek.retrieval.data.pool import load_pool
    from modelseek.retrieval.data.truth import GroundTruth

    truth = GroundTruth.from_csv(f"{args.root}/ground-truth.csv")
    pool = load_pool(f"{args.root}/models.csv")
    tasks = load_ntcir_tasks(args.root, ids=truth.task_ids)
    methods = list(dict.fromkeys(args.methods + ["avgrank"]))
    res, secs = {}, {}
    for m in methods:
        t0 = time.perf_counter()
        res[m] = cross_validate(m, truth, pool, tasks=tasks, folds=args.folds, seed=0, repeats=args.repeats,
                                progress=True)
        secs[m] = time.perf_counter() - t0
    doc: dict = {"folds": args.folds, "repeats": args.repeats, "tasks": len(truth.task_ids), "methods": {}}
    print(f"\n{len(truth.task_ids)} tasks, {args.folds}-fold CV x {args.repeats} seeds; mean [95% bootstrap interval]\n")
    print("| method | nDCG@5 low | nDCG@5 medium | nDCG@5 high | nDCG@1 all | nDCG@3 all | nDCG@5 all | "
          "nDCG@5 − avgrank [95%] | CV time |")
    print("|---|---|---|---|---|---|---|---|---:|")
    for m in methods:
        s = res[m].summary(n_resamples=1000, seed=0)
        cell = {(r.tier, r.metric): f"{r['mean']:.3f} [{r['low']:.3f}, {r['high']:.3f}]" for _, r in s.iterrows()}
        doc["methods"][m] = {f"{r.tier}/{r.metric}": [r["mean"], r["low"], r["high"]] for _, r in s.iterrows()}
        if m != "avgrank":
            c = compare(res[m], res["avgrank"], "ndcg@5", 1000, 0)
            a = c[c.tier == "all"].iloc[0]
            vs = f"{a.mean_diff:+.3f} [{a.low:+.3f}, {a.high:+.3f}]"
            doc["methods"][m]["vs_avgrank"] = {r.tier: [r.mean_diff, r.low, r.high] for _, r in c.iterrows()}
        else:
            vs = "—"
        print(f"| {m} | {cell[('low', 'ndcg@5')]} | {cell[('medium', 'ndcg@5')]} | {cell[('high', 'ndcg@5')]} | "
              f"{cell[('all', 'ndcg@1')]} | {cell[('all', 'ndcg@3')]} | {cell[('all', 'ndcg@5')]} | {vs} | "
              f"{secs[m]:.0f} s |")
    print("\nper tier, nDCG@1 / nDCG@3:\n")
    print("| method | tier | nDCG@1 | nDCG@3 |")
    print("|---|---|---|---|")
    for m in methods:
        d = doc["methods"][m]
        for tier in ("low", "medium", "high"):
            n1, n3 = d[f"{tier}/ndcg@1"], d[f"{tier}/ndcg@3"]
            print(f"| {m} | {tier} | {n1[0]:.3f} [{n1[1]:.3f}, {n1[2]:.3f}] | {n3[0]:.3f} [{n3[1]:.3f}, {n3[2]:.3f}] |")
    crit = criticality_cv(truth, pool, tasks, args.folds, args.repeats)
    doc["criticality"] = crit
    print(f"\ncriticality tier predictor ({crit['tiers']}), same folds, held-out tasks of every repeat:\n")
    print("| predictor | balanced accuracy [95%] | accuracy |")
    print("|---|---|---:|")
    for name in ("predictor", "majority"):
        c = crit[name]
        label = "adaptive (class-balanced kNN vote)" if name == "predictor" else "majority tier of the training folds"
        print(f"| {label} | {c['balanced_accuracy']:.3f} [{c['low']:.3f}, {c['high']:.3f}] | {c['accuracy']:.3f} |")
    d = crit["difference"]
    print(f"\npredictor − majority, balanced accuracy: {d['mean']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(doc, fh, indent=1)


if __name__ == "__main__":
    main()
