"""Re-Align file formats: the model registry (JSON), the stimuli catalog (JSONL) and submissions (JSON).

Model registry
    A JSON list of entries, or ``{"models": [...]}``. Each entry::

        {"model_name": "resnet18_rand",          # unique; for timm the full tagged name is fine
                                                 # ("beitv2_base_patch16_224.in1k_ft_in1k")
         "source": "torchvision",                # a registered source: custom | open_clip | timm | torchvision |
                                                 # transformers (modelseek.align.sources.SOURCES)
         "weights": null,                        # null/"random": random init (seeded); "imagenet"/"pretrained"/
                                                 # "DEFAULT": the library's pretrained weights (timm: those of
                                                 # the name's tag); a library weights name or timm tag; or a
                                                 # path to a local checkpoint/folder
         "layer": "avgpool",                     # (or "layer_name") module path as in named_modules()
                                                 # ("stages.3.norm", "head.global_pool", "norm.1"; "blocks.-1"
                                                 # counts from the end) or "output" (the model's own output)
         "embedding": "pool",                    # pool | cls | flatten | mean
         "input_size": 224,                      # optional: int, [H, W] or [C, H, W], at most 2048 a side;
                                                 # default the model's crop size (timm's config, else 224)
         "preprocess": {"mean": [...], "std": [...], "resize": 256, "crop": 224, "crop_pct": 0.9},  # optional
         "output_dim": 512,                      # optional check of the embedding width (align validate --deep)
         "model_parameters": {"arch": "resnet18", "seed": 0, ...},  # optional; other keys go to the constructor
         "forward_args": {},                     # optional keyword arguments of forward()
         "modality": "image",                    # optional: image (default) | text
         "notes": "..."}

Stimuli catalog
    JSONL, one ``{"dataset_name": ..., "image_identifier": ...}`` per line (or ``"text": ...`` for text
    stimuli, used by text models). An image is found at ``<root of dataset_name>/<image_identifier>``; the
    root of a data set comes from the environment variable ``MODELSEEK_DATASET_<NAME>`` (upper case,
    non-alphanumerics as ``_``), or ``MODELSEEK_DATASETS_ROOT/<dataset_name>``, or an explicit mapping.

Submission (:class:`AlignSubmission`), in either of two forms (both read; the live form is written by default)
    live (the running challenge)::

        {"models": [{"model_name": "deit3_base_patch16_224.fb_in1k", "layer_name": "fc_norm"}, ...]}
        {"images": [{"dataset_name": "imagenet_val", "image_identifier": "ILSVRC2012_val_00005736.JPEG"}, ...]}

    (``differentiating_images`` is read as a synonym of ``images``; a model's ``layer_name`` overrides the
    registry's layer for that submission), and draft (the draft evaluation contract)::

        {"team": "blue", "models": ["name", ...]}
        {"team": "red", "stimuli": [{"dataset_name": ..., "image_identifier": ...}, ...]}

    ``team`` is optional in both (the lists imply it).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from numbers import Integral, Real

from ..config import Config, Constraint, Interval, Options, Source as ConfigSource
from ..enums import Choice
from ..errors import InputError, ValidationError
from ..io import iter_jsonl, read_json

REGISTRY_ENV = "MODELSEEK_MODEL_REGISTRY"
CATALOG_ENV = "MODELSEEK_STIMULI_CATALOG"
DATASET_ENV_PREFIX = "MODELSEEK_DATASET_"
DATASETS_ROOT_ENV = "MODELSEEK_DATASETS_ROOT"


class Strategy(Choice):
    """How a layer's output becomes one vector per stimulus."""

    POOL = "pool"        # global average pool over spatial positions ([n,c,h,w] -> [n,c]); tokens: mean
    CLS = "cls"          # first token of a [n,tokens,d] sequence
    FLATTEN = "flatten"  # everything after the batch axis
    MEAN = "mean"        # mean over tokens (masked by the attention mask for text)


class Modality(Choice):
    IMAGE = "image"
    TEXT = "text"


class Team(Choice):
    BLUE = "blue"
    RED = "red"


class SubmissionForm(Choice):
    """``live``: the files the running challenge takes (models as {model_name, layer_name}, stimuli under
    ``images``); ``draft``: the draft evaluation contract (``team`` + model names / ``stimuli``)."""

    LIVE = "live"
    DRAFT = "draft"


