"""The model registry (JSON): validated entries (:class:`ModelEntry`, its :class:`Preprocess`) and
:class:`ModelRegistry`. An entry's ``source`` must be registered in
:data:`modelseek.retrieval.vision.sources.SOURCES`."""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from numbers import Integral, Real
from pathlib import Path
from typing import Any

from ...core.config import Config, Constraint, Interval, Options, Source as ConfigSource
from ...core.errors import InputError
from ...core.io import read_json, atomic_write_text
from ...core.registry import closest

from .choices import Modality, Strategy

REGISTRY_ENV = "MODELSEEK_MODEL_REGISTRY"


IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
# Bounds on image sizes, checked when a registry is read (before any model or tensor exists): a side of
# 100,000 pixels would otherwise be an out-of-memory kill in the middle of preprocessing. 2048 is above every
# input size of the timm / torchvision / open_clip image models (the largest are 896-1024).
MAX_INPUT_SIDE = 2048
MAX_RESIZE_SIDE = 2 * MAX_INPUT_SIDE
_INTERPOLATIONS = ("bicubic", "bilinear", "nearest")


class _Size(Constraint):
    """An image size (h, w) of positive sides, each at most ``limit`` pixels."""

    def __init__(self, limit: int) -> None:
        self.limit = limit

    def is_satisfied_by(self, value) -> bool:
        return (isinstance(value, tuple) and len(value) == 2 and all(isinstance(x, int) for x in value)
                and all(0 < x <= self.limit for x in value))

    def __str__(self) -> str:
        return f"a size [H, W] of 1 to {self.limit} pixels a side (larger than the limit {self.limit}x{self.limit} " \
               f"pixels is refused before any model is built)"


@dataclass(frozen=True)
class Preprocess(Config):
    """Image preprocessing; a field left ``None`` takes the model's own default (timm's pretrained config for
    timm models, else ImageNet's mean/std, bicubic, resize = crop / 0.875)."""

    mean: tuple[float, ...] | None = None
    std: tuple[float, ...] | None = None
    resize: int | tuple[int, int] | None = None  # shorter side (int) or exact (h, w); default crop / crop_pct
    crop: tuple[int, int] | None = None           # centre crop (h, w); default input_size
    interpolation: str | None = None
    crop_pct: float | None = None                 # default 0.875 (timm: the model's own)

    _constraints = {"interpolation": [Options(*_INTERPOLATIONS)],
                    "crop_pct": [Interval(Real, 0.1, 1.0, closed="both")],
                    "resize": [Interval(Integral, 1, MAX_RESIZE_SIDE, closed="both"), _Size(MAX_RESIZE_SIDE)],
                    "crop": [_Size(MAX_INPUT_SIDE)]}

    def _check(self) -> None:
        if self.std is not None and any(s <= 0 for s in self.std):
            raise InputError("must be positive", field="std")
        for k in ("mean", "std"):
            if getattr(self, k) is not None and not getattr(self, k):
                raise InputError("must be a non-empty list of numbers", field=k)


