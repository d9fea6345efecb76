"""One small generic registry for every pluggable kind (estimators, rankers, metrics, executors ...).

Each registry is made for one *kind* declared in :data:`modelseek.core.kinds.KINDS` (its name, contract, entry-point
group, how members declare parameters, the one check every member passes, the namespace it shares): the registry
takes its group, its check and its namespace from that declaration, so a kind is declared once.

Members of a declared kind register one way, :func:`modelseek.core.kinds.register` (which calls :meth:`Registry.add`),
or lazily by an import string (``REG.register_lazy("name", "modelseek.retrieval.rankers.avgrank:AvgRank")``) so that a
registry lists names without importing heavy modules; ``@REG.register("name")`` serves registries of no kind. A
duplicate built-in name raises naming both origins; an unknown name raises with "did you mean" and the list of
valid names.

**Plugins from outside the package.** The registry also lists the entry points that installed distributions
declare in its kind's group, by name and without importing them; a member is loaded on first use and passed
through the kind's check, the same check every built-in passes when it registers. A plugin fails alone: an entry
point whose name is a built-in (of this kind or of a kind sharing its namespace, such as rankers and estimators)
or another plugin's, whose module fails to import, or whose object breaks the contract, is recorded as *broken*:
its name is still listed, and only a command that uses it fails, with a :class:`PluginError` of one line naming
the entry point and its distribution (:func:`modelseek.core.kinds.report` lists every member with its origin and,
for a broken one, why). A distribution declares one in its ``pyproject.toml``::

    [project.entry-points."modelseek.estimators"]
    my_score = "my_package.scores:my_score"     # def my_score(features, labels) -> float
"""

from __future__ import annotations

import contextlib
import difflib
import importlib
import pkgutil
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar

from .errors import ModelseekError
from .kinds import declared
from .kinds import KINDS

T = TypeVar("T")


def closest(name: str, choices: Iterable[str]) -> str | None:
    """The choice most like ``name`` (difflib's ratio, cutoff 0.6), for "did you mean" hints; None if none."""
    close = difflib.get_close_matches(str(name), list(choices), n=1)
    return close[0] if close else None


class UnknownNameError(ModelseekError, KeyError):
    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class PluginError(ModelseekError):
    """A plugin member that cannot be used (a clash, an import error, a broken contract): one line naming the entry
    point and its distribution. Raised only by the command that uses the member."""


_ENTRY_POINTS: dict[str, list[Any]] | None = None


def entry_points_of(group: str) -> list[Any]:
    """The entry points of ``group`` in every installed distribution (read once per process, none imported)."""
    global _ENTRY_POINTS
    if _ENTRY_POINTS is None:
        import re
        from importlib.metadata import distributions

        found: dict[str, list[Any]] = {}
        seen: set[str] = set()
        for dist in distributions():  # one scan; a distribution on the path twice counts once (the first, as pip)
            key = re.sub(r"[-_.]+", "-", str(dist.metadata["Name"] or "")).lower()
            if key in seen:
                continue
            seen.add(key)
            for ep in dist.entry_points:
                found.setdefault(ep.group, []).append(ep)
        _ENTRY_POINTS = found
    return list(_ENTRY_POINTS.get(group, ()))


