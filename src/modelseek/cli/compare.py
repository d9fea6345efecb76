"""``modelseek compare RUN RUN... -g TRUTH``: runs side by side, with paired significance tests.

For every metric: each run's mean over the ground truth's topics, and for every pair of runs (or every run
against ``--baseline``) the mean difference, the two-sided paired t-test p (equal to
``scipy.stats.ttest_rel``), the paired randomisation test p (``--permutations``, ``--seed``; exact when every
sign assignment fits), a percentile bootstrap interval of the difference (``--resamples``, ``--confidence``),
and both p-values corrected for the number of comparisons by Holm's method (per metric). Marks as ranx
prints them: a value carries the letter of every run it is significantly better than (``--test`` chooses
the test whose Holm-corrected p is compared with ``--alpha``).
"""

from __future__ import annotations

import argparse
import sys

from ..core.errors import InputError
from ..retrieval import evaluate
from ..retrieval import RANKING_METRICS as _DEFAULT
from ._common import declare_paths
from ._common import PROBABILITY, RUN_FILE, SAMPLE_COUNT, SEED, print_json
from ._truth import add_truth_args, check_shared_topics, harmonise, load_runs, read_truth

DEFAULT_METRICS = ",".join(_DEFAULT)  # the paired tests over the ranking metrics (nDCG@1,3,5, MRR), as before
#: the library's parameters (in its errors) as this command's arguments
_FLAGS = {"reports": "RUN", "baseline": "--baseline", "metrics": "--metrics"}
_SUP = str.maketrans("abcdefghijklmnopqrstuvwxyz", "ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖ𐞥ʳˢᵗᵘᵛʷˣʸᶻ")


def register(sub) -> None:
    p = sub.add_parser("compare", help="compare run files on a ground truth with paired significance tests",
                       description=__doc__.split("\n\n", 1)[1] if __doc__ else None)
    p.add_argument("runs", nargs="+", metavar="RUN", type=RUN_FILE,
                   help="TREC run files (each may hold several run ids)")
    add_truth_args(p)
    p.add_argument("--metrics", default=DEFAULT_METRICS, help=f"comma-separated (default {DEFAULT_METRICS})")
    p.add_argument("--baseline", metavar="RUN_ID", help="compare every run with this one instead of every pair")
    p.add_argument("--test", choices=["t", "permutation"], default="t",
                   help="test behind the significance marks (default t: the paired t-test, as ranx)")
    p.add_argument("--alpha", type=PROBABILITY, default=0.05, help="significance level of the marks (default 0.05)")
    p.add_argument("--permutations", type=SAMPLE_COUNT, default=10_000,
                   help="random sign assignments of the randomisation test (default 10,000)")
    p.add_argument("--resamples", type=SAMPLE_COUNT, default=1000, help="bootstrap resamples (default 1,000)")
    p.add_argument("--confidence", type=PROBABILITY, default=0.95, help="bootstrap interval level (default 0.95)")
    p.add_argument("--seed", type=SEED, default=0, help="seed of the randomisation test and the bootstrap")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true")
    fmt.add_argument("--markdown", action="store_true")
    fmt.add_argument("--latex", action="store_true")
    declare_paths(p, inputs=["pool"])
    p.set_defaults(func=run)


def _fmt(v, digits=4) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def _p(v) -> str:
    if v is None:
        return "-"
    return "< 1e-16" if v < 1e-16 else (f"{v:.4f}" if v >= 1e-4 else f"{v:.1e}")


def render_text(res: dict) -> str:
    st = res["settings"]
    metrics = st["metrics"]
    test = "paired t-test" if st["test"] == "t" else "randomisation test"
    head = ["", "run", *metrics]
    rows = [[r["letter"], rid, *(_fmt(r["mean"][m]) + r["better_than"][m].translate(_SUP) for m in metrics)]
            for rid, r in res["runs"].items()]
    out = [f"{len(res['runs'])} runs on {st['topics']} topics; marks: better than the lettered run "
           f"({test}, Holm-corrected p < {st['alpha']})", *_grid(head, rows), ""]
    ch = ["metric", "A", "B", "A-B", f"{int(st['confidence'] * 100)}% CI", "p(t)", "p(t) Holm", "p(perm)",
          "p(perm) Holm"]
    crow = [[c["metric"], c["a"], c["b"], _signed(c["diff"]),
             "-" if c["ci_low"] is None else f"[{c['ci_low']:+.4f}, {c['ci_high']:+.4f}]", _p(c["p_t"]),
             _p(c["p_t_holm"]), _p(c["p_permutation"]) + ("" if c["permutation_exact"] else "*"),
             _p(c["p_permutation_holm"])] for c in res["comparisons"]]
    out += _grid(ch, crow)
    out.append(f"randomisation test: every sign assignment when 2^topics <= {st['permutations']:,}, else "
               f"{st['permutations']:,} drawn with seed {st['seed']} (marked *); bootstrap: {st['resamples']:,} "
               f"resamples")
    return "\n".join(out)


