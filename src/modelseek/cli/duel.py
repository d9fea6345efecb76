"""``modelseek duel``: significance-tested duel leaderboards (BenCzechMark-style win scores).

Sub-commands: ``compile`` (lm-evaluation-harness folders -> submission), ``validate``, ``tournament``
(submission files -> duels and scores), ``runs`` (TREC runs -> leaderboard by criticality tier),
``presubmit`` / ``confirm`` / ``discard`` / ``leaderboard`` (a stored leaderboard), ``serve`` (the web app).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from ..retrieval import read_runs
from ..core.errors import InputError
from ..core.io import atomic_write_text
from ._common import declare_paths
from ._common import (OUTPUT_FILE, PORT, POSITIVE_FLOAT, PROBABILITY, SAMPLE_COUNT, SEED,
                      add_scheme, load_truth, print_json)




def _db_errors(fn):
    """A command over a leaderboard database: a database error (a dropped table, a damaged file) is one line
    naming the database with its password masked, never a traceback."""

    @functools.wraps(fn)
    def run(args) -> int:
        try:
            import sqlalchemy as sa  # lazy: sqlalchemy
        except ImportError:  # pragma: no cover - the commands refuse earlier without the extra
            return fn(args)
        try:
            return fn(args)
        except sa.exc.SQLAlchemyError as exc:
            from ..duel import _reason  # lazy: scipy

            raise InputError(f"the database cannot be used ({_reason(exc)}): a table is missing or damaged; "
                             "modelseek duel db verify checks it", path=_shown(getattr(args, "db", "")),
                             field="db") from None
        except InputError as exc:
            from ..duel import mask_secrets  # lazy: scipy

            db = str(getattr(args, "db", "") or "")
            text = str(exc)
            masked = mask_secrets(text.replace(db, _shown(db)) if db else text)
            if masked != text:              # no secret of any URL form in a message
                raise InputError(masked) from None
            raise

    return run


def _shown(db) -> str:
    """``--db`` as printed: a URL's password masked."""
    from ..duel import mask_secrets  # lazy: scipy

    return mask_secrets(str(db or ""))


def register(sub) -> None:
    p = sub.add_parser("duel", help="duel leaderboards: significance-tested win scores, storage, web app",
                       description="Duel leaderboards: every pair of models is compared on every task by a "
                                   "one-tailed significance test; win score = share of duels won.")
    dsub = p.add_subparsers(dest="duel_command", metavar="SUBCOMMAND")

    c = dsub.add_parser("compile", help="compile lm-evaluation-harness output folders into one submission")
    c.add_argument("folders", nargs="+", help="harness output folders (results*.json + samples_<task>_*.jsonl)")
    c.add_argument("-o", "--output", required=True, type=OUTPUT_FILE, help="submission JSON to write")
    c.add_argument("--model", help="model name (default: from the harness results)")
    c.add_argument("--precision", help="precision, e.g. bf16")
    c.add_argument("--params", type=POSITIVE_FLOAT, help="number of parameters")
    c.add_argument("--source", help="link to the model")
    _metadata_arg(c)
    declare_paths(c, inputs=["folders", "metadata"])
    c.set_defaults(func=_compile)

    v = dsub.add_parser("validate", help="check submission files against the leaderboard's tasks")
    v.add_argument("submissions", nargs="+")
    _metadata_arg(v)
    v.add_argument("--reference", metavar="FILE", help="also check them against a board's reference (the "
                                                        "benchmark's doc_ids and gold labels, see db init)")
    declare_paths(v, inputs=["submissions", "metadata", "reference"])
    v.set_defaults(func=_validate)

    t = dsub.add_parser("tournament", help="run every duel between submissions and print win scores")
    t.add_argument("submissions", nargs="+", help="compiled submission JSON files (one model each)")
    _metadata_arg(t)
    _test_args(t)
    t.add_argument("--level", default="overall", help="table columns: overall, tasks, or a category name")
    t.add_argument("--json", action="store_true",
                   help='print {"duels": [{"task","a","b","significant","p_value"}...], "scores": {...}}')
    t.add_argument("--progress", action="store_true", help="show a progress bar")
    declare_paths(t, inputs=["submissions", "metadata"])
    t.set_defaults(func=_tournament)

    r = dsub.add_parser("runs", help="duel leaderboard over TREC runs: nDCG@5 t-tests per criticality tier")
    r.add_argument("runs", nargs="+", help="TREC run files (each may hold several run ids)")
    r.add_argument("--ground-truth", "-g", help="ground-truth CSV (default: found beside the first run)")
    r.add_argument("--tasks-csv", help="tasks.csv giving criticality (default: beside the ground truth)")
    add_scheme(r)
    r.add_argument("--alpha", type=PROBABILITY, default=0.05, help="significance level in (0, 1) (default 0.05)")
    r.add_argument("--fdr", action="store_true", help="Benjamini-Hochberg across tiers")
    r.add_argument("--json", action="store_true")
    declare_paths(r, inputs=["runs", "ground_truth", "tasks_csv"])
    r.set_defaults(func=_runs)

    _add_store_commands(dsub)

    ex = dsub.add_parser("example", help="write a few valid example submissions and their metadata file")
    ex.add_argument("folder", help="folder to write into (created if missing)")
    ex.add_argument("--models", type=int, default=3, choices=range(2, 11), metavar="2..10",
                    help="how many submissions (default 3)")
    ex.add_argument("--seed", type=SEED, default=0, help="seed of the generated predictions (default 0)")
    ex.add_argument("--db", help="also create this demo board (no reference needed) and publish the examples on it")
    declare_paths(ex, output_dirs={"folder": ("*.json",)}, databases=["db"])
    ex.set_defaults(func=_example)

    _add_db_commands(dsub)
    _add_review_commands(dsub)
    p.set_defaults(func=lambda a: (p.print_help(), 2)[1])


