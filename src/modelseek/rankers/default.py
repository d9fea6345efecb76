"""The default ranker shipped inside the package (``resources/rankers/default.json`` names it).

It is what ``modelseek rank DATA`` uses when no method is given: it ranks the 20 NTCIR-19 candidates
offline, without downloading any of them. Artifacts hold numbers only (no task text).
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

from ..errors import InputError
from ..registry import UnknownNameError
from ._artifact import Persistable, read_artifact
from .base import Ranker


def artifact_dir() -> Path:
    return Path(str(resources.files("modelseek") / "resources" / "rankers"))


def load_artifact(path: str | Path, **overrides) -> Ranker:
    """Load any saved ranker artifact (a JSON file naming its method); ``overrides`` replace stored parameters."""
    path = Path(path)
    method = read_artifact(path)["method"]
    from ._registry import RANKERS

    try:
        cls = RANKERS.get(method)
    except UnknownNameError as exc:  # the registry's did-you-mean error, located in the artifact
        raise InputError(str(getattr(exc, "message", exc)), path=path, field="method") from None
    if not issubclass(cls, Persistable):
        raise InputError(f"method {method!r} cannot be loaded from an artifact", path=path, field="method")
    return cls.load(path, **overrides)


def builtin_artifact(name: str) -> Path | None:
    """A ranker artifact shipped in the package by name (e.g. ``ltr-ntcir19``), or None."""
    if not name or "/" in name or name == "default":
        return None
    path = artifact_dir() / f"{name.removesuffix('.json')}.json"
    try:
        return path if path.is_file() else None
    except (OSError, ValueError):  # a name too long for the file system, or with a NUL byte: not shipped
        return None


def load_default() -> Ranker:
    spec = json.loads((artifact_dir() / "default.json").read_text(encoding="utf-8"))
    return load_artifact(artifact_dir() / spec["artifact"])


def install_default(ranker: Persistable, why: str, name: str | None = None) -> Path:
    """Save a fitted ranker into the package's artifact folder and make it the default."""
    from ..io import atomic_write_text

    path = artifact_dir() / (name or f"{ranker.name}-ntcir19.json")
    ranker.save(path)
    atomic_write_text(artifact_dir() / "default.json",
                      json.dumps({"artifact": path.name, "why": why}, indent=1) + "\n")
    for p in (path, artifact_dir() / "default.json"):  # package data: readable by everyone
        p.chmod(0o644)
    return path
