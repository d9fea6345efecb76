"""One config layer: frozen dataclasses, built from mappings, checked against declared constraints.

A config is a frozen dataclass deriving from :class:`Config`::

    @dataclass(frozen=True)
    class Knobs(Config):
        lr: float = 2e-5
        batch_size: int = 16
        precision: Precision = Precision.AUTO          # a Choice enum: parsed, errors list the values
        seed: int | None = None
        layers: tuple[int, ...] = ()
        optimiser: Optimiser = Optimiser()             # a nested config (mapping in YAML)

        _constraints = {                               # scikit-learn's _parameter_constraints, per field
            "lr": [Interval(Real, 0, None, closed="neither")],
            "batch_size": [Interval(Integral, 1, None, closed="left")],
        }

        def _check(self) -> None:                      # optional: rules across fields
            ...

    Knobs.from_mapping(yaml_data, source="knobs.yaml")
    Knobs.from_file("knobs.yaml")                      # YAML or JSON, errors with the line of the key
    Knobs(lr="0.1")                                    # construction coerces and validates too

What happens, in order (:meth:`Config.__post_init__`):

1. **Coercion** from the annotation (:func:`coerce`): ``int`` (an int, or a string of one; never a bool or a
   float), ``float`` (an int, float or numeric string; NaN and ±inf refused unless the field lists
   :data:`NONFINITE`), ``bool`` (true/false only), ``str`` (a scalar), ``Path``, ``X | None``, unions in
   order, ``list[X]``/``tuple[X, ...]`` (a lone scalar becomes a one-element sequence), ``tuple[X, Y]``,
   ``Mapping[K, V]``/``dict`` (stored read-only), :class:`~modelseek.core.enums.Choice` enums (through
   ``Choice.parse``), ``Literal[...]`` and nested :class:`Config` classes (from a mapping).
2. **Constraints** (:func:`check`): each field's list in ``_constraints``; the value must satisfy at least
   one (as in scikit-learn). ``None`` always passes for ``Optional`` fields.
3. **Cross-field rules**: the class's ``_check()``.

:meth:`Config.from_mapping` adds: the value must be a mapping, unknown keys are refused with "did you
mean" and the list of valid keys, required keys must be present, and every error is re-raised as one
:class:`~modelseek.core.errors.InputError` naming the file, the line of the key (when the reader knows it,
see :func:`modelseek.core.io.read_config`) and the field as a dotted path (``optimiser.betas[1]``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import math
import os
import types
import typing
import collections.abc as cabc
from collections.abc import Iterable, Mapping, Sequence
from numbers import Integral, Real
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar, TypeVar

from .enums import Choice
from .errors import InputError
from .io import Source, loads_yaml_located, read_config  # Source re-exported: where a mapping came from
from .registry import closest

C = TypeVar("C", bound="Config")

__all__ = ["NONFINITE", "Config", "Constraint", "Interval", "Options", "Source", "check", "coerce", "describe",
           "from_mapping", "parse_overrides", "to_mapping"]


# ------------------------------------------------------------------------------------------ constraints
class Constraint:
    """A rule a value may satisfy; ``str(constraint)`` describes it for messages (``an integer >= 1``)."""

    def is_satisfied_by(self, value: Any) -> bool:  # pragma: no cover - interface
        raise NotImplementedError

    def __str__(self) -> str:  # pragma: no cover - interface
        raise NotImplementedError


class Interval(Constraint):
    """Numbers of ``type`` (``Integral`` or ``Real``) between ``left`` and ``right`` (``None`` = unbounded);
    ``closed`` is ``"both"``, ``"left"``, ``"right"`` or ``"neither"``, as in scikit-learn."""

    def __init__(self, type: type, left: float | None, right: float | None, *, closed: str) -> None:
        if type not in (Integral, Real, int, float):
            raise TypeError(f"Interval type must be Integral or Real, got {type!r}")
        if closed not in ("both", "left", "right", "neither"):
            raise ValueError(f"closed must be both, left, right or neither, got {closed!r}")
        if left is not None and right is not None and left > right:
            raise ValueError(f"empty interval [{left}, {right}]")
        self.type = Integral if type in (Integral, int) else Real
        self.left, self.right, self.closed = left, right, closed

    def is_satisfied_by(self, value: Any) -> bool:
        if isinstance(value, bool) or not isinstance(value, self.type):
            return False
        if isinstance(value, float) and math.isnan(value):
            return False
        left_open, right_open = self.closed in ("right", "neither"), self.closed in ("left", "neither")
        below = self.left is not None and (value < self.left or (value == self.left and left_open))
        # typeshed's numbers.Real declares no __gt__, and the reflected float.__lt__ takes floats only
        above = self.right is not None and (value > self.right or (value == self.right and right_open))  # type: ignore[operator]
        return not (below or above)

    def __str__(self) -> str:
        kind = "an integer" if self.type is Integral else "a number"
        lo, hi = self.left, self.right
        if hi is None:
            return kind if lo is None else f"{kind} {'>=' if self.closed in ('left', 'both') else '>'} {_num(lo)}"
        if lo is None:
            return f"{kind} {'<=' if self.closed in ('right', 'both') else '<'} {_num(hi)}"
        left = "[" if self.closed in ("left", "both") else "("
        right = "]" if self.closed in ("right", "both") else ")"
        return f"{kind} in {left}{_num(lo)}, {_num(hi)}{right}"

    def __repr__(self) -> str:
        return f"Interval({self.type.__name__}, {self.left}, {self.right}, closed={self.closed!r})"


def _num(x: float) -> str:
    return str(int(x)) if isinstance(x, float) and x.is_integer() and abs(x) < 1e15 else str(x)


class Options(Constraint):
    """One of a fixed set of values (for enums use a :class:`~modelseek.core.enums.Choice` annotation)."""

    def __init__(self, *values: Any) -> None:
        if not values:
            raise ValueError("Options needs at least one value")
        self.values = tuple(values)

    def is_satisfied_by(self, value: Any) -> bool:
        return any(value == v and isinstance(value, bool) == isinstance(v, bool) for v in self.values)

    def __str__(self) -> str:
        return "one of " + ", ".join(repr(v) for v in self.values)


class _NonFinite(Constraint):
    """Marker: this float field accepts NaN and ±inf (refused by default)."""

    def is_satisfied_by(self, value: Any) -> bool:
        return isinstance(value, float) and not math.isfinite(value)

    def __str__(self) -> str:
        return "nan or inf"


NONFINITE = _NonFinite()
"""List it in a float field's constraints to let NaN and ±inf through coercion."""

