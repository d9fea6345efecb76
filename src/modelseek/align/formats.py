"""Re-Align file formats: the model registry (JSON), the stimuli catalog (JSONL) and submissions (JSON).

Model registry
    A JSON list of entries, or ``{"models": [...]}``. Each entry::

        {"model_name": "resnet18_rand",          # unique
         "source": "torchvision",                # torchvision | timm | open_clip | transformers | custom
         "weights": null,                        # null/"random": random init (seeded); "pretrained"/"DEFAULT"/a
                                                 # library weights name; or a path to a local checkpoint/folder
         "layer": "avgpool",                     # module path as in named_modules() ("encoder.layer.-1" counts
                                                 # from the end) or an alias ("output": the model's own output)
         "embedding": "pool",                    # pool | cls | flatten | mean
         "input_size": 224,                      # int, [H, W] or [C, H, W]
         "preprocess": {"mean": [...], "std": [...], "resize": 256, "crop": 224},
         "output_dim": 512,                      # optional check of the embedding width
         "model_parameters": {"arch": "resnet18", "seed": 0, ...},  # optional; other keys go to the constructor
         "forward_args": {},                     # optional keyword arguments of forward()
         "modality": "image",                    # optional: image (default) | text
         "notes": "..."}

Stimuli catalog
    JSONL, one ``{"dataset_name": ..., "image_identifier": ...}`` per line (or ``"text": ...`` for text
    stimuli, used by text models). An image is found at ``<root of dataset_name>/<image_identifier>``; the
    root of a data set comes from the environment variable ``MODELSEEK_DATASET_<NAME>`` (upper case,
    non-alphanumerics as ``_``), or ``MODELSEEK_DATASETS_ROOT/<dataset_name>``, or an explicit mapping.

Submission
    ``{"team": "blue", "models": [names...]}`` or ``{"team": "red", "stimuli": [{"dataset_name",
    "image_identifier"}, ...]}``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import asdict, dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..errors import InputError, ValidationError
from ..io import iter_jsonl, read_json

REGISTRY_ENV = "MODELSEEK_MODEL_REGISTRY"
CATALOG_ENV = "MODELSEEK_STIMULI_CATALOG"
DATASET_ENV_PREFIX = "MODELSEEK_DATASET_"
DATASETS_ROOT_ENV = "MODELSEEK_DATASETS_ROOT"


class Source(str, Enum):
    TORCHVISION = "torchvision"
    TIMM = "timm"
    OPEN_CLIP = "open_clip"
    TRANSFORMERS = "transformers"
    CUSTOM = "custom"


class Strategy(str, Enum):
    """How a layer's output becomes one vector per stimulus."""

    POOL = "pool"        # global average pool over spatial positions ([n,c,h,w] -> [n,c]); tokens: mean
    CLS = "cls"          # first token of a [n,tokens,d] sequence
    FLATTEN = "flatten"  # everything after the batch axis
    MEAN = "mean"        # mean over tokens (masked by the attention mask for text)


class Modality(str, Enum):
    IMAGE = "image"
    TEXT = "text"


class Team(str, Enum):
    BLUE = "blue"
    RED = "red"


def _enum(cls, value, *, path, line, fld):
    try:
        return cls(value)
    except ValueError:
        raise InputError(f"{value!r} is not one of {', '.join(m.value for m in cls)}", path=path, line=line,
                         field=fld) from None


IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
_ENTRY_FIELDS = {"model_name", "source", "weights", "layer", "embedding", "input_size", "preprocess",
                 "output_dim", "model_parameters", "forward_args", "modality", "notes"}
_PREPROCESS_FIELDS = {"mean", "std", "resize", "crop", "interpolation"}


@dataclass(frozen=True)
class Preprocess:
    mean: tuple[float, ...] = IMAGENET_MEAN
    std: tuple[float, ...] = IMAGENET_STD
    resize: int | tuple[int, int] | None = None  # shorter side (int) or exact (h, w); default crop / 0.875
    crop: tuple[int, int] | None = None           # centre crop (h, w); default input_size
    interpolation: str = "bicubic"