def _add_store_commands(dsub) -> None:
    """presubmit, confirm, discard, leaderboard, serve: the commands over a leaderboard database."""
    for name, helptext in (("presubmit", "validate a submission, compute its duels, show the preview"),):
        s = dsub.add_parser(name, help=helptext)
        s.add_argument("submission")
        _db_args(s)
        declare_paths(s, inputs=["submission"])
        s.add_argument("--confirm", action="store_true", help="publish at once after the preview")
        s.add_argument("--json", action="store_true")
        s.set_defaults(func=_presubmit)
    for name, helptext, fn in (("confirm", "publish a pre-submission by its token", _confirm),
                               ("discard", "drop a pre-submission by its token", _discard)):
        s = dsub.add_parser(name, help=helptext)
        s.add_argument("token")
        _db_args(s)
        s.set_defaults(func=fn)
    lb = dsub.add_parser("leaderboard", help="print the stored leaderboard")
    _db_args(lb)
    lb.add_argument("--level", default="overall", help="overall, tasks, or a category name")
    lb.add_argument("--model", help="print this model's duels instead")
    lb.add_argument("--json", action="store_true")
    lb.set_defaults(func=_leaderboard)

    w = dsub.add_parser("serve", help="serve the leaderboard web app (Gradio)")
    _db_args(w)
    w.add_argument("--host", default="127.0.0.1")
    w.add_argument("--port", type=PORT, default=7860, help="port (1-65535, default 7860)")
    w.add_argument("--max-upload-mb", type=POSITIVE_FLOAT, default=None,
                   help="largest submission accepted, in MB (default 64); bigger uploads are refused while "
                        "they are received")
    w.add_argument("--daily-mb", type=POSITIVE_FLOAT, default=None,
                   help="bytes one uploader may store per 24 hours, in MB (default 256)")
    w.add_argument("--upload-stall-seconds", type=POSITIVE_FLOAT, default=30.0,
                   help="an upload whose next bytes do not arrive within this many seconds is dropped and its "
                        "partial file deleted (default 30)")
    w.add_argument("--upload-deadline-seconds", type=POSITIVE_FLOAT, default=600.0,
                   help="an upload not received whole within this many seconds is dropped, however steadily it "
                        "trickles, and its partial file deleted (default 600)")
    w.add_argument("--pending-hours", type=POSITIVE_FLOAT, default=None,
                   help="pre-submissions not confirmed within this many hours are deleted (default 24)")
    w.add_argument("--identity-header", default=None, metavar="HEADER",
                   help="behind a signing-in proxy (Hugging Face / OAuth): the request header holding the user "
                        "(e.g. X-Forwarded-User); uploads without it are refused and a pre-submission can only "
                        "be confirmed by the same user")
    w.add_argument("--trusted-proxy", action="append", default=[], metavar="ADDRESS",
                   help="the address of a reverse proxy whose X-Forwarded-For (and identity header) is honoured; "
                        "repeat for several. Without it forwarded headers are ignored: the client is the address "
                        "that connects")
    w.add_argument("--operator", action="append", default=[], metavar="IDENTITY",
                   help="a signed-in user (as the identity header names them) who sees the review page at /review "
                        "(the queue, approve, reject, withdraw); repeat for several. Needs --identity-header and "
                        "--trusted-proxy; for anyone else /review does not exist")
    w.set_defaults(func=_serve)


