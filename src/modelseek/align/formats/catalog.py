"""The stimuli catalog (JSONL): :class:`Stimulus` records and the :class:`StimulusCatalog` that finds their
images on disk."""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ...core.errors import InputError
from ...core.io import iter_jsonl, atomic_write_text

from ...retrieval.vision.entries import _from_env

CATALOG_ENV = "MODELSEEK_STIMULI_CATALOG"
DATASET_ENV_PREFIX = "MODELSEEK_DATASET_"
DATASETS_ROOT_ENV = "MODELSEEK_DATASETS_ROOT"


@dataclass(frozen=True)
class Stimulus:
    dataset_name: str
    image_identifier: str
    text: str | None = None

    @property
    def key(self) -> tuple[str, str]:
        return (self.dataset_name, self.image_identifier)

    def to_dict(self) -> dict[str, str]:
        d = {"dataset_name": self.dataset_name, "image_identifier": self.image_identifier}
        if self.text is not None:
            d["text"] = self.text
        return d


def _dataset_root(name: str, roots: Mapping[str, str] | None) -> Path | None:
    if roots and name in roots:
        return Path(roots[name])
    env = DATASET_ENV_PREFIX + re.sub(r"[^A-Za-z0-9]", "_", name).upper()
    if os.environ.get(env):
        return Path(os.environ[env])
    if os.environ.get(DATASETS_ROOT_ENV):
        return Path(os.environ[DATASETS_ROOT_ENV]) / name
    return None


class StimulusCatalog:
    """An ordered list of unique stimuli with a content version (hash of the identifiers)."""

    def __init__(self, stimuli: Iterable[Stimulus], path: str | None = None,
                 roots: Mapping[str, str] | None = None) -> None:
        self.stimuli = list(stimuli)
        self.path = path
        self.roots = dict(roots or {})
        self.index: dict[tuple[str, str], int] = {}
        for i, s in enumerate(self.stimuli):
            if s.key in self.index:
                raise InputError(f"duplicate stimulus {s.dataset_name}/{s.image_identifier}", path=path, line=i + 1)
            self.index[s.key] = i

    @classmethod
    def load(cls, path: str | os.PathLike | None = None, roots: Mapping[str, str] | None = None) -> StimulusCatalog:
        path = Path(_from_env(path, CATALOG_ENV, "stimuli catalog"))
        if not path.exists():
            raise InputError("no such file", path=path)
        stimuli = [parse_stimulus(d, path=path, line=ln, allow_text=True)
                   for ln, d in iter_jsonl(path, "stimuli catalog")]
        if not stimuli:
            raise InputError("no stimuli (expected one JSON object per line)", path=path)
        return cls(stimuli, path=str(path), roots=roots)

    def save(self, path: str | os.PathLike) -> None:
        atomic_write_text(path, "".join(json.dumps(s.to_dict()) + "\n" for s in self.stimuli))

    def __len__(self) -> int:
        return len(self.stimuli)

    def __iter__(self):
        return iter(self.stimuli)

    def __getitem__(self, i):
        return self.stimuli[i]

    def version(self) -> str:
        h = hashlib.sha256()
        for s in self.stimuli:
            h.update(json.dumps(s.to_dict(), sort_keys=True).encode() + b"\n")
        return h.hexdigest()[:16]

    def resolve(self, s: Stimulus) -> Path:
        """The image file of a stimulus; InputError when the data set root is unknown."""
        root = _dataset_root(s.dataset_name, self.roots)
        if root is None:
            env = DATASET_ENV_PREFIX + re.sub(r"[^A-Za-z0-9]", "_", s.dataset_name).upper()
            raise InputError(f"no root for data set {s.dataset_name!r}: set {env} or {DATASETS_ROOT_ENV}",
                             path=self.path, field="dataset_name")
        return root / s.image_identifier

    def positions(self, stimuli: Iterable[Stimulus]) -> list[int]:
        out = []
        for s in stimuli:
            if s.key not in self.index:
                raise InputError(f"stimulus {s.dataset_name}/{s.image_identifier} is not in the catalog",
                                 path=self.path)
            out.append(self.index[s.key])
        return out


def parse_stimulus(d, *, path=None, line=None, allow_text=True) -> Stimulus:
    if not isinstance(d, Mapping):
        raise InputError("a stimulus must be a JSON object", path=path, line=line)
    allowed = {"dataset_name", "image_identifier"} | ({"text"} if allow_text else set())
    bad = sorted(set(d) - allowed)
    if bad:
        raise InputError(f"unknown field(s) {bad}; valid: {sorted(allowed)}", path=path, line=line)
    for k in ("dataset_name", "image_identifier"):
        if not isinstance(d.get(k), str) or not d[k]:
            raise InputError("must be a non-empty string", path=path, line=line, field=k)
    text = d.get("text")
    if text is not None and not isinstance(text, str):
        raise InputError("must be a string", path=path, line=line, field="text")
    return Stimulus(d["dataset_name"], d["image_identifier"], text)
