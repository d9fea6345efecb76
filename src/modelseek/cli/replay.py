"""``modelseek replay TRUTH``: what a fine-tuning budget buys, measured on recorded results.

For every task of TRUTH (a ground truth where every candidate was fine-tuned), each policy chooses k candidates to
fine-tune; fine-tuning reveals the recorded score plus Gaussian seed noise (--noise, in the score's units, --repeats
draws; several values sweep it); the final ranking puts the fine-tuned candidates first by observed score, then the
rest in the policy's order, and for the plain order also by the expected-gain merge (every candidate by its expected
official gain, learned on the history) with the paired difference. Policies: the average-rank prior's top k (fitted
on --train-truth, or cross-fitted by task within TRUTH), each --signals run's top k, their reciprocal-rank fusion's,
and the sequential order (the plain order moved by a Gaussian over the candidates learned from the history,
conditioned on what was fine-tuned, with a weight learned on the history alone). Prints nDCG@1/3/5 (official
grading) and the regret of the final top-1 per budget and policy, with bootstrap intervals over tasks, and which
order the funnel uses (the sequential one only where replay shows it beats the plain top k; the prior's form and the
merge as each fold's history chooses by cross-fitting).
"""

from __future__ import annotations

import argparse
import sys

from ._common import declare_paths
from ._common import (NON_NEGATIVE_FLOAT, OUTPUT_FILE, SAMPLE_COUNT, SEED, add_scheme, choice, existing_file,
                      int_at_least, metavar, print_json)
from ..retrieval import (Acquisition, check_covers, choose_policy, GroundTruth, plot, PriorForm, read_runs, render,
                         replay, summarize)
from ._truth import pool_aliases


def _finetunes(text: str) -> list[int]:
    try:
        ks = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated counts such as 1,3,5,10, got {text!r}") from None
    if not ks or min(ks) < 0:
        raise argparse.ArgumentTypeError(f"expected counts >= 0 such as 1,3,5,10, got {text!r}")
    return ks


def _noises(text: str) -> list[float]:
    try:
        out = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected sds such as 0 or 0,0.005,0.01, got {text!r}") from None
    if not out or any(not (x >= 0 and x < float("inf")) for x in out):
        raise argparse.ArgumentTypeError(f"expected finite sds >= 0 such as 0,0.005,0.01, got {text!r}")
    return out


