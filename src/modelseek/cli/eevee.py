"""``modelseek eevee``: choose the few benchmarks that predict all the others (search, sweep, tiers,
importance)."""

from __future__ import annotations

import argparse
import sys
from numbers import Real

from ..core import Interval, parse_overrides
from ..retrieval import GroundTruth
from ..eevee import (BASELINE, baseline_dict, BASELINES, BatchedEvaluator, choose_k, DESCRIPTIONS, importance,
                     load_table, META_MODELS, MetaConfig, NestedConfig, paired_interval, parse_ks, read_costs,
                     read_task_mapping, read_task_weights, search, search_report, SearchConfig, sweep, Table, tiers)
from ..core.errors import InputError
from ._common import declare_paths
from ._common import (EXISTING_FILE, NON_NEGATIVE_INT, OUTPUT_DIR, OUTPUT_FILE, POSITIVE_INT, SEED, LazyText,
                      add_registry_option, arg_type, print_json, set_lazy)


def _numbers(text: str, what: str, positive: bool) -> tuple[float, ...]:
    """Comma-separated finite numbers (> 0 or >= 0): an option type, so a bad list is a usage error."""
    conv = arg_type(float, Interval(Real, 0, None, closed="neither" if positive else "left"), name=what)
    parts = [p.strip() for p in str(text).split(",") if p.strip()]
    if not parts:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}")
    return tuple(conv(p) for p in parts)


def BUDGETS(text: str) -> tuple[float, ...]:  # an option type, named like the others
    return _numbers(text, "budgets", positive=False)


def RIDGE_ALPHAS(text: str):
    return "auto" if str(text).strip().lower() == "auto" else _numbers(text, "ridge alphas", positive=True)


def register(sub) -> None:
    p = sub.add_parser("eevee", help="choose the few benchmarks whose metrics predict all the others",
                       description="EEVEE: from a models x benchmarks table, find subsets of k benchmarks "
                                   "whose metrics best predict every metric of unseen models (MLP meta-model, "
                                   "cross-validated over models, evolutionary search).")
    cmds = p.add_subparsers(dest="eevee_command", metavar="COMMAND")
    for name, helptext in (("search", "best subsets of k benchmarks"),
                           ("sweep", "search every k of a range; box plot of score versus k"),
                           ("tiers", "best subset within each cost budget"),
                           ("importance", "leave-one-out importance of the benchmarks of a subset")):
        c = cmds.add_parser(name, help=helptext, description=helptext)
        _common(c)
        if name == "search":
            c.add_argument("-k", type=POSITIVE_INT, required=True, help="benchmarks in the subset")
        elif name == "sweep":
            c.add_argument("--k", dest="ks", default="1-25", help="k values, e.g. 1-25 or 1,2,8 (default 1-25)")
            c.add_argument("--out", type=OUTPUT_DIR, help="folder for one JSON per k (a rerun resumes from it)")
            declare_paths(c, output_dirs={"out": ("k*.json",)})
            c.add_argument("--plot", type=OUTPUT_FILE, help="write the score-versus-k box plot (PNG) here")
        elif name == "tiers":
            c.add_argument("--budgets", required=True, type=BUDGETS, help="comma-separated budgets >= 0, e.g. 12,24,36")
            c.add_argument("--k", dest="ks", help="k values to consider (default: every k that can fit)")
        else:
            c.add_argument("--subset", help="comma-separated benchmarks (default: search the best of size -k)")
            c.add_argument("-k", type=POSITIVE_INT, default=8, help="subset size to search when --subset is not given")
            c.add_argument("--plot", type=OUTPUT_FILE, help="write the bar chart (PNG) here")
        if name != "importance":
            _nested_options(c)
        c.set_defaults(func=run, options_check=check_options, map_params=("split_by", "outer_splits"))
    p.set_defaults(func=lambda a: (p.print_help(), 2)[1])