@dataclass(frozen=True)
class ModelEntry:
    """One validated registry entry (immutable; ``to_dict`` gives the JSON form)."""

    model_name: str
    source: Source
    layer: str = "output"
    embedding: Strategy = Strategy.POOL
    weights: str | None = None
    input_size: tuple[int, int] = (224, 224)
    preprocess: Preprocess = field(default_factory=Preprocess)
    output_dim: int | None = None
    model_parameters: Mapping[str, Any] = field(default_factory=dict)
    forward_args: Mapping[str, Any] = field(default_factory=dict)
    modality: Modality = Modality.IMAGE
    notes: str = ""

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, path=None, line=None) -> "ModelEntry":
        if isinstance(d, ModelEntry):
            return d
        if not isinstance(d, Mapping):
            raise InputError("a registry entry must be a JSON object", path=path, line=line)
        unknown = sorted(set(d) - _ENTRY_FIELDS)
        if unknown:
            raise InputError(f"unknown field(s) {unknown}; valid: {sorted(_ENTRY_FIELDS)}", path=path, line=line)
        name = d.get("model_name")
        if not isinstance(name, str) or not name.strip():
            raise InputError("must be a non-empty string", path=path, line=line, field="model_name")
        where = dict(path=path, line=line)
        if "source" not in d:
            raise InputError(f"model {name!r}: missing", field="source", **where)
        source = _enum(Source, d["source"], path=path, line=line, fld="source")
        embedding = _enum(Strategy, d.get("embedding", "pool"), path=path, line=line, fld="embedding")
        modality = _enum(Modality, d.get("modality", "image"), path=path, line=line, fld="modality")
        layer = d.get("layer", "output")
        if not isinstance(layer, str) or not layer:
            raise InputError(f"model {name!r}: must be a non-empty string", field="layer", **where)
        weights = d.get("weights")
        if weights is not None and not isinstance(weights, str):
            raise InputError(f"model {name!r}: must be a string or null", field="weights", **where)
        input_size = _size(d.get("input_size", 224), name, "input_size", where)
        pp = d.get("preprocess") or {}
        if not isinstance(pp, Mapping):
            raise InputError(f"model {name!r}: must be an object", field="preprocess", **where)
        bad = sorted(set(pp) - _PREPROCESS_FIELDS)
        if bad:
            raise InputError(f"model {name!r}: unknown key(s) {bad}; valid: {sorted(_PREPROCESS_FIELDS)}",
                             field="preprocess", **where)
        mean = _floats(pp.get("mean", IMAGENET_MEAN), name, "preprocess.mean", where)
        std = _floats(pp.get("std", IMAGENET_STD), name, "preprocess.std", where)
        if any(s <= 0 for s in std):
            raise InputError(f"model {name!r}: must be positive", field="preprocess.std", **where)
        resize = pp.get("resize")
        if resize is not None:
            resize = resize if isinstance(resize, int) and not isinstance(resize, bool) else \
                _size(resize, name, "preprocess.resize", where)
            if isinstance(resize, int) and resize <= 0:
                raise InputError(f"model {name!r}: must be positive", field="preprocess.resize", **where)
        crop = pp.get("crop")
        crop = None if crop is None else _size(crop, name, "preprocess.crop", where)
        interp = pp.get("interpolation", "bicubic")
        if interp not in ("bicubic", "bilinear", "nearest"):
            raise InputError(f"model {name!r}: {interp!r} is not one of bicubic, bilinear, nearest",
                             field="preprocess.interpolation", **where)
        output_dim = d.get("output_dim")
        if output_dim is not None and (not isinstance(output_dim, int) or isinstance(output_dim, bool)
                                       or output_dim <= 0):
            raise InputError(f"model {name!r}: must be a positive integer", field="output_dim", **where)
        for key in ("model_parameters", "forward_args"):
            if d.get(key) is not None and not isinstance(d[key], Mapping):
                raise InputError(f"model {name!r}: must be an object", field=key, **where)
        return cls(model_name=name, source=source, layer=layer, embedding=embedding, weights=weights,
                   input_size=input_size, preprocess=Preprocess(mean, std, resize, crop, interp),
                   output_dim=output_dim, model_parameters=dict(d.get("model_parameters") or {}),
                   forward_args=dict(d.get("forward_args") or {}), modality=modality, notes=str(d.get("notes", "")))

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["source"], d["embedding"], d["modality"] = self.source.value, self.embedding.value, self.modality.value
        d["input_size"] = list(self.input_size)
        pp = d["preprocess"]
        pp["mean"], pp["std"] = list(pp["mean"]), list(pp["std"])
        pp["crop"] = None if pp["crop"] is None else list(pp["crop"])
        if isinstance(pp["resize"], tuple):
            pp["resize"] = list(pp["resize"])
        d["model_parameters"], d["forward_args"] = dict(self.model_parameters), dict(self.forward_args)
        return d

    def fingerprint(self) -> str:
        """A hash of everything that changes the embedding (notes excluded)."""
        d = self.to_dict()
        d.pop("notes")
        return hashlib.sha256(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest()


def _size(v, name, fld, where) -> tuple[int, int]:
    if isinstance(v, int) and not isinstance(v, bool) and v > 0:
        return (v, v)
    if isinstance(v, (list, tuple)) and len(v) in (2, 3) and all(
            isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in v):
        return (int(v[-2]), int(v[-1]))
    raise InputError(f"model {name!r}: must be a positive int, [H, W] or [C, H, W], got {v!r}", field=fld, **where)


def _floats(v, name, fld, where) -> tuple[float, ...]:
    if isinstance(v, (list, tuple)) and v and all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                                  for x in v):
        return tuple(float(x) for x in v)
    raise InputError(f"model {name!r}: must be a non-empty list of numbers, got {v!r}", field=fld, **where)


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
    def load(cls, path: str | os.PathLike | None = None) -> "ModelRegistry":
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
        from ..io import atomic_write_text

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
            from ..registry import closest

            close = closest(name, self.names())
            hint = f" Did you mean {close!r}?" if close else ""
            raise InputError(f"unknown model {name!r}.{hint}", path=self.path, field="model_name") from None


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
        self.index = {}
        for i, s in enumerate(self.stimuli):
            if s.key in self.index:
                raise InputError(f"duplicate stimulus {s.dataset_name}/{s.image_identifier}", path=path, line=i + 1)
            self.index[s.key] = i

    @classmethod
    def load(cls, path: str | os.PathLike | None = None, roots: Mapping[str, str] | None = None) -> "StimulusCatalog":
        path = Path(_from_env(path, CATALOG_ENV, "stimuli catalog"))
        if not path.exists():
            raise InputError("no such file", path=path)
        stimuli = [parse_stimulus(d, path=path, line=ln, allow_text=True) for ln, d in iter_jsonl(path)]
        return cls(stimuli, path=str(path), roots=roots)

    def save(self, path: str | os.PathLike) -> None:
        from ..io import atomic_write_text

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