MAX_SAMPLES = 10_000_000
"""The most Monte-Carlo draws or bootstrap resamples a setting or option takes (each is an array of that length)."""


def describe(constraints: Sequence[Constraint]) -> str:
    return " or ".join(str(c) for c in constraints if c is not NONFINITE)


def check(value: Any, constraints: Sequence[Constraint] | Constraint, field: str | None = None) -> Any:
    """``value`` if it satisfies at least one of ``constraints``; else an ``InputError``
    ``must be DESCRIPTION, got VALUE`` for ``field``. The one place constraints are checked (configs and
    argparse types alike)."""
    if isinstance(constraints, Constraint):
        constraints = [constraints]
    if not constraints or any(c.is_satisfied_by(value) for c in constraints):
        return value
    raise InputError(f"must be {describe(constraints)}, got {_show(value)}", field=field)


def _show(value: Any) -> str:
    text = repr(value.value) if isinstance(value, enum.Enum) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# ------------------------------------------------------------------------------------------ coercion
def coerce(value: Any, annotation: Any, field: str | None = None, *, nonfinite: bool = False) -> Any:
    """``value`` converted to ``annotation`` (see the module docstring), or an ``InputError`` naming
    ``field`` (dotted path; items of sequences as ``field[i]``)."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if annotation is Any or annotation is object:
        return value
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        members = [a for a in args if a is not type(None)]
        first: InputError | None = None
        for member in members:
            try:
                return coerce(value, member, field, nonfinite=nonfinite)
            except InputError as exc:
                first = first or exc
        if len(members) == 1:
            assert first is not None
            raise first
        raise InputError(f"must be {' or '.join(_type_name(m) for m in members)}, got {_show(value)}", field=field)
    if value is None:
        raise InputError(f"must be {_type_name(annotation)}, got nothing (null)", field=field)
    if origin is typing.Literal:
        for a in args:
            if value == a and type(value) is type(a):
                return a
        raise InputError(f"must be one of {', '.join(repr(a) for a in args)}, got {_show(value)}", field=field)
    if origin in (list, tuple, cabc.Sequence) or annotation in (list, tuple):
        return _coerce_sequence(value, annotation, origin or annotation, args, field, nonfinite)
    if origin in (dict, cabc.Mapping) or annotation in (dict, Mapping):
        return _coerce_mapping(value, args, field, nonfinite)
    if isinstance(annotation, type):
        if issubclass(annotation, Config):
            if isinstance(value, annotation):
                return value
            if not isinstance(value, Mapping):
                raise InputError(f"must be a mapping of key: value, got {_show(value)}", field=field)
            return annotation.from_mapping(value, source=Source(prefix=field or ""))
        if issubclass(annotation, enum.Enum):
            return _coerce_enum(value, annotation, field)
        if annotation is bool:
            if isinstance(value, bool):
                return value
            if isinstance(value, str) and value.strip().lower() in ("true", "false"):
                return value.strip().lower() == "true"
            raise InputError(f"must be true or false, got {_show(value)}", field=field)
        if annotation is int:
            return _coerce_int(value, field)
        if annotation is float:
            return _coerce_float(value, field, nonfinite)
        if annotation is str:
            if isinstance(value, str):
                return value
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return str(value)
            raise InputError(f"must be a string, got {_show(value)}", field=field)
        if issubclass(annotation, Path):
            if isinstance(value, (str, os.PathLike)) and str(value):
                return Path(value)
            raise InputError(f"must be a path, got {_show(value)}", field=field)
        if isinstance(value, annotation):
            return value
        raise InputError(f"must be {_type_name(annotation)}, got {_show(value)}", field=field)
    raise TypeError(f"config: unsupported annotation {annotation!r} for field {field!r}")


def _coerce_int(value: Any, field: str | None) -> int:
    if isinstance(value, bool):
        raise InputError(f"must be an integer, got {_show(value)}", field=field)
    if isinstance(value, Integral):
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise InputError(f"must be an integer, got {_show(value)}", field=field)


def _coerce_float(value: Any, field: str | None, nonfinite: bool) -> float:
    out: float | None = None
    if isinstance(value, Real) and not isinstance(value, bool):
        try:
            out = float(value)
        except OverflowError:  # an int too large for a float (e.g. 10**400 from YAML or JSON)
            raise InputError(f"number {_show(value)} is too large for a float", field=field) from None
    elif isinstance(value, str):
        with contextlib.suppress(ValueError):
            out = float(value.strip())
    if out is None:
        raise InputError(f"must be a number, got {_show(value)}", field=field)
    if not nonfinite and not math.isfinite(out):
        raise InputError(f"must be a finite number, got {_show(value)}", field=field)
    return out


def _coerce_enum(value: Any, cls: type[enum.Enum], field: str | None) -> enum.Enum:
    if isinstance(value, cls):
        return value
    if issubclass(cls, Choice):
        return cls.parse(value, field=field)
    for m in cls:
        if value == m.value or value == m.name:
            return m
    raise InputError(f"unknown value {_show(value)}; valid values: {', '.join(str(m.value) for m in cls)}",
                     field=field)


def _coerce_sequence(value, annotation, origin, args, field, nonfinite):
    if isinstance(value, (str, bytes, int, float, bool)) and not (
            origin is tuple and len(args) > 1 and args[-1] is not Ellipsis):
        value = [value]  # a lone scalar where a list is expected: a one-element list
    if isinstance(value, (Mapping, str, bytes)) or not isinstance(value, Iterable):
        raise InputError(f"must be a list, got {_show(value)}", field=field)
    items = list(value)
    if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
        if len(items) != len(args):
            raise InputError(f"must be a list of {len(args)} items, got {len(items)}", field=field)
        return tuple(coerce(v, a, f"{field or ''}[{i}]", nonfinite=nonfinite)
                     for i, (v, a) in enumerate(zip(items, args)))
    item_type = args[0] if args else Any
    out = [coerce(v, item_type, f"{field or ''}[{i}]", nonfinite=nonfinite) for i, v in enumerate(items)]
    return out if origin is list else tuple(out)


def _coerce_mapping(value, args, field, nonfinite):
    if not isinstance(value, Mapping):
        raise InputError(f"must be a mapping of key: value, got {_show(value)}", field=field)
    kt, vt = args if len(args) == 2 else (Any, Any)
    out = {}
    for k, v in value.items():
        sub = f"{field}.{k}" if field else str(k)
        out[coerce(k, kt, sub)] = coerce(v, vt, sub, nonfinite=nonfinite)
    return MappingProxyType(out)


def _type_name(t: Any) -> str:
    if t is int:
        return "an integer"
    if t is float:
        return "a number"
    if t is bool:
        return "true or false"
    if t is str:
        return "a string"
    if isinstance(t, type) and issubclass(t, Config):
        return "a mapping"
    if typing.get_origin(t) in (list, tuple, cabc.Sequence):
        return "a list"
    return getattr(t, "__name__", str(t))


# ------------------------------------------------------------------------------------------ the base class
_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        hints = typing.get_type_hints(cls)
        _HINTS[cls] = {f.name: hints[f.name] for f in dataclasses.fields(cls)}
    return _HINTS[cls]


class Config:
    """Base of every config record; subclasses are ``@dataclass(frozen=True)``.

    ``_constraints`` maps a field name to a list of :class:`Constraint` (any one satisfies);
    ``_check(self)`` holds rules across fields (raise ``InputError(..., field=NAME)``).
    A subclass that defines ``__post_init__`` calls ``super().__post_init__()`` first.
    """

    _constraints: ClassVar[Mapping[str, Sequence[Constraint]]] = {}

    def __post_init__(self) -> None:
        hints = _hints(type(self))
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            cons = self._constraints.get(f.name, ())
            value = coerce(getattr(self, f.name), hints[f.name], f.name, nonfinite=NONFINITE in cons)
            if value is not None and cons:
                check(value, cons, f.name)
            object.__setattr__(self, f.name, value)
        self._check()

    def _check(self) -> None:
        """Rules across fields; raise ``InputError(message, field=name)``."""

    # -------------------------------------------------------------------------------- building
    @classmethod
    def from_mapping(cls: type[C], mapping: Any, *, source: Source | str | os.PathLike | None = None) -> C:
        """Build from a mapping (a parsed YAML/JSON document); every problem is one located ``InputError``."""
        src = Source.of(source)
        if not isinstance(mapping, Mapping):
            raise src.error(f"must be a mapping of key: value, got {type(mapping).__name__}")
        names = [f.name for f in dataclasses.fields(cls) if f.init]  # type: ignore[arg-type]
        for key in mapping:
            if key not in names:
                close = closest(str(key), names)
                hint = f" (did you mean {close!r}?)" if close else ""
                raise src.error(f"unknown key {str(key)!r}{hint}; valid keys: {', '.join(names)}", str(key))
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            if (f.init and f.name not in mapping and f.default is dataclasses.MISSING
                    and f.default_factory is dataclasses.MISSING):
                raise src.error("required key is missing", f.name)
        try:
            return cls(**{str(k): v for k, v in mapping.items()})
        except InputError as exc:
            raise src.relocate(exc) from None
        except RecursionError:  # a YAML alias that contains itself
            raise src.error("a value contains itself or is nested too deeply") from None

    @classmethod
    def from_file(cls: type[C], path: str | os.PathLike, what: str = "config file") -> C:
        """Read YAML or JSON (:func:`modelseek.core.io.read_config`) and build; an empty file gives the defaults."""
        data, src = read_config(path, what)
        return cls.from_mapping({} if data is None else data, source=src)

    def to_mapping(self) -> dict[str, Any]:
        """Plain data (enums as values, paths as strings, tuples as lists) that :meth:`from_mapping` reads
        back to an equal config."""
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}  # type: ignore[arg-type]

    def replace(self: C, **changes: Any) -> C:
        """A copy with ``changes`` (validated like :meth:`from_mapping`)."""
        return type(self).from_mapping({**self.to_mapping(), **changes})


def _plain(v: Any) -> Any:
    if isinstance(v, Config):
        return v.to_mapping()
    if isinstance(v, enum.Enum):
        return v.value
    if isinstance(v, Path):
        return str(v)
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, Mapping):
        return {k: _plain(x) for k, x in v.items()}
    return v


def parse_overrides(pairs: Iterable[str], option: str = "pairs") -> dict[str, Any]:
    """``["key=value", ...]`` (as given by a repeated ``--set`` option) to a mapping; values are YAML
    scalars (``5`` an int, ``1.0e-4`` a float, ``true`` a bool, ``[a, b]`` a list); keys may be dotted for
    nested configs (``optimiser.lr=0.1`` gives ``{"optimiser": {"lr": 0.1}}``)."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = str(pair).partition("=")
        key = key.strip()
        if not sep or not key:
            raise InputError(f"expected KEY=VALUE, got {pair!r}", field=option)
        try:
            value, _ = loads_yaml_located(text) if text.strip() else (None, {})
        except InputError as exc:
            raise InputError(f"{key}: {exc.message}", field=option) from None
        *parents, last = key.split(".")
        target = out
        for part in parents:
            target = target.setdefault(part, {})
            if not isinstance(target, dict):
                raise InputError(f"{key!r} sets a key inside a value given on its own", field=option)
        target[last] = value
    return out


def from_mapping(cls: type[C], mapping: Any, *, source: Source | str | os.PathLike | None = None) -> C:
    """Function form of :meth:`Config.from_mapping`."""
    return cls.from_mapping(mapping, source=source)


def to_mapping(config: Config) -> dict[str, Any]:
    """Function form of :meth:`Config.to_mapping`."""
    return config.to_mapping()