def _add_db_commands(dsub) -> None:
    """``duel db``: upgrade, verify, grants."""
    db = dsub.add_parser("db", help="leaderboard database maintenance")
    dbsub = db.add_subparsers(dest="db_command", metavar="SUBCOMMAND")
    ini = dbsub.add_parser("init", help="create a board with the operator's reference (sample ids, gold labels)")
    ini.add_argument("--db", required=True, help="SQLAlchemy URL or SQLite file of the new board")
    _metadata_arg(ini)
    ini.add_argument("--reference", required=True, metavar="FILE",
                     help="the benchmark's gold file ({\"reference\": {task: {\"doc_ids\", \"gold\", \"n_classes\"}}}) "
                          "or a compiled submission the operator trusts: fixes every task's samples for good")
    ini.add_argument("--review", action="store_true",
                     help="confirmed submissions wait in a queue until modelseek duel review approve")
    declare_paths(ini, inputs=["metadata", "reference"], databases=["db"])
    ini.set_defaults(func=_db_init)
    up = dbsub.add_parser("upgrade", help="apply the schema migrations (also done, under a lock, on opening)")
    up.add_argument("--db", default="leaderboard.db", help="SQLAlchemy URL or SQLite file (default leaderboard.db)")
    declare_paths(up, databases=["db"])
    up.set_defaults(func=_db_upgrade)
    ver = dbsub.add_parser("verify", help="check the hash chain over the published rows and the immutability "
                                          "triggers (exit 1 naming the first altered row)")
    ver.add_argument("--db", default="leaderboard.db", help="SQLAlchemy URL or SQLite file (default leaderboard.db)")
    ver.add_argument("--head", metavar="HASH", help="the head hash recorded earlier: also refuse a chain that no "
                                                    "longer contains it (rows removed from the end)")
    declare_paths(ver, databases=["db"])
    ver.set_defaults(func=_db_verify)
    rec = dbsub.add_parser("recover", help="remove the published rows appended outside the app (as the tables' owner), "
                                           "re-verify the chain, reopen the board")
    rec.add_argument("--db", required=True, help="SQLAlchemy URL or SQLite file (connect as the owner role)")
    rec.add_argument("--apply", action="store_true", help="remove them (default: only list what would be removed)")
    rec.add_argument("--after-head", metavar="HASH", help="a head hash recorded while the board was intact: the "
                                                          "chain rows appended after it are removed too")
    declare_paths(rec, databases=["db"])
    rec.set_defaults(func=_db_recover, map_params=("after_head",))  # the library names its parameter
    gr_ = dbsub.add_parser("grants", help="print the PostgreSQL GRANTs of the least-privilege app role")
    gr_.add_argument("role", help="the app's database role (it must own nothing)")
    gr_.set_defaults(func=_db_grants)
    db.set_defaults(func=lambda a: (db.print_help(), 2)[1])


