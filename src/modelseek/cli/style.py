"""``modelseek rank-style`` and ``modelseek bench-style``: Subtask B, which style LoRA made this image."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..retrieval import MAX_RUN_IDS, normalize_b_id, validate_run, write_runs
from ..core.errors import InputError
from ..core import FOLDER_READS
from ._common import declare_paths
from ._common import NON_NEGATIVE_INT, OUTPUT_DIR, OUTPUT_FILE, SEED, int_at_least, print_json

_METHOD_HELP = ("method(s) FEATURES-RETRIEVER: features hist, colour, texture, gram, moments, enc:NAME, "
                "encgram:NAME (NAME from the alignment model registry) joined by '+'; retriever centroid, knn or "
                "logreg; e.g. texture+colour+gram-logreg, gram-centroid@pca64, fusion, "
                "fusion:gram-logreg,colour-logreg; or the organisers' baseline: resnet50-finetune (their steps: "
                "IMAGENET1K_V2, dropout 0.2 + linear head, 224 px, Adam 1e-4, 5 epochs, batch 256, seed 42), with "
                "CPU options resnet50-finetune@frozen or @epochs=N (fields: weights=imagenet|random, epochs, "
                "batch, lr, dropout, size, seed, frozen); tiny-finetune@weights=random for a quick check")


def _common(p) -> None:
    p.add_argument("--size", type=int_at_least(8, 4096), default=128,
                   help="images are resized and centre-cropped to SIZE x SIZE (default 128; 64 with --generated)")
    p.add_argument("--seed", type=SEED, default=0, help="seed of random-weight backbones, projections and folds")
    p.add_argument("--cache", type=OUTPUT_DIR, help="feature cache folder (reused and resumed across runs)")
    p.add_argument("--images", help="image folder of a Subtask B layout (default ROOT/images; "
                                    "also searched: DIR/train, DIR/test)")
    p.add_argument("--models", help="models.csv fixing the candidates of a folder-per-label set")
    p.add_argument("--registry", help="alignment model registry (JSON) for enc:NAME / encgram:NAME features "
                                      "(default: $MODELSEEK_MODEL_REGISTRY)")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def register(sub) -> None:
    p = sub.add_parser("rank-style", help="Subtask B: rank the style models behind each query image; write a run",
                       description="Train on labelled images (the organisers' layout as cloned: data/train.csv, "
                                   "data/models.csv, data/train/NNNN/*.png, data/test/*.png, given as data/ or "
                                   "the repository root; a Subtask B layout with images/ and test-image-ids.txt; "
                                   "or ROOT/<label>/<image> folders) and rank every candidate model for each test "
                                   "image. The run uses Subtask B ids (no .png, no leading zeros) and is checked "
                                   "with the Subtask B validator.")
    p.add_argument("train", help="the organisers' data/ folder (or their repository root), a Subtask B root or "
                                 "a folder-per-label image set")
    p.add_argument("--test", help="query images: a folder, or a file of image names (default: data/test/ of the "
                                  "organisers' layout, ROOT/test-image-ids.txt of a Subtask B root)")
    p.add_argument("-m", "--method", nargs="+", default=["texture+colour+gram-logreg"], help=_METHOD_HELP)
    p.add_argument("-o", "--output", type=OUTPUT_FILE, help="write the run file here")
    p.add_argument("--run-id", help="run id (default: the method name)")
    p.add_argument("--show", type=NON_NEGATIVE_INT, default=3, help="print the top models of at most this many queries")
    _common(p)
    declare_paths(p, inputs={"train": FOLDER_READS, "test": (), "images": (), "models": (), "registry": ()})
    p.set_defaults(func=run_rank)

    b = sub.add_parser("bench-style", help="Subtask B: grouped cross-validation of style retrievers",
                       description="Cross-validation grouped by content image (train and held-out folds never "
                                   "share a content image): MRR and top-1 accuracy of each method against chance, "
                                   "on a labelled set or on the generated style benchmark (--generated).")
    b.add_argument("path", nargs="?", help="the organisers' data/ folder (or their repository root), a Subtask B root "
                                         "or a folder-per-label set (omit with --generated)")
    b.add_argument("--generated", action="store_true", help="use the generated benchmark (offline)")
    b.add_argument("--styles", type=int_at_least(2), default=20, help="generated: number of styles")
    b.add_argument("--contents", type=int_at_least(2), default=20, help="generated: number of content images")
    b.add_argument("--content-source", default="shapes", choices=["shapes", "mixed"],
                   help="generated: content drawn by code, or mixed with scikit-image sample photographs")
    b.add_argument("--folds", type=int_at_least(2), default=5, help="cross-validation folds (>= 2)")
    b.add_argument("-m", "--method", nargs="+", help=_METHOD_HELP + " (default: all standard methods)")
    b.add_argument("--run-out", type=OUTPUT_FILE, help="write the cross-fitted runs (at most 5 methods) to this file")
    b.add_argument("--plot", type=OUTPUT_FILE, help="write a bar chart of MRR per method (PNG)")
    _common(b)
    declare_paths(b, inputs={"path": FOLDER_READS, "images": (), "models": (), "registry": ()})
    b.set_defaults(func=run_bench, size=None, options_check=check_bench)


def check_bench(args: argparse.Namespace) -> None:
    """bench-style's options together, before any image is read or generated (run by the entry point)."""
    from ..style import DEFAULT_METHODS, parse_method  # lazy: pandas, scipy

    if args.generated == bool(args.path):
        raise InputError("give either a labelled set PATH or --generated")
    methods = args.method or list(DEFAULT_METHODS)
    for method in methods:  # a misspelt method is reported before the benchmark is built
        parse_method(method)
    if args.run_out and len(methods) > MAX_RUN_IDS:
        raise InputError(f"--run-out holds at most {MAX_RUN_IDS} runs; got {len(methods)} methods"
                         f"{'' if args.method else ' (the default set)'}: choose them with -m", field="--run-out")


