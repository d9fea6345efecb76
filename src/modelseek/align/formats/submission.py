"""Re-Align submissions, read in the live or the draft form and validated against a registry and a
catalog."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...core.config import Config, Source as ConfigSource
from ...core.errors import InputError, ValidationError
from ...core.io import read_json, atomic_write_text

from .catalog import Stimulus, StimulusCatalog, parse_stimulus
from .choices import SubmissionForm, Team, _enum
from ...retrieval.vision.entries import ModelEntry, ModelRegistry


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

    def entries(self, registry: ModelRegistry) -> list[ModelEntry]:
        """The registry entries of a Blue submission, each with the submission's layer where it names one."""
        return [registry.get(n).with_layer(self.layer_of(i)) for i, n in enumerate(self.models)]

    def to_dict(self, form: SubmissionForm | str = SubmissionForm.LIVE,
                registry: ModelRegistry | None = None) -> dict[str, Any]:
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

    def save(self, path: str | os.PathLike, form: SubmissionForm | str = SubmissionForm.LIVE,
             registry: ModelRegistry | None = None) -> None:
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
_SUBMISSION_KEYS = ("team", "models", *_STIMULI_KEYS)


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


def validate_align_submission(path: str | os.PathLike, registry: ModelRegistry,
                              catalog: StimulusCatalog | None, *, min_models: int = 2, min_stimuli: int = 2,
                              max_models: int | None = None, max_stimuli: int | None = None,
                              check_files: bool = True) -> AlignSubmission:
    """Check a submission against the registry and catalog (``catalog`` may be None for a Blue submission);
    every problem is listed in one ValidationError.

    The draft contract asks for >= 2 models / stimuli; the live challenge used exactly 20 models and 1000
    stimuli (pass ``min_models=max_models=20`` etc.). A per-model ``layer_name`` is checked against the model
    itself only by :func:`modelseek.retrieval.vision.models.check_entries` (``align validate --deep``): that
    needs the model.
    """
    path = Path(path)
    try:
        sub = load_align_submission(path)
    except InputError as exc:
        raise ValidationError(path, [exc]) from None
    problems: list[InputError] = []
    if sub.team is Team.BLUE:
        names = list(sub.models)
        seen: set[str] = set()
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
        if catalog is None:
            raise InputError("a Red submission is checked against a stimuli catalog; none was given", path=path)
        seen_keys: set[tuple[str, str]] = set()
        unrooted: dict[str, list] = {}  # data set -> [its first problem's index in problems, stimuli without a root]
        for i, s in enumerate(sub.stimuli):
            where = f"stimuli[{i}] {s.dataset_name}/{s.image_identifier}"
            if s.key in seen_keys:
                problems.append(InputError(f"{where}: duplicate stimulus", path=path, field="stimuli"))
                continue
            seen_keys.add(s.key)
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
        _count(problems, path, "stimuli", len(seen_keys), min_stimuli, max_stimuli)
    if problems:
        raise ValidationError(path, problems)
    return sub


def _count(problems, path, what, n, lo, hi) -> None:
    if n < lo:
        problems.append(InputError(f"{n} distinct {what}, at least {lo} needed", path=path, field=what))
    if hi is not None and n > hi:
        problems.append(InputError(f"{n} distinct {what}, at most {hi} allowed", path=path, field=what))
