"""``modelseek align``: Re-Align submissions — validate, score, optimise (Blue/Red), CKA matrix of a registry."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..errors import InputError
from ._common import print_json


def _common(p: argparse.ArgumentParser, data: bool = True) -> None:
    p.add_argument("--registry", help="model registry JSON (default: $MODELSEEK_MODEL_REGISTRY)")
    p.add_argument("--catalog", help="stimuli catalog JSONL (default: $MODELSEEK_STIMULI_CATALOG)")
    p.add_argument("--dataset-root", action="append", default=[], metavar="NAME=PATH",
                   help="folder of a data set (default: $MODELSEEK_DATASET_<NAME> or $MODELSEEK_DATASETS_ROOT/NAME)")
    if data:
        p.add_argument("--cache-dir", help="embedding cache (default: $MODELSEEK_CACHE/align or "
                                           "~/.cache/modelseek/align)")
        p.add_argument("--batch-size", type=int, default=32)
        p.add_argument("--unbiased", action="store_true", help="unbiased HSIC (Song et al. 2012) in CKA")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def register(sub) -> None:
    p = sub.add_parser("align", help="representational alignment (Re-Align): validate, score, optimize, embed, matrix",
                       description="Blue team: models that agree (mean pairwise CKA on the catalog). Red team: "
                                   "stimuli on which the registry's models disagree (1 - mean pairwise CKA).")
    s = p.add_subparsers(dest="align_command", metavar="ACTION")

    v = s.add_parser("validate", help="check a submission: schema, names, stimuli, counts, files")
    v.add_argument("submission")
    v.add_argument("--min-models", type=int, default=2)
    v.add_argument("--min-stimuli", type=int, default=2)
    v.add_argument("--max-models", type=int)
    v.add_argument("--max-stimuli", type=int)
    v.add_argument("--no-check-files", action="store_true", help="do not check that image files exist")
    _common(v, data=False)
    v.set_defaults(func=run_validate)

    sc = s.add_parser("score", help="score a submission with real forward passes and linear CKA")
    sc.add_argument("submission")
    sc.add_argument("--min-models", type=int, default=2)
    sc.add_argument("--min-stimuli", type=int, default=2)
    _common(sc)
    sc.set_defaults(func=run_score)

    o = s.add_parser("optimize", help="search a submission for the Blue or Red team")
    o.add_argument("--team", required=True, choices=["red", "blue"])
    o.add_argument("--size", type=int, required=True, help="number of stimuli (red) or models (blue) to choose")
    o.add_argument("--models", nargs="+", help="restrict to these registry models")
    o.add_argument("--steps", type=int, default=5000, help="annealing steps (red)")
    o.add_argument("--pool", type=int, help="candidate pool after screening (red; default max(4m, 1024))")
    o.add_argument("--restarts", type=int, default=20, help="local-search restarts (blue)")
    o.add_argument("--seed", type=int, default=0)
    o.add_argument("-o", "--output", help="write the submission JSON here")
    o.add_argument("--trajectory", help="write the score trajectory (JSON) here")
    o.add_argument("--plot", help="write a PNG of the score trajectory here")
    _common(o)
    o.set_defaults(func=run_optimize)

    e = s.add_parser("embed", help="embed the catalog with registry models (cached); optionally save .npy files")
    e.add_argument("--models", nargs="+", help="these registry models (default: all)")
    e.add_argument("-o", "--output-dir", help="write <model_name>.npy files here")
    _common(e)
    e.set_defaults(func=run_embed)

    m = s.add_parser("matrix", help="CKA matrix of registry models on the catalog; list near-duplicates")
    m.add_argument("--models", nargs="+", help="these registry models (default: all)")
    m.add_argument("--threshold", type=float, default=0.95, help="report pairs with CKA >= this as near-duplicates")
    m.add_argument("-o", "--output", help="write the matrix (CSV) here")
    m.add_argument("--plot", help="write a heat map PNG here")
    _common(m)
    m.set_defaults(func=run_matrix)
    p.set_defaults(func=lambda a: (p.print_help(), 2)[1])


def _roots(args) -> dict[str, str]:
    out = {}
    for item in args.dataset_root:
        if "=" not in item:
            raise InputError(f"--dataset-root expects NAME=PATH, got {item!r}")
        k, v = item.split("=", 1)
        out[k] = v
    return out


def _load(args):
    from ..align.formats import ModelRegistry, StimulusCatalog

    return ModelRegistry.load(args.registry), StimulusCatalog.load(args.catalog, roots=_roots(args))


def _cache(args):
    from ..align.scoring import default_cache_dir

    return Path(args.cache_dir) if args.cache_dir else default_cache_dir()


def run_validate(args) -> int:
    from ..align.formats import validate_submission

    registry, catalog = _load(args)
    sub = validate_submission(args.submission, registry, catalog, min_models=args.min_models,
                              min_stimuli=args.min_stimuli, max_models=args.max_models,
                              max_stimuli=args.max_stimuli, check_files=not args.no_check_files)
    n = len(sub.models) if sub.models else len(sub.stimuli)
    what = "models" if sub.team.value == "blue" else "stimuli"
    if args.json:
        print_json({"valid": True, "team": sub.team.value, what: n})
    else:
        print(f"{args.submission}: valid {sub.team.value} submission ({n} {what})")
    return 0


def run_score(args) -> int:
    from ..align.formats import validate_submission
    from ..align.scoring import score_submission

    registry, catalog = _load(args)
    sub = validate_submission(args.submission, registry, catalog, min_models=args.min_models,
                              min_stimuli=args.min_stimuli)
    res = score_submission(sub, registry, catalog, cache_dir=_cache(args), unbiased=args.unbiased,
                           batch_size=args.batch_size, progress=not args.json)
    if args.json:
        print_json(res.to_dict())
        return 0
    label = "mean pairwise CKA" if res.team.value == "blue" else "1 - mean pairwise CKA"
    print(f"{res.team.value} score: {res.score:.6f}  ({label}; {len(res.names)} models, {res.n_stimuli} stimuli)")
    return 0


def run_optimize(args) -> int:
    from ..align.scoring import AlignData
    from ..align.solvers import optimize_blue, optimize_red, plot_trajectory
    from ..io import atomic_write_text

    if args.team == "red" and args.unbiased:
        raise InputError("--unbiased: the Red solver's incremental updates are for biased HSIC; score the "
                         "result with 'modelseek align score --unbiased'")
    registry, catalog = _load(args)
    data = AlignData.compute(registry, catalog, args.models, _cache(args), args.batch_size, progress=not args.json)
    if args.team == "red":
        res = optimize_red(data, args.size, pool=args.pool, steps=args.steps, seed=args.seed,
                           progress=not args.json)
    else:
        C = data.matrix(unbiased=args.unbiased)
        res = optimize_blue(C, args.size, data.names(), restarts=args.restarts, seed=args.seed)
    sub = res.submission(catalog)
    if args.output:
        sub.save(args.output)
    if args.trajectory:
        atomic_write_text(args.trajectory, json.dumps(res.to_dict(), indent=1) + "\n")
    if args.plot:
        plot_trajectory(res, args.plot)
    if args.json:
        d = res.to_dict()
        d["submission"] = sub.to_dict()
        print_json(d)
        return 0
    print(f"{args.team} team, size {args.size}: score {res.score:.6f}")
    for k, v in res.baselines.items():
        print(f"  {k:<14} {v:.6f}")
    if args.output:
        print(f"wrote {args.output}")
    return 0


def run_embed(args) -> int:
    import io

    import numpy as np

    from ..align.scoring import AlignData
    from ..io import atomic_write_bytes

    registry, catalog = _load(args)
    data = AlignData.compute(registry, catalog, args.models, _cache(args), args.batch_size, progress=not args.json)
    shapes = {}
    for name, F in data.features.items():
        shapes[name] = list(F.shape)
        if args.output_dir:
            buf = io.BytesIO()
            np.save(buf, F, allow_pickle=False)
            atomic_write_bytes(Path(args.output_dir) / f"{name}.npy", buf.getvalue())
    if args.json:
        print_json({"catalog_version": catalog.version(), "shapes": shapes})
        return 0
    for name, shp in shapes.items():
        print(f"{name}: {shp[0]} x {shp[1]}")
    if args.output_dir:
        print(f"wrote {len(shapes)} file(s) to {args.output_dir}")
    return 0


def run_matrix(args) -> int:
    import numpy as np

    from ..align.scoring import AlignData
    from ..io import atomic_write_text

    registry, catalog = _load(args)
    data = AlignData.compute(registry, catalog, args.models, _cache(args), args.batch_size, progress=not args.json)
    names = data.names()
    C = data.matrix(unbiased=args.unbiased)
    pairs = sorted(((float(C[i, j]), names[i], names[j]) for i in range(len(names)) for j in range(i + 1, len(names))
                    if C[i, j] >= args.threshold), reverse=True)
    if args.output:
        lines = ["model," + ",".join(names)] + [names[i] + "," + ",".join(f"{x:.10f}" for x in C[i])
                                               for i in range(len(names))]
        atomic_write_text(args.output, "\n".join(lines) + "\n")
    if args.plot:
        _heatmap(C, names, args.plot)
    if args.json:
        print_json({"models": names, "cka_matrix": np.round(C, 12).tolist(),
                    "near_duplicates": [{"a": a, "b": b, "cka": c} for c, a, b in pairs]})
        return 0
    w = max(len(n) for n in names)
    print(" " * w + "  " + " ".join(f"{i:>6}" for i in range(len(names))))
    for i, n in enumerate(names):
        print(f"{n:<{w}}  " + " ".join(f"{x:6.3f}" for x in C[i]) + f"   [{i}]")
    print(f"near-duplicates (CKA >= {args.threshold}): " + (", ".join(f"{a}~{b} ({c:.3f})" for c, a, b in pairs)
                                                            or "none"))
    return 0


def _heatmap(C, names, path) -> None:
    from matplotlib.figure import Figure  # the object API: no pyplot, no global backend change

    from ..plots import save_figure

    k = len(names)
    fig = Figure(figsize=(2 + 0.35 * k, 1.5 + 0.35 * k), dpi=110)
    ax = fig.add_subplot(111)
    im = ax.imshow(C, vmin=0, vmax=1, cmap="viridis")
    ax.set_xticks(range(k), names, rotation=90, fontsize=7)
    ax.set_yticks(range(k), names, fontsize=7)
    fig.colorbar(im, ax=ax, label="linear CKA")
    fig.tight_layout()
    save_figure(fig, path)