def _add_review_commands(dsub) -> None:
    """``duel review``: list, approve, reject (boards created with ``db init --review``)."""
    import getpass

    rv = dsub.add_parser("review", help="the review queue of a board created with --review")
    rsub = rv.add_subparsers(dest="review_command", metavar="SUBCOMMAND")
    ls = rsub.add_parser("list", help="queued submissions with their plausibility flags")
    _db_args(ls)
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(func=_review_list)
    try:
        me = getpass.getuser()
    except (KeyError, OSError):
        me = None
    for name, helptext in (("approve", "publish a queued submission (recorded with who and when, chained)"),
                           ("reject", "drop a queued submission, saying why (the uploader reads it)"),
                           ("withdraw", "withdraw a published entry (a chained record; kept for audit, the board "
                                        "recomputed without it)")):
        a = rsub.add_parser(name, help=helptext)
        a.add_argument("model", metavar="ID_OR_NAME",
                       help="the submission id (review list shows it), or its name when only one entry has it")
        _db_args(a)
        a.add_argument("--by", default=me, help=f"the reviewer's name (default: the system user, {me})")
        a.add_argument("--why", required=name != "approve", default="",
                       help="the reason (required to reject or withdraw)")
        a.set_defaults(func=_review_decide, map_params=("why",))  # the library names its parameter
    st = rsub.add_parser("status", help="the verdict on an upload, by its token (what the uploader sees)")
    st.add_argument("token")
    _db_args(st)
    st.add_argument("--json", action="store_true")
    st.set_defaults(func=_review_status)
    rv.set_defaults(func=lambda a: (rv.print_help(), 2)[1])


@_db_errors
def _review_list(args) -> int:
    store = _store(args)
    _refuse_altered(store, args.db)
    queue = store.review_queue()
    if args.json:
        print_json(queue)
        return 0
    if not queue:
        print("no submission awaits review" + ("" if store.review else " (this board publishes without review)"))
    for q in queue:
        print(f"id {q['id']}: {q['model']}  (team {q['team'] or '-'}, by {q['identity'] or '-'}, uploaded "
              f"{q['uploaded']}, confirmed {q['confirmed']})")
        print("    metrics: " + ", ".join(f"{t} {v:.4g}" for t, v in q["metrics"].items()))
        print("    flags: " + ("; ".join(q["flags"]) if q["flags"] else "none"))
    return 0


@_db_errors
def _review_decide(args) -> int:
    if not args.by:
        raise InputError("name the reviewer with --by", field="--by")
    store = _store(args)
    _refuse_altered(store, args.db)
    if args.review_command == "approve":
        print(f"approved and published {store.approve(args.model, args.by, args.why)!r}")
    elif args.review_command == "reject":
        print(f"rejected {store.reject(args.model, args.by, args.why)!r}")
    else:
        print(f"withdrew {store.withdraw(args.model, args.by, args.why)!r}: kept for audit, the board is recomputed "
              "without it")
    return 0


@_db_errors
def _review_status(args) -> int:
    store = _store(args)
    v = store.verdict(args.token)
    if args.json:
        print_json(v)
        return 0
    print(f"{v['model']!r}: {v['status']}" + (f" by {v['by']} ({v['at']})" if v["by"] else "")
          + (f": {v['why']}" if v["why"] else ""))
    return 0


def _metadata_arg(p) -> None:
    p.add_argument("--metadata", help="leaderboard metadata JSON (BenCzechMark format: tasks with category and "
                                      "metric); default: the shipped BenCzechMark configuration")


def _test_args(p) -> None:
    p.add_argument("--seed", type=SEED, default=0, help="seed of every Monte-Carlo test (default 0)")
    p.add_argument("--alpha", type=PROBABILITY, default=0.05, help="significance level in (0, 1) (default 0.05)")
    p.add_argument("--fdr", action="store_true", help="Benjamini-Hochberg correction across tasks")
    p.add_argument("--draws", type=SAMPLE_COUNT, default=1000,
                   help="posterior draws per model (AUROC test, 1..10,000,000)")
    p.add_argument("--resamples", type=SAMPLE_COUNT, default=1000,
                   help="bootstrap resamples (ROUGE, perplexity, 1..10,000,000)")


