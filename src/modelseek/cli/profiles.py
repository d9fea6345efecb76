"""``modelseek profiles``: what is known about candidate models without running them (their cards and configs).

    modelseek profiles show [--pool POOL] [--profiles FILE] [--json]   # the profile of every candidate, and its origin
    modelseek profiles fetch HF_ID ... -o profiles.json                # read cards and configs from the Hub (online)
    modelseek profiles from-facts model-facts.csv -o profiles.json     # from a facts table (the NTCIR layout)

A profile file is given to the default ranker with ``--param profiles=FILE``; candidates it names get their
domain evidence from it, and candidates without fine-tuning history get a prior from it.
"""

from __future__ import annotations

import argparse

from ..retrieval import load_pool
from ..core.errors import InputError
from ._common import declare_paths
from ._common import OUTPUT_FILE, print_json


def register(sub) -> None:
    p = sub.add_parser("profiles", help="model profiles from cards and configs (inference-free evidence)",
                       description=__doc__.split("\n\n")[0])
    s = p.add_subparsers(dest="profiles_command", metavar="ACTION")
    show = s.add_parser("show", help="the profile of every candidate of a pool, and where it came from")
    show.add_argument("--pool", default="ntcir19", help="pool file or built-in pool (default ntcir19)")
    show.add_argument("--profiles", help="a profile file that takes precedence")
    show.add_argument("--json", action="store_true")
    declare_paths(show, inputs=["pool", "profiles"])
    show.set_defaults(func=_show)
    fetch = s.add_parser("fetch", help="fetch cards and configs from the Hugging Face Hub into a profile file")
    fetch.add_argument("hf_ids", nargs="+", metavar="HF_ID")
    fetch.add_argument("-o", "--output", required=True, type=OUTPUT_FILE)
    fetch.set_defaults(func=_fetch)
    facts = s.add_parser("from-facts", help="profiles from a facts table (columns of NTCIR's model-facts.csv)")
    facts.add_argument("facts")
    facts.add_argument("-o", "--output", required=True, type=OUTPUT_FILE)
    declare_paths(facts, inputs=["facts"])
    facts.set_defaults(func=_from_facts)
    p.set_defaults(func=lambda a: (p.print_help(), 2)[1])


def _show(args: argparse.Namespace) -> int:
    from ..retrieval import profile_for, read_profiles  # lazy: start-up, CLI parser

    pool = load_pool(args.pool)
    extra = read_profiles(args.profiles) if args.profiles else None
    profs = [(c, profile_for(c, extra)) for c in pool]
    if args.json:
        print_json([{"id": c.id, "origin": p.origin, "domain_evidence": p.evidence_text(), **p.to_dict()}
                    for c, p in profs])
        return 0
    for c, p in profs:
        ev = p.evidence_short() or ("general-purpose: no domain evidence" if p.origin != "none" else "nothing known")
        print(f"{c.id:>5}  {p.hf_id:<55} [{p.origin}] {p.domain_name() or '-'}: {ev}")
    return 0


def _fetch(args: argparse.Namespace) -> int:
    from ..retrieval import fetch_profile, hub_unreachable, write_profiles  # lazy: start-up, CLI parser
    from ..retrieval import hub_offline_reason  # lazy: start-up

    hub_unreachable(args.hf_ids)  # offline: refused at once, before any download is tried
    offline = hub_offline_reason() is not None
    profs = [fetch_profile(h, check_hub=offline) for h in args.hf_ids]
    write_profiles(args.output, profs, fetched_by="modelseek profiles fetch")
    print(f"wrote {len(profs)} profile(s) to {args.output}")
    return 0


def _from_facts(args: argparse.Namespace) -> int:
    from ..retrieval import profiles_from_facts, write_profiles  # lazy: start-up, CLI parser

    profs = profiles_from_facts(args.facts)
    if not profs:
        raise InputError("no rows", path=args.facts)
    write_profiles(args.output, profs, derived_from=str(args.facts))
    print(f"wrote {len(profs)} profile(s) to {args.output}")
    return 0