def _from_env(path, env: str, what: str):
    if path is not None:
        return path
    if os.environ.get(env):
        return os.environ[env]
    raise InputError(f"no {what} given: pass a path or set {env}")


@dataclass(frozen=True)
class Submission:
    team: Team
    models: tuple[str, ...] = ()
    stimuli: tuple[Stimulus, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        if self.team is Team.BLUE:
            return {"team": "blue", "models": list(self.models)}
        return {"team": "red", "stimuli": [s.to_dict() for s in self.stimuli]}

    def save(self, path: str | os.PathLike) -> None:
        from ..io import atomic_write_text

        atomic_write_text(path, json.dumps(self.to_dict(), indent=2) + "\n")


def load_submission(path: str | os.PathLike) -> Submission:
    """Parse a submission; structural problems raise InputError (see :func:`validate_submission`)."""
    path = Path(path)
    d = read_json(path)
    if not isinstance(d, Mapping):
        raise InputError("a submission must be a JSON object", path=path)
    bad = sorted(set(d) - {"team", "models", "stimuli"})
    if bad:
        raise InputError(f"unknown field(s) {bad}; valid: team, models, stimuli", path=path)
    team = d.get("team")
    if team is None:
        team = "blue" if "models" in d else "red" if "stimuli" in d else None
    if team is None:
        raise InputError("missing (and neither 'models' nor 'stimuli' given)", path=path, field="team")
    team = _enum(Team, team, path=path, line=None, fld="team")
    if team is Team.BLUE:
        models = d.get("models")
        if not isinstance(models, list) or not all(isinstance(m, str) for m in models):
            raise InputError("must be a list of model names", path=path, field="models")
        return Submission(team, models=tuple(models))
    stimuli = d.get("stimuli")
    if not isinstance(stimuli, list):
        raise InputError("must be a list of {dataset_name, image_identifier}", path=path, field="stimuli")
    return Submission(team, stimuli=tuple(parse_stimulus(s, path=path, allow_text=False) for s in stimuli))


def validate_submission(path: str | os.PathLike, registry: ModelRegistry, catalog: StimulusCatalog, *,
                        min_models: int = 2, min_stimuli: int = 2, max_models: int | None = None,
                        max_stimuli: int | None = None, check_files: bool = True) -> Submission:
    """Check a submission against the registry and catalog; every problem is listed in one ValidationError.

    The draft contract asks for >= 2 models / stimuli; the live challenge used exactly 20 models and 1000
    stimuli (pass ``min_models=max_models=20`` etc.).
    """
    path = Path(path)
    try:
        sub = load_submission(path)
    except InputError as exc:
        raise ValidationError(path, [exc]) from None
    problems: list[InputError] = []
    if sub.team is Team.BLUE:
        names = list(sub.models)
        seen = set()
        for i, n in enumerate(names):
            if n in seen:
                problems.append(InputError(f"models[{i}]: duplicate model {n!r}", path=path, field="models"))
            seen.add(n)
            if n not in registry:
                try:
                    registry.get(n)
                except InputError as exc:
                    problems.append(InputError(f"models[{i}]: {exc.message}", path=path, field="models"))
        _count(problems, path, "models", len(seen), min_models, max_models)
    else:
        seen = set()
        for i, s in enumerate(sub.stimuli):
            where = f"stimuli[{i}] {s.dataset_name}/{s.image_identifier}"
            if s.key in seen:
                problems.append(InputError(f"{where}: duplicate stimulus", path=path, field="stimuli"))
                continue
            seen.add(s.key)
            if s.key not in catalog.index:
                problems.append(InputError(f"{where}: not in the stimuli catalog", path=path, field="stimuli"))
                continue
            if check_files and catalog[catalog.index[s.key]].text is None:
                try:
                    f = catalog.resolve(s)
                except InputError as exc:
                    problems.append(InputError(f"{where}: {exc.message}", path=path, field="stimuli"))
                    continue
                if not f.is_file():
                    problems.append(InputError(f"{where}: file {f} does not exist", path=path, field="stimuli"))
        _count(problems, path, "stimuli", len(seen), min_stimuli, max_stimuli)
    if problems:
        raise ValidationError(path, problems)
    return sub


def _count(problems, path, what, n, lo, hi) -> None:
    if n < lo:
        problems.append(InputError(f"{n} distinct {what}, at least {lo} needed", path=path, field=what))
    if hi is not None and n > hi:
        problems.append(InputError(f"{n} distinct {what}, at most {hi} allowed", path=path, field=what))
