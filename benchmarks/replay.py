"""What a fine-tuning budget buys, replayed on recorded results: the NTCIR-19 training tasks and a generated zoo
with estimator signals (``modelseek replay`` through its API, :mod:`modelseek.retrieval.funnel.replay`).

    python benchmarks/replay.py [--truth ../shared/data/ntcir19-mr/subtask-a/ground-truth.csv] [--repeats 20]
        [--noise 0.01] [--plot docs/results/replay.png] [--json docs/results/replay.json]

* **NTCIR-19** — the organisers' 70 training tasks x 20 models (every candidate fine-tuned on every task), 5-fold
  cross-fitting by task (each task replayed with the prior fitted on the other folds), seed noise sd ``--noise``
  F1, ``--repeats`` draws, k = 0, 1, 3, 5, 10. The baseline, in the same run, is the plain prior top-k; the
  sequential order (a Gaussian over the candidates fitted on the other folds, conditioned on what was
  fine-tuned) is replayed with each acquisition rule (``blend``, the default: the prior's order moved by the
  Gaussian's evidence with a weight learned on each fold's history alone; ``pi``: most likely to beat the best
  so far; ``ei``; ``mean``), and the paired difference to the prior top-k is reported at every k.
* **A generated zoo** (:func:`modelseek.testing.funnel.make_funnel_world`: 60 tasks x 40 models, per-task fit the
  estimators see noisily) with its estimator scores as a signal: the prior's, the estimators', their RRF fusion's
  top-k and the sequential order, seed noise sd 0.003 F1 (the generator's validation noise).
* **Generated co-varying families** (:func:`modelseek.testing.funnel.make_family_truth`: 40 tasks x 10 models in
  two families, one leading on each task at random): where the sequential order has something to learn.

Prints the tables (``modelseek replay``'s text), writes the plot and the JSON; exits 1 when the NTCIR data are
absent. Runs in about a minute.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

NTCIR = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "ntcir19-mr" / "subtask-a" / "ground-truth.csv"


def ntcir(path: Path, noise: float, repeats: int) -> tuple[dict, dict]:
    from modelseek.retrieval.data.truth import GroundTruth
    from modelseek.retrieval.funnel.curve import summarize
    from modelseek.retrieval.funnel.replay import TRUST_GRID, Acquisition, replay

    truth = GroundTruth.from_csv(path)
    main = None
    tried = {}
    for acq in Acquisition:
        data = replay(truth, finetunes=[0, 1, 3, 5, 10], noise=noise, repeats=repeats, folds=5, seed=0,
                      acquisition=acq)
        s = summarize(data, n_boot=1000, source="NTCIR-19 training tasks")
        tried[acq.value] = {b["k"]: b["sequential_vs_plain"] for b in s["budgets"]}
        if acq is Acquisition.BLEND:
            main = s
    for lam in TRUST_GRID[1:]:  # blend at each fixed weight: what trusting the joint model more would give
        data = replay(truth, finetunes=[0, 1, 3, 5, 10], noise=noise, repeats=repeats, folds=5, seed=0, trust=lam)
        s = summarize(data, n_boot=1000, source="NTCIR-19 training tasks")
        tried[f"blend, trust {lam:g}"] = {b["k"]: b["sequential_vs_plain"] for b in s["budgets"]}
    assert main is not None
    return main, tried


def zoo(noise: float, repeats: int) -> dict:
    from modelseek.retrieval.data.run import Run
    from modelseek.retrieval.funnel.curve import summarize
    from modelseek.retrieval.funnel.replay import replay
    from modelseek.testing.funnel import make_funnel_world

    world = make_funnel_world(n_models=40, n_tasks=60, n_texts=200, seed=0)
    truth = world.truth()
    est = Run.from_scores({t.id: dict(zip(world.pool.ids, world.features[i].tolist()))
                           for i, t in enumerate(world.tasks)}, run_id="estimators")
    data = replay(truth, signals=[est], finetunes=[0, 1, 3, 5, 10], noise=noise, repeats=repeats, folds=5, seed=0)
    return summarize(data, n_boot=1000, source="generated zoo (60 tasks x 40 models, estimator signal)")


def families(repeats: int) -> dict:
    """Where a joint model of the candidates has something to learn: two families that co-vary
    (:func:`modelseek.testing.funnel.make_family_truth`, 40 tasks x 10 models, seed noise sd 0.005)."""
    from modelseek.retrieval.funnel.curve import summarize
    from modelseek.retrieval.funnel.replay import replay
    from modelseek.testing.funnel import make_family_truth

    data = replay(make_family_truth(), finetunes=[0, 1, 3, 5], noise=0.005, repeats=repeats, folds=5, seed=0)
    return summarize(data, n_boot=1000, source="generated families (40 tasks x 10 models)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--truth", type=Path, default=NTCIR)
    ap.add_argument("--noise", type=float, default=0.01)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--plot", default="docs/results/replay.png")
    ap.add_argument("--json", default="docs/results/replay.json")
    args = ap.parse_args(argv)
    from modelseek.retrieval.funnel.curve import plot, render

    if not args.truth.is_file():
        print(f"error: no NTCIR-19 ground truth at {args.truth} (../shared/data is absent)", file=sys.stderr)
        return 1
    t0 = time.perf_counter()
    real, tried = ntcir(args.truth, args.noise, args.repeats)
    print(render(real))
    print("\nsequential order, each acquisition rule, minus the prior top-k (nDCG@5, paired 95% interval):")
    for acq, by_k in tried.items():
        print(f"  {acq:<16} " + "; ".join(f"k={k} {d['ndcg@5']['diff']:+.3f} [{d['ndcg@5']['low']:+.3f}, "
                                        f"{d['ndcg@5']['high']:+.3f}]" for k, d in by_k.items() if k))
    gen = zoo(0.003, args.repeats)
    print()
    print(render(gen))
    fam = families(args.repeats)
    print()
    print(render(fam))
    print(f"\n({time.perf_counter() - t0:.0f} s)")
    if args.json:
        doc = {"ntcir": real, "ntcir_sequential_tried": tried, "zoo": gen, "families": fam}
        Path(args.json).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    if args.plot:
        plot({"NTCIR-19 training tasks (5-fold by task)": real, "generated zoo with estimators": gen,
              "generated co-varying families": fam}, args.plot)
        print(f"wrote {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