def _db_args(p) -> None:
    p.add_argument("--db", default="leaderboard.db", help="SQLAlchemy URL or SQLite file (default leaderboard.db)")
    _metadata_arg(p)
    declare_paths(p, inputs=["metadata"], databases=["db"])


def _config(args):
    from ..duel import LeaderboardConfig  # lazy: scipy

    return LeaderboardConfig.load(args.metadata)


def _db(text: str) -> str:
    """``--db`` for a command whose work must outlive it: an in-memory SQLite database (``sqlite://``,
    ``sqlite:///``, ``:memory:``) would be created empty and lost at exit — a pre-submission whose token
    can never be confirmed, an upgrade of nothing — so it is refused."""
    from ..duel import database_url  # lazy: scipy

    url = database_url(text)
    path = url.split("://", 1)[1][1:]
    if url.startswith("sqlite") and (not path or path == ":memory:" or "mode=memory" in path):
        raise InputError("an in-memory database keeps nothing after this command; give a file or a server URL",
                         path=text or "''", field="--db")
    return text


def _store(args):
    from ..duel import LeaderboardConfig  # lazy: scipy
    from ..duel import Store  # lazy: pandas, scipy

    if args.duel_command != "serve":
        _db(args.db)
    return Store(args.db, config=LeaderboardConfig.load(args.metadata) if args.metadata else None)


def _compile(args) -> int:
    from ..duel import compile_submission  # lazy: scipy

    meta = {k: v for k, v in (("precision", args.precision), ("n_params", args.params), ("source", args.source))
            if v is not None}
    obj = compile_submission(args.folders, _config(args), model=args.model, metadata=meta)
    atomic_write_text(args.output, json.dumps(obj))
    pooled = obj["metadata"].get("prompts", {})
    print(f"wrote {args.output}: model {obj['metadata']['model']!r}, {len(obj['predictions'])} tasks"
          + (f", {len(pooled)} max-pooled over prompts" if pooled else ""))
    return 0


def _load_all(paths: list[str], config):
    """Load every submission; two naming the same model, or with other samples on a task than the first, are an
    error naming the later file (the library's rules: :func:`~modelseek.duel.submission.check_distinct_models`)."""
    from ..duel import check_distinct_models, check_sample_counts, load_submission  # lazy: scipy

    subs = [load_submission(s, config) for s in paths]
    check_distinct_models(subs, [str(p) for p in paths])
    check_sample_counts(subs, config, [str(p) for p in paths])
    return subs


def _validate(args) -> int:
    config = _config(args)
    subs = _load_all(args.submissions, config)
    if args.reference:
        from ..duel import Reference  # lazy: scipy

        ref = Reference.load(args.reference, config)
        for path, s in zip(args.submissions, subs):
            ref.check(s, path)
    for path, s in zip(args.submissions, subs):
        print(f"{path}: ok — model {s.model!r}, {len(s.tasks)} tasks, "
              f"{sum(d.n for d in s.data.values())} samples")
    return 0


def _tournament(args) -> int:
    from ..duel import Settings  # lazy: scipy
    from ..duel import tournament  # lazy: scipy

    config = _config(args)
    subs = _load_all(args.submissions, config)
    res = tournament(subs, config, Settings(seed=args.seed, n_draws=args.draws, n_resamples=args.resamples),
                     alpha=args.alpha, fdr=args.fdr, progress=args.progress and not args.json)
    if args.json:
        print_json(res.to_dict())
    else:
        print(res.table(args.level).to_string(index=False))
        if res.copies:
            from ..duel import RULE  # lazy: scipy

            print(RULE + " Here: " + "; ".join(f"{m} ~ {', '.join(o)}" for m, o in sorted(res.copies.items())))
    return 0


def _runs(args) -> int:
    from ..duel import runs_tournament  # lazy: scipy

    runs, sources = [], []
    for path in args.runs:
        for r in read_runs(path).values():
            runs.append(r)
            sources.append(path)
    truth = load_truth(args.ground_truth, Path(args.runs[0]).parent, args.tasks_csv)
    res = runs_tournament(runs, truth, args.scheme, args.alpha, args.fdr, sources=sources)
    if args.json:
        print_json(res.to_dict())
    else:
        print(res.table("tasks").to_string(index=False))
    return 0


