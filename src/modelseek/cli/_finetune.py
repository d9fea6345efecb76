"""Recipe and executor options shared by ``finetune`` and ``rank --verify-top/--halving``, and the verification
that ``rank`` runs after ranking."""

from __future__ import annotations

from ._common import EXECUTOR_REGISTRY, POSITIVE_INT, add_registry_option
from ..retrieval import rerank


def load_recipe(args):
    from ..retrieval import PROTOCOL, Recipe  # lazy: pandas

    recipe = Recipe.from_yaml(args.recipe) if args.recipe else PROTOCOL
    return recipe.with_overrides(args.overrides) if args.overrides else recipe


def add_verify_args(p) -> None:
    """The verification options of ``modelseek rank``."""
    g = p.add_argument_group("verification (fine-tunes candidates; see 'modelseek finetune')")
    g.add_argument("--verify-top", type=POSITIVE_INT, metavar="K",
                   help="fine-tune the top K of each ranking and report their test F1")
    g.add_argument("--halving", action="store_true",
                   help="successive halving over the ranking (top K with --verify-top, else all): a few epochs "
                        "for every survivor, keep the best half by validation F1, double the epochs, repeat")
    g.add_argument("--finetune-store", help="job store for verification (default: modelseek-verify.sqlite)")
    g.add_argument("--recipe", help="recipe YAML for verification (default: the protocol)")
    g.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override one recipe key (repeatable)")
    add_registry_option(g, "--executor", EXECUTOR_REGISTRY, default="local",
                        help="where the jobs run, the feature methods' candidate jobs and verification alike: in "
                             "this process (local) or as Ray tasks (ray; a GPU per job where the cluster has GPUs)")
    g.add_argument("--address", help="Ray cluster address for --executor ray ('auto' or HOST:PORT; default: start "
                                     "a local Ray instance)")


def verify_after_rank(args, runs, tasks, pool) -> int:
    """Run the verification asked for on the first run; print (or return as JSON) the table."""
    if not getattr(args, "verify_top", None) and not getattr(args, "halving", False):
        return 0
    from ..retrieval import successive_halving, verify_top  # lazy: pandas

    recipe = load_recipe(args)
    store = args.finetune_store or "modelseek-verify.sqlite"
    run = runs[0]
    by_id = {t.id: t for t in tasks}
    for tid in run:
        task = by_id[tid]
        order = [e.doc for e in run[tid]]
        if args.verify_top:
            order = order[: args.verify_top]
        if args.halving:
            res = successive_halving(task, [pool.get(d) for d in order], store, recipe=recipe,
                                     executor=args.executor, address=args.address)
            print(f"task {tid} — successive halving over {len(order)} candidate(s) (run {run.run_id})")
            print(res.table().to_string(index=False))
            print(f"winner: {res.winner} (test F1 {res.winner_f1:.4f} after {res.rungs[-1].epochs} epoch(s))")
        else:
            table = verify_top(task, [pool.get(d) for d in order], store, recipe=recipe, executor=args.executor,
                               address=args.address, scores={e.doc: e.score for e in run[tid]},
                               seed=args.seed)
            print(f"task {tid} — fine-tuned top {len(order)} of run {run.run_id}")
            print(table.to_string(index=False))
            _print_final(run, tid, table)
    return 0


def _print_final(run, tid: str, table) -> None:
    """The final ranking after the fine-tunes, as the funnel makes it
    (:func:`~modelseek.retrieval.funnel.curve.rerank`)."""
    import math

    done = {str(r["model_id"]): float(r["val_f1"]) for r in table.to_dict("records")
            if r.get("status") == "done" and r.get("val_f1") is not None and not math.isnan(float(r["val_f1"]))}
    if not done:
        return
    ranking, how = rerank([e.doc for e in run[tid]], done)
    print(f"final ranking {how}: " + ", ".join(ranking[:10]) + (" ..." if len(ranking) > 10 else ""))