def _signed(v) -> str:
    return "-" if v is None else f"{v:+.4f}"


def _grid(head, rows) -> list[str]:
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) if rows else len(str(h)) for i, h in enumerate(head)]
    line = lambda cells: "  ".join(str(c).ljust(w) if i < 3 else str(c).rjust(w)  # noqa: E731
                                   for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    return [line(head), line(["-" * w for w in widths]), *(line(r) for r in rows)]


def render_markdown(res: dict) -> str:
    metrics = res["settings"]["metrics"]
    out = ["| | run | " + " | ".join(metrics) + " |", "|---|---|" + "---:|" * len(metrics)]
    for rid, r in res["runs"].items():
        out.append(f"| {r['letter']} | {rid} | " + " | ".join(
            _fmt(r["mean"][m]) + (f"<sup>{r['better_than'][m]}</sup>" if r["better_than"][m] else "")
            for m in metrics) + " |")
    out += ["", "| metric | A | B | A-B | CI | p(t) | p(t) Holm | p(perm) | p(perm) Holm |",
            "|---|---|---|---:|---|---:|---:|---:|---:|"]
    for c in res["comparisons"]:
        ci = "-" if c["ci_low"] is None else f"[{c['ci_low']:+.4f}, {c['ci_high']:+.4f}]"
        out.append(f"| {c['metric']} | {c['a']} | {c['b']} | {_signed(c['diff'])} | {ci} | {_p(c['p_t'])} | "
                   f"{_p(c['p_t_holm'])} | {_p(c['p_permutation'])} | {_p(c['p_permutation_holm'])} |")
    return "\n".join(out)


def _tex(s: str) -> str:
    for a, b in (("\\", r"\textbackslash{}"), ("_", r"\_"), ("&", r"\&"), ("%", r"\%"), ("#", r"\#"),
                 ("$", r"\$"), ("{", r"\{"), ("}", r"\}")):
        s = s.replace(a, b) if a != "\\" else s.replace(a, "\0")
    return s.replace("\0", r"\textbackslash{}")


def render_latex(res: dict) -> str:
    st = res["settings"]
    metrics = st["metrics"]
    out = [r"\begin{table}", r"\centering", r"\begin{tabular}{ll" + "r" * len(metrics) + "}", r"\toprule",
           " & Run & " + " & ".join(_tex(m) for m in metrics) + r" \\", r"\midrule"]
    for rid, r in res["runs"].items():
        cells = [_fmt(r["mean"][m]) + (f"$^{{{r['better_than'][m]}}}$" if r["better_than"][m] else "")
                 for m in metrics]
        out.append(f"{r['letter']} & {_tex(rid)} & " + " & ".join(cells) + r" \\")
    test = "paired t-test" if st["test"] == "t" else "paired randomisation test"
    out += [r"\bottomrule", r"\end{tabular}",
            rf"\caption{{Superscripts: significantly better than the lettered run ({test}, Holm-corrected "
            rf"$p < {st['alpha']}$, {st['topics']} topics).}}", r"\end{table}"]
    return "\n".join(out)


def run(args: argparse.Namespace) -> int:
    from ..retrieval import check_comparison, compare_runs  # lazy: start-up, CLI parser

    truth = read_truth(args)
    runs = []
    origin: dict[str, str] = {}
    for path in args.runs:
        these = load_runs(path)
        check_shared_topics(these, truth, path)
        for r in these:
            if r.run_id in origin:
                raise InputError(f"run id {r.run_id!r} is also in {origin[r.run_id]}; run ids must differ", path=path,
                                 field="RunID")
            origin[r.run_id] = path
            runs.append(r)
    try:  # the library's checks, before any evaluation; its parameters are this command's RUN files and flags
        metrics = check_comparison(list(origin), args.metrics, args.baseline)
    except InputError as exc:
        raise InputError(exc.message, field=_FLAGS.get(exc.field or "", exc.field),
                         path=args.runs[0] if exc.field == "reports" and len(args.runs) == 1 else None) from None
    runs, truth = harmonise(runs, truth, args.pool)
    reports = [evaluate(r, truth, metrics, args.scheme, order=args.order, relevance_level=args.relevance_level,
                        pool="none") for r in runs]  # harmonised above
    for rep in reports:
        for n in rep.notes():
            print(f"note: run {rep.run_id}: {n}", file=sys.stderr)
    res = compare_runs(reports, metrics, args.baseline, args.test, args.alpha, args.permutations, args.resamples,
                       args.confidence, args.seed)
    if args.json:
        print_json(res)
    elif args.markdown:
        print(render_markdown(res))
    elif args.latex:
        print(render_latex(res))
    else:
        print(render_text(res))
    return 0