def _common(c) -> None:
    src = c.add_mutually_exclusive_group(required=True)
    src.add_argument("--table", type=EXISTING_FILE,
                     help="models x metrics CSV: GATE layout (row 1 benchmark, row 2 metric) or tidy "
                          "(model,benchmark,metric,value)")
    src.add_argument("--ground-truth", type=EXISTING_FILE,
                     help="a model-retrieval ground-truth CSV: models as rows, tasks as benchmarks")
    c.add_argument("--mapping", type=EXISTING_FILE, help="task_mapping.yaml (default: beside the table)")
    c.add_argument("--weights", type=EXISTING_FILE, help="task_weights.yaml (default: beside the table)")
    c.add_argument("--costs", type=EXISTING_FILE, help="benchmark,cost CSV (e.g. GPU hours)")
    c.add_argument("--lower-is-better", help="comma-separated metric names or benchmark.metric ids that are "
                                             "better when lower (default: loss, dice-loss, mae, ...)")
    c.add_argument("--leaky", action="store_true",
                   help="the reference's normalisation: z-scores on all models, missing = 5 (leaks test models)")
    # choices and help read when shown or checked: a plugin meta-model is listed by name, never imported here
    set_lazy(add_registry_option(c, "--meta-model", "modelseek.eevee.models:META_MODELS", default="mlp"),
             help=LazyText(_meta_model_help))
    set_lazy(c.add_argument("--meta-param", dest="model_params", action="append", default=[], metavar="KEY=VALUE"),
             help=LazyText(_meta_param_help))
    c.add_argument("--ridge-alpha", default=None, type=RIDGE_ALPHAS,
                   help="deprecated: --meta-param alphas=... (the ridge meta-model's own parameter)")
    c.add_argument("--loss-scale", choices=("table", "split"), default="table",
                   help="unit of the test loss: each metric's std over the whole table (default; the "
                        "reference's unit, the same in every split) or the split's training models' std")
    c.add_argument("--generations", type=NON_NEGATIVE_INT, default=10, help="generations of the search (default 10)")
    c.add_argument("--population", type=POSITIVE_INT, default=1000, help="random initial subsets (default 1000)")
    c.add_argument("--keep", type=POSITIVE_INT, default=50, help="parents kept per generation (default 50)")
    c.add_argument("--children", type=NON_NEGATIVE_INT, default=10, help="children per parent (default 10)")
    c.add_argument("--seed", type=SEED, default=0, help="seed of the search and of the meta-models (default 0)")
    c.add_argument("--top", type=POSITIVE_INT, default=10, help="subsets to show (default 10)")
    c.add_argument("--workers", type=NON_NEGATIVE_INT, default=0,
                   help="worker processes sharing each generation's batch of the whole-table search (default 0 = one "
                        "per CPU, at most 8; 1 = this process only; the scores are the same). The nested "
                        "estimate's searches run in this process")
    c.add_argument("--json", action="store_true", help="machine-readable output")


def _nested_options(c) -> None:
    g = c.add_argument_group("honest estimate (nested: the subset chosen on some models, scored on others)")
    g.add_argument("--outer-splits", type=NON_NEGATIVE_INT, default=4,
                   help="outer splits of the models (default 4: for 16 models, four folds of 4 held-out models; "
                        "0 = no nested estimate, the in-sample loss only). Each outer split reruns the search "
                        "and the four baselines on its training models, so the run costs about "
                        "(2 x outer splits + 2) searches")
    g.add_argument("--split-by", default="random", metavar="random|strongest|COLUMN",
                   help="how models are held out: random (K-fold; default), strongest (extrapolation: each split "
                        "holds out the next-stronger models and trains on the weaker ones), or a column of the "
                        "table (e.g. a release date: the largest values held out the same way; the column is "
                        "taken out of the table)")
    g.add_argument("--outer-test-models", type=NON_NEGATIVE_INT, default=0,
                   help="held-out models per outer split for strongest/COLUMN (default 0 = models / 8, at least 1)")
    g.add_argument("--random-subsets", type=POSITIVE_INT, default=1000,
                   help="random k-subsets per outer split behind the median-random baseline, at least (default "
                        "1000; doubled, up to 8x, until the median's 90%% interval is within 2%% of it; each is one "
                        "meta-model fit)")


def nested_config(args: argparse.Namespace) -> NestedConfig:
    return NestedConfig(outer_splits=args.outer_splits, split_by=args.split_by.strip(),
                        test_models=args.outer_test_models, random_subsets=args.random_subsets)


