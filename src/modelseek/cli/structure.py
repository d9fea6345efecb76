"""``modelseek structure TRUTH``: is there anything to learn beyond the average rank on this ground truth?

Parallel analysis (``modelseek.core.stats.structure``): the share of each task's rank variance that the
average-rank prior explains (against tables whose every task's ranks are shuffled among the models), and the
leading components of what is left, each against tables in which every model's ranks are shuffled across the
tasks and each task ranked again. Components above their null are structure that a ranker
reading the task could learn; none above it means the per-task deviations from the prior look like noise, and a
learned ranker can be expected to tie with avgrank there however it is tuned. Per criticality tier too.
"""

from __future__ import annotations

import argparse
import sys

from ..retrieval import GroundTruth
from ._common import declare_paths
from ._common import PROBABILITY, TASKS_FILE, TRUTH_FILE, SAMPLE_COUNT, SEED, OUTPUT_FILE, int_at_least, print_json
from ._truth import pool_aliases

MIN_TIER_TASKS = 8


def register(sub) -> None:
    p = sub.add_parser("structure", help="does a ground truth hold per-task structure beyond the average-rank "
                                         "prior? (parallel analysis against a permutation null)",
                       description=__doc__.split("\n\n", 1)[1] if __doc__ else None)
    p.add_argument("truth", type=TRUTH_FILE,
                   help="ground truth: the official CSV (task_id, model_id, f1, ...) or TREC qrels")
    p.add_argument("--tasks-csv", type=TASKS_FILE,
                   help="tasks.csv giving criticality (default: beside the ground truth)")
    p.add_argument("--any-score", action="store_true",
                   help="the f1 column holds any higher-is-better score (accuracy in %%, BLEU ...)")
    p.add_argument("--values", action="store_true",
                   help="analyse the scores themselves instead of each task's ranks")
    p.add_argument("--components", type=int_at_least(1, 50), default=5, help="leading components shown (default 5)")
    p.add_argument("--permutations", type=SAMPLE_COUNT, default=1000, help="shuffles of the null (default 1,000)")
    p.add_argument("--level", type=PROBABILITY, default=0.95, help="quantile of the null to exceed (default 0.95)")
    p.add_argument("--seed", type=SEED, default=0)
    p.add_argument("--pool", help="pool file or built-in name whose Hugging Face ids name the models in the output "
                                  "(default: models.csv beside the ground truth, when there is one)")
    p.add_argument("--no-tiers", action="store_true", help="skip the per-tier analyses")
    p.add_argument("--plot", type=OUTPUT_FILE, metavar="PNG",
                   help="write a scree plot: each component's share against its null band, per tier")
    p.add_argument("--json", action="store_true")
    declare_paths(p, inputs=["pool"])
    p.set_defaults(func=run)


def _read(args):
    if GroundTruth.detect_format(args.truth) == "qrels":
        return GroundTruth.from_qrels(args.truth)
    return GroundTruth.from_csv(args.truth, tasks_csv=args.tasks_csv, any_score=args.any_score)


def _pct(v: float) -> str:
    return f"{100 * v:.1f}%"


def _names(args) -> dict[str, str]:
    """Model id -> Hugging Face id, from ``--pool`` or a ``models.csv`` beside the ground truth (else none)."""
    from pathlib import Path


    source = args.pool
    if source is None:
        beside = Path(args.truth).parent / "models.csv"
        if not beside.is_file():
            return {}
        source = str(beside)
    return {pid: hf for hf, pid in pool_aliases(source).items()}


def _loads(s, j: int, names: dict[str, str], n: int = 3) -> str:
    import numpy as np

    v = s.loadings[j]
    order = np.argsort(v)

    def name(i: int) -> str:
        m = s.model_ids[i]
        return f"{m} ({names[m]})" if m in names else m

    up = ", ".join(f"{name(i)} {v[i]:+.2f}" for i in order[::-1][:n])
    down = ", ".join(f"{name(i)} {v[i]:+.2f}" for i in order[:n])
    return f"up: {up}; down: {down}"


