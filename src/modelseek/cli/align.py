"""``modelseek align``: Re-Align submissions — validate, score, optimise (Blue/Red), CKA matrix of a registry."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..align import (REGISTRY_ENV, ModelRegistry, StimulusCatalog, SubmissionForm, Team, load_align_submission,
                             validate_align_submission)
from ..core.errors import InputError
from ..core.io import atomic_write_text
from ._common import declare_paths
from ._common import POSITIVE_INT, SEED, UNIT_INTERVAL, choice, int_at_least, metavar, print_json


def _common(p: argparse.ArgumentParser, data: bool = True) -> None:
    p.add_argument("--registry", help="model registry JSON (default: $MODELSEEK_MODEL_REGISTRY)")
    p.add_argument("--catalog", help="stimuli catalog JSONL (default: $MODELSEEK_STIMULI_CATALOG)")
    p.add_argument("--dataset-root", action="append", default=[], metavar="NAME=PATH",
                   help="folder of a data set (default: $MODELSEEK_DATASET_<NAME> or $MODELSEEK_DATASETS_ROOT/NAME)")
    if data:
        p.add_argument("--cache-dir", help="embedding cache (default: $MODELSEEK_CACHE/align or "
                                           "~/.cache/modelseek/align)")
        p.add_argument("--batch-size", type=POSITIVE_INT, default=32)
        p.add_argument("--unbiased", action="store_true", help="unbiased HSIC (Song et al. 2012) in CKA")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    declare_paths(p, inputs=["registry", "catalog"], output_dirs=["cache_dir"] if data else ())


def register(sub) -> None:
    p = sub.add_parser("align", help="representational alignment (Re-Align): validate, score, optimize, embed, matrix",
                       description="Blue team: models that agree (mean pairwise CKA on the catalog). Red team: "
                                   "stimuli on which the registry's models disagree (1 - mean pairwise CKA).")
    s = p.add_subparsers(dest="align_command", metavar="ACTION")

    _add_validate(s)
    _add_score(s)
    _add_optimize(s)
    e = s.add_parser("embed", help="embed the catalog with registry models (cached); optionally save them",
                     description="With -o DIR: <model>.npy per model plus embeddings.json (models, layers, the "
                                 "catalog's stimuli and version), which 'align optimize --team red --embeddings DIR' "
                                 "reads without running any model.")
    e.add_argument("--models", nargs="+", help="these registry models (default: all)")
    e.add_argument("-o", "--output-dir", help="write <model_name>.npy files and embeddings.json here")
    _common(e)
    declare_paths(e, output_dirs={"output_dir": ("*.npy", "embeddings.json")})
    e.set_defaults(func=run_embed)

    m = s.add_parser("matrix", help="CKA matrix of registry models on the catalog; list near-duplicates")
    m.add_argument("--models", nargs="+", help="these registry models (default: all)")
    m.add_argument("--threshold", type=UNIT_INTERVAL, default=0.95,
                   help="report pairs with CKA >= this (a number in [0, 1]) as near-duplicates")
    m.add_argument("-o", "--output", help="write the matrix here: .npz (names, matrix, layers; what 'align optimize "
                                          "--cka-matrix' reads) or CSV")
    m.add_argument("--plot", help="write a heat map PNG here")
    _common(m)
    declare_paths(m, outputs=["output", "plot"])
    m.set_defaults(func=run_matrix)

    c = s.add_parser("convert", help="rewrite a submission in the live or the draft form")
    c.add_argument("submission")
    c.add_argument("--to", type=choice(SubmissionForm), default=SubmissionForm.LIVE, metavar=metavar(SubmissionForm),
                   help="live (default) | draft")
    c.add_argument("-o", "--output", help="write here (default: print)")
    c.add_argument("--registry", help="model registry JSON, for the layer_name of each model (live) "
                                      "(default: $MODELSEEK_MODEL_REGISTRY if set)")
    declare_paths(c, inputs=["submission", "registry"], outputs=["output"])
    c.set_defaults(func=run_convert)
    p.set_defaults(func=lambda a: (p.print_help(), 2)[1])


def _add_validate(s) -> None:
    v = s.add_parser("validate", help="check a submission (live or draft form) and/or the registry",
                     description="Checks a submission's schema, names, stimuli, counts and files against the registry "
                                 "and catalog, and says which form (live/draft) it read. Without a submission the "
                                 "registry alone is checked. --deep builds each model (random weights when the "
                                 "pretrained ones cannot be fetched, said so) and checks layers and output_dim on a "
                                 "dummy batch; without --deep those are not checked.")
    v.add_argument("submission", nargs="?", help="submission JSON (omit to check the registry only)")
    v.add_argument("--min-models", type=int_at_least(1), default=2)
    v.add_argument("--min-stimuli", type=int_at_least(1), default=2)
    v.add_argument("--max-models", type=int_at_least(1))
    v.add_argument("--max-stimuli", type=int_at_least(1))
    v.add_argument("--no-check-files", action="store_true", help="do not check that image files exist")
    v.add_argument("--deep", action="store_true", help="build the models: check layer paths and output_dim")
    _common(v, data=False)
    declare_paths(v, inputs=["submission"])
    v.set_defaults(func=run_validate)


def _add_score(s) -> None:
    sc = s.add_parser("score", help="score a submission with real forward passes and linear CKA")
    sc.add_argument("submission")
    sc.add_argument("--min-models", type=int_at_least(1), default=2)
    sc.add_argument("--min-stimuli", type=int_at_least(1), default=2)
    _common(sc)
    declare_paths(sc, inputs=["submission"])
    sc.set_defaults(func=run_score)


def _add_optimize(s) -> None:
    o = s.add_parser("optimize", help="search a submission for the Blue or Red team",
                     description="Blue: from the registry's embeddings, or from a precomputed models x models CKA "
                                 "matrix (--cka-matrix, .npz with 'names' and 'matrix', or the CSV of 'align "
                                 "matrix'). Red: from the registry's embeddings, or from those stored by 'align "
                                 "embed -o DIR' (--embeddings DIR). Reports the objective of the chosen subset, of "
                                 "random subsets, of --compare's submission, and an upper bound (Blue).")
    o.add_argument("--team", required=True, type=choice(Team), metavar=metavar(Team))
    o.add_argument("--size", type=int_at_least(2), required=True,
                   help="number of stimuli (red) or models (blue) to choose")
    o.add_argument("--models", nargs="+", help="restrict to these models")
    o.add_argument("--cka-matrix", help="Blue from a precomputed CKA matrix (.npz or .csv); no model is run")
    o.add_argument("--embeddings", help="Red from the embeddings stored by 'align embed -o DIR'; no model is run")
    o.add_argument("--compare", help="also report the objective of this submission (live or draft form)")
    o.add_argument("--steps", type=int_at_least(0), default=None,
                   help="annealing steps (default: red 5000, blue 20000)")
    o.add_argument("--pool", type=int_at_least(2), help="candidate pool after screening (red; default max(4m, 1024))")
    o.add_argument("--restarts", type=int_at_least(0), default=20, help="local-search restarts (blue)")
    o.add_argument("--seed", type=SEED, default=0)
    o.add_argument("--format", type=choice(SubmissionForm), default=SubmissionForm.LIVE,
                   metavar=metavar(SubmissionForm), help="submission form written by -o: live (default) or draft")
    o.add_argument("-o", "--output", help="write the submission JSON here")
    o.add_argument("--trajectory", help="write the score trajectory (JSON) here")
    o.add_argument("--plot", help="write a PNG of the score trajectory here")
    _common(o)
    declare_paths(o, inputs=["cka_matrix", "embeddings", "compare"], outputs=["output", "trajectory", "plot"])
    o.set_defaults(func=run_optimize)


def _roots(args) -> dict[str, str]:
    out = {}
    for item in args.dataset_root:
        if "=" not in item:
            raise InputError(f"--dataset-root expects NAME=PATH, got {item!r}")
        k, v = item.split("=", 1)
        out[k] = v
    return out


def _registry(args, required: bool = True):
    import os


    if not required and not args.registry and not os.environ.get(REGISTRY_ENV):
        return None
    return ModelRegistry.load(args.registry)


def _catalog(args):
    return StimulusCatalog.load(args.catalog, roots=_roots(args))


def _load(args):
    return _registry(args), _catalog(args)


def _cache(args):
    from ..align import default_cache_dir  # lazy: start-up, CLI parser

    return Path(args.cache_dir) if args.cache_dir else default_cache_dir()


def run_validate(args) -> int:
    registry = _registry(args)
    out: dict = {"valid": True, "registry": registry.path, "models_in_registry": len(registry)}
    sub = None
    if args.submission:
        peek = load_align_submission(args.submission) if Path(args.submission).is_file() else None
        catalog = _catalog(args) if peek is None or peek.team is Team.RED else None
        sub = validate_align_submission(args.submission, registry, catalog, min_models=args.min_models,
                                        min_stimuli=args.min_stimuli, max_models=args.max_models,
                                        max_stimuli=args.max_stimuli, check_files=not args.no_check_files)
        what = "models" if sub.team is Team.BLUE else "stimuli"
        n = len(sub.models) if sub.team is Team.BLUE else len(sub.stimuli)
        named = [(m, x) for m, x in zip(sub.models, sub.layers) if x is not None]
        overrides = sum(1 for m, x in named if m in registry and registry.get(m).layer != x)
        out.update({"team": sub.team.value, what: n, "form": sub.form.value, "layer_names": len(named),
                    "layer_overrides": overrides})
    checks = []
    if args.deep:
        from ..align import deep_check  # lazy: start-up, CLI parser

        checks = deep_check(registry, sub, progress=not args.json)
        out["checks"] = [c.to_dict() for c in checks]
        out["valid"] = all(c.ok for c in checks)
        out["random_fallback"] = [c.model_name for c in checks if c.random_fallback]
    out["deep"] = bool(args.deep)
    if args.json:
        print_json(out)
    else:
        if sub is not None:
            extra = (f", layer_name for {out['layer_names']} ({out['layer_overrides']} differ from the registry's)"
                     if out.get("layer_names") else "")
            print(f"{args.submission}: valid {sub.team.value} submission ({out.get('models', out.get('stimuli'))} "
                  f"{'models' if sub.team is Team.BLUE else 'stimuli'}), {sub.form.value} form{extra}")
        else:
            print(f"{registry.path}: {len(registry)} registry entries read")
        if not args.deep and (sub is None or sub.team is Team.BLUE):  # a Red submission names no layer
            print("layers and output_dim not checked (they need the models): use --deep")
        for c in checks:
            if c.ok:
                print(f"  ok    {c.model_name}  layer {c.layer}  dim {c.dim}  [{c.weights}]")
            else:
                print(f"  FAIL  {c.model_name}  layer {c.layer}: {c.problem}")
        fb = [c.model_name for c in checks if c.random_fallback]
        if fb:
            print(f"note: {len(fb)} model(s) checked with RANDOM weights (pretrained ones could not be fetched): "
                  f"layers and dims are right, their embeddings would not be")
    if checks:
        from ..align import raise_for_checks  # lazy: start-up, CLI parser

        raise_for_checks(checks, registry, sub, args.submission)
    return 0


def run_score(args) -> int:
    from ..align import score_submission  # lazy: start-up, CLI parser

    registry, catalog = _load(args)
    sub = validate_align_submission(args.submission, registry, catalog, min_models=args.min_models,
                                    min_stimuli=args.min_stimuli)
    res = score_submission(sub, registry, catalog, cache_dir=_cache(args), unbiased=args.unbiased,
                           batch_size=args.batch_size, progress=not args.json, source=args.submission)
    if args.json:
        d = res.to_dict()
        d["form"] = sub.form.value
        print_json(d)
        return 0
    label = "mean pairwise CKA" if res.team.value == "blue" else "1 - mean pairwise CKA"
    print(f"{res.team.value} score: {res.score:.6f}  ({label}; {len(res.names)} models, {res.n_stimuli} stimuli; "
          f"{sub.form.value} form)")
    return 0


def run_optimize(args) -> int:
    from ..align import OptimizeOptions, optimize_submission  # lazy: start-up, CLI parser
    from ..align import plot_trajectory  # lazy: pandas

    team = args.team
    if args.cka_matrix and team is not Team.BLUE:
        raise InputError("--cka-matrix is for --team blue (Red needs per-stimulus embeddings: --embeddings)")
    if args.embeddings and team is not Team.RED:
        raise InputError("--embeddings is for --team red (Blue takes a CKA matrix: --cka-matrix)")
    if args.cka_matrix:  # no model is run; a registry, when one is named, gives the live form its layers
        registry, catalog = _registry(args, required=False), None
    elif args.embeddings:  # no model is run and no image is read
        registry = catalog = None
    else:
        registry, catalog = _load(args)
    options = OptimizeOptions(size=args.size, steps=args.steps, pool=args.pool, restarts=args.restarts,
                              seed=args.seed, unbiased=args.unbiased, form=args.format, cache_dir=_cache(args),
                              batch_size=args.batch_size, progress=not args.json)
    found = optimize_submission(team, options, registry=registry, catalog=catalog, models=args.models,
                                cka_matrix=args.cka_matrix, embeddings=args.embeddings, compare=args.compare)
    res, sub, registry = found.result, found.submission, found.registry
    if args.output:
        sub.save(args.output, args.format, registry)
    if args.trajectory:
        atomic_write_text(args.trajectory, json.dumps(res.to_dict(), indent=1) + "\n")
    if args.plot:
        plot_trajectory(res, args.plot)
    if args.json:
        d = res.to_dict()
        d["submission"] = sub.to_dict(args.format, registry)
        print_json(d)
        return 0
    print(f"{team.value} team, size {args.size}: score {res.score:.6f}")
    for k, v in res.baselines.items():
        print(f"  {k:<14} {v:.6f}")
    if "upper_bound" in res.meta:
        proof = " (reached: the subset is optimal)" if res.meta.get("proved_optimal") else ""
        if res.meta.get("exact"):
            how = "exhaustive search: the subset is optimal"
        else:
            how = f"upper bound {res.meta['upper_bound']:.6f}{proof}"
        print(f"  {how}")
    if args.output:
        print(f"wrote {args.output} ({args.format.value} form)")
    return 0


def run_embed(args) -> int:
    from ..align import MANIFEST, save_embeddings  # lazy: start-up, CLI parser
    from ..align import AlignData  # lazy: start-up, CLI parser

    registry, catalog = _load(args)
    data = AlignData.compute(registry, catalog, args.models, _cache(args), args.batch_size, progress=not args.json)
    shapes = {name: list(F.shape) for name, F in data.features.items()}
    if args.output_dir:
        save_embeddings(args.output_dir, data.features, registry, catalog)
    if args.json:
        print_json({"catalog_version": catalog.version(), "shapes": shapes})
        return 0
    for name, shp in shapes.items():
        print(f"{name}: {shp[0]} x {shp[1]}")
    if args.output_dir:
        print(f"wrote {len(shapes)} file(s) and {MANIFEST} to {args.output_dir}")
    return 0


def run_matrix(args) -> int:
    import numpy as np

    from ..align import save_cka_matrix  # lazy: start-up, CLI parser
    from ..align import cka_heatmap  # lazy: pandas
    from ..align import AlignData, near_duplicates  # lazy: start-up, CLI parser

    registry, catalog = _load(args)
    data = AlignData.compute(registry, catalog, args.models, _cache(args), args.batch_size, progress=not args.json)
    names = data.names()
    C = data.matrix(unbiased=args.unbiased)
    pairs = near_duplicates(names, C, args.threshold)
    if args.output:
        save_cka_matrix(args.output, names, C, [registry.get(n).layer for n in names])
    if args.plot:
        cka_heatmap(C, names, args.plot)
    if args.json:
        print_json({"models": names, "cka_matrix": np.round(C, 12).tolist(),
                    "near_duplicates": [{"a": a, "b": b, "cka": c} for a, b, c in pairs]})
        return 0
    w = max(len(n) for n in names)
    print(" " * w + "  " + " ".join(f"{i:>6}" for i in range(len(names))))
    for i, n in enumerate(names):
        print(f"{n:<{w}}  " + " ".join(f"{x:6.3f}" for x in C[i]) + f"   [{i}]")
    print(f"near-duplicates (CKA >= {args.threshold}): " + (", ".join(f"{a}~{b} ({c:.3f})" for a, b, c in pairs)
                                                            or "none"))
    return 0


def run_convert(args) -> int:
    sub = load_align_submission(args.submission)
    registry = _registry(args, required=False)
    try:
        d = sub.to_dict(args.to, registry)
    except InputError as exc:  # a layer the draft form cannot hold: about this submission
        raise InputError(exc.message, path=exc.path or args.submission, field=exc.field) from None
    if args.output:
        sub.save(args.output, args.to, registry)
        print(f"wrote {args.output} ({args.to.value} form, read as {sub.form.value})")
    else:
        print(json.dumps(d, indent=2))
    return 0
