"""``modelseek rank``: rank the candidates of a pool for a task (or a task set) and write a run file.

Every method goes through :func:`modelseek.retrieval.rankers.resolve.resolve` (a name, ``default``, a shipped artifact
or
an artifact path); a method that explains itself (``adaptive``, the default) also prints each candidate's
predicted relative F1 with an interval, the predicted criticality tier, the expected regret of fine-tuning only
the top-1 candidate, and the nearest past tasks; ``--json`` carries the same fields.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from ..retrieval import (cross_fitted, default_spec, describe_methods, folder_request, LabelKind, load_table_task,
                         rank_explained, split_params, training_data, write_runs)
from ..core import FOLDER_READS, parse_overrides
from ..core.errors import InputError
from ..core.io import check_readable
from ._common import declare_paths
from ._common import (NON_NEGATIVE_INT, OUTPUT_FILE, SEED, int_at_least, load_pool_arg, load_truth, print_json)
from ._finetune import add_verify_args, verify_after_rank


def register(sub) -> None:
    p = sub.add_parser("rank", help="rank candidate models for a task or task set; write a TREC run",
                       description="Rank the candidates of a pool for a data set (CSV/JSONL/Parquet with text "
                                   "and label columns), an NTCIR task folder or a whole NTCIR task set.")
    p.add_argument("path", help="a table file, an NTCIR task folder, or an NTCIR subtask-A root (the organisers' "
                                "repository or its data/)")
    p.add_argument("--split", choices=["test", "train"],
                   help="which tasks of the organisers' layout to rank: test (task-data/test-tasks, the official "
                        "topics 1..48) or train (task-data/train-tasks); needed when ROOT holds both. Topic ids are "
                        "tasks.csv's task_id (folder 0001 is task 1)")
    p.add_argument("-m", "--method", nargs="+", default=["default"],
                   help="method name(s) (one run id per method); 'default' is the shipped pre-trained ranker. "
                        f"Methods — {describe_methods()}")
    p.add_argument("--pool", help="pool file (models.csv or YAML) or built-in name (default: ntcir19, or "
                                  "models.csv beside the tasks)")
    p.add_argument("-o", "--output", type=OUTPUT_FILE, help="write the run file here")
    p.add_argument("--run-id", help="run id (default: the method name)")
    p.add_argument("--docid", choices=["pool", "hf"], default="pool",
                   help="docIDs written to --output: the pool's ids (default; NTCIR docIDs 1-20) or Hugging Face ids")
    p.add_argument("--train-truth", help="ground truth (task_id,model_id,f1) of past tasks for methods that learn; "
                                         "its model ids are the pool's ids or HF ids (default with --cv or "
                                         "--train-tasks: ground-truth.csv beside those tasks)")
    p.add_argument("--train-tasks", metavar="DIR", help="NTCIR task folder of the past tasks, for learned methods "
                                                        "that read the tasks' text (task_knn, adaptive, ltr ...)")
    p.add_argument("--cv", type=int_at_least(2), metavar="K",
                   help="cross-fit: rank each task with a model fitted on the other folds (the folds of 'bench')")
    p.add_argument("--seed", type=SEED, default=0, help="seed for folds and random methods")
    p.add_argument("--text-col", default="text", help="text column(s) of a table file, comma-separated")
    p.add_argument("--label-col", default="label", help="label column(s) of a table file, comma-separated")
    p.add_argument("--label-kind", choices=LabelKind.values(),
                   help="what the labels are: class (classification; the default for a table file, whatever the "
                        "values look like) or number (numeric targets: a regression task). A task of tasks.csv "
                        "declares it by its task_class_count; this option sets it for tasks that declare none")
    p.add_argument("--fusion", choices=["rrf"], help="fuse the rankings of the --method estimators into one run "
                                                     "by reciprocal-rank fusion (feature methods: logme, knn...)")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="a method parameter (repeatable), given to every --method that declares it; a key that no "
                        "method declares is an error. E.g. pooling=cls, max_examples=2000, k=5")
    p.add_argument("--allow-failures", action="store_true",
                   help="rank the candidates that work when some fail (cannot be downloaded, loaded or "
                        "featurised): failed candidates are left out of the run and named in a warning. Without "
                        "it such a rank exits 1 naming every failure; failed candidates never get a score")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"],
                   help="where features are computed, for every method that runs models (default auto: CUDA "
                        "where visible). Feature methods run one job per candidate (all tasks in it) with "
                        "--executor (local, ray ...); finished candidates are kept beside the feature cache, so a "
                        "rerun, or a second rank on the same cache, never computes one twice")
    p.add_argument("--show", type=NON_NEGATIVE_INT, default=3,
                   help="print the rankings of at most this many tasks")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    add_verify_args(p)
    declare_paths(p, inputs={"path": FOLDER_READS, "method": (), "pool": (), "train_truth": FOLDER_READS,
                             "train_tasks": FOLDER_READS, "recipe": ()}, databases=["finetune_store"])
    # library errors name parameters: shown as flags (the folder's ground truth is --train-truth here)
    p.set_defaults(func=run, map_params=True, param_flags={"ground_truth": "--train-truth"})


def _tasks(args) -> tuple[list, str | None]:
    """(the tasks, a line saying which split of the organisers' layout they are, or None): a folder through the
    library's :func:`modelseek.retrieval.api.folder_request` (what ``modelseek.rank(FOLDER)`` reads), a table file as
    one
    task."""
    path = Path(args.path)
    if not path.exists():
        raise InputError("no such file or folder", path=path)
    if path.is_dir():
        req = args.request
        if req.found.warning():  # before any task is ranked: the run will miss them
            print(f"warning: {req.found.warning()}", file=sys.stderr)
        return _declare(req.tasks, args.label_kind), req.found.describe()
    if args.split:
        raise InputError("--split takes the organisers' layout: a folder holding task-data/test-tasks or "
                         "task-data/train-tasks (or data/ with them)", path=path, field="--split")
    return [load_table_task(path, text_col=args.text_col.split(",") if "," in args.text_col else args.text_col,
                            label_col=args.label_col.split(",") if "," in args.label_col else args.label_col,
                            label_kind=args.label_kind)], None


def _declare(tasks: list, kind: str | None) -> list:
    """``--label-kind`` given to the tasks that declare none (tasks.csv's declaration stands)."""
    if kind is None:
        return tasks
    return [t if t.label_kind is not None else dataclasses.replace(t, label_kind=LabelKind.parse(kind))
            for t in tasks]


def _train_data(args, pool):
    """(training ground truth, training tasks, the pool that names the truth's models, the file that named
    them) from --train-truth / --train-tasks, read by the library's :func:`modelseek.retrieval.api.training_data` (what
    ``modelseek.rank(..., train_truth=PATH)`` reads); else the ground truth found in PATH."""
    if not args.train_tasks and not args.train_truth:
        return _truth_on_disk(args, pool)
    if args.train_truth and not Path(args.train_truth).is_dir():
        check_readable(args.train_truth, "ground-truth file")  # a file given: one located line, as every input file
    return training_data(args.method, pool, args.train_truth, args.train_tasks)


def _truth_on_disk(args, pool):
    """For a method that learns from past tasks (``avgrank``, ``task_knn`` ...) given no --train-truth: the ground
    truth in PATH (ROOT, ROOT/data) without the tasks being ranked, as the library's
    :func:`modelseek.retrieval.api.folder_request` found it; (None, ...) when there is none or no method learns."""
    req = getattr(args, "request", None)
    if req is None or req.train_truth is None:
        return None, None, pool, None
    if not args.json:
        print(f"method {', '.join(req.learners)}: fitted on the {len(req.train_truth.task_ids)} past tasks of "
              f"{req.train_source}")
    return req.train_truth, req.train_tasks, req.train_pool, req.train_source


def _check_options(args) -> None:
    if args.json and (args.verify_top or args.halving):
        raise InputError("--verify-top/--halving print tables; use them without --json")
    if len(args.method) > 1 and args.run_id and not args.fusion:
        raise InputError("--run-id needs a single --method")
    if args.json and (args.run_id or "") == _EXPLANATIONS:  # #56: the run would be overwritten by the key
        raise InputError(f"--json keeps the explanations under the key {_EXPLANATIONS!r}; a run of that id would be "
                         "lost: give another --run-id", field="--run-id")


def _plan(args) -> list[tuple[str, dict, str | None]]:
    """(method, its parameters, default run id) per run to make."""
    given = parse_overrides(args.param or [], "--param")
    if args.fusion:
        params = split_params(["rrf"], given, args.seed)["rrf"]
        return [("rrf", {**params, "methods": list(args.method)}, "rrf-" + "-".join(args.method))]
    per = split_params(list(args.method), given, args.seed)
    return [(m, per[m], None) for m in args.method]


def run(args: argparse.Namespace) -> int:
    _check_options(args)
    root = Path(args.path)
    plan = _plan(args)  # methods and parameters are checked before any data is read
    args.request = None
    if root.is_dir():  # the folder's tasks, pool and training truth: the library's rule (modelseek.rank alike)
        learn = [] if args.cv or args.train_tasks or args.train_truth else args.method
        args.request = folder_request(root, learn, split=args.split, pool=args.pool)
        pool = args.request.pool
    else:  # a table file: --pool, else models.csv beside --train-tasks, else ntcir19
        pool = load_pool_arg(args.pool, Path(args.train_tasks) if args.train_tasks else None)
    tasks, which = _tasks(args)
    if not args.json:
        for line in ([which] if which else []) + _default_lines(args.method):
            print(line)
    runs, explanations, layers = [], {}, {}
    train = None
    for method, params, default_id in plan:
        run_id = args.run_id or default_id
        if args.cv:  # the library's rule (modelseek.rank(..., cv=K) alike); the folder's truth unless one is given
            truth = (args.request.folder if args.request is not None and not args.train_truth
                     else load_truth(args.train_truth, root.parent))
            if params.get("seed", args.seed) != args.seed:
                raise InputError("--cv seeds its folds and the method with --seed; give no --param seed",
                                 field="--param seed")
            r = cross_fitted(tasks, pool, method, args.cv, train_truth=truth, train_tasks=args.train_tasks,
                             seed=args.seed, allow_failures=args.allow_failures, executor=args.executor,
                             address=args.address, device=args.device,
                             **{k: v for k, v in params.items() if k != "seed"})
        else:
            if train is None:
                train = _train_data(args, pool)
            truth, train_tasks, train_pool, named_by = train
            ranked = rank_explained(tasks, pool, method, train_truth=truth, train_tasks=train_tasks, run_id=run_id,
                                    progress=not args.json, allow_failures=args.allow_failures,
                                    train_pool=train_pool, train_source=named_by, executor=args.executor,
                                    address=args.address, device=args.device,
                                    strict_execution=not (args.verify_top or args.halving), **params)
            r = ranked.run
            if ranked.explanations:
                explanations[r.run_id] = ranked.explanations
            layers[run_id or r.run_id] = ranked.layers  # layer: best's choices
        runs.append(r.with_id(run_id) if run_id else r)
    if args.output:
        hf = {c.id: c.hf_id for c in pool if c.hf_id} if args.docid == "hf" else {}
        write_runs(args.output, [r.map_docs(hf) if hf else r for r in runs])
    if args.json:
        _print_json(runs, explanations, layers, pool)
        return 0
    _print_runs(args, runs, explanations, layers, pool)
    return verify_after_rank(args, runs, tasks, pool)


def _default_lines(methods) -> list[str]:
    """Which default ranker 'default' is (the user's installed one or the shipped one) and from where."""
    if "default" not in methods:
        return []
    return [f"method default: {default_spec().describe()}"]


#: the key of ``--json``'s output that holds the explanations, beside one key per run id
_EXPLANATIONS = "explanations"


def _print_json(runs, explanations, layers, pool) -> None:
    # each fact once: the run holds the order (doc, rank, score, model; the layer `layer: best` chose); an
    # explanation holds what the ranker predicts per candidate, keyed by doc, and what the ranking rests on
    out: dict = {r.run_id: {t: [{**_entry(e, pool),
                                 **({"layer": lay} if (lay := layers.get(r.run_id, {}).get(t, {}).get(e.doc))
                                    else {})} for e in r[t]] for t in r} for r in runs}
    if explanations:
        if _EXPLANATIONS in out:  # a run whose id the ranker chose: never dropped for the explanations
            raise InputError(f"run id {_EXPLANATIONS!r} is the key --json keeps the explanations under; give "
                             "another --run-id", field="--run-id")
        out[_EXPLANATIONS] = {rid: {t: _json_explanation(ex) for t, ex in per.items()}
                               for rid, per in explanations.items()}
    print_json(out)


def _print_runs(args, runs, explanations, layers, pool) -> None:
    for r in runs:
        for t in list(r)[: args.show]:
            ex = explanations.get(r.run_id, {}).get(t)
            if ex is not None:
                _print_explained(r.run_id, ex, len(pool))
                continue
            print(f"task {t} — method {r.run_id}")
            chosen = layers.get(r.run_id, {}).get(t, {})
            rows = [(str(e.rank), e.doc, f"{e.score:.4f}", model_name(pool.get(e.doc))
                     + (f"  (layer {chosen[e.doc]})" if e.doc in chosen else "")) for e in r[t]]
            w = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(("rank", "docID", "score"))]
            print(f"{'rank':>{w[0]}}  {'docID':>{w[1]}}  {'score':>{w[2]}}  model")
            for rank, doc, score, model in rows:  # columns sized to their content (long docIDs, huge scores)
                print(f"{rank:>{w[0]}}  {doc:>{w[1]}}  {score:>{w[2]}}  {model}")
        if len(r) > args.show:
            print(f"... and {len(r) - args.show} more task(s)")
    if args.output:
        ranked = {len(r[t]) for r in runs for t in r}
        many = f"{max(ranked)}" if len(ranked) == 1 else f"{min(ranked)}-{max(ranked)}"
        print(f"wrote {sum(len(r) for r in runs)} ranking(s) of {many} of the pool's {len(pool)} candidates to "
              f"{args.output}" if max(ranked) < len(pool) else
              f"wrote {sum(len(r) for r in runs)} ranking(s) of {len(pool)} candidates to {args.output}")


def model_name(c) -> str:
    """What a person calls candidate ``c``: its Hugging Face id, else its local folder's name, else its id."""
    if c.hf_id:
        return str(c.hf_id)
    if c.path:
        return Path(str(c.path).removeprefix("package:")).name or str(c.path)
    return str(c.id)


def _entry(e, pool) -> dict:
    return {"doc": e.doc, "rank": e.rank, "score": e.score, "model": model_name(pool.get(e.doc))}


def _json_explanation(ex: dict) -> dict:
    """An explanation for ``--json``: the candidates without the rank and model the run already carries."""
    return {**ex, "candidates": [{k: v for k, v in c.items() if k not in ("rank", "model")}
                                 for c in ex["candidates"]]}


def _print_explained(run_id: str, ex: dict, n_pool: int) -> None:
    s, b, ev = ex["sample"], ex["blend"], ex.get("evidence", {})
    cov = round(100 * ex["coverage"])
    print(f"task {ex['task']} — method {run_id}")
    sampled = "all" if s["texts_embedded"] == s["train_rows"] else f"a label-stratified sample (seed {s['seed']}) of"
    rows = f"{s['train_rows']:,} training rows"
    if s.get("val_rows"):
        rows += f" (of {s['rows_total']:,}: {s['val_rows']:,} went to validation)"
    print(f"  read {s['texts_embedded']} texts: {sampled} {rows}")
    print(f"  order: expected fine-tuned rank — the average rank over {b['training_tasks']} past tasks, moved by the "
          f"evidence this task carries (how far each kind moves a candidate is learned from the past tasks)")
    if b["training_tasks"] < 100:  # a fact, not advice: a refit on more tasks is not measured to help (#48)
        print(f"  (fitted on {b['training_tasks']} past tasks; `modelseek train-ranker DATA --cv 5` measures "
              f"whether a refit on yours ranks better, and says so only where it does)")
    if ev.get("fallback_to_prior"):
        print("  evidence: weak (no card matches the task, no close past tasks): the order is the prior")
    dw = max(5, *(len(str(c["doc"])) for c in ex["candidates"]))  # the docID column fits the longest id
    print(f"{'rank':>4}  {'docID':>{dw}}  {'exp. rank':>9}  {'relative F1 [' + str(cov) + '% interval]':<28}  model")
    for i, c in enumerate(ex["candidates"]):
        cell = f"{c['relative_f1']:.3f} [{c['low']:.3f}, {c['high']:.3f}]"
        print(f"{c['rank']:>4}  {c['doc']:>{dw}}  {c['expected_rank']:>9.1f}  {cell:<28}  {c['model']}")
        if i < 3 or any(e["kind"].startswith("domain") for e in c.get("evidence", ())):
            for e in c.get("evidence", ()):
                print(f"{'':>{dw + 19}}↳ {e['text']}")
    _print_indistinguishable(ex["candidates"])
    crit, reg = ex["criticality"], ex["regret_top1"]
    probs = ", ".join(f"{k} {v:.2f}" for k, v in crit["probabilities"].items())
    rule = ex["regret_rule"]["tier"]  # the library's verdict (verdicts.with_verdicts), as --json carries it
    known = crit.get("vote", crit["tier"]) != crit["tier"] or "tasks.csv" in crit.get("source", "")
    print(f"  criticality: {crit['tier'].upper()} — {crit.get('source', 'a vote of the most similar past tasks')} "
          + (f"(the past tasks' vote: {crit.get('vote', crit['tier'])}, P: {probs})" if known else f"(P: {probs})"))
    differs = ("" if rule == crit["tier"] else ", not tasks.csv's" if known else
               ", which differs: the vote reads past tasks, the rule this prediction")
    print(f"  expected regret of fine-tuning only the top-1 instead of all {n_pool}: {reg['expected']:.3f} "
          f"[{reg['low']:.3f}, {reg['high']:.3f}] (relative F1 lost; by the regret rule alone the tier would be "
          f"{rule}{differs})")
    near = "; ".join(f"{n['task']}" + (f" {n['name']}" if n["name"] and n["name"] != n["task"] else "")
                     + f" ({n['similarity']:.2f})"
                     for n in ex["nearest_tasks"])
    print(f"  most similar past tasks: {near}")
    _print_budget_curve(ex["budget_curve"])


def _print_budget_curve(m: dict) -> None:
    """What fine-tuning buys here: the replay curve of the shipped history's tasks of this task's tier (the
    library's ``budget_curve`` of the explanation)."""
    cells = "; ".join(f"{p['k']}: nDCG@5 {p['ndcg@5']:.2f} [{p['ndcg@5_low']:.2f}, {p['ndcg@5_high']:.2f}], regret "
                      f"{p['regret']:.3f}" for p in m["points"])
    print(f"  fine-tuning the top k, then ranking as the funnel does (by expected official gain where replay chose "
          f"it, else those k first by their F1) — expected after k = {cells} (replay on the "
          f"{m['tasks']} {m['tier']}-criticality past tasks, seed noise sd {m['noise']:g}; `modelseek replay`)")


def _print_indistinguishable(cands: list) -> None:
    """Say which top candidates the intervals cannot tell apart from the first."""
    if len(cands) < 2:
        return
    top_low = cands[0]["low"]
    same = [c for c in cands[1:] if c["high"] >= top_low]
    if same:
        print(f"  the intervals of the top {len(same) + 1} candidates overlap the first's: the data cannot tell them "
              f"apart (consider --verify-top {min(len(same) + 1, 5)})")