def register(sub) -> None:
    p = sub.add_parser("replay", help="what a fine-tuning budget buys: replay selection policies on recorded "
                                      "fine-tuning results",
                       description=__doc__.split("\n\n", 1)[1] if __doc__ else None)
    p.add_argument("truth", type=existing_file, help="ground truth of fine-tuning results (the official CSV: task_id, "
                                                     "model_id, f1, ...); a model without a result on a task is "
                                                     "left out of that task's pool")
    p.add_argument("--signals", nargs="+", type=existing_file, default=[], metavar="RUN",
                   help="TREC run file(s) of signals scoring every task's candidates (e.g. LogME); each run in a file "
                        "is one policy")
    p.add_argument("--train-truth", type=existing_file, metavar="HISTORY",
                   help="the history the policies learn from (its tasks that are also in TRUTH are left out); "
                        "default: task-level cross-fitting within TRUTH (--folds)")
    p.add_argument("--finetunes", type=_finetunes, default=[1, 3, 5, 10], metavar="K,K,...",
                   help="budgets in fine-tunes (default 1,3,5,10; k = 0, no fine-tuning, is always added)")
    p.add_argument("--noise", type=_noises, default=[0.0], metavar="SD[,SD...]",
                   help="sd of the seed noise added to a revealed score, in the score's units (default 0; an "
                        "assumption: one recorded score per task x model cannot measure it). Several values "
                        "(e.g. 0,0.005,0.01,0.02) sweep it: one replay per value")
    p.add_argument("--prior-form", type=choice(PriorForm), metavar=metavar(PriorForm),
                   help="the prior's form: avgrank (mean fine-tuned rank) or meanscore (mean normalised score); "
                        "default: chosen per fold by cross-fitting on that fold's history")
    p.add_argument("--merge", choices=("auto", "yes", "no"), default="auto",
                   help="the funnel's final ranking: the expected-gain merge (yes), fine-tuned first (no), or per "
                        "fold and budget as that fold's history chooses by cross-fitting (auto, the default); both "
                        "are replayed and compared either way")
    add_scheme(p)
    p.add_argument("--repeats", type=SAMPLE_COUNT, default=1, metavar="N", help="noise draws (default 1)")
    p.add_argument("--folds", type=int_at_least(2),
                   help="cross-fitting folds by task (default 5, or one per task when TRUTH has fewer)")
    p.add_argument("--acquisition", type=choice(Acquisition), default=Acquisition.BLEND, metavar=metavar(Acquisition),
                   help="how the sequential policy picks the next candidate (default blend: the plain order moved by "
                        "the Gaussian's evidence, weighted by --trust; pi: most likely to beat the best so far; ei: "
                        "expected improvement; mean: highest conditional mean)")
    p.add_argument("--trust", type=NON_NEGATIVE_FLOAT, metavar="W",
                   help="blend's weight on the joint model's evidence (0: the plain top-k; default: learned per "
                        "fold by cross-fitting on that fold's history alone)")
    p.add_argument("--bootstrap", type=SAMPLE_COUNT, default=1000, metavar="N",
                   help="bootstrap resamples over tasks for the intervals (default 1,000)")
    p.add_argument("--pool", help="pool whose Hugging Face ids name the same models as TRUTH's ids (for signal runs "
                                  "of HF ids; default: none)")
    p.add_argument("--tasks-csv", help="tasks.csv giving criticality (default: beside the ground truth)")
    p.add_argument("--any-score", action="store_true",
                   help="the f1 column holds any higher-is-better score (accuracy in %%, BLEU ...)")
    p.add_argument("--seed", type=SEED, default=0)
    p.add_argument("--json", action="store_true")
    p.add_argument("--plot", type=OUTPUT_FILE, metavar="PNG", help="write nDCG@5 and regret against k per policy")
    p.add_argument("--policy-out", type=OUTPUT_FILE, metavar="JSON",
                   help="write the policy replay chooses on every task of TRUTH (prior, order, merge per budget, the "
                        "first --noise value) with its nested figures, for `select --policy`")
    declare_paths(p, inputs=["pool", "tasks_csv"])
    p.set_defaults(func=run, map_params=True)  # library errors name parameters: shown as flags


def _signals(args) -> list:
    aliases = pool_aliases(args.pool)
    out = []
    for path in args.signals:
        for run in read_runs(path).values():
            out.append((str(path), run.map_docs(aliases) if aliases else run))
    return out


def run(args: argparse.Namespace) -> int:
    located = _signals(args)  # a bad run file fails before the truth is read
    truth = GroundTruth.from_csv(args.truth, tasks_csv=args.tasks_csv, any_score=args.any_score)
    for path, r in located:
        check_covers(r, truth.task_ids, path)
    signals = [r for _, r in located]
    history = GroundTruth.from_csv(args.train_truth, any_score=args.any_score) if args.train_truth else None
    merge = {"auto": None, "yes": True, "no": False}[args.merge]
    summaries = []
    for noise in args.noise:
        data = replay(truth, signals=signals, history=history, finetunes=[0, *args.finetunes], noise=noise,
                      repeats=args.repeats, folds=args.folds, seed=args.seed, acquisition=args.acquisition,
                      trust=args.trust, prior_form=args.prior_form, merge=merge, scheme=args.scheme)
        summaries.append(summarize(data, n_boot=args.bootstrap, source=str(args.truth)))
    if args.policy_out:
        choose_policy(truth, noise=args.noise[0], seed=args.seed, source=str(args.truth)).save(args.policy_out)
    if args.plot:
        plot({f"{args.truth} (noise {s['noise']:g})" if len(summaries) > 1 else str(args.truth): s
              for s in summaries}, args.plot)
    if args.json:
        print_json(summaries[0] if len(summaries) == 1 else {"noise_sweep": summaries})
    else:
        print("\n\n".join(render(s) for s in summaries))
        if args.plot:
            print(f"wrote {args.plot}", file=sys.stderr)
    return 0
