"""The fine-tuning recipe: every knob of the protocol, with the protocol's values as defaults.

The defaults are the NTCIR-19 ground-truth protocol: a sequence-classification head on the encoder,
cross-entropy, AdamW (lr 2e-5, weight decay 0.01), batch 16, at most 1,000 epochs, early stopping when the
validation loss has not improved for 10 epochs, restoring the best weights, macro-F1 on the test split.

A recipe is a frozen, validated record; it loads from YAML (unknown keys are rejected so that a typo never
passes silently) and has a stable :attr:`Recipe.digest` that names it in the job store.
"""

from __future__ import annotations

import enum
import hashlib
import json
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Mapping

from ..errors import InputError


class Precision(str, enum.Enum):
    """Numeric precision of the forward pass: ``auto`` = bf16 autocast on a GPU that supports it, fp32
    elsewhere; ``bf16`` = bf16 autocast on GPU (fp32 on CPU, where autocast only slows training);
    ``fp32`` = never autocast."""

    AUTO = "auto"
    BF16 = "bf16"
    FP32 = "fp32"


class Device(str, enum.Enum):
    """Where a job trains: ``auto`` = the first CUDA device if any, else the CPU."""

    AUTO = "auto"
    CPU = "cpu"
    CUDA = "cuda"


def _enum(cls: type[enum.Enum], value: Any, name: str) -> enum.Enum:
    if isinstance(value, cls):
        return value
    try:
        return cls(str(value).lower())
    except ValueError:
        raise InputError(f"unknown value {value!r}; valid: {', '.join(m.value for m in cls)}", field=name) from None


@dataclass(frozen=True)
class Recipe:
    """How one (task, model, seed) job is fine-tuned. Defaults = the protocol.

    ``batch_size`` is the effective batch (one optimizer step); with ``grad_accum`` > 1 each step
    accumulates gradients over ``grad_accum`` micro-batches of ``batch_size / grad_accum`` examples, so the
    update is the same as with one big batch and peak memory is smaller.
    ``pad_to_length`` pads every batch to that many tokens (static shapes, e.g. for compilers); the default
    ``None`` pads each batch to its longest member (dynamic padding).
    ``cpu_threads`` pins torch's intra-op threads during a job (results on CPU are bit-identical only for
    the same thread count; the Ray executor reserves this many CPUs per job).
    """

    lr: float = 2e-5
    weight_decay: float = 0.01
    batch_size: int = 16
    grad_accum: int = 1
    max_epochs: int = 1000
    patience: int = 10
    min_delta: float = 0.0
    max_length: int = 512
    eval_batch_size: int = 64
    pad_to_length: int | None = None
    precision: Precision = Precision.AUTO
    device: Device = Device.AUTO
    cpu_threads: int | None = None
    deterministic: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "precision", _enum(Precision, self.precision, "precision"))
        object.__setattr__(self, "device", _enum(Device, self.device, "device"))
        for f in fields(self):
            v = getattr(self, f.name)
            if f.type in ("float",):
                if isinstance(v, bool) or not isinstance(v, (int, float)):
                    raise InputError(f"must be a number, got {v!r}", field=f.name)
                object.__setattr__(self, f.name, float(v))
            elif f.type in ("int",) or (f.type == "int | None" and v is not None):
                if isinstance(v, bool) or not isinstance(v, int):
                    raise InputError(f"must be an integer, got {v!r}", field=f.name)
            elif f.type == "bool" and not isinstance(v, bool):
                raise InputError(f"must be true or false, got {v!r}", field=f.name)
        if not self.lr > 0:
            raise InputError(f"must be > 0, got {self.lr}", field="lr")
        if self.weight_decay < 0:
            raise InputError(f"must be >= 0, got {self.weight_decay}", field="weight_decay")
        if self.min_delta < 0:
            raise InputError(f"must be >= 0, got {self.min_delta}", field="min_delta")
        for name in ("batch_size", "grad_accum", "max_epochs", "patience", "max_length", "eval_batch_size"):
            if getattr(self, name) < 1:
                raise InputError(f"must be >= 1, got {getattr(self, name)}", field=name)
        if self.pad_to_length is not None and self.pad_to_length < 1:
            raise InputError(f"must be >= 1, got {self.pad_to_length}", field="pad_to_length")
        if self.cpu_threads is not None and self.cpu_threads < 1:
            raise InputError(f"must be >= 1, got {self.cpu_threads}", field="cpu_threads")
        if self.batch_size % self.grad_accum:
            raise InputError(f"batch_size {self.batch_size} is not a multiple of grad_accum {self.grad_accum}",
                             field="grad_accum")

    # ------------------------------------------------------------------------------------------ I/O
    @property
    def micro_batch_size(self) -> int:
        return self.batch_size // self.grad_accum

    def to_dict(self) -> dict[str, Any]:
        return {f.name: (v.value if isinstance(v := getattr(self, f.name), enum.Enum) else v) for f in fields(self)}

    @property
    def digest(self) -> str:
        """A stable 12-hex-digit name of every setting (jobs under different recipes are different jobs).
        ``auto`` device and precision are named as such: they resolve per machine, recorded per result."""
        blob = json.dumps(self.to_dict(), sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:12]

    def replace(self, **changes: Any) -> "Recipe":
        return Recipe.from_dict({**self.to_dict(), **changes})

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], path: str | Path | None = None) -> "Recipe":
        if not isinstance(data, Mapping):
            raise InputError("a recipe must be a mapping of key: value", path=path)
        valid = [f.name for f in fields(cls)]
        unknown = [k for k in data if k not in valid]
        if unknown:
            from ..registry import closest

            close = closest(unknown[0], valid)
            hint = f" (did you mean {close!r}?)" if close else ""
            raise InputError(f"unknown key{hint}; valid keys: {', '.join(valid)}", path=path, field=str(unknown[0]))
        try:
            return cls(**dict(data))
        except InputError as exc:
            raise InputError(exc.message, path=path, field=exc.field) from None

    @classmethod
    def from_yaml(cls, path: str | Path) -> "Recipe":
        """Load a recipe file (YAML mapping; keys not given keep the protocol's defaults)."""
        import yaml

        path = Path(path)
        if not path.exists():
            raise InputError("no such recipe file", path=path)
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            raise InputError(f"invalid YAML: {getattr(exc, 'problem', exc)}", path=path,
                             line=mark.line + 1 if mark else None) from None
        return cls.from_dict(data or {}, path=path)

    def with_overrides(self, pairs: list[str]) -> "Recipe":
        """Apply ``key=value`` strings (values parsed as YAML scalars), as given by ``--set``."""
        import yaml

        changes: dict[str, Any] = {}
        for pair in pairs:
            if "=" not in pair:
                raise InputError(f"expected KEY=VALUE, got {pair!r}", field="--set")
            key, value = pair.split("=", 1)
            changes[key.strip()] = yaml.safe_load(value)
        return Recipe.from_dict({**self.to_dict(), **changes})


PROTOCOL = Recipe()
"""The NTCIR-19 ground-truth protocol."""

__all__ = ["Device", "PROTOCOL", "Precision", "Recipe"]