def _meta_model_help() -> str:
    # builtin(): a plugin whose entry point clashes with a built-in's name must not take the help down
    return "; ".join(f"{n}: " + (f"{META_MODELS.builtin(n).description}{' (default)' if n == 'mlp' else ''}"
                                 if dist is None else f"from the distribution {dist}")
                     for n, dist, _ in META_MODELS.members())


def _meta_param_help() -> str:
    """The built-in meta-models' parameters (a plugin's are listed by its errors: it is not imported here)."""
    own = "; ".join(f"{n}: {META_MODELS.builtin(n).describe_params()}" for n, dist, _ in META_MODELS.members()
                    if dist is None)
    return (f"a parameter of the --meta-model (repeatable; values are YAML, a list also comma-separated), e.g. "
            f"--meta-model ridge --meta-param alphas=0.1,1,10. {own}; a scikit-learn regressor from a "
            f"distribution: its constructor's parameters. A name the meta-model does not have is an error listing "
            f"its parameters")


def meta_config(args: argparse.Namespace) -> MetaConfig:
    """The meta-model protocol of the options; an error about the meta-model's parameters names --meta-param."""
    given = parse_overrides(args.model_params or [], "--meta-param")
    if args.ridge_alpha is not None:
        print("note: --ridge-alpha is deprecated; use --meta-param alphas=... (the ridge meta-model's own "
              "parameter)", file=sys.stderr)
        if args.ridge_alpha != "auto":  # auto: the ridge's default candidates
            if args.meta_model != "ridge":
                raise InputError(f"--ridge-alpha sets the ridge meta-model's alphas; the meta-model is "
                                 f"{args.meta_model!r}", field="--ridge-alpha")
            if "alphas" in given:
                raise InputError("give the ridge's alphas once: --meta-param alphas=... (--ridge-alpha is its "
                                 "deprecated alias)", field="--ridge-alpha")
            given["alphas"] = list(args.ridge_alpha)
    try:
        return MetaConfig(seed=args.seed, leaky=args.leaky, loss_scale=args.loss_scale, model=args.meta_model,
                          model_params=given)
    except InputError as exc:
        head, _, key = (exc.field or "").partition(".")
        if head != "model_params":
            raise
        raise InputError(exc.message, field="--meta-param" + (f" {key}" if key else "")) from None


def check_options(args: argparse.Namespace) -> None:
    """Options that need each other, checked by the entry point before the table is read or a model trained."""
    if args.eevee_command == "tiers" and not args.costs:
        raise InputError("tiers need --costs (a benchmark,cost CSV)", field="--costs")
    if args.eevee_command == "importance" and args.subset is not None and not args.subset.strip(" ,"):
        raise InputError("--subset names no benchmark", field="--subset")


def _table(args):
    lib = args.lower_is_better.split(",") if args.lower_is_better else None
    if args.table:
        return load_table(args.table, args.mapping, args.weights, args.costs, lib)
    table = Table.from_ground_truth(GroundTruth.from_csv(args.ground_truth))
    if args.mapping or args.weights:
        table = table.with_groups(read_task_mapping(args.mapping) if args.mapping else {},
                                  read_task_weights(args.weights) if args.weights else None)
    if args.costs:
        table = table.with_costs(read_costs(args.costs))
    return table


def run(args: argparse.Namespace) -> int:
    meta = meta_config(args)  # the meta-model's parameters are checked before the table is read
    table = _table(args)
    cfg = SearchConfig(population=args.population, keep=args.keep, children=args.children,
                       generations=args.generations, seed=args.seed)
    nested = nested_config(args) if args.eevee_command != "importance" else None
    order = None
    if nested is not None and nested.by_column and nested.outer_splits > 0:
        table, values = table.without_column(nested.split_by)
        order = dict(zip(table.models, values))
    if getattr(args, "ks", None):  # the k values are checked before the evaluator's baseline costs any work
        parse_ks(args.ks, len(table.benchmark_names))
    ev = BatchedEvaluator(table, meta, workers=args.workers)
    try:
        return _run(args, table, ev, cfg, nested, order)
    finally:
        ev.close()


