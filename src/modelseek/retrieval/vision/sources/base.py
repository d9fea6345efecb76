"""What every model source shares: the loaded-model record, the build spec read from a registry entry, seeded
random init, checkpoints, and one offline check.

The contract of a source is :class:`ModelSource`: a subclass sets ``name`` (the registry entry's ``source``),
``package`` and ``extra`` (what to install), implements ``build(entry, spec) -> LoadedModel`` (without the layer
resolved) and may override ``defaults(entry) -> dict`` (the model's own input size and preprocessing). It registers in
:data:`modelseek.retrieval.vision.sources.SOURCES` with ``@register("model source")`` in its own module of the
package (or, from
outside, as an entry point of the ``modelseek.sources`` group); the registry is the list of sources, so adding a
source is one file, and a registry entry may name it at once.
"""

from __future__ import annotations

import abc
import os
import socket
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ....core.errors import InputError
from ....core.registry import closest

if TYPE_CHECKING:  # annotations only: the formats look the sources up, never the reverse
    from ..entries import ModelEntry

RESERVED = ("arch", "seed", "model_type", "tokenizer", "max_length")


class WeightsUnavailable(InputError):
    """Pretrained weights that cannot be had (offline and not cached, or the download failed)."""


@dataclass
class LoadedModel:
    """A model ready to embed: ``module`` (root of the layer paths, in eval mode), how to call it, the hooked
    layer (``None``: the model's own output) and which weights it holds (``weights_note``)."""

    entry: ModelEntry
    module: Any
    call_images: Callable[[Any], Any] | None
    call_texts: Callable[[list[str]], tuple[Any, Any]] | None = None  # -> (output, attention mask or None)
    layer: Any = None
    weights_note: str = ""
    random_fallback: bool = False  # True: pretrained weights were wanted but could not be had

    @property
    def name(self) -> str:
        return self.entry.model_name


@dataclass(frozen=True)
class Spec:
    """What a registry entry asks of its source, read once."""

    arch: str
    seed: int
    params: Mapping[str, Any] = field(default_factory=dict)   # the constructor's other keyword arguments
    model_type: str | None = None
    tokenizer: str | None = None
    max_length: int = 256
    weights_file: Path | None = None
    random: bool = True
    forward_args: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, entry: ModelEntry, force_random: bool = False) -> Spec:
        mp = dict(entry.model_parameters)
        arch = mp.pop("arch", entry.model_name)
        try:
            seed = int(mp.pop("seed", 0))
            max_length = int(mp.pop("max_length", 256))
        except (TypeError, ValueError):
            raise InputError(f"model {entry.model_name!r}: seed and max_length must be integers",
                             field="model_parameters") from None
        model_type, tokenizer = mp.pop("model_type", None), mp.pop("tokenizer", None)
        return cls(arch=str(arch), seed=seed, params=mp, model_type=model_type, tokenizer=tokenizer,
                   max_length=max_length, weights_file=None if force_random else weights_file(entry.weights),
                   random=force_random or is_random(entry.weights), forward_args=dict(entry.forward_args))


def is_random(weights: str | None) -> bool:
    return weights is None or weights.strip().lower() in ("random", "none", "")


def is_default_pretrained(weights: str | None) -> bool:
    """``imagenet`` (the live challenge's word), ``pretrained``, ``default``, ``true``: the library's own
    pretrained weights for the named model."""
    return weights is not None and weights.strip().lower() in ("imagenet", "pretrained", "default", "true")


def weights_file(weights: str | None) -> Path | None:
    if weights is None or is_random(weights) or is_default_pretrained(weights):
        return None
    p = Path(os.path.expanduser(weights))
    return p if p.is_file() else None