def _target(target: str) -> Any:
    module, attr = target.split(":", 1)
    return getattr(importlib.import_module(module), attr)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class Registry(Generic[T]):
    """A name -> object mapping with lazy entries, for the kind ``kind`` (a name of :data:`modelseek.core.kinds.KINDS`,
    whose declaration gives the entry-point group, the check and the namespace; another name makes a registry
    without plugins and without a check).

    >>> r = Registry("colour")
    >>> _ = r.register("red")(lambda: 1)
    >>> r.names()
    ['red']
    """

    def __init__(self, kind: str) -> None:
        decl = declared(kind, exact=True)
        self.declaration = decl
        #: the kind's word in messages ("estimator", "method" for the ranker namespace ...)
        self.kind = decl.label if decl is not None else kind
        self._items: dict[str, T] = {}
        self._lazy: dict[str, str] = {}
        #: entry-point group of plugins (None: none); their members, by name, until loaded
        self.group = decl.group if decl is not None else None
        self._check_target = decl.check if decl is not None else None
        self.namespace = decl.namespace if decl is not None else None
        self._plugins: dict[str, Any] = {}
        #: plugin members that cannot be used, by name: why (one line naming the entry point and distribution)
        self._broken: dict[str, str] = {}
        self._broken_eps: dict[str, Any] = {}
        #: the loaded plugin members' entry points, by name (their origin)
        self._loaded_eps: dict[str, Any] = {}
        self._plugins_read = self.group is None
        #: the module that registered each member by :meth:`add`, when its caller says (its origin)
        self._modules: dict[str, str] = {}

    # ------------------------------------------------------------------ the kind's one check
    def check(self, name: str, obj: Any) -> T:
        """``obj`` through the kind's check (the member registered under ``name``), as every member passes it."""
        if self._check_target is None:
            return obj
        return _target(self._check_target)(name, obj)

    # ------------------------------------------------------------------ origins
    def origin(self, name: str) -> str:
        """Where member ``name`` comes from: a module, an import string, or an entry point and its distribution."""
        for eps in (self._plugins, self._loaded_eps, self._broken_eps):
            if name in eps:
                return self.origin_of(eps[name])
        if name in self._lazy:
            return self._lazy[name]
        if name in self._modules:  # the module that registered it (a record's class is defined elsewhere)
            return f"module {self._modules[name]}"
        obj: Any = self._items.get(name)
        # a record's own function (an estimator's fn, a fusion method's combine) says where it was written
        inner = next((getattr(obj, a) for a in ("fn", "combine") if callable(getattr(obj, a, None))), obj)
        module = getattr(inner, "__module__", None)
        return f"module {module}" if module else "this package"

    def distribution(self, name: str) -> str | None:
        """The distribution that declares member ``name`` (None: a built-in)."""
        for eps in (self._plugins, self._loaded_eps, self._broken_eps):
            if name in eps:
                return _dist_name(eps[name])
        return None

    @staticmethod
    def origin_of(ep: Any) -> str:
        return f"the entry point {ep.value!r} of the distribution {_dist_name(ep)!r}"

    # ------------------------------------------------------------------ built-ins
    def _builtin_names(self) -> set[str]:
        return set(self._items) - set(self._loaded_eps) | set(self._lazy)

    def _check_new(self, name: str) -> None:
        if not name or not isinstance(name, str):
            raise ValueError(f"{self.kind} name must be a non-empty string")
        if name in self._items or name in self._lazy:
            raise ValueError(f"duplicate {self.kind} name: {name!r} (already registered by {self.origin(name)})")

    def register(self, name: str) -> Callable[[T], T]:
        self._check_new(name)

        def deco(obj: T) -> T:
            self._items[name] = self.check(name, obj)
            return obj

        return deco

    def add(self, name: str, obj: Any, module: str | None = None) -> T:
        """Register ``obj`` under ``name`` through the kind's check (``module``: the module registering it, its
        origin in messages); returns the registered member."""
        self._check_new(name)
        member = self.check(name, obj)
        self._items[name] = member
        if module:
            self._modules[name] = module
        return member

    def register_lazy(self, name: str, target: str) -> None:
        """Register ``"package.module:Attr"``; imported (and checked) on first :meth:`get`."""
        if ":" not in target:
            raise ValueError(f"lazy target must look like 'module:Attr', got {target!r}")
        self._check_new(name)
        self._lazy[name] = target

    # ------------------------------------------------------------------ plugins
    def _peers(self) -> list[Registry[Any]]:
        """The other registries of this registry's namespace (rankers and estimators share ``method``)."""
        if self.namespace is None:
            return []

        return [r for r in (k.registry() for k in KINDS if k.namespace == self.namespace) if r is not self]

    def _break(self, name: str, ep: Any, why: str) -> None:
        self._plugins.pop(name, None)
        self._broken[name] = why
        self._broken_eps[name] = ep

    def _read_plugins(self) -> None:
        """The group's entry points, by name (none is imported here). One that clashes with a built-in (of this
        kind or of a peer in its namespace) or with another plugin is recorded as broken, never raised here."""
        if self._plugins_read:
            return
        self._plugins_read = True
        assert self.group is not None
        peers = self._peers()
        for ep in entry_points_of(self.group):
            name = ep.name
            owner = next((r for r in (self, *peers) if name in r._builtin_names()), None)
            if owner is not None:
                self._break(name, ep, f"{self.kind} {name!r} of {self.origin_of(ep)} clashes with the built-in "
                                      f"{owner.kind} of {owner.origin(name)}; rename the entry point")
                continue
            other = next((r for r in (self, *peers) if name in r._plugins or name in r._broken_eps), None)
            if other is not None:
                first = other._plugins.get(name) or other._broken_eps[name]
                why = (f"{self.kind} {name!r} is declared by both {self.origin_of(ep)} and "
                       f"{other.origin_of(first)}; rename one entry point")
                other._break(name, first, why)
                self._break(name, ep, why)
                continue
            self._plugins[name] = ep
        for peer in peers:
            peer._read_plugins()

    def _load_plugin(self, name: str) -> T:
        ep = self._plugins[name]
        try:
            obj = ep.load()
        except Exception as exc:  # noqa: BLE001 - a plugin's own import error: say whose, and only here
            self._break(name, ep, f"{self.kind} {name!r}: loading {self.origin_of(ep)} failed: {_one_line(exc)}")
            raise PluginError(self._broken[name]) from None
        try:
            member = self.check(name, obj)
        except Exception as exc:  # noqa: BLE001 - a broken contract: say whose
            self._break(name, ep, f"{self.kind} {name!r} of {self.origin_of(ep)} breaks the contract: "
                                  f"{_one_line(exc)}")
            raise PluginError(self._broken[name]) from None
        del self._plugins[name]
        self._items[name] = member
        self._loaded_eps[name] = ep
        return member

    # ------------------------------------------------------------------ the call boundary
    def failure(self, name: str, call: str, exc: BaseException,
                keep: tuple[type[BaseException], ...] = ()) -> BaseException:
        """What a caller raises when member ``name``'s ``call`` raised ``exc``: for a plugin (a member of an
        outside distribution), a :class:`PluginError` of one line naming the entry point, the distribution, the call
        and what it raised; for a built-in, or an error of the types ``keep`` (those the kind's contract lets a
        member raise), ``exc`` itself (its own errors keep their meaning)."""
        ep = self._loaded_eps.get(name)
        if ep is None or isinstance(exc, (PluginError, *keep)):
            return exc
        return PluginError(f"{self.kind} {name!r} of {self.origin_of(ep)}: {call} raised {_one_line(exc)}")

    @contextlib.contextmanager
    def calling(self, name: str, call: str, keep: tuple[type[BaseException], ...] = ()) -> Iterator[None]:
        """The one call boundary of this kind: every call into a member goes through it, as
        ``with REG.calling(name, "combine"): member.combine(values, weights)``. An exception from a plugin member
        becomes one line naming its entry point, distribution and ``call`` (:meth:`failure`); a built-in's pass
        unchanged."""
        try:
            yield
        except Exception as exc:
            err = self.failure(name, call, exc, keep)
            if err is exc:
                raise
            raise err from None

    def leave_out(self, name: str, why: str) -> None:
        """Record the plugin member ``name`` as unusable for the rest of this process, because ``why`` (one line:
        a call into it raised): a whole-registry use (a search over every member) leaves it out and names it with
        why, as a member broken at load time; a built-in is never left out."""
        ep = self._loaded_eps.get(name)
        if ep is not None:
            self._items.pop(name, None)
            del self._loaded_eps[name]
            self._break(name, ep, why)

    def broken(self) -> dict[str, str]:
        """The plugin members that cannot be used (those found so far: a failed import is found on loading)."""
        self._read_plugins()
        return dict(self._broken)

    def members(self) -> list[tuple[str, str | None, str | None]]:
        """``(name, distribution or None for a built-in, why it cannot be used or None)`` of every member of this
        registry itself (a built-in and a plugin that clashes with it are two rows); imports no plugin."""
        self._read_plugins()
        rows: list[tuple[str, str | None, str | None]] = [(n, None, None) for n in sorted(self._builtin_names())]
        rows += [(n, _dist_name(ep), None) for n, ep in sorted({**self._plugins, **self._loaded_eps}.items())]
        rows += [(n, _dist_name(ep), self._broken[n]) for n, ep in sorted(self._broken_eps.items())]
        return rows

    def _refuse_broken(self, name: str) -> None:
        self._read_plugins()
        for r in (self, *self._peers()):
            if name in r._broken:
                raise PluginError(r._broken[name])

    # ------------------------------------------------------------------ lookup
    def get(self, name: str) -> T:
        self._refuse_broken(name)
        if name in self._items:
            return self._items[name]
        if name in self._lazy:
            return self._load_lazy(name)
        if name in self._plugins:
            return self._load_plugin(name)
        names = self.names()
        close = closest(name, names)
        hint = f" Did you mean {close!r}?" if close else ""
        raise UnknownNameError(f"unknown {self.kind} {name!r}.{hint} Valid names: {', '.join(names)}")

    def unregister(self, name: str) -> None:
        """Remove ``name`` (for tests and code that register temporarily: :func:`modelseek.core.kinds.unregister`)."""
        self.get(name)
        del self._items[name]
        self._loaded_eps.pop(name, None)
        self._modules.pop(name, None)

    def _load_lazy(self, name: str) -> T:
        """Import the lazy built-in ``name`` (its ``"module:Attr"``), through the kind's check, once."""
        member = self.check(name, _target(self._lazy[name]))
        self._items[name] = member
        del self._lazy[name]
        return member

    def builtin(self, name: str) -> T:
        """The built-in member ``name``, also where a plugin's entry point of the same name clashes with it (then
        :meth:`get` refuses the ambiguous name): for the package's own uses of a built-in that no user named. Any
        other name is :meth:`get`'s."""
        if name in self._lazy:
            return self._load_lazy(name)
        if name in self._builtin_names() and name not in self._loaded_eps:
            return self._items[name]
        return self.get(name)

    def usable(self) -> tuple[dict[str, T], dict[str, str]]:
        """({name: member} of every member a whole-registry use (a search over every method) can take: the
        built-ins and each plugin that loads and passes the check, in :meth:`names` order; {name: why} of the plugin
        members left out, each why one line naming the entry point and distribution). A broken plugin fails alone:
        left out here, it fails only a command that names it. Loads the plugins (their first use)."""
        out: dict[str, T] = {}
        left: dict[str, str] = {}
        for name in self.names():
            try:
                out[name] = self.get(name)
            except PluginError as exc:
                left[name] = str(exc)
                if name in self._builtin_names():  # a plugin named as a built-in: the plugin is the broken member
                    out[name] = self.builtin(name)
        return out, left

    def names(self) -> list[str]:
        """Every member's name, broken plugins included (using one is its error); imports no plugin."""
        self._read_plugins()
        return sorted(set(self._items) | set(self._lazy) | set(self._plugins) | set(self._broken))

    def __contains__(self, name: object) -> bool:
        if name in self._items or name in self._lazy:
            return True
        self._read_plugins()
        return name in self._plugins or name in self._broken

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
        self._has_group = self.group is not None
        self._plugins_read = True  # read after the package's own members (discover), so clashes are seen
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

    def _builtin_names(self) -> set[str]:
        self.discover()
        return super()._builtin_names()

    def _read_plugins(self) -> None:
        self.discover()
        super()._read_plugins()

    def get(self, name: str) -> T:
        self.discover()
        return super().get(name)

    def origin(self, name: str) -> str:
        self.discover()
        return super().origin(name)

    def names(self) -> list[str]:
        self.discover()
        if self.ordered:
            self._read_plugins()
            rest = sorted(set(self._lazy) | set(self._plugins) | set(self._broken))
            return list(dict.fromkeys([*self._items, *rest]))  # a plugin clashing with a built-in: once
        return super().names()

    def __contains__(self, name: object) -> bool:
        self.discover()
        return super().__contains__(name)


def _dist_name(ep: Any) -> str:
    dist = getattr(ep, "dist", None)
    return getattr(dist, "name", None) or "?"