def render(path: str, measure: str, overall, tiers: dict, skipped: dict, names: dict[str, str] | None = None) -> str:
    names = names or {}
    s = overall
    lv = round(100 * s.level)
    out = [f"ground truth {path}: {len(s.task_ids)} tasks x {len(s.model_ids)} models ({measure})"]
    if s.dropped_models:
        out.append(f"  left out (not scored on every task): {', '.join(s.dropped_models)}")
    real = "real" if s.prior_p < 1 - s.level else "not distinguishable from the null"
    out.append(f"the average-rank prior explains {_pct(s.prior_share)} of the within-task variance (null {lv}%: "
               f"{_pct(s.prior_null)}; p = {s.prior_p:.3f}): the prior is {real}")
    out.append(f"what is left after the prior, against {s.permutations:,} tables in which every model's ranks are "
               f"shuffled across the tasks (seed {s.seed}):")
    out.append(f"  {'component':>9}  {'share':>6}  {'null ' + str(lv) + '%':>8}  {'p':>6}")
    for j in range(len(s.shares)):
        mark = "  above the null" if j < s.retained else ""
        out.append(f"  {j + 1:>9}  {_pct(s.shares[j]):>6}  {_pct(s.null_quantile[j]):>8}  {s.p_values[j]:>6.3f}{mark}")
    out.append(_verdict(s, names))
    for tier, t in tiers.items():
        line = f"  {tier} ({len(t.task_ids)} tasks): prior {_pct(t.prior_share)} (p {t.prior_p:.3f}); "
        if t.retained:
            line += (f"{t.retained} component(s) above the null (first: {_pct(t.shares[0])} vs "
                     f"{_pct(t.null_quantile[0])}, p {t.p_values[0]:.3f}; {_loads(t, 0, names)})")
        else:
            line += f"no component above the null (first: {_pct(t.shares[0])} vs {_pct(t.null_quantile[0])}, " \
                    f"p {t.p_values[0]:.3f})"
        out.append(line)
    for tier, n in skipped.items():
        out.append(f"  {tier} ({n} tasks): not analysed (fewer than {MIN_TIER_TASKS} tasks)")
    if tiers:
        out.append(f"  (the tier p-values are not corrected for the {len(tiers) + 1} tests: multiply by "
                   f"{len(tiers) + 1} for Bonferroni)")
    return "\n".join(out)


def _verdict(s, names: dict[str, str]) -> str:
    if s.retained:
        return (f"verdict: {s.retained} component(s) of the per-task deviations exceed the null — structure a "
                f"ranker that reads the task can learn (first component {_loads(s, 0, names)})")
    return ("verdict: no component of the per-task deviations exceeds the null — no structure shared by many "
            "models moves with the task, and a ranker that reads the task can be expected to tie with avgrank "
            "here however it is tuned; what is confined to one or two models (a domain specialist) can hide below "
            "the null (benchmarks/structure_power.py measures how much)")


def plot(path, results: dict) -> None:
    import numpy as np

    from ..core import _figure, save_figure  # lazy: pandas

    plt = _figure()
    fig, axes = plt.subplots(1, len(results), figsize=(3.4 * len(results), 3.2), squeeze=False, sharey=True)
    for ax, (name, s) in zip(axes[0], results.items()):
        x = np.arange(1, len(s.shares) + 1)
        ax.fill_between(x, s.null_median, s.null_quantile, color="0.8",
                        label=f"null: median to {round(100 * s.level)}%")
        ax.plot(x, s.shares, "o-", color="C0", label="observed")
        ax.plot(x[:s.retained], s.shares[:s.retained], "o", color="C3", ms=9, label="above the null")
        ax.set_title(f"{name} ({len(s.task_ids)} tasks)")
        ax.set_xlabel("component of the residual")
        ax.set_xticks(x)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("share of residual variance")
    axes[0][0].legend(frameon=False, fontsize=8)
    fig.suptitle("per-task structure beyond the average-rank prior (parallel analysis)", y=1.04)
    save_figure(fig, path)
    plt.close(fig)


def run(args: argparse.Namespace) -> int:
    from ..core import truth_structure  # lazy: start-up, CLI parser

    names = _names(args)  # a bad --pool fails before the permutations run
    truth = _read(args)
    kw = dict(ranks=not args.values, components=args.components, permutations=args.permutations,
              level=args.level, seed=args.seed)
    overall = truth_structure(truth, **kw)
    tiers, skipped = {}, {}
    if not args.no_tiers:
        by: dict[str, list[str]] = {}
        for t in truth.task_ids:
            by.setdefault(truth.criticality(t).value, []).append(t)
        for tier in ("low", "medium", "high"):
            ids = by.get(tier, [])
            if len(ids) >= MIN_TIER_TASKS and len(ids) < len(truth.task_ids):
                tiers[tier] = truth_structure(truth, ids, **kw)
            elif 0 < len(ids) < MIN_TIER_TASKS:
                skipped[tier] = len(ids)
    if args.plot:
        plot(args.plot, {"all": overall, **tiers})
    measure = "scores" if args.values else "ranks; ties share the lowest"
    if args.json:
        print_json({"ground_truth": args.truth, "measure": "scores" if args.values else "ranks",
                    **overall.to_dict(), "tiers": {k: v.to_dict() for k, v in tiers.items()},
                    "tiers_skipped": skipped, "model_names": names})
    else:
        print(render(args.truth, measure, overall, tiers, skipped, names))
        if args.plot:
            print(f"wrote {args.plot}", file=sys.stderr)
    return 0