def _enum(cls, value, *, path, line, fld):
    """The one :class:`~modelseek.enums.Choice` parser, with the file and line of the record."""
    try:
        return cls.parse(value, field=fld)
    except InputError as exc:
        raise InputError(exc.message, path=path, line=line, field=fld) from None


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
    (:meth:`from_dict` = :meth:`~modelseek.config.Config.from_mapping` after two spellings the challenge uses
    are normalised: ``layer_name`` for ``layer``, ``[C, H, W]`` or one int for a size).

    ``input_size`` ``None`` means the model's own crop size (timm's pretrained config, else 224), filled in by
    :func:`modelseek.align.models.resolve_entry` when the model is used."""

    model_name: str
    source: str  # a name registered in modelseek.align.sources.SOURCES (the registry is the list of sources)
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
    def from_dict(cls, d: Mapping[str, Any], *, path=None, line=None) -> "ModelEntry":
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

    def with_layer(self, layer: str | None) -> "ModelEntry":
        """This entry with another layer (a submission's per-model ``layer_name``); itself when ``None``."""
        from dataclasses import replace

        return self if layer is None or layer == self.layer else replace(self, layer=layer)


def _registered_source(name: str) -> str:
    """``name`` (case and surrounding spaces ignored) if a model source of that name is registered; else an
    ``InputError`` with "did you mean" and the registered names."""
    from ..registry import closest
    from .sources import SOURCES

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
        stimuli = [parse_stimulus(d, path=path, line=ln, allow_text=True) for ln, d in iter_jsonl(path, "stimuli catalog")]
        if not stimuli:
            raise InputError("no stimuli (expected one JSON object per line)", path=path)
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
class AlignSubmission:
    """A Blue (models) or Red (stimuli) submission.

    ``layers`` holds a submission's per-model ``layer_name`` (same length as ``models``; ``None``: the
    registry's layer), which overrides the registry's layer for this submission. ``form`` records the form the
    file was read in (see :class:`SubmissionForm`)."""

    team: Team
    models: tuple[str, ...] = ()
    stimuli: tuple[Stimulus, ...] = ()
    layers: tuple[str | None, ...] = ()
    form: SubmissionForm = SubmissionForm.LIVE

    def __post_init__(self) -> None:
        if self.layers and len(self.layers) != len(self.models):
            raise ValueError("layers must be empty or as long as models")

    def layer_of(self, i: int) -> str | None:
        return self.layers[i] if self.layers else None

    def entries(self, registry: "ModelRegistry") -> list[ModelEntry]:
        """The registry entries of a Blue submission, each with the submission's layer where it names one."""
        return [registry.get(n).with_layer(self.layer_of(i)) for i, n in enumerate(self.models)]

    def to_dict(self, form: "SubmissionForm | str" = SubmissionForm.LIVE,
                registry: "ModelRegistry | None" = None) -> dict[str, Any]:
        """The JSON form. Live Blue names each model's layer: the submission's own, else the registry's (a
        model whose layer is known to neither is written without ``layer_name``). The draft form has no place
        for a layer, so a layer that differs from the registry's is an error there."""
        form = SubmissionForm.parse(form, field="form")
        if self.team is Team.RED:
            key = "images" if form is SubmissionForm.LIVE else "stimuli"
            out = {key: [s.to_dict() for s in self.stimuli]}
            return out if form is SubmissionForm.LIVE else {"team": "red", **out}
        if form is SubmissionForm.DRAFT:
            for i, n in enumerate(self.models):
                layer = self.layer_of(i)
                if layer is None:
                    continue
                if registry is None or n not in registry or registry.get(n).layer != layer:
                    raise InputError(f"model {n!r} uses layer {layer!r}, which the draft form cannot express "
                                     f"(it always takes the registry's layer); write the live form",
                                     field="models")
            return {"team": "blue", "models": list(self.models)}
        models = []
        for i, n in enumerate(self.models):
            layer = self.layer_of(i)
            if layer is None and registry is not None and n in registry:
                layer = registry.get(n).layer
            models.append({"model_name": n} if layer is None else {"model_name": n, "layer_name": layer})
        return {"models": models}

    def save(self, path: str | os.PathLike, form: "SubmissionForm | str" = SubmissionForm.LIVE,
             registry: "ModelRegistry | None" = None) -> None:
        from ..io import atomic_write_text

        atomic_write_text(path, json.dumps(self.to_dict(form, registry), indent=2) + "\n")


@dataclass(frozen=True)
class ModelChoice(Config):
    """One model of a live Blue submission: ``{"model_name": ..., "layer_name": ...}`` (layer optional)."""

    model_name: str
    layer_name: str | None = None

    def _check(self) -> None:
        if not self.model_name:
            raise InputError("must be a non-empty string", field="model_name")
        if self.layer_name is not None and not self.layer_name:
            raise InputError("must be a non-empty string", field="layer_name")


_STIMULI_KEYS = ("stimuli", "differentiating_images", "images")  # draft, then the two live spellings
_SUBMISSION_KEYS = ("team", "models") + _STIMULI_KEYS


def load_align_submission(path: str | os.PathLike) -> AlignSubmission:
    """Parse a submission in the draft or the live form (see the module docstring); structural problems raise
    InputError (see :func:`validate_align_submission`)."""
    path = Path(path)
    d = read_json(path, what="submission file")
    if not isinstance(d, Mapping):
        raise InputError("a submission must be a JSON object", path=path)
    bad = sorted(set(d) - set(_SUBMISSION_KEYS))
    if bad:
        raise InputError(f"unknown field(s) {bad}; valid: {', '.join(_SUBMISSION_KEYS)}", path=path)
    skeys = [k for k in _STIMULI_KEYS if k in d]
    if len(skeys) > 1 or (skeys and "models" in d):
        raise InputError(f"give one of models, {', '.join(_STIMULI_KEYS)}; got {', '.join(sorted(d))}", path=path)
    implied = "blue" if "models" in d else "red" if skeys else None
    team = d.get("team", implied)
    if team is None:
        raise InputError(f"missing (and none of models, {', '.join(_STIMULI_KEYS)} given)", path=path,
                         field="team")
    team = _enum(Team, team, path=path, line=_line_in(path, "team"), fld="team")
    if implied is not None and team.value != implied:
        raise InputError(f"says {team.value!r} but the file lists {'models' if implied == 'blue' else 'stimuli'}",
                         path=path, field="team")
    if team is Team.BLUE:
        models = d.get("models")
        if not isinstance(models, list):
            raise InputError("must be a list of model names or of {model_name, layer_name} objects", path=path,
                             field="models")
        if all(isinstance(m, str) for m in models):
            return AlignSubmission(team, models=tuple(models), form=SubmissionForm.DRAFT if models else
                              SubmissionForm.LIVE)
        names, layers = [], []
        for i, m in enumerate(models):
            if not isinstance(m, Mapping):
                raise InputError("must be a {model_name, layer_name} object (names and objects are not mixed)",
                                 path=path, field=f"models[{i}]")
            choice = ModelChoice.from_mapping(m, source=ConfigSource(str(path), prefix=f"models[{i}]"))
            names.append(choice.model_name)
            layers.append(choice.layer_name)
        return AlignSubmission(team, models=tuple(names), layers=tuple(layers), form=SubmissionForm.LIVE)
    key = skeys[0] if skeys else "stimuli"
    stimuli = d.get(key)
    if not isinstance(stimuli, list):
        raise InputError("must be a list of {dataset_name, image_identifier}", path=path, field=key)
    parsed = []
    for i, s in enumerate(stimuli):
        try:
            parsed.append(parse_stimulus(s, path=path, allow_text=False))
        except InputError as exc:
            sub = f".{exc.field}" if exc.field else ""
            raise InputError(exc.message, path=path, field=f"{key}[{i}]{sub}") from None
    form = SubmissionForm.DRAFT if key == "stimuli" else SubmissionForm.LIVE
    return AlignSubmission(team, stimuli=tuple(parsed), form=form)


def _line_in(path: Path, key: str) -> int | None:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    m = re.search(rf'"{re.escape(key)}"\s*:', text)
    return text.count("\n", 0, m.start()) + 1 if m else None


def validate_align_submission(path: str | os.PathLike, registry: ModelRegistry, catalog: StimulusCatalog, *,
                        min_models: int = 2, min_stimuli: int = 2, max_models: int | None = None,
                        max_stimuli: int | None = None, check_files: bool = True) -> AlignSubmission:
    """Check a submission against the registry and catalog; every problem is listed in one ValidationError.

    The draft contract asks for >= 2 models / stimuli; the live challenge used exactly 20 models and 1000
    stimuli (pass ``min_models=max_models=20`` etc.). A per-model ``layer_name`` is checked against the model
    itself only by :func:`modelseek.align.models.check_entries` (``align validate --deep``): that needs the model.
    """
    path = Path(path)
    try:
        sub = load_align_submission(path)
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
        unrooted: dict[str, list] = {}  # data set -> [its first problem's index in problems, stimuli without a root]
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
                if s.dataset_name in unrooted:  # the same missing folder: reported once, with a count
                    unrooted[s.dataset_name][1] += 1
                    continue
                try:
                    f = catalog.resolve(s)
                except InputError as exc:
                    unrooted[s.dataset_name] = [len(problems), 1]
                    problems.append(InputError(f"{where}: {exc.message}", path=path, field="stimuli"))
                    continue
                if not f.is_file():
                    problems.append(InputError(f"{where}: file {f} does not exist", path=path, field="stimuli"))
        for name, (k, n) in unrooted.items():
            if n > 1:
                problems[k] = InputError(f"{problems[k].message} ({n} stimuli of data set {name!r}; the first shown)",
                                         path=path, field="stimuli")
        _count(problems, path, "stimuli", len(seen), min_stimuli, max_stimuli)
    if problems:
        raise ValidationError(path, problems)
    return sub


def _count(problems, path, what, n, lo, hi) -> None:
    if n < lo:
        problems.append(InputError(f"{n} distinct {what}, at least {lo} needed", path=path, field=what))
    if hi is not None and n > hi:
        problems.append(InputError(f"{n} distinct {what}, at most {hi} allowed", path=path, field=what))