def _organiser(args):
    """The data/ folder when the training set is the organisers' layout (and --images is not given)."""
    from ..style import organiser_root  # lazy: pandas, scipy

    return organiser_root(args.train) if args.images is None else None


def _load_train(args):
    from ..style import is_subtask_b, load_folder_dataset, load_subtask_b_train  # lazy: pandas, scipy
    from ..style import load_organiser_train  # lazy: pandas, scipy

    root = Path(args.train if hasattr(args, "train") else args.path)
    if not root.exists():
        raise InputError("no such folder", path=root)
    data = _organiser(args)
    if data is not None:
        return load_organiser_train(data)
    if is_subtask_b(root):
        return load_subtask_b_train(root, args.images)
    return load_folder_dataset(root, args.models)


def _load_queries(args, train):
    from ..style import (  # lazy: pandas, scipy
        StyleDataset, _find_image, is_subtask_b, load_query_folder, load_subtask_b_test, read_image_list_located)
    from ..style import load_organiser_test  # lazy: pandas, scipy

    root = Path(args.train)
    data = _organiser(args)
    if args.test is None and data is not None:
        return load_organiser_test(data, models=train.models)
    if args.test is None:
        if not is_subtask_b(root):
            raise InputError("--test is needed for a folder-per-label training set (a folder of query images)")
        return load_subtask_b_test(root, args.images)
    test = Path(args.test)
    if test.is_dir():
        return load_query_folder(test, train.models)
    if is_subtask_b(root) and data is None:
        return load_subtask_b_test(root, args.images, ids_file=test)
    located = read_image_list_located(test)
    dirs = [data / "test", test.parent] if data is not None else [test.parent]  # names of the organisers' test/
    return StyleDataset([normalize_b_id(n) for _, n in located], train.models,
                        paths=[_find_image(n, dirs, test, ln) for ln, n in located], source=str(test))