def _run(args, table, ev, cfg, nested, order) -> int:
    if args.eevee_command == "importance":
        return _importance(args, table, ev, cfg, ev.baseline(), not args.json)
    run = {"search": _search, "sweep": _sweep, "tiers": _tiers}[args.eevee_command]
    return run(args, table, ev, cfg, ev.baseline(), not args.json, nested, order)


def _scored(s, base) -> dict:
    """A score with its gain over the baseline."""
    return {**s.to_dict(), "gain": base.mean - s.mean}


def _search(args, table, ev, cfg, base, progress: bool, nested, order) -> int:
    """eevee search: the best subsets of k benchmarks, the honest estimate and the baselines."""
    res = search(ev, args.k, cfg, progress=progress, nested=nested, order=order)
    if args.json:
        print_json(search_report(res, ev, top=args.top, meta_model=args.meta_model))
        return 0
    print(f"{table!r}; k={args.k}; {_how(res, len(table.benchmark_names))} ({res.n_trained} trained) in "
          f"{res.wall_s:.1f} s{' [leaky normalisation]' if args.leaky else ''}"
          f"{_meta_label(ev)}")
    _print_honest(res)
    _print_baseline(base, res.best, "in-sample best gain")
    print("top subsets (in-sample cross-validated loss: chosen and scored on the same splits):")
    _print_scores(res.top[: args.top], base)
    return 0


def _meta_label(ev) -> str:
    """`` [ridge meta-model, alphas=[1.0]]``: the meta-model when not the default, and its parameters when set."""
    cfg = ev.config
    changed = META_MODELS.get(cfg.model).changed(cfg.model_params)
    if cfg.model == "mlp" and not changed:
        return ""
    return f" [{cfg.model} meta-model" + "".join(f", {k}={v}" for k, v in changed.items()) + "]"


def _ci(ci) -> str:
    return f"[{ci[0]:+.4f}, {ci[1]:+.4f}]" if ci else "(one split)"


def _print_honest(res) -> None:
    """The honest figure first, the in-sample one labelled, the baselines and the recommendation."""
    h = res.honest
    if h is None:
        print(f"{res.honest_note}; the loss below is in-sample (chosen and scored on the same splits: "
              f"optimistic for a new model)")
        print(f"in-sample loss: {res.best.mean:.4f}")
        return
    s = h.search
    n = len(s.per_split)
    conf = f"{100 * h.confidence:g}%"

    ci = paired_interval(s.per_split, h.confidence)
    print(f"honest loss (nested: chosen on the training models of {n} outer splits by {h.split_by}, scored on "
          f"their held-out models): {s.mean:.4f} {conf} CI {_ci(ci).replace('+', '')}  <- expect this for a new model")
    print(f"the training models' means on the same held-out models: {sum(h.training_means) / n:.4f}; "
          f"in-sample loss (chosen and scored on the same splits; optimistic): {res.best.mean:.4f}")
    print(f"baselines, chosen and scored the same way ({conf} paired interval of search minus baseline over the "
          f"outer splits; negative = the search is better):")
    print(f"  {'method':<18}  {'honest':>8}  {'in-sample':>9}  {'search - it':>11}  {'interval':>20}  verdict")
    print(f"  {'search':<18}  {s.mean:>8.4f}  {res.best.mean:>9.4f}")
    for m in BASELINES:
        x, c = h.methods[m], h.comparison("search", m)
        ins = f"{x.in_sample:>9.4f}" if x.in_sample is not None else f"{'-':>9}"
        print(f"  {m:<18}  {x.mean:>8.4f}  {ins}  {c['diff']:>+11.4f}  {_ci(c['interval']):>20}  {c['verdict']}")
    tm = h.training_means_dict()
    c = tm["search_minus_training_means"]
    given = h.search.reference
    measured = f"; {sum(given) / len(given):.4f} with the search's subsets measured" if given else ""
    print(f"  {'training means':<18}  {tm['loss']:>8.4f}  {'-':>9}  {c['diff']:>+11.4f}  {_ci(c['interval']):>20}  "
          f"(no benchmark measured{measured})")
    _print_random(h)
    rec = h.recommendation()
    what = "" if rec["method"] == "none" else f"{DESCRIPTIONS[rec['method']]}: "
    print(f"recommended: {rec['method']} — {what}{rec['reason']} (margin: the best's standard error over the outer "
          f"splits, {rec['margin']:.4f})")
    for w in h.warnings:
        print(f"warning: {w}")