@_db_errors
def _presubmit(args) -> int:
    store = _store(args)
    pv = store.presubmit(args.submission)
    if args.confirm:
        store.confirm(pv.token, recompute=True)     # one step: duels against models published since included
        queued = store.review
    if args.json:
        print_json({"token": pv.token, "model": pv.model, "rank": pv.rank, "scores": pv.scores,
                    "published": bool(args.confirm) and not store.review,
                    "awaiting_review": bool(args.confirm) and store.review, "seconds": pv.seconds})
        return 0
    print(f"preview for {pv.model!r}: rank {pv.rank} of {len(pv.table)}, overall {pv.scores['overall']:.2f} "
          f"({pv.seconds:.2f} s)")
    print(pv.table.to_string(index=False))
    for note in pv.warnings:
        print(f"note: {note}")
    if store.near_copies():
        from ..duel import RULE  # lazy: scipy

        print(RULE)
    if args.confirm:
        print(f"awaiting review: {pv.model!r} (modelseek duel review approve)" if queued else f"published {pv.model!r}")
    else:
        print(f"not published yet: modelseek duel confirm {pv.token} --db {_shown(args.db)}")
    return 0


@_db_errors
def _confirm(args) -> int:
    from ..duel import StalePreview  # lazy: pandas, scipy

    store = _store(args)
    try:
        model = store.confirm(args.token)
        print(f"awaiting review: {model!r} (modelseek duel review approve)" if store.review else f"published {model!r}")
    except StalePreview as exc:
        pv = store.refresh(args.token)
        print(f"the leaderboard changed since the preview; recomputed: {pv.model!r} rank {pv.rank} of "
              f"{len(pv.table)}, overall {pv.scores['overall']:.2f}")
        print(pv.table.to_string(index=False))
        raise InputError(f"{exc.message}; the preview above was recomputed, run the same confirm again to "
                         "publish") from None
    return 0


@_db_errors
def _discard(args) -> int:
    _store(args).discard(args.token)
    print("discarded")
    return 0


def _refuse_altered(store, db) -> None:
    store.require_intact(fresh=True)   # the library's rule: an altered board is not shown (nor served)


@_db_errors
def _leaderboard(args) -> int:
    store = _store(args)
    _refuse_altered(store, args.db)
    df = store.duel_details(args.model) if args.model else store.leaderboard(args.level)
    if args.json:
        print(df.to_json(orient="records", indent=2))
    else:
        print(df.to_string(index=False) if len(df) else "(no published submissions)")
        copies = store.near_copies()
        if copies and not args.model:
            from ..duel import RULE  # lazy: scipy

            print(RULE + " Here: " + "; ".join(f"{m} ~ {', '.join(o)}" for m, o in sorted(copies.items())))
    return 0


@_db_errors
def _serve(args) -> int:
    from ..duel import build_app, launch  # lazy: pandas, scipy

    if not args.db:
        raise InputError("--db is required")
    store = _store(args)        # a database that cannot be opened stops here, before any page is served
    if args.max_upload_mb is not None:
        store.max_bytes = store.max_stored_bytes = int(args.max_upload_mb * 1024 * 1024)
    if args.daily_mb is not None:
        store.max_daily_bytes = int(args.daily_mb * 1024 * 1024)
    if args.pending_hours is not None:
        store.pending_ttl = args.pending_hours * 3600.0
    if args.operator and not (args.identity_header and args.trusted_proxy):
        raise InputError("--operator needs --identity-header HEADER and --trusted-proxy ADDRESS: an operator is a "
                         "user the signing-in proxy names, and only that proxy may name them", field="--operator")
    _refuse_altered(store, args.db)
    store.check_servable()
    demo = build_app(store, identity_header=args.identity_header, operators=tuple(args.operator))
    for note in demo.modelseek_notes:
        print(f"warning: {note}")
    if args.identity_header and not args.trusted_proxy:
        print(f"warning: {args.identity_header} is honoured from any client: give --trusted-proxy ADDRESS of the "
              "signing-in proxy so that only it can name the user")
    if args.operator:
        print(f"the review page: http://{args.host}:{args.port}/review for {', '.join(args.operator)} (through the "
              "proxy)")
    launch(demo, host=args.host, port=args.port, trusted_proxies=tuple(args.trusted_proxy),
           upload_stall=args.upload_stall_seconds, upload_deadline=args.upload_deadline_seconds)
    return 0


