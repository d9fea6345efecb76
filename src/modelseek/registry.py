"""One small generic registry for every pluggable kind (estimators, rankers, metrics, tests...).

Entries register by decorator (``@REG.register("name")``) or lazily by an import string
(``REG.register_lazy("name", "modelseek.rankers.avgrank:AvgRank")``) so that a registry lists names without
importing heavy modules. A duplicate name raises naming both origins; an unknown name raises with "did you mean"
and the list of valid names.

**Plugins from outside the package.** A registry made with an entry-point ``group`` (``modelseek.estimators``,
``modelseek.rankers``, ``modelseek.fusion``, ``modelseek.metrics``, ``modelseek.sources``,
``modelseek.executors``) also lists the entry
points that installed distributions declare in that group, by name and without importing them; a member is
loaded on first use and passed through the registry's ``adapt`` (which turns, e.g., a plain estimator function
into a registered estimator with the default properties). An entry point whose name is a built-in member is
refused with both origins named. A distribution declares one in its ``pyproject.toml``::

    [project.entry-points."modelseek.estimators"]
    my_score = "my_package.scores:my_score"     # def my_score(features, labels) -> float
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar

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

    def __init__(self, kind: str, *, group: str | None = None,
                 adapt: Callable[[str, Any], T] | None = None) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}
        self._lazy: dict[str, str] = {}
        #: entry-point group of plugins (None: none); their members, by name, until loaded
        self.group = group
        self._adapt = adapt
        self._plugins: dict[str, Any] = {}
        self._plugins_read = group is None

    def origin(self, name: str) -> str:
        """Where member ``name`` comes from: a module, an import string, or an entry point and its distribution."""
        if name in self._plugins:
            return self.origin_of(self._plugins[name])
        if name in self._lazy:
            return self._lazy[name]
        obj: Any = self._items.get(name)
        # a record's own function (an estimator's fn, a fusion method's combine) says where it was written
        inner = next((getattr(obj, a) for a in ("fn", "combine") if callable(getattr(obj, a, None))), obj)
        module = getattr(inner, "__module__", None)
        return f"module {module}" if module else "this package"

    def _check_new(self, name: str) -> None:
        if not name or not isinstance(name, str):
            raise ValueError(f"{self.kind} name must be a non-empty string")
        if name in self._items or name in self._lazy:
            raise ValueError(f"duplicate {self.kind} name: {name!r} (already registered by {self.origin(name)})")

    def _read_plugins(self) -> None:
        """The group's entry points, by name (none is imported here); a built-in name is refused."""
        if self._plugins_read:
            return
        self._plugins_read = True
        from importlib.metadata import entry_points

        assert self.group is not None
        for ep in entry_points(group=self.group):
            if ep.name in self._items or ep.name in self._lazy:
                raise ModelseekError(f"{self.kind} {ep.name!r} of {self.origin_of(ep)} clashes with the built-in "
                                     f"{self.kind} of {self.origin(ep.name)}; rename the entry point")
            if ep.name in self._plugins:
                raise ModelseekError(f"{self.kind} {ep.name!r} is declared by both {self.origin_of(ep)} and "
                                     f"{self.origin(ep.name)}")
            self._plugins[ep.name] = ep

    @staticmethod
    def origin_of(ep: Any) -> str:
        return f"the entry point {ep.value!r} of the distribution {_dist_name(ep)!r}"

    def _load_plugin(self, name: str) -> T:
        ep = self._plugins[name]
        try:
            obj = ep.load()
        except Exception as exc:  # noqa: BLE001 - a plugin's own import error: say whose
            raise ModelseekError(f"{self.kind} {name!r}: loading {self.origin(name)} failed: "
                                 f"{type(exc).__name__}: {exc}") from None
        if name in self._items:  # importing it registered it (a decorator in the plugin's module)
            del self._plugins[name]
            return self._items[name]
        try:
            member = self._adapt(name, obj) if self._adapt is not None else obj
        except (TypeError, ValueError) as exc:
            raise ModelseekError(f"{self.kind} {name!r} of {self.origin(name)}: {exc}") from None
        del self._plugins[name]
        self._items[name] = member
        return member

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
        self._read_plugins()
        if name in self._plugins:
            return self._load_plugin(name)
        names = self.names()
        close = closest(name, names)
        hint = f" Did you mean {close!r}?" if close else ""
        raise UnknownNameError(f"unknown {self.kind} {name!r}.{hint} Valid names: {', '.join(names)}")

    def names(self) -> list[str]:
        self._read_plugins()
        return sorted(set(self._items) | set(self._lazy) | set(self._plugins))

    def __contains__(self, name: object) -> bool:
        if name in self._items or name in self._lazy:
            return True
        self._read_plugins()
        return name in self._plugins

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())


class PluginRegistry(Registry[T]):
    """A registry whose members register themselves in the modules of one package (a new member is one file):
    the package's public modules (``_``-prefixed ones excepted) are imported the first time a name is missing or
    the names are listed. ``first`` modules are imported before the others, and ``ordered`` lists names in
    registration order instead of sorted."""

    def __init__(self, kind: str, package: str, *, first: tuple[str, ...] = (), ordered: bool = False,
                 group: str | None = None, adapt: Callable[[str, Any], T] | None = None) -> None:
        super().__init__(kind, group=group, adapt=adapt)
        self._plugins_read = True  # read after the package's own members (discover), so clashes are seen
        self._has_group = group is not None
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
        self._plugins_read = not self._has_group
        self._read_plugins()

    def get(self, name: str) -> T:
        if name not in self._items and name not in self._lazy:
            self.discover()
        return super().get(name)

    def names(self) -> list[str]:
        self.discover()
        if self.ordered:
            return list(self._items) + sorted(set(self._lazy) | set(self._plugins))
        return super().names()

    def __contains__(self, name: object) -> bool:
        if name in self._items or name in self._lazy:
            return True
        self.discover()
        return super().__contains__(name)

    def unregister(self, name: str) -> None:
        """Remove ``name`` (for tests and plug-ins that register temporarily)."""
        self.get(name)
        del self._items[name]


def _dist_name(ep: Any) -> str:
    dist = getattr(ep, "dist", None)
    return getattr(dist, "name", None) or "?"