def _print_random(h) -> None:
    """How many random subsets stand behind the median random baseline, and how stable their median is."""
    r = h.random_dict()
    if r is None:
        return
    n = r["draws"]
    draws = f"{n[0]:,}" if len(set(n)) == 1 else f"{min(n):,}-{max(n):,}"
    lo, hi = r["interval"]
    q1, q3 = r["quartiles"]
    print(f"median random: {draws} random subsets per outer split; the median's {100 * h.confidence:g}% interval "
          f"(mean over the splits) [{lo:.4f}, {hi:.4f}]; half of the random subsets lie in [{q1:.4f}, {q3:.4f}]")


def _how(res, n_benchmarks: int) -> str:
    """What the search scored: every subset (exhaustive) or the distinct subsets the evolution reached."""
    space = f"C({n_benchmarks}, {res.k}) = {res.n_subsets:,}"
    if res.exhaustive:
        return f"exhaustive: all {res.n_evaluated:,} subsets scored ({space} exist)"
    return f"evolutionary search: {res.n_evaluated:,} distinct subsets scored of {space}"


def _sweep(args, table, ev, cfg, base, progress: bool, nested, order) -> int:
    """eevee sweep: the best subset for each k, its honest loss, and the k to use."""
    ks = parse_ks(args.ks, len(table.benchmark_names))
    results = sweep(table, ks, cfg, out_dir=args.out, progress=progress, evaluator=ev, nested=nested, order=order)
    k_use = choose_k(results)
    if args.plot:
        from ..eevee import plot_score_vs_k  # lazy: start-up, CLI parser

        plot_score_vs_k(results, args.plot)
    if args.json:
        print_json({"baseline": baseline_dict(base), "chosen_k": k_use,
                    "chosen_by": "honest" if all(r.honest for r in results.values()) else "in_sample",
                    "results": {str(k): {"top": [_scored(s, base) for s in r.top[: args.top]],
                                         "in_sample": r.best.mean,
                                         "honest": r.honest.to_dict() if r.honest else None,
                                         "baselines": r.honest.baselines_dict() if r.honest else None,
                                         "wall_s": r.wall_s} for k, r in results.items()}})
        return 0
    _print_baseline(base, min((r.best for r in results.values()), key=lambda s: (s.mean, s.subset)),
                    "in-sample best gain")
    honest = all(r.honest for r in results.values())
    if not honest:
        print(next((r.honest_note for r in results.values() if r.honest_note), "no honest estimate") +
              "; k is chosen by the in-sample loss (optimistic)")
    print(f"{'k':>3}  {'honest':>8}  {'in-sample':>9}  {'gain':>8}  {'random':>8}  {'s':>7}  {'recommended':<17}  "
          f"best subset (whole table)")
    for k, r in results.items():
        hon = f"{r.honest.loss:>8.4f}" if r.honest else f"{'-':>8}"
        rnd = f"{r.honest.methods['median_random'].mean:>8.4f}" if r.honest else f"{'-':>8}"
        rec = r.honest.recommended if r.honest else "-"
        print(f"{k:>3}  {hon}  {r.best.mean:>9.4f}  {base.mean - r.best.mean:>+8.4f}  {rnd}  "
              f"{r.wall_s:>7.1f}  {rec:<17}  {', '.join(r.best.subset)}")
    print(f"chosen k: {k_use} (" + ("the smallest k whose honest loss is within the best k's standard error and "
                                     "not shown worse)" if honest else "the lowest in-sample loss)"))
    chosen = results[k_use].honest
    if chosen is not None and chosen.recommended == "none":
        print(f"recommended at k = {k_use}: none — {chosen.recommendation()['reason']}")
    if args.plot:
        print(f"wrote {args.plot}")
    return 0