def run_rank(args: argparse.Namespace) -> int:
    from ..style import StyleRanker, _run_id  # lazy: pandas, scipy

    if len(args.method) > 1 and args.run_id:
        raise InputError("--run-id needs a single --method")
    if args.output and len(args.method) > MAX_RUN_IDS:
        raise InputError(f"a run file holds at most {MAX_RUN_IDS} runs; got {len(args.method)} methods")
    from ..style import parse_method  # lazy: pandas, scipy

    for method in args.method:  # a misspelt method is reported before any file is read
        parse_method(method)
    train = _load_train(args)
    queries = _load_queries(args, train)
    if queries.paths is not None:  # every query's header is checked before any training: a bad one fails fast
        from ..style import probe  # lazy: pandas, scipy

        for p in queries.paths:
            probe(p)
    runs = []
    for method in args.method:
        ranker = StyleRanker(method, size=args.size, seed=args.seed, cache=args.cache, progress=not args.json,
                             registry=args.registry)
        runs.append(ranker.fit(train).rank(queries, run_id=args.run_id or _run_id(method)))
    if args.output:
        write_runs(args.output, runs)
        validate_run(args.output, topics=queries.ids, docs=train.models.ids, subtask="B")
    if args.json:
        print_json({r.run_id: {q: [{"doc": e.doc, "rank": e.rank, "score": e.score, "model": train.models.name(e.doc)}
                                   for e in r[q][:10]] for q in r} for r in runs})
        return 0
    for r in runs:
        for q in list(r)[: args.show]:
            top = ", ".join(f"{e.doc} ({train.models.name(e.doc)})" for e in r[q][:3])
            print(f"{r.run_id}  {q}: {top}")
    if args.output:
        print(f"wrote {len(runs)} run(s) of {len(queries)} queries x {len(train.models)} models to {args.output} "
              f"(Subtask B rules: valid)")
    return 0


def run_bench(args: argparse.Namespace) -> int:
    from ..style import generated_style_dataset  # lazy: pandas, scipy
    from ..style import BASELINE, DEFAULT_METHODS, cross_validate_style  # lazy: pandas, scipy

    check_bench(args)  # also run by the entry point before any work; here for callers of run_bench
    if args.generated:
        size = args.size or 64
        data = generated_style_dataset(args.styles, args.contents, size, args.seed, args.content_source)
    else:
        size = args.size or 128
        args.train = args.path
        data = _load_train(args)
    methods = args.method or list(DEFAULT_METHODS)
    res = cross_validate_style(data, methods, folds=args.folds, seed=args.seed, size=size, cache=args.cache,
                               progress=not args.json, registry=args.registry)
    if args.run_out:  # at most MAX_RUN_IDS methods: checked before any work (check_bench)
        write_runs(args.run_out, [res.runs[m] for m in methods])
    if args.plot:
        _plot(res, args.plot)
    if args.json:
        out = res.to_dict()
        out.update({"dataset": "generated" if args.generated else str(args.path), "n_images": len(data),
                    "size": size, "seed": args.seed, "mrr_interval": res.intervals(seed=args.seed)})
        if BASELINE in res.methods:
            out["vs_baseline"] = {"baseline": BASELINE, **{m: vars(c) for m, c in res.versus(seed=args.seed).items()}}
        print_json(out)
        return 0
    print(f"{len(data)} images, {res.n_models} models, {args.folds}-fold CV grouped by content image, seed "
          f"{args.seed}")
    print(res.table())
    if BASELINE in res.methods and len(res.methods) > 1:
        print(f"MRR minus {BASELINE} (paired bootstrap over images):")
        for m, c in res.versus(seed=args.seed).items():
            print(f"  {m:<32} {c}")
    return 0


def _plot(res, path: str) -> None:
    from matplotlib.figure import Figure  # lazy: matplotlib; a bare Figure renders with Agg, no pyplot or backend

    from ..core import save_figure  # lazy: pandas

    methods = sorted(res.methods, key=lambda m: res.mrr[m])
    iv = res.intervals()
    fig = Figure(figsize=(8.5, 0.35 * len(methods) + 1.2))
    ax = fig.add_subplot()
    vals = [res.mrr[m] for m in methods]
    err = [[v - iv[m][0] for m, v in zip(methods, vals)], [iv[m][1] - v for m, v in zip(methods, vals)]]
    ax.barh(methods, vals, xerr=err, color=["tab:gray" if "hist" in m else "tab:blue" for m in methods])
    ax.axvline(res.chance, color="tab:red", ls="--", label=f"chance ({res.chance:.3f})")
    ax.set_xlabel("MRR (95% bootstrap interval over queries)")
    ax.set_xlim(0, 1)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)  # beside the bars, never on them
    fig.tight_layout()
    save_figure(fig, path)