@_db_errors
def _db_verify(args) -> int:
    from ..duel import verify_database  # lazy: scipy

    problems, top, hashes = verify_database(_db(args.db))
    if args.head and args.head not in hashes:
        problems.append(f"the recorded head {args.head} is not in the chain (rows were removed from the end or the "
                        f"chain was rebuilt; now {top[0] if top else 0} models, head {top[1] if top else '-'})")
    if problems:
        for p in problems[1:]:
            print(f"also: {p}")
        raise InputError(f"the leaderboard was altered: {problems[0]}", path=_shown(args.db), field="db")
    print(f"ok: {top[0] if top else 0} published models, chain and triggers intact"
          + (", signed with the operator's key" if _keyed() else "") + f"; head {top[1] if top else '-'}")
    return 0


@_db_errors
def _db_recover(args) -> int:
    from ..duel import recover  # lazy: scipy
    from ..duel import Store  # lazy: pandas, scipy

    store = Store(_db(args.db))
    notes = recover(store, apply=args.apply, after_head=args.after_head)
    if not notes:
        problems = store.verify()
        if problems:
            raise InputError(f"no published row lies outside the chain, but the board is altered: {problems[0]}; if "
                             "chain rows were appended after a head you recorded, give --after-head HASH, else "
                             "restore the board from a backup", path=_shown(args.db), field="db")
        print("nothing was appended outside the app")
        return 0
    for n in notes:
        print(("removed " if args.apply else "would remove ") + n)
    if args.apply:
        top = store.head()
        print(f"ok: chain and triggers intact; {top[0] if top else 0} published models, head {top[1] if top else '-'}")
    else:
        print("nothing changed: run again with --apply, as the owner of the tables")
    return 0


def _db_grants(args) -> int:
    from ..duel import grants  # lazy: scipy

    print("\n".join(grants(args.role)))
    return 0


@_db_errors
def _example(args) -> int:
    from ..duel import LeaderboardConfig  # lazy: scipy
    from ..duel import write_examples  # lazy: scipy

    paths, meta = write_examples(args.folder, n_models=args.models, seed=args.seed)
    for p in paths:
        print(f"wrote {p}")
    config = LeaderboardConfig.load(meta)
    print(f"wrote {meta} (the leaderboard's tasks: {len(config.tasks)})")
    print(f"wrote {meta.with_name('reference.json')} (the tasks' doc_ids and gold labels: a board's reference)")
    if args.db:
        from ..duel import Store  # lazy: pandas, scipy
        from ..duel import load_submission  # lazy: scipy

        store = Store(_db(args.db), config=config, demo=True)
        store.publish_many([load_submission(p, config) for p in paths])
        print(f"created the demo board {_shown(args.db)} with {len(paths)} models: modelseek duel serve --db "
              f"{_shown(args.db)}")
    print(f"try: modelseek duel tournament {' '.join(str(p) for p in paths)} --metadata {meta}")
    return 0


@_db_errors
def _db_init(args) -> int:
    from ..duel import create_board  # lazy: pandas, scipy

    store = create_board(_db(args.db), _config(args), args.reference, review=args.review)
    top = store.head()
    print(f"created {_shown(args.db)}: {len(store.config.tasks)} tasks, reference fixed"
          + (", publication after review" if store.review else "") + f"; head {top[1] if top else '-'}")
    return 0


@_db_errors
def _db_upgrade(args) -> int:
    from ..duel import upgrade_database  # lazy: scipy

    before, after = upgrade_database(_db(args.db))
    print(f"schema {after}" + (" (already up to date)" if before == after else f" (was {before or 'empty'})"))
    return 0


def _keyed() -> bool:
    from ..duel import operator_key  # lazy: scipy

    return operator_key() is not None
