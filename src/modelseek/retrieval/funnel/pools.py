"""Pools for the funnel: every pool format of :func:`modelseek.load_pool`, plus a plain list of Hugging Face ids
(a text file, one id per line; blank lines and ``#`` comments are skipped), of any length."""

from __future__ import annotations

import re
from pathlib import Path

from ..data.pool import Candidate, Pool, load_pool
from ...core.errors import InputError
from ...core.io import read_text

# a Hub repository id: NAME or OWNER/NAME, letters, digits, '-', '_', '.' (the Hub's own rule, 96 characters)
_HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,95}(/[A-Za-z0-9][A-Za-z0-9_.\-]{0,95})?")


def load_any_pool(path: str | Path) -> Pool:
    """A pool from ``models.csv``, a YAML pool file, a built-in name, or a list of Hub ids (``.txt``)."""
    p = Path(path)
    if p.suffix.lower() in (".txt", ".list") or (p.is_file() and p.suffix == ""):
        return read_id_list(p)
    return load_pool(path)


def read_id_list(path: str | Path) -> Pool:
    """One Hub id per line; a candidate's docID is its Hub id. Errors name the file, line and field."""
    p = Path(path)
    if not p.is_file():
        raise InputError("no such pool file", path=p)
    seen: dict[str, int] = {}
    cands = []
    for lineno, raw in enumerate(read_text(p, "pool file").splitlines(), start=1):
        hf = raw.split("#", 1)[0].strip()
        if not hf:
            continue
        if not _HUB_ID.fullmatch(hf) or ".." in hf:
            raise InputError(f"not a Hugging Face id: {hf!r} (expected NAME or OWNER/NAME)", path=p, line=lineno,
                             field="hf_id")
        if hf in seen:
            raise InputError(f"duplicate model {hf!r} (first on line {seen[hf]})", path=p, line=lineno,
                             field="hf_id")
        seen[hf] = lineno
        cands.append(Candidate(id=hf, hf_id=hf))
    if not cands:
        raise InputError("a pool needs at least one candidate (no ids in the file)", path=p)
    return Pool(cands, name=p.stem)
