"""The budgeted funnel (``modelseek select``) against two ways to spend the same budget, on a generated pool.

    python benchmarks/funnel.py [--models 200] [--tasks 30] [--history-tasks 20] [--seed 0]
        [--budgets 0.25 0.5 1 2 4 8 16 32] [--plot docs/results/funnel.png] [--json docs/results/funnel.json]

The pool is :func:`modelseek.testing.funnel.make_funnel_world`: ``--models`` candidates with a known fine-tuned
F1 per task, an inference-free prior (corr. ~0.55 with it), frozen-feature estimates (~0.8), fine-tuning
(validation F1, ~1.0) and per-model costs growing with size. For each budget (hours) and task:

* **funnel** — :func:`modelseek.select` itself (its real plan, state and selection code) on the simulated
  backend, 10 epochs per fine-tuning;
* **fine-tune the prior's top** — ``rank --verify-top K`` with the largest ``K`` that fits: down the prior's order
  until the next fine-tuning (every epoch) does not fit what is left; fine-tuned first by validation F1, then the
  rest by the prior;
* **estimators on all** — estimators down the prior's order while they fit (all of the pool when the budget
  allows), ranked by the estimators, then the rest by the prior.

The funnel is given what a user gives ``select`` about past tasks: ``--history-tasks`` further tasks of the same
world (never evaluated) as ``history`` (their fine-tuned F1) and, as ``history_signals``, the prior's and the
estimator's scores on them. Replay on that history (5-fold cross-fitting) measures the reliabilities (mean
within-task rank correlation with fine-tuned F1) that the plan uses, and chooses the order fine-tuning walks (the
prior, the estimator, their RRF, or their fusion weighted by those reliabilities) and the final ranking per k;
``select`` walks and ranks exactly so. Seed noise: the world's (0.003).

Both baselines spend what their work really costs (fine-tuning stops early as in the funnel's backend) from the
same budget. Prints nDCG@5 (NTCIR grades) and regret@1 (relative F1 lost), means over tasks, per budget; exits 1
unless the funnel is at least as good as both baselines on both at every budget. Runs in about four
minutes (replay on the history included).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np

# the funnel's state is written atomically (fsync) after every unit; tmpfs, where there is one, keeps it fast
SCRATCH = "/dev/shm" if os.path.isdir("/dev/shm") else None


def evaluate(ranking: list[str], truth, task_id: str) -> tuple[float, float]:
    from modelseek.retrieval.data.truth import GradingScheme
    from modelseek.retrieval.metrics.ndcg import ndcg_at_k
    from modelseek.retrieval.metrics.regret import regret_at_k

    grades = truth.grades(task_id, GradingScheme.NTCIR)
    f1 = dict(zip(*truth.frame[truth.frame["task_id"] == task_id][["model_id", "f1"]].T.values))
    return ndcg_at_k(ranking, grades, 5, lambda g: 2 ** g - 1), regret_at_k(ranking, f1, 1)


def then_prior(first: list[str], prior_order: list[str]) -> list[str]:
    chosen = set(first)
    return list(first) + [c for c in prior_order if c not in chosen]


def baseline_finetune_prior(world, t: int, budget_s: float, epochs: int) -> list[str]:
    """``rank --verify-top K`` with the largest K whose fine-tunings fit: down the prior's order until the next one
    does not fit (each stops early as in the funnel's backend); fine-tuned first by validation F1, then the prior."""
    ids = world.pool.ids
    n = len(world.tasks[t].train.texts) + len(world.tasks[t].val.texts)
    idx = np.argsort(-world.prior[t], kind="stable")
    spent, done = 0.01 * len(ids), []
    for j in idx:
        c = world.costs[ids[j]]
        if spent + c.finetune(n, epochs) > budget_s:
            break
        spent += c.finetune(n, max(1, int(round(epochs * world.early[t, j]))))
        done.append((ids[j], world.val_f1[t, j]))
    done.sort(key=lambda x: -x[1])
    return then_prior([c for c, _ in done], [ids[j] for j in idx])


def baseline_features_all(world, t: int, budget_s: float) -> list[str]:
    ids = world.pool.ids
    n = len(world.tasks[t].train.texts) + len(world.tasks[t].val.texts)
    order_idx = np.argsort(-world.prior[t], kind="stable")
    spent, scored = 0.01 * len(ids), []
    for j in order_idx:
        cost = world.costs[ids[j]].features(n)
        if spent + cost > budget_s:
            break
        spent += cost
        scored.append((ids[j], world.features[t, j]))
    scored.sort(key=lambda x: -x[1])
    return then_prior([c for c, _ in scored], [ids[j] for j in order_idx])


def history_inputs(world, history: range):
    """What a user gives ``select`` about past tasks: their fine-tuning results (``--history``) and the prior's and
    the estimator's scores on them (``--history-signals``: runs named ``prior`` and ``estimator``)."""
    from modelseek.retrieval.data.run import Run

    ids = [world.tasks[i].id for i in history]
    truth = world.truth().subset(ids)
    signals = [Run.from_scores({world.tasks[i].id: dict(zip(world.pool.ids, m[i].tolist())) for i in history},
                               run_id=name) for name, m in (("prior", world.prior), ("estimator", world.features))]
    return truth, signals


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", type=int, default=200)
    ap.add_argument("--tasks", type=int, default=30)
    ap.add_argument("--history-tasks", type=int, default=20,
                    help="further tasks whose results the reliabilities are measured on (never evaluated)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--assumed", action="store_true",
                    help="plan with the former assumed reliabilities (prior 0.5, estimators 0.7) instead")
    ap.add_argument("--budgets", type=float, nargs="+", default=[0.25, 0.5, 1, 2, 4, 8, 16, 32], help="hours")
    ap.add_argument("--plot", default="docs/results/funnel.png")
    ap.add_argument("--json", default="docs/results/funnel.json")
    args = ap.parse_args(argv)

    from modelseek import select
    from modelseek.testing.funnel import SimulatedBackend, make_funnel_world

    t0 = time.perf_counter()
    world = make_funnel_world(args.models, args.tasks + args.history_tasks, seed=args.seed)
    truth = world.truth()
    corr = world.correlations()
    print(f"pool: {args.models} generated models, {args.tasks} tasks (+ {args.history_tasks} history tasks); "
          f"correlation with fine-tuned F1: " + ", ".join(f"{k} {v:.2f}" for k, v in corr.items()))
    hist, hist_signals = history_inputs(world, range(args.tasks, args.tasks + args.history_tasks))
    rel = None
    if args.assumed:
        from modelseek.retrieval.funnel import Reliability

        rel = Reliability()
    measured = None
    methods = ("funnel", "finetune-prior-top", "estimators-on-all")
    rows = []
    for hours in args.budgets:
        budget_s = hours * 3600
        per: dict[str, list[tuple[float, float]]] = {m: [] for m in methods}
        spent, k1s, k2s = [], [], []
        for t, task in enumerate(world.tasks[: args.tasks]):
            with tempfile.TemporaryDirectory(dir=SCRATCH) as out:
                res = select(task, world.pool, budget_s, out, backend=SimulatedBackend(world, t), epochs=args.epochs,
                             reliability=rel, history=hist, history_signals=hist_signals, noise=0.003)
            if measured is None:
                measured = res.measured
                ch = measured.choices
                print(f"replay on the {args.history_tasks} history tasks (5-fold cross-fitting): reliabilities "
                      f"prior {ch.reliability[0]:.2f}, estimator {ch.reliability[1]:.2f}; order chosen: {ch.order} "
                      f"(mean nDCG@5 over k = 1, 3, 5, 10: " + ", ".join(
                          f"{n[6:]} {v[0]:.3f}" for n, v in ch.means.items() if n.startswith("order:")) + "); "
                      f"merge at k = {[k for k, v in ch.merge.items() if v]}")
            if res.total_spent_s > budget_s + 1e-6:
                print(f"error: the funnel spent {res.total_spent_s:.0f} s of a {budget_s:.0f} s budget",
                      file=sys.stderr)
                return 1
            spent.append(res.total_spent_s / budget_s)
            k1s.append(res.plan.k1)
            k2s.append(len(res.finetuned))
            per["funnel"].append(evaluate(res.run.ranking(task.id), truth, task.id))
            per["finetune-prior-top"].append(evaluate(baseline_finetune_prior(world, t, budget_s, args.epochs),
                                                      truth, task.id))
            per["estimators-on-all"].append(evaluate(baseline_features_all(world, t, budget_s), truth, task.id))
        row = {"budget_h": hours, "spent_fraction": float(np.mean(spent)), "k1": float(np.mean(k1s)),
               "finetuned": float(np.mean(k2s))}
        for m in methods:
            arr = np.array(per[m])
            row[m] = {"ndcg@5": float(arr[:, 0].mean()), "regret@1": float(arr[:, 1].mean())}
        rows.append(row)

    print()
    print("| budget | funnel nDCG@5 | prior-top FT nDCG@5 | estimators nDCG@5 | funnel regret | prior-top FT regret "
          "| estimators regret | funnel K1 / fine-tuned | spent |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    bad = []
    for r in rows:
        f, p, e = r["funnel"], r["finetune-prior-top"], r["estimators-on-all"]
        print(f"| {r['budget_h']:g} h | {f['ndcg@5']:.3f} | {p['ndcg@5']:.3f} | {e['ndcg@5']:.3f} "
              f"| {f['regret@1']:.4f} | {p['regret@1']:.4f} | {e['regret@1']:.4f} "
              f"| {r['k1']:.0f} / {r['finetuned']:.1f} | {100 * r['spent_fraction']:.0f}% |")
        for m in methods[1:]:
            if r["funnel"]["ndcg@5"] < r[m]["ndcg@5"] - 1e-12 or r["funnel"]["regret@1"] > r[m]["regret@1"] + 1e-12:
                bad.append(f"{r['budget_h']:g} h: funnel worse than {m}")
    elapsed = time.perf_counter() - t0
    print(f"\n({elapsed:.0f} s)")
    if args.json:
        from pathlib import Path

        Path(args.json).write_text(json.dumps({"models": args.models, "tasks": args.tasks,
                                               "history_tasks": args.history_tasks, "seed": args.seed,
                                               "epochs": args.epochs, "correlations": corr,
                                               "measured_reliability": {"prior": measured.choices.reliability[0],
                                                                        "features": measured.choices.reliability[1]},
                                               "order": measured.choices.order,
                                               "choices": measured.choices.to_dict(),
                                               "measured_curve": list(measured.curve), "rows": rows},
                                              indent=1) + "\n", encoding="utf-8")
    if args.plot:
        plot(rows, methods, args.plot, args.models, args.tasks)
        print(f"wrote {args.plot}")
    if bad:
        for b in bad:
            print(f"error: {b}", file=sys.stderr)
        return 1
    print("the funnel is at least as good as both baselines at every budget")
    return 0


def plot(rows, methods, path: str, n_models: int, n_tasks: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = [r["budget_h"] for r in rows]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
    labels = {"funnel": "funnel (modelseek select)", "finetune-prior-top": "fine-tune the prior's top",
              "estimators-on-all": "estimators on all"}
    for ax, metric, ylabel in ((axes[0], "ndcg@5", "nDCG@5 (higher is better)"),
                               (axes[1], "regret@1", "regret@1 (lower is better)")):
        for m, style in zip(methods, ("o-", "s--", "^:")):
            ax.plot(x, [r[m][metric] for r in rows], style, label=labels[m])
        ax.set_xscale("log", base=2)
        ax.set_xticks(x, [f"{h:g}" for h in x])
        ax.minorticks_off()
        ax.set_xlabel("budget (hours)")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    axes[0].legend()
    fig.suptitle(f"Budgeted funnel on a generated pool ({n_models} models, {n_tasks} tasks)")
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