def load_state_dict(module, path: Path, name: str) -> None:
    import torch  # lazy: torch

    try:
        if path.suffix == ".safetensors":
            from safetensors.torch import load_file  # lazy: safetensors

            sd: Any = load_file(str(path))
        else:
            sd = torch.load(str(path), map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any unreadable checkpoint is a user input error
        raise InputError(f"model {name!r}: cannot read checkpoint: {_first_line(exc)}", path=path,
                         field="weights") from None
    for key in ("state_dict", "model"):
        if isinstance(sd, Mapping) and key in sd and isinstance(sd[key], Mapping):
            sd = sd[key]
    try:
        module.load_state_dict(sd, strict=True)
    except RuntimeError as exc:
        first = str(exc).splitlines()[0:3]
        raise InputError(f"model {name!r}: checkpoint does not fit the architecture: {' '.join(first)}",
                         path=path, field="weights") from None


def seeded(build: Callable[[], Any], seed: int):
    """Build under ``torch.manual_seed(seed)`` inside fork_rng: the caller's RNG state is untouched."""
    import torch  # lazy: torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return build()


def import_package(name: str, extra: str, source: str):
    import importlib

    try:
        return importlib.import_module(name)
    except Exception as exc:  # noqa: BLE001 - ImportError or a broken binary build (e.g. torchvision ops)
        raise InputError(f"source {source!r} needs the package {name!r} ({type(exc).__name__}: {exc}); "
                         f"install it (pip install 'modelseek[{extra}]')", field="source") from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


_TRUE = ("1", "true", "yes", "on")
_PROBED: dict[str, bool] = {}


def offline(host: str = "huggingface.co") -> bool:
    """True when downloads cannot work: ``HF_HUB_OFFLINE`` (or ``TRANSFORMERS_OFFLINE``) set, else one TCP
    connect to ``host`` with a 3 s timeout, done once per host and process. Checked before a download so that a
    missing network is one fast, clear answer instead of a library's retries (about a minute)."""
    if any(os.environ.get(v, "").strip().lower() in _TRUE for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")):
        return True
    if host not in _PROBED:
        try:
            socket.create_connection((host, 443), timeout=3).close()
            _PROBED[host] = False
        except OSError:
            _PROBED[host] = True
    return _PROBED[host]


def offline_reason() -> str:
    if any(os.environ.get(v, "").strip().lower() in _TRUE for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")):
        return "offline (HF_HUB_OFFLINE is set)"
    return "offline (no network)"


class ModelSource(abc.ABC):
    """The contract of a model source (see the module docstring): ``name``, ``package``, ``extra``,
    :meth:`build`, optionally :meth:`defaults`."""

    name: str = ""
    package: str = ""
    extra: str = "align-zoo"

    @abc.abstractmethod
    def build(self, entry: ModelEntry, spec: Spec) -> LoadedModel:
        """The model of ``entry`` as ``spec`` asks (weights, seed, constructor arguments), in a
        :class:`LoadedModel` whose ``layer`` is left ``None`` (the caller resolves ``entry.layer``). Pretrained
        weights that cannot be had raise :class:`WeightsUnavailable`; bad parameters an ``InputError``."""

    def defaults(self, entry: ModelEntry) -> dict:
        """The model's own ``input_size`` (h, w) and preprocessing (``mean``, ``std``, ``interpolation``,
        ``crop_pct``) where the source knows them; the caller fills the rest with ImageNet's."""
        return {}

    def module(self, name: str | None = None):
        """The source's package (or its submodule ``name``), imported on first use; missing, one error naming the
        extra to install."""
        return import_package(name or self.package, self.extra, self.name)

    def check_arch(self, entry: ModelEntry, arch: str, names: Sequence[str]) -> str:
        """``arch`` when it is one of the source's architecture ``names``; otherwise an error with the closest."""
        if arch not in names:
            close = closest(arch, names)
            hint = f" Did you mean {close!r}?" if close else ""
            raise InputError(f"model {entry.model_name!r}: unknown {self.name} architecture {arch!r}.{hint}",
                             field="model_parameters.arch" if "arch" in entry.model_parameters else "model_name")
        return arch

    def std_call(self, module, spec: Spec):
        fwd = dict(spec.forward_args)
        return lambda x: module(x, **fwd)
