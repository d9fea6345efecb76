"""The fine-tuning recipe: every knob of the protocol, with the protocol's values as defaults.

The defaults are the NTCIR-19 ground-truth protocol: a sequence-classification head on the encoder,
cross-entropy, AdamW (lr 2e-5, weight decay 0.01), batch 16, at most 1,000 epochs, early stopping when the
validation loss has not improved for 10 epochs, restoring the best weights, macro-F1 on the test split; a fresh
randomly initialised classification head for every task (``head: fresh``), also for a checkpoint that carries a
head of the task's size (see :class:`HeadPolicy`).

A recipe is a frozen, validated record; it loads from YAML (unknown keys are rejected so that a typo never
passes silently) and has a stable :attr:`Recipe.digest` that names it in the job store.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from numbers import Integral, Real
from pathlib import Path
from typing import Any

from ...core.config import Config, Interval, Source, parse_overrides
from ...core.enums import Choice
from ...core.errors import InputError


class Precision(Choice):
    """Numeric precision of the forward pass: ``auto`` = bf16 autocast on a GPU that supports it, fp32
    elsewhere; ``bf16`` = bf16 autocast on GPU (fp32 on CPU, where autocast only slows training);
    ``fp32`` = never autocast."""

    AUTO = "auto"
    BF16 = "bf16"
    FP32 = "fp32"


class Device(Choice):
    """Where a job trains: ``auto`` = the first CUDA device if any, else the CPU."""

    AUTO = "auto"
    CPU = "cpu"
    CUDA = "cuda"


class HeadPolicy(Choice):
    """The classification head a job fine-tunes: ``fresh`` = a new, randomly initialised N-way head for every task
    (from the job's seed), whatever head the checkpoint carries — the NTCIR protocol, and what
    ``AutoModelForSequenceClassification`` gives a checkpoint without one; ``keep`` = a checkpoint's own
    sequence-classification head is kept (its weights, relabelled with the task's classes) when its size equals the
    task's class count, a fresh one otherwise (what ``ignore_mismatched_sizes=True`` alone does)."""

    FRESH = "fresh"
    KEEP = "keep"


_POSITIVE = [Interval(Real, 0, None, closed="neither")]
_NON_NEGATIVE = [Interval(Real, 0, None, closed="left")]


@dataclass(frozen=True)
class Recipe(Config):
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
    head: HeadPolicy = HeadPolicy.FRESH

    #: each count bounded by what a job can afford (a job is one model on one task): epochs and patience at
    #: 100,000, batches at 65,536 examples, texts at 131,072 tokens, threads at 4,096
    _constraints = {
        "lr": _POSITIVE, "weight_decay": _NON_NEGATIVE, "min_delta": _NON_NEGATIVE,
        **{name: [Interval(Integral, 1, most, closed="both")] for name, most in (
            ("batch_size", 65_536), ("grad_accum", 65_536), ("max_epochs", 100_000), ("patience", 100_000),
            ("max_length", 131_072), ("eval_batch_size", 65_536), ("pad_to_length", 131_072),
            ("cpu_threads", 4096))},
    }

    def _check(self) -> None:
        if self.batch_size % self.grad_accum:
            raise InputError(f"batch_size {self.batch_size} is not a multiple of grad_accum {self.grad_accum}",
                             field="grad_accum")

    # ------------------------------------------------------------------------------------------ I/O
    @property
    def micro_batch_size(self) -> int:
        return self.batch_size // self.grad_accum

    def to_dict(self) -> dict[str, Any]:
        return self.to_mapping()

    @property
    def digest(self) -> str:
        """A stable 12-hex-digit name of every setting (jobs under different recipes are different jobs).
        ``auto`` device and precision are named as such: they resolve per machine, recorded per result."""
        blob = json.dumps(self.to_dict(), sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:12]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], path: str | Path | Source | None = None) -> Recipe:
        """A recipe from a mapping (see :meth:`~modelseek.core.config.Config.from_mapping`)."""
        return cls.from_mapping(data, source=path)

    @classmethod
    def from_yaml(cls, path: str | Path) -> Recipe:
        """Load a recipe file (YAML mapping; keys not given keep the protocol's defaults)."""
        return cls.from_file(path, what="recipe file")

    def with_overrides(self, overrides: list[str]) -> Recipe:
        """Apply ``key=value`` strings (values parsed as YAML scalars), as given by ``--set``; a malformed one is an
        error naming ``overrides``."""
        return Recipe.from_dict({**self.to_dict(), **parse_overrides(overrides, "overrides")})


PROTOCOL = Recipe()
"""The NTCIR-19 ground-truth protocol."""

__all__ = ["PROTOCOL", "Device", "HeadPolicy", "Precision", "Recipe"]
