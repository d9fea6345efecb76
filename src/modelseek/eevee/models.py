"""The EEVEE meta-models: a registry of :class:`MetaModel` records (name, description, whether the seed
matters, whether a batch is worth splitting across processes, the batched kernel that fits a block of them, and
the member's own parameters). ``--meta-model`` lists its names.

Each member declares its own parameters as a ``Params`` config class (:class:`modelseek.core.config.Config`, as a
style feature does): the ridge's candidate penalties, the MLP's width and optimiser. The shared
:class:`~modelseek.eevee.config.MetaConfig` holds only the protocol (splits, seed, normalisation, loss unit) and
the member's parameters as given (``model_params``, ``--meta-param KEY=VALUE``), checked by the member's
``Params`` into an instance the kernel reads as ``cfg.model_params``.

The contract is :class:`MetaModelKernel` (a ``typing.Protocol``, for mypy; :class:`MetaModel` checks the kernel's
signature when it is built). Each meta-model registers itself with ``register("meta-model", ...)``
(:func:`modelseek.core.kinds.register`) in its own module of :mod:`modelseek.eevee.meta_models` (``mlp.py``,
``ridge.py``);
the registry discovers that package's modules on first use, so a new meta-model is one file.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..core.config import Config, Source
from ..core.errors import InputError
from ..core.registry import PluginRegistry, closest

if TYPE_CHECKING:
    from .config import MetaConfig
    from .data import SplitData

#: the kernel's parameters, in order (see :class:`MetaModelKernel`)
KERNEL_PARAMETERS = ("d", "cfg", "cand", "split", "idx", "mask", "fan", "return_pred")


class MetaModelKernel(Protocol):
    """Fits one block of (subset, split) meta-models together.

    ``d``: the table's splits (:class:`~modelseek.eevee.data.SplitData`); ``cfg``: the
    :class:`~modelseek.eevee.config.MetaConfig` (the member's own parameters: ``cfg.model_params``);
    network ``p`` of the block is subset ``cand[p]`` on split
    ``split[p]``, its input columns ``idx[cand[p]]`` where ``mask[cand[p]]`` is 1 (``fan``: their number, the
    initialisation scale). Returns the ``P`` test losses, or ``(losses, test predictions)`` with
    ``return_pred=True``.
    """

    def __call__(self, d: SplitData, cfg: MetaConfig, cand: Any, split: Any, idx: Any, mask: Any, fan: Any,
                 return_pred: bool = False) -> Any: ...


@dataclass(frozen=True)
class NoParams(Config):
    """A meta-model without parameters of its own."""


@dataclass(frozen=True)
class MetaModel:
    """A meta-model and its properties.

    ``fit``: the kernel (:class:`MetaModelKernel`). ``seeded``: whether ``MetaConfig.seed`` (the initial
    weights) changes its scores. ``parallel``: whether a batch is worth splitting across worker processes (a
    closed form costs less than starting them; the member's ``Params`` class must then be importable, as a
    worker receives it pickled). ``params``: the member's own parameters, a frozen
    :class:`~modelseek.core.config.Config` subclass whose every field has a default (the kernel reads the checked
    instance as ``cfg.model_params``).
    """

    name: str
    description: str
    seeded: bool
    parallel: bool
    fit: MetaModelKernel
    params: type[Config] = NoParams

    def __post_init__(self) -> None:
        if not self.name or not isinstance(self.name, str):
            raise ValueError("a meta-model's name must be a non-empty string")
        if not self.description:
            raise ValueError(f"meta-model {self.name!r}: give a description (the meta-model's help lists it)")
        params = list(inspect.signature(self.fit).parameters)
        if tuple(params[: len(KERNEL_PARAMETERS)]) != KERNEL_PARAMETERS:
            raise TypeError(f"meta-model {self.name!r}: the kernel must take ({', '.join(KERNEL_PARAMETERS)}), "
                            f"got ({', '.join(params)})")
        if not (isinstance(self.params, type) and issubclass(self.params, Config)
                and dataclasses.is_dataclass(self.params)):
            raise TypeError(f"meta-model {self.name!r}: params must be a modelseek.core.config.Config dataclass, "
                            f"got {self.params!r}")
        try:
            self.params()
        except Exception as exc:  # noqa: BLE001 - any failure of the defaults breaks the contract
            raise TypeError(f"meta-model {self.name!r}: its params must build from their defaults (every "
                            f"parameter needs one): {exc}") from None

    # ------------------------------------------------------------------ the member's own parameters
    def param_names(self) -> list[str]:
        return [f.name for f in dataclasses.fields(self.params) if f.init]  # type: ignore[arg-type]

    def describe_params(self) -> str:
        """``name=default, ...`` of the member's parameters (``none`` without any), for help and errors."""
        defaults = self.params()
        return ", ".join(f"{n}={_short(getattr(defaults, n))}" for n in self.param_names()) or "none"

    def changed(self, params: Config) -> dict[str, Any]:
        """The parameters of ``params`` (this member's) that differ from their defaults, as plain data."""
        defaults = self.params().to_mapping()
        return {k: v for k, v in params.to_mapping().items() if not _same(v, defaults.get(k))}

    def make_params(self, given: Any = None) -> Config:
        """The member's parameters from ``given`` (a mapping of name -> value, an instance of its ``params``
        class, or None for the defaults), checked by its ``params`` config. An unknown name or a bad value is
        one :class:`InputError` naming the member and the parameter (field ``model_params.NAME``) and listing
        its parameters. A comma-separated string is a list where the parameter is one (``alphas=0.1,1,10``)."""
        if given is None:
            given = {}
        if isinstance(given, self.params):
            return given
        if isinstance(given, Config):
            given = given.to_mapping()
        if not isinstance(given, Mapping):
            raise InputError(f"the parameters of meta-model {self.name!r} are a mapping of name: value, got "
                             f"{given!r}", field="model_params")
        names = self.param_names()
        listing = f"its parameters: {self.describe_params()}"
        for key in given:
            if key not in names:
                close = closest(str(key), names)
                hint = f" (did you mean {close!r}?)" if close else ""
                raise InputError(f"meta-model {self.name!r} has no parameter {str(key)!r}{hint}; {listing}",
                                 field=f"model_params.{key}")
        hints = typing.get_type_hints(self.params)
        values = {str(k): _listed(v, hints.get(str(k))) for k, v in given.items()}
        try:
            return self.params.from_mapping(values, source=Source(prefix="model_params"))
        except InputError as exc:
            key = (exc.field or "").removeprefix("model_params").lstrip(".")
            raise InputError(f"meta-model {self.name!r}: {key + ' ' if key else ''}{exc.message}; {listing}",
                             field=exc.field) from None


#: registered meta-models; the modules of :mod:`modelseek.eevee.meta_models` are imported on first use
META_MODELS: PluginRegistry[MetaModel] = PluginRegistry("meta-model", "modelseek.eevee.meta_models")


def _short(value: Any) -> str:
    """A default as help shows it: a long list by its ends and length."""
    if isinstance(value, (list, tuple)):
        items = [_short(v) for v in value]
        if len(items) <= 4:
            return "[" + ", ".join(items) + "]"
        return f"[{items[0]} ... {items[-1]}] ({len(items)} values)"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - values without a plain equality (arrays): compared by identity
        return a is b


def _listed(value: Any, annotation: Any) -> Any:
    """``"0.1,1,10"`` as ``["0.1", "1", "10"]`` where the parameter is a list or tuple (``--meta-param``'s form);
    anything else as given."""
    origin = typing.get_origin(annotation)
    if isinstance(value, str) and "," in value and (origin in (list, tuple) or annotation in (list, tuple)):
        return [part.strip() for part in value.split(",")]
    return value


def fit_columns(d, cols: list[list[int]], width: int, kernel: MetaModelKernel | None = None):
    """Per-split test losses of the subsets given by their input columns (column indices of ``d``'s table),
    shape (len(cols), n_splits), with ``d.config``'s meta-model (or ``kernel``: a member checked before it is
    registered, :mod:`modelseek.testing.contract`). Every (subset, split) pair is one network; the networks are
    fitted ``config.chunk`` at a time, their inputs padded to ``width`` columns."""
    import torch  # lazy: torch

    cfg = d.config
    fit = META_MODELS.get(cfg.model).fit if kernel is None else kernel
    S = cfg.n_splits
    C = len(cols)
    idx = torch.zeros(C, width, dtype=torch.long)
    mask = torch.zeros(C, width)
    for i, c in enumerate(cols):
        idx[i, : len(c)] = torch.tensor(c, dtype=torch.long)
        mask[i, : len(c)] = 1.0
    fan = mask.sum(1).clamp(min=1.0)
    P = C * S  # network p = (candidate p // S, split p % S)
    cand = torch.arange(P) // S
    split = torch.arange(P) % S
    out = torch.empty(P)
    block = P if cfg.chunk <= 0 else cfg.chunk
    with torch.no_grad():
        for lo in range(0, P, block):
            sl = slice(lo, min(P, lo + block))
            with META_MODELS.calling(cfg.model, "fit"):
                out[sl] = fit(d, cfg, cand[sl], split[sl], idx, mask, fan)
    return out.view(C, S).double().numpy()