@dataclass(frozen=True)
class ModelEntry(Config):
    """One validated registry entry (immutable; ``to_dict`` gives the JSON form), built by the config layer
    (:meth:`from_dict` = :meth:`~modelseek.core.config.Config.from_mapping` after two spellings the challenge uses
    are normalised: ``layer_name`` for ``layer``, ``[C, H, W]`` or one int for a size).

    ``input_size`` ``None`` means the model's own crop size (timm's pretrained config, else 224), filled in by
    :func:`modelseek.retrieval.vision.models.resolve_entry` when the model is used."""

    model_name: str
    # a name registered in modelseek.retrieval.vision.sources.SOURCES (the registry is the list of sources)
    source: str
    layer: str = "output"
    embedding: Strategy = Strategy.POOL
    weights: str | None = None
    input_size: tuple[int, int] | None = None
    preprocess: Preprocess = field(default_factory=Preprocess)
    output_dim: int | None = None
    model_parameters: Mapping[str, Any] = field(default_factory=dict)
    forward_args: Mapping[str, Any] = field(default_factory=dict)
    modality: Modality = Modality.IMAGE
    notes: str = ""

    _constraints = {"input_size": [_Size(MAX_INPUT_SIDE)], "output_dim": [Interval(Integral, 1, None, closed="left")]}

    def _check(self) -> None:
        if not self.model_name.strip():
            raise InputError("must be a non-empty string", field="model_name")
        object.__setattr__(self, "source", _registered_source(self.source))
        if not self.layer:
            raise InputError(f"model {self.model_name!r}: must be a non-empty string", field="layer")

    @classmethod
    def from_dict(cls, d: ModelEntry | Mapping[str, Any], *, path=None, line=None) -> ModelEntry:
        if isinstance(d, ModelEntry):
            return d
        src = ConfigSource(None if path is None else str(path), {"": line} if line is not None else {})
        if not isinstance(d, Mapping):
            raise src.error("a registry entry must be a JSON object")
        d = dict(d)
        if "layer_name" in d:  # the live registry's spelling
            if "layer" in d and d["layer"] != d["layer_name"]:
                raise src.error(f"model {d.get('model_name')!r}: 'layer' and 'layer_name' differ; give one", "layer")
            d["layer"] = d.pop("layer_name")
        if "input_size" in d:
            try:
                d["input_size"] = _hw(d["input_size"])
            except InputError as exc:
                raise src.relocate(exc) from None
        pp = d.get("preprocess")
        if isinstance(pp, Mapping):
            pp = dict(pp)
            for k in ("crop", "resize"):
                if k in pp and not isinstance(pp[k], int):
                    try:
                        pp[k] = _hw(pp[k], f"preprocess.{k}")
                    except InputError as exc:
                        raise src.relocate(exc) from None
            if "crop" in pp and isinstance(pp["crop"], int) and not isinstance(pp["crop"], bool):
                pp["crop"] = [pp["crop"], pp["crop"]]
            d["preprocess"] = pp
        elif pp is None and "preprocess" in d:
            d.pop("preprocess")
        for k in ("model_parameters", "forward_args"):
            if k in d and d[k] is None:
                d.pop(k)
        return cls.from_mapping(d, source=src)

    def to_dict(self) -> dict[str, Any]:
        d = self.to_mapping()
        d["preprocess"] = {k: v for k, v in d["preprocess"].items() if v is not None}
        return d

    def fingerprint(self) -> str:
        """A hash of everything that changes the embedding (notes excluded)."""
        d = self.to_dict()
        d.pop("notes")
        return hashlib.sha256(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest()

    def with_layer(self, layer: str | None) -> ModelEntry:
        """This entry with another layer (a submission's per-model ``layer_name``); itself when ``None``."""
        from dataclasses import replace

        return self if layer is None or layer == self.layer else replace(self, layer=layer)


def _registered_source(name: str) -> str:
    """``name`` (case and surrounding spaces ignored) if a model source of that name is registered; else an
    ``InputError`` with "did you mean" and the registered names."""
    from .sources import SOURCES  # lazy: start-up

    text = name.strip().lower()
    if text in SOURCES:
        return text
    close = closest(text, SOURCES.names())
    hint = f" (did you mean {close!r}?)" if close else ""
    raise InputError(f"unknown model source {name!r}{hint}; valid values: {', '.join(SOURCES.names())}",
                     field="source")


def _hw(v, fld: str = "input_size"):
    """One int -> [v, v]; [C, H, W] -> [H, W] (C must be 3 or 1); anything else is left to the config layer."""
    if isinstance(v, int) and not isinstance(v, bool):
        return [v, v]
    if isinstance(v, (list, tuple)) and len(v) == 3:
        if v[0] not in (1, 3):
            raise InputError(f"[C, H, W] needs C = 3 (or 1), got {list(v)}", field=fld)
        return list(v[1:])
    return v


def _line_of(text: str, index: int) -> int | None:
    """The line where the ``index``-th object of a top-level JSON list starts (for messages)."""
    hits = [m.start() for m in re.finditer(r'"model_name"\s*:', text)]
    return text.count("\n", 0, hits[index]) + 1 if index < len(hits) else None


class ModelRegistry:
    """An ordered, name-unique collection of :class:`ModelEntry`."""

    def __init__(self, entries: Iterable[ModelEntry | Mapping[str, Any]], path: str | None = None) -> None:
        self.path = path
        self.entries: list[ModelEntry] = []
        self._by_name: dict[str, ModelEntry] = {}
        for i, e in enumerate(entries):
            e = ModelEntry.from_dict(e, path=path)
            if e.model_name in self._by_name:
                raise InputError(f"duplicate model_name {e.model_name!r} (entry {i})", path=path, field="model_name")
            self.entries.append(e)
            self._by_name[e.model_name] = e

    @classmethod
    def load(cls, path: str | os.PathLike | None = None) -> ModelRegistry:
        path = Path(_from_env(path, REGISTRY_ENV, "model registry"))
        data = read_json(path)
        if isinstance(data, Mapping) and "models" in data:
            data = data["models"]
        if not isinstance(data, list):
            raise InputError("expected a JSON list of model entries or {\"models\": [...]}", path=path)
        text = path.read_text(encoding="utf-8")
        entries = []
        for i, d in enumerate(data):
            entries.append(ModelEntry.from_dict(d, path=path, line=_line_of(text, i)))
        return cls(entries, path=str(path))

    def save(self, path: str | os.PathLike) -> None:
        atomic_write_text(path, json.dumps([e.to_dict() for e in self.entries], indent=2) + "\n")

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self):
        return iter(self.entries)

    def __contains__(self, name: str) -> bool:
        return name in self._by_name

    def names(self) -> list[str]:
        return [e.model_name for e in self.entries]

    def get(self, name: str) -> ModelEntry:
        try:
            return self._by_name[name]
        except KeyError:
            close = closest(name, self.names())
            hint = f" Did you mean {close!r}?" if close else ""
            raise InputError(f"unknown model {name!r}.{hint}", path=self.path, field="model_name") from None




def _from_env(path, env: str, what: str):
    if path is not None:
        return path
    if os.environ.get(env):
        return os.environ[env]
    raise InputError(f"no {what} given: pass a path or set {env}")
