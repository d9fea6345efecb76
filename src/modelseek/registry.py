"""One small generic registry for every pluggable kind (estimators, rankers, metrics, tests...).

Entries register by decorator (``@REG.register("name")``) or lazily by an import string
(``REG.register_lazy("name", "modelseek.rankers.avgrank:AvgRank")``) so that a registry lists names without
importing heavy modules. A duplicate name raises; an unknown name raises with "did you mean" and the list
of valid names.
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil
from collections.abc import Callable, Iterable, Iterator
from typing import Generic, TypeVar

from .errors import ModelseekError

T = TypeVar("T")


def closest(name: str, choices: Iterable[str]) -> str | None:
    """The choice most like ``name`` (difflib's ratio, cutoff 0.6), for "did you mean" hints; None if none."""
    close = difflib.get_close_matches(str(name), list(choices), n=1)
    return close[0] if close else None


class UnknownNameError(ModelseekError, KeyError):
    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class Registry(Generic[T]):
    """A name -> object mapping with lazy entries.

    >>> r = Registry("colour")
    >>> _ = r.register("red")(lambda: 1)
    >>> r.names()
    ['red']
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}
        self._lazy: dict[str, str] = {}

    def _check_new(self, name: str) -> None:
        if not name or not isinstance(name, str):
            raise ValueError(f"{self.kind} name must be a non-empty string")
        if name in self._items or name in self._lazy:
            raise ValueError(f"duplicate {self.kind} name: {name!r}")

    def register(self, name: str) -> Callable[[T], T]:
        self._check_new(name)

        def deco(obj: T) -> T:
            self._items[name] = obj
            return obj

        return deco

    def add(self, name: str, obj: T) -> T:
        self._check_new(name)
        self._items[name] = obj
        return obj

    def register_lazy(self, name: str, target: str) -> None:
        """Register ``"package.module:Attr"``; imported on first :meth:`get`."""
        if ":" not in target:
            raise ValueError(f"lazy target must look like 'module:Attr', got {target!r}")
        self._check_new(name)
        self._lazy[name] = target

    def get(self, name: str) -> T:
        if name in self._items:
            return self._items[name]
        if name in self._lazy:
            module, attr = self._lazy[name].split(":", 1)
            obj = getattr(importlib.import_module(module), attr)
            self._items[name] = obj
            del self._lazy[name]
            return obj
        names = self.names()
        close = closest(name, names)
        hint = f" Did you mean {close!r}?" if close else ""
        raise UnknownNameError(f"unknown {self.kind} {name!r}.{hint} Valid names: {', '.join(names)}")

    def names(self) -> list[str]:
        return sorted(set(self._items) | set(self._lazy))

    def __contains__(self, name: object) -> bool:
        return name in self._items or name in self._lazy

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())


class PluginRegistry(Registry[T]):
    """A registry whose members register themselves in the modules of one package (a new member is one file):
    the package's public modules (``_``-prefixed ones excepted) are imported the first time a name is missing or
    the names are listed. ``first`` modules are imported before the others, and ``ordered`` lists names in
    registration order instead of sorted."""

    def __init__(self, kind: str, package: str, *, first: tuple[str, ...] = (), ordered: bool = False) -> None:
        super().__init__(kind)
        self.package, self.first, self.ordered = package, first, ordered
        self._discovered = False

    def discover(self) -> None:
        if self._discovered:
            return
        self._discovered = True
        pkg = importlib.import_module(self.package)
        for name in self.first:
            importlib.import_module(f"{self.package}.{name}")
        for mod in pkgutil.iter_modules(pkg.__path__):
            if not mod.name.startswith("_"):
                importlib.import_module(f"{self.package}.{mod.name}")

    def get(self, name: str) -> T:
        if name not in self._items and name not in self._lazy:
            self.discover()
        return super().get(name)

    def names(self) -> list[str]:
        self.discover()
        return list(self._items) + sorted(self._lazy) if self.ordered else super().names()

    def __contains__(self, name: object) -> bool:
        if not super().__contains__(name):
            self.discover()
        return super().__contains__(name)

    def unregister(self, name: str) -> None:
        """Remove ``name`` (for tests and plug-ins that register temporarily)."""
        self.get(name)
        del self._items[name]