def _tiers(args, table, ev, cfg, base, progress: bool, nested, order) -> int:
    """eevee tiers: the best subset within each cost budget."""
    if not args.costs:
        raise InputError("tiers need --costs (a benchmark,cost CSV)", field="costs")
    missing = [b for b in table.benchmark_names if b not in table.costs]
    if missing:  # the costs file is what lacks them: name it
        raise InputError(f"no cost for benchmark(s) of the table: {', '.join(missing[:5])}"
                         f"{' ...' if len(missing) > 5 else ''}", path=args.costs, field="cost")
    budgets = args.budgets
    ks = parse_ks(args.ks, len(table.benchmark_names)) if args.ks else None
    out = tiers(table, budgets, cfg, ks=ks, progress=progress, evaluator=ev, nested=nested, order=order)
    if args.json:
        print_json({"baseline": baseline_dict(base),
                    "tiers": [{**t.to_dict(), **({"gain": base.mean - t.score.mean} if t.score else {})}
                              for t in out]})
        return 0
    fitted = [t.score for t in out if t.score is not None]
    _print_baseline(base, min(fitted, key=lambda s: (s.mean, s.subset)) if fitted else None, "in-sample best gain")
    honest = any(t.honest for t in out)
    print("k per budget: " + ("the smallest k whose honest (nested) loss is not worse than the best k's beyond the "
                              "noise" if honest else "the lowest in-sample loss (no honest estimate)"))
    print(f"{'budget':>8}  {'cost':>8}  {'k':>3}  {'honest':>8}  {'in-sample':>9}  {'gain':>8}  benchmarks")
    for t in out:
        if t.score is None:
            print(f"{t.budget:>8g}  {'-':>8}  {'-':>3}  {'-':>8}  {'-':>9}  {'-':>8}  (no benchmark fits)")
        else:
            hon = f"{t.honest.loss:>8.4f}" if t.honest else f"{'-':>8}"
            print(f"{t.budget:>8g}  {t.cost:>8g}  {t.k:>3}  {hon}  {t.score.mean:>9.4f}  "
                  f"{base.mean - t.score.mean:>+8.4f}  {', '.join(t.score.subset)}")
    return 0


def _importance(args, table, ev, cfg, base, progress: bool) -> int:
    """eevee importance: how much the score worsens when each benchmark of a subset is removed."""
    if args.subset:
        subset = [s.strip() for s in args.subset.split(",") if s.strip()]
    else:
        subset = list(search(ev, args.k, cfg, progress=progress, top=1).best.subset)
    items = importance(ev, subset)
    whole = ev.score(subset)
    if args.plot:
        from ..eevee import plot_importance  # lazy: start-up, CLI parser

        plot_importance(items, args.plot)
    if args.json:
        print_json({"subset": sorted(subset), "score": whole.mean, "gain": base.mean - whole.mean,
                    "baseline": baseline_dict(base),
                    "importance": [{"benchmark": b, "loss_increase": v} for b, v in items]})
        return 0
    _print_baseline(base, whole, "the subset's gain")
    print(f"subset score {whole.mean:.4f}: {', '.join(sorted(subset))}")
    print(f"{'benchmark':<28}  loss increase when removed")
    for b, v in items:
        print(f"{b:<28}  {v:+.4f}")
    if args.plot:
        print(f"wrote {args.plot}")
    return 0


def _print_baseline(base, best, what: str = "best gain") -> None:
    """The score to beat (lower is better) and what the best result gains over it."""
    line = f"baseline to beat: {base.mean:.4f} ({BASELINE})"
    if best is not None:
        gain = base.mean - best.mean
        pct = f" ({100 * gain / base.mean:+.1f}%)" if base.mean > 0 else ""
        line += (f"; {what} {gain:+.4f}{pct}" +
                 ("" if gain > 0 else ": it does not beat the training means"))
    print(line)


def _print_scores(scores, base) -> None:
    print(f"{'#':>3}  {'score':>8}  {'gain':>8}  {'std':>7}  {'min':>7}  {'max':>7}  benchmarks")
    for i, s in enumerate(scores, 1):
        print(f"{i:>3}  {s.mean:>8.4f}  {base.mean - s.mean:>+8.4f}  {s.std:>7.4f}  {s.min:>7.4f}  {s.max:>7.4f}  "
              f"{', '.join(s.subset)}")
