"""`select` walks what `replay` measured: the policy chosen on fitting tasks, scored on tasks never used to choose.

    python benchmarks/select_policy.py [--truth GROUND_TRUTH] [--withheld WITHHELD_TRUTH] [--write] [--json OUT]

* ``--write`` chooses the policy on every task of ``--truth`` (the 70 NTCIR-19 training tasks by default) and
  writes it as the package's shipped policy (``src/modelseek/resources/funnel/policy-ntcir19.json``), with its
  provenance and its nested figures (5-fold cross-fitting within those tasks).
* The **withheld** figures: the policy is chosen on the fitting tasks alone and scored on the withheld tasks —
  ``--withheld`` (e.g. the organisers' 30 withheld training tasks, with the 70 as fitting tasks: the shipped
  policy itself), or, where no withheld truth is at hand, a seeded split of ``--truth`` (30 tasks withheld,
  stratified by criticality tier, the policy chosen on the other 40). On the withheld tasks ``replay`` (with the
  fitting tasks as ``--train-truth``) and ``select`` (walking the policy, the recorded scores as its fine-tuning
  backend: :class:`modelseek.testing.funnel.RecordedBackend`) are run side by side at k = 1, 3, 5, 10; ``select``
  must fine-tune exactly replay's picks and reach replay's nDCG@5 (scored through ``modelseek.evaluate``).

Exit 0 when ``select`` equals ``replay`` everywhere and, at k = 10, is not below fine-tuned first.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / ".." / "shared" / "data" / "ntcir19-mr" / "subtask-a"
RESOURCE = ROOT / "src" / "modelseek" / "resources" / "funnel" / "policy-ntcir19.json"
KS = (1, 3, 5, 10)
WITHHELD = 30
PROVENANCE = ("the 70 NTCIR-19 training tasks (ntcir19-mr/subtask-a/ground-truth.csv, organisers' repository @ "
              "ba17f09; `python benchmarks/select_policy.py --write`)")


def _sources(models_csv: Path) -> dict[str, str]:
    import pandas as pd

    if not models_csv.is_file():
        return {}
    m = pd.read_csv(models_csv, dtype=str, encoding="utf-8-sig")
    return dict(zip(m["model_id"], m["model_name"])) if "model_name" in m.columns else {}


def split_withheld(truth, n: int = WITHHELD, seed: int = 0) -> tuple[list[str], list[str]]:
    """``n`` tasks withheld (a seeded draw within each criticality tier, in proportion), the rest for fitting."""
    rng = np.random.default_rng(seed)
    tiers = truth.tiers(truth.task_ids)
    by_tier: dict = {}
    for t, tier in zip(truth.task_ids, tiers):
        by_tier.setdefault(tier, []).append(t)
    held: list[str] = []
    total = len(truth.task_ids)
    for tier in sorted(by_tier):
        ids = by_tier[tier]
        held += [str(x) for x in rng.permutation(ids)[: round(n * len(ids) / total)]]
    held = held[:n]
    return [t for t in truth.task_ids if t not in held], sorted(held, key=truth.task_ids.index)


def select_on(withheld, policy, k: int, out: Path) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """``select`` on every withheld task with ``k`` fine-tunes' budget, walking ``policy`` (``None``: its defaults,
    the shipped policy): its picks and final rankings."""
    from modelseek import select
    from modelseek.retrieval.data.pool import Candidate, Pool
    from modelseek.testing.funnel import RecordedBackend, recorded_task

    picks, rankings = {}, {}
    for tid in withheld.task_ids:
        pool = Pool([Candidate(str(m)) for m in withheld.matrix("f1").columns], name="recorded")
        be = RecordedBackend(withheld, tid, finetune_s=60.0)
        kw = {} if policy is None else {"policy": policy}
        res = select(recorded_task(tid), pool, 60.0 * k + 30.0, out / f"{tid}-{k}", backend=be, **kw)
        picks[tid] = [c for _, ids in be.calls for c in ids]
        rankings[tid] = res.run.ranking(tid)
    return picks, rankings


def _ndcg(rankings: dict[str, list[str]], truth) -> np.ndarray:
    from modelseek import evaluate
    from modelseek.retrieval.data.run import Run

    run = Run.from_scores({t: {m: float(len(r) - i) for i, m in enumerate(r)} for t, r in rankings.items()},
                          run_id="select")
    return evaluate(run, truth, metrics=["ndcg@5"]).per_topic["ndcg@5"].to_numpy()


def compare(fitting, withheld, policy) -> dict:
    """Replay and select side by side on the withheld tasks (see the module docstring)."""
    from modelseek.retrieval.funnel.curve import summarize
    from modelseek.retrieval.funnel.replay import funnel_rankings, replay

    s = summarize(replay(withheld, history=fitting, finetunes=[0, *KS], noise=0.0, sequential=False), n_boot=1000)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for k in KS:
            b = next(x for x in s["budgets"] if x["k"] == k)
            want = funnel_rankings(withheld, k, history=fitting, noise=0.0)
            picks, rankings = select_on(withheld, policy, k, Path(tmp))
            same_picks = all(picks[t] == want[t][0] for t in withheld.task_ids)
            same_rank = all(rankings[t] == want[t][1] for t in withheld.task_ids)
            got = float(_ndcg(rankings, withheld).mean())
            rows.append({"k": k, "select_ndcg@5": got, "replay_ndcg@5": b["policies"][b["funnel"]]["ndcg@5"],
                         "replay_interval": b["policies"][b["funnel"]]["intervals"]["ndcg@5"],
                         "replay_policy": b["funnel"], "finetuned_first": b["policies"][s["plain_order"]]["ndcg@5"],
                         "merge": b["policies"].get(s["plain_order"] + "+merge", {}).get("ndcg@5"),
                         "merge_vs_plain": b.get("merge_vs_plain", {}).get("ndcg@5"),
                         "same_picks": same_picks, "same_ranking": same_rank})
    return {"fitting_tasks": len(fitting.task_ids), "withheld_tasks": len(withheld.task_ids), "budgets": rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--truth", type=Path, default=DATA / "ground-truth.csv")
    ap.add_argument("--withheld", type=Path, help="ground truth of withheld tasks (default: a split of --truth)")
    ap.add_argument("--write", action="store_true", help="write the shipped policy chosen on every --truth task")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    if not args.truth.is_file():
        print(f"no ground truth at {args.truth} (../shared/data is absent)", file=sys.stderr)
        return 1
    from modelseek.retrieval.data.truth import GroundTruth
    from modelseek.retrieval.funnel.policy import choose_policy

    truth = GroundTruth.from_csv(args.truth)
    sources = _sources(args.truth.parent / "models.csv")
    if args.write:
        pol = choose_policy(truth, noise=0.0, source=PROVENANCE, sources=sources)
        pol.save(RESOURCE)
        print(f"wrote {RESOURCE}")
        print("\n".join(pol.describe()))
    if args.withheld:
        fitting, withheld = truth, GroundTruth.from_csv(args.withheld)
        split = f"{args.withheld} withheld, fitted on {args.truth}"
    else:
        fit_ids, held_ids = split_withheld(truth)
        fitting, withheld = truth.subset(fit_ids), truth.subset(held_ids)
        split = (f"{len(held_ids)} of the {len(truth.task_ids)} tasks of {args.truth.name} withheld (seed 0, "
                 f"stratified by tier), the policy chosen on the other {len(fit_ids)}")
    if args.withheld:  # select with its defaults: the shipped policy, chosen on the 70
        from modelseek.retrieval.funnel.policy import shipped_policy

        policy, walked = None, shipped_policy()
    else:
        policy = walked = choose_policy(fitting, noise=0.0, source=f"the {len(fitting.task_ids)} fitting tasks",
                                        figures=False)
    doc = {"split": split, "withheld_ids": withheld.task_ids, "policy": walked.describe(),
           **compare(fitting, withheld, policy)}
    print(f"withheld figures: {split}")
    print("\n".join(doc["policy"]))
    print("| k | select nDCG@5 | replay nDCG@5 [95 %] | replay's final ranking | fine-tuned first | merge "
          "| merge − fine-tuned first [95 %] | same picks | same ranking |")
    print("|---:|---:|---:|:--|---:|---:|---:|:-:|:-:|")
    for r in doc["budgets"]:
        d = r["merge_vs_plain"]
        print(f"| {r['k']} | {r['select_ndcg@5']:.4f} | {r['replay_ndcg@5']:.4f} [{r['replay_interval'][0]:.3f}, "
              f"{r['replay_interval'][1]:.3f}] | {r['replay_policy']} | {r['finetuned_first']:.4f} | "
              f"{r['merge']:.4f} | {d['diff']:+.4f} [{d['low']:+.3f}, {d['high']:+.3f}] | "
              f"{'yes' if r['same_picks'] else 'NO'} | {'yes' if r['same_ranking'] else 'NO'} |")
    if args.json:
        args.json.write_text(json.dumps(doc, indent=1) + "\n")
    ok = all(r["same_picks"] and r["same_ranking"] and abs(r["select_ndcg@5"] - r["replay_ndcg@5"]) < 1e-9
             for r in doc["budgets"])
    k10 = next(r for r in doc["budgets"] if r["k"] == 10)
    return 0 if ok and k10["select_ndcg@5"] >= k10["finetuned_first"] - 1e-12 else 1


if __name__ == "__main__":
    sys.exit(main())
