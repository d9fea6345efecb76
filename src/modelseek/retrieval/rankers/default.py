"""The default ranker: the one shipped inside the package (``resources/rankers/default.json`` names it), or the
one a user installed with ``modelseek train-ranker --install-default`` (kept in the user's data folder,
:func:`user_dir`; the package is never written).

It is what ``modelseek rank DATA`` uses when no method is given: it ranks the 20 NTCIR-19 candidates
offline, without downloading any of them. Artifacts hold numbers only (no task text).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ...core.errors import InputError
from ...core.io import atomic_write_text, read_json
from ...core.registry import UnknownNameError
from ._artifact import Persistable, read_artifact
from ._registry import RANKERS
from .base import Ranker


def artifact_dir() -> Path:
    return Path(str(resources.files("modelseek") / "resources" / "rankers"))


def load_artifact(path: str | Path, **overrides) -> Ranker:
    """Load any saved ranker artifact (a JSON file naming its method); ``overrides`` replace stored parameters."""
    path = Path(path)
    method = read_artifact(path)["method"]
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


def user_dir() -> Path:
    """Where ``train-ranker --install-default`` keeps the user's default: ``$MODELSEEK_DATA/rankers``, else the
    platform's user data folder (``~/.local/share/modelseek/rankers`` on Linux). Never inside the package."""
    root = os.environ.get("MODELSEEK_DATA")
    if root:
        return Path(root).expanduser() / "rankers"
    import platformdirs

    return Path(platformdirs.user_data_dir("modelseek")) / "rankers"


@dataclass(frozen=True)
class DefaultSpec:
    """Which artifact ``default`` means: the user's installed one when there is one, else the shipped one."""

    artifact: Path
    origin: str          # "installed" | "shipped"
    why: str
    spec_file: Path

    def describe(self) -> str:
        if self.origin == "installed":
            return (f"the default installed by train-ranker ({self.artifact}; {self.why}); "
                    f"reset_default() (the CLI: 'modelseek train-ranker --reset-default') returns to the shipped one")
        return f"the shipped default ({self.artifact.name}, inside the package)"


def _read_spec(spec_file: Path, origin: str) -> DefaultSpec:
    spec = read_json(spec_file, "default ranker spec")
    if not isinstance(spec, dict) or not isinstance(spec.get("artifact"), str) or "/" in spec["artifact"]:
        raise InputError("expected {\"artifact\": FILE-NAME, \"why\": TEXT}", path=spec_file, field="artifact")
    artifact = spec_file.parent / spec["artifact"]
    if not artifact.is_file():
        raise InputError(f"names {spec['artifact']!r}, which is not in {spec_file.parent}; reset_default() "
                         f"(the CLI: 'modelseek train-ranker --reset-default') returns to the shipped default",
                         path=spec_file, field="artifact")
    return DefaultSpec(artifact, origin, str(spec.get("why", "")), spec_file)


def default_spec() -> DefaultSpec:
    """The default ranker's artifact: the user's (``user_dir()/default.json``) if installed, else the shipped."""
    user = user_dir() / "default.json"
    if user.is_file():
        return _read_spec(user, "installed")
    return _read_spec(artifact_dir() / "default.json", "shipped")


def load_default() -> Ranker:
    return load_artifact(default_spec().artifact)


def install_default(ranker: Persistable, why: str, name: str | None = None) -> Path:
    """Save a fitted ranker into the user's data folder (:func:`user_dir`) and make it the default there; the
    package is never written. The previous installed default, if any, is kept as ``default.previous.json``."""
    folder = user_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (name or f"{ranker.name}-installed.json")
    ranker.save(path)
    spec = folder / "default.json"
    if spec.is_file():
        atomic_write_text(folder / "default.previous.json", spec.read_text(encoding="utf-8"))
    atomic_write_text(spec, json.dumps({"artifact": path.name, "why": why}, indent=1) + "\n")
    return path


def reset_default() -> Path | None:
    """Return to the shipped default: the installed spec is moved aside (``default.removed.json``, its artifact
    kept); -> the spec that was removed, or None when none was installed."""
    spec = user_dir() / "default.json"
    if not spec.is_file():
        return None
    os.replace(spec, spec.with_name("default.removed.json"))
    return spec
