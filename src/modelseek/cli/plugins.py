"""``modelseek plugins``: every pluggable kind's members, with their origin (built-in or the distribution that
declares them) and, for one that cannot be used, why (:func:`modelseek.core.kinds.report`)."""

from __future__ import annotations

from ._common import print_json
from ..core import KINDS, kind, report


def register(sub) -> None:
    p = sub.add_parser("plugins", help="list every kind's members (built-in or from a distribution) and why a "
                                       "broken one cannot be used",
                       description="Every pluggable kind (rankers, estimators, fusion methods, metrics, model "
                                   "sources, executors, meta-models, style retrievers and features, task encoders) "
                                   "with its entry-point group and members. Plugins are loaded and checked, so a "
                                   "failed import or a broken contract shows here with its one-line reason.")
    p.add_argument("--kind", help="only this kind (e.g. 'fusion method')")
    p.add_argument("--no-load", action="store_true", help="list plugins by name without importing them")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def run(args) -> int:
    wanted = kind(args.kind).name if args.kind else None
    members = [m for m in report(load=not args.no_load) if wanted is None or m.kind == wanted]
    broken = [m for m in members if m.broken]
    if args.json:
        print_json({"kinds": [{"kind": k.name, "group": k.group, "contract": k.contract, "parameters": k.parameters,
                               "members": [{"name": m.name, "origin": m.origin, "broken": m.broken,
                                            **(m.descriptor.to_dict() if m.descriptor is not None else {})}
                                           for m in members if m.kind == k.name]}
                              for k in KINDS if wanted is None or k.name == wanted]})
        return 0
    for k in KINDS:
        if wanted is not None and k.name != wanted:
            continue
        print(f"{k.name} (entry points: {k.group}; contract {k.contract})")
        for m in (m for m in members if m.kind == k.name):
            print(f"  {m.name:<24} {m.origin}" + (f"  BROKEN: {m.broken}" if m.broken else ""))
    if broken:
        print(f"{len(broken)} plugin member(s) cannot be used (each fails only the command that names it)")
    return 0
