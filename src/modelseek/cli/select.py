"""``modelseek select``: "I have 4 GPU-hours: which models should I look at, and which should I fine-tune?"

Plans and runs the budgeted funnel (:mod:`modelseek.retrieval.funnel`): the inference-free prior for the whole pool,
frozen-feature estimators for the top K1, fine-tuning of the top K2, with K1 and K2 chosen from measured costs
so the plan fits the budget. The plan is printed before anything but the prior is spent; an interrupted run
continues when the same command runs again (state in OUT).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ..core import FOLDER_READS
from ._common import declare_paths
from ._common import (EXECUTOR_REGISTRY, NON_NEGATIVE_FLOAT, OUTPUT_DIR, POSITIVE_INT, SEED, add_registry_option,
                      existing_file, print_json)
from ..retrieval import format_seconds, load_any_pool, load_table_task, parse_budget, select
from ._finetune import load_recipe

if TYPE_CHECKING:
    from ..retrieval import Task


def register(sub) -> None:
    p = sub.add_parser("select", help="a budgeted funnel: prior, estimators, fine-tuning within a time budget",
                       description="Choose which candidates to score with frozen-feature estimators and which to "
                                   "fine-tune so that the whole search fits a time budget; write a TREC run and "
                                   "the fine-tuned results. Rerun the same command to resume.")
    p.add_argument("path", help="the task: a table file (CSV/JSONL/Parquet with text and label columns) or one "
                                "NTCIR task folder")
    p.add_argument("--pool", required=True, help="pool: a text file of Hugging Face ids (one per line), models.csv, "
                                                 "a YAML pool file or a built-in pool name")
    p.add_argument("--budget", required=True, help="time budget, e.g. 4h, 90m, 3600s, 1h30m")
    p.add_argument("--out", default="modelseek-select", type=OUTPUT_DIR,
                   help="folder for the state, the run (run.trec), the "
                        "fine-tuned results (finetuned.csv) and the job store "
                        "(default: ./modelseek-select)")
    p.add_argument("-m", "--method", default="logme", help="frozen-feature method for stage 2 (default: logme)")
    p.add_argument("--prior", default="policy", help="inference-free ranker for stage 1 (default 'policy': the "
                                                     "prior of the policy walked where it knows every candidate, "
                                                     "else the shipped default ranker; 'history': the prior replay "
                                                     "fits on --history, in the form it chose there; or a ranker "
                                                     "name)")
    p.add_argument("--policy", type=existing_file, metavar="FILE",
                   help="the policy to walk (prior, order, merge, noise assumption), as `modelseek replay "
                        "--policy-out` writes it (default: the one replay chose on the 70 NTCIR-19 training tasks, "
                        "shipped with the package)")
    p.add_argument("--costs", type=existing_file, metavar="CSV",
                   help="stated costs (model_id, load_s, feature_s_per_1k, finetune_s_per_epoch_1k) instead of "
                        "measuring them")
    p.add_argument("--epochs", type=POSITIVE_INT, default=10,
                   help="at most this many epochs per fine-tuning (the plan assumes all run; default 10)")
    p.add_argument("--halving", action="store_true", help="successive halving over the fine-tuning candidates")
    p.add_argument("--plan-only", "--dry-run", dest="plan_only", action="store_true",
                   help="print the plan from the prior, the pool's metadata and cached or stated costs, loading "
                        "no weights (runs offline); spend nothing else")
    p.add_argument("--recipe", help="fine-tuning recipe YAML (default: the protocol)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override one recipe key (repeatable)")
    add_registry_option(p, "--executor", EXECUTOR_REGISTRY, default="local",
                        help="where the candidate jobs run, frozen features and fine-tuning alike (default: local)")
    p.add_argument("--address", help="Ray cluster address for --executor ray")
    p.add_argument("--seed", type=SEED, default=0)
    p.add_argument("--text-col", default="text", help="text column(s) of a table file, comma-separated")
    p.add_argument("--label-col", default="label", help="label column(s) of a table file, comma-separated")
    p.add_argument("--history", type=existing_file, metavar="TRUTH",
                   help="fine-tuning results of past tasks (task_id, model_id, f1; the pool's ids) on which replay "
                        "measures the prior's reliability and what each fine-tune buys (default: the NTCIR-19 "
                        "results shipped with the package)")
    p.add_argument("--history-signals", type=existing_file, metavar="RUN",
                   help="TREC run file of the estimator's (--method) scores on the --history tasks (one run; a run "
                        "named 'prior' may add your prior's scores there): replay then chooses by cross-fitting on "
                        "the history the order fine-tuning walks (the prior, the estimator, their RRF, or their "
                        "fusion weighted by the reliabilities measured there) and the plan uses the measured "
                        "reliabilities (default: none; the order is then RRF and the estimators' reliability assumed)")
    p.add_argument("--noise", type=NON_NEGATIVE_FLOAT, metavar="SD",
                   help="seed noise of a fine-tuned F1 (sd) that replay assumes when it chooses on the history (an "
                        "assumption; default: the policy's, 0 for the shipped one, as replay's default; another "
                        "value re-chooses on the shipped history)")
    p.add_argument("--json", action="store_true", help="print a machine-readable summary (the plan included)")
    declare_paths(p, inputs={"path": FOLDER_READS, "pool": (), "recipe": ()},
                  output_dirs={"out": ("run.trec", "finetuned.csv", "state.json", "finetune.sqlite")})
    p.set_defaults(func=run, map_params=("budget", "overrides"))  # library errors naming these show the flag


def run(args: argparse.Namespace) -> int:
    parse_budget(args.budget)  # a bad budget is refused before any file is read
    path = Path(args.path)
    data: Task | Path = path
    if path.is_file():
        split = lambda s: s.split(",") if "," in s else s  # noqa: E731
        data = load_table_task(path, text_col=split(args.text_col), label_col=split(args.label_col))
    pool = load_any_pool(args.pool)
    recipe = load_recipe(args)
    echo = None if args.json else (lambda s: print(s, flush=True))
    res = select(data, pool, args.budget, args.out, feature_method=args.method, prior_method=args.prior,
                 recipe=recipe, epochs=args.epochs, halving=args.halving, plan_only=args.plan_only, seed=args.seed,
                 progress=not args.json, echo=echo, executor=args.executor, address=args.address,
                 history=args.history, noise=args.noise, history_signals=args.history_signals,
                 policy=args.policy, costs=args.costs)
    tid = next(iter(res.run))
    if args.json:
        print_json({"status": res.status, "plan": res.plan.to_dict(), "spent_s": res.spent_s,
                    "total_spent_s": res.total_spent_s, "budget_s": res.plan.budget_s,
                    "measured": _measured_json(res.measured), "policy": _policy_json(res.policy),
                    "ranking": res.run.ranking(tid),
                    "final_ranking": res.final, "finetuned": res.finetuned, "finetune_costs": res.costs,
                    "left_undone": res.left_undone, "warnings": res.warnings, "out": str(res.out)})
        return 0
    spent = ", ".join(f"{k} {format_seconds(v)}" for k, v in res.spent_s.items() if v)
    print(f"{res.status}; spent {format_seconds(res.total_spent_s)} of {format_seconds(res.plan.budget_s)} ({spent})")
    if res.status == "planned":
        return 0
    if res.finetuned:
        print(f"{'model':<40} {'val F1':>7} {'test F1':>7} {'epochs':>6}  status")
        for r in res.finetuned:
            v = "" if r.get("val_f1") is None else f"{r['val_f1']:.4f}"
            f = "" if r.get("f1") is None else f"{r['f1']:.4f}"
            print(f"{r['model_id']:<40} {v:>7} {f:>7} {r.get('epochs') or '':>6}  {r.get('status')}"
                  + (f" ({r['error']})" if r.get("error") else ""))
    for w in res.warnings:
        print(w)
    ranking = res.run.ranking(tid)
    print(f"final ranking: {res.final}")
    print(f"top {min(5, len(ranking))}: " + ", ".join(ranking[:5]))
    print(f"wrote {res.out / 'run.trec'} and {res.out / 'finetuned.csv'}")
    return 0


def _policy_json(p) -> dict | None:
    """The policy walked, where it was measured and its figures (labelled nested or withheld)."""
    if p is None:
        return None
    return {"measured_on": p.measured_on, "tasks": p.tasks, "noise": p.noise, "prior_form": p.prior_form.value,
            "order": p.order, "merge": {str(k): v for k, v in p.merge.items()},
            "merge_gain": {str(k): list(v) for k, v in p.merge_gain.items()}, "reliability": p.reliability,
            "figures": p.figures}


def _measured_json(m) -> dict | None:
    """What replay on the history measured, as ``--json`` carries it (5-fold cross-fitting within the history's
    own tasks: nested figures, not withheld ones; ``figures`` says so)."""
    if m is None:
        return None
    return {"history": m.source, "tasks": m.tasks, "noise": m.noise, "reliability": m.reliability,
            "figures": "nested: 5-fold cross-fitting by task within the history's tasks (not withheld tasks)",
            "curve": list(m.curve), "gain_per_finetune": m.gain_per_finetune(), "order": m.order, "why": m.why,
            "base": m.base, "choices": m.choices.to_dict() if m.choices is not None else None}
