"""Every pluggable kind, declared once: :data:`KINDS`.

A kind's declaration (:class:`Kind`) states its name, its contract (one base class or Protocol), the entry-point
group outside distributions declare members in, how its members declare their parameters, the namespace it shares
with other kinds (rankers and estimators are both ``--method`` names), and its ONE check: a function
``check(name, obj) -> member`` run on every member when it is loaded, built-in (at its registration) and plugin
(at its first use) alike. The check verifies the signature of every method the contract calls, that the member's
own name is the name it is registered under, and the kind's invariants; it returns the member as registered (an
estimator function becomes its record, a metric class its instance).

The registries (:class:`modelseek.core.registry.Registry`) read their group, check and namespace from here, so nothing
else declares a kind. Plugin authors run the same check in their own tests with :func:`check_member`
(re-exported as :func:`modelseek.testing.check_member`); ``modelseek plugins`` prints :func:`report`.
This module names other modules by import strings only: importing it imports no kind.

**Registration is spelled one way**, for every kind, built-in and in a plugin author's own code alike:
:func:`register` (``modelseek.register``)::

    @register("ranker")                        # a class: registered under its own ``name``
    class MyRanker(Ranker): ...

    @register("estimator", name="my_score", input="features", seeded=False)   # properties of the kind
    def my_score(features, labels): ...

    register("fusion method", FusionMethod("my-max", ...))                     # a record, not a decorator

Outside distributions declare the same members as entry points instead (the kind's ``group``).
"""

from __future__ import annotations

import importlib
import inspect
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .errors import ModelseekError


@dataclass(frozen=True)
class Kind:
    """One pluggable kind (see the module docstring). Targets are ``"module:attribute"`` strings."""

    #: the kind's name (``modelseek plugins`` and :func:`check_member` take it)
    name: str
    #: the registry holding the members
    registry_target: str
    #: the contract: one base class or Protocol
    contract: str
    #: the entry-point group of outside distributions
    group: str
    #: the one check: ``check(name, obj) -> member``
    check: str
    #: how a member declares its parameters
    parameters: str
    #: the word in messages (default: the name)
    word: str = ""
    #: kinds with the same namespace share one space of names: a plugin may not reuse a name of either
    namespace: str | None = None
    #: ``build(name, obj, **properties) -> member``: how :func:`register` makes the member from what it is given
    #: (an estimator's function and its properties become its record); None: the object is the member
    build: str | None = None
    #: the typed properties every member of the kind states (read by :func:`describe`)
    properties: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return self.word or self.name

    def registry(self) -> Any:
        return _target(self.registry_target)

    def contract_class(self) -> Any:
        return _target(self.contract)


KINDS: tuple[Kind, ...] = (
    Kind("ranker", "modelseek.retrieval.rankers._registry:RANKERS", "modelseek.retrieval.rankers.base:Ranker",
         "modelseek.rankers",
         "modelseek.retrieval.rankers._registry:check_ranker",
         "constructor keyword parameters, their rules in `_parameter_constraints` (checked by `validate_params`)",
         word="method", namespace="method", properties=("needs_fit", "needs_text")),
    Kind("estimator", "modelseek.retrieval.estimators._registry:ESTIMATORS",
         "modelseek.retrieval.estimators:Estimator",
         "modelseek.estimators", "modelseek.retrieval.estimators._registry:check_estimator",
         "keyword-only parameters of the function after (features, labels); properties by `register(...)`",
         namespace="method", build="modelseek.retrieval.estimators._registry:estimator_record",
         properties=("input", "seeded", "higher_is_better", "uses_validation", "scale_invariant", "regression")),
    Kind("fusion method", "modelseek.retrieval.fusion.methods:FUSION_METHODS",
         "modelseek.retrieval.fusion.methods:FusionMethod",
         "modelseek.fusion", "modelseek.retrieval.fusion.methods:check_fusion_method",
         "the fields of the FusionMethod record (uses_scores, takes_weights); weights, norm and k per call",
         properties=("uses_scores", "takes_weights")),
    Kind("metric", "modelseek.retrieval.metrics.base:METRICS", "modelseek.retrieval.metrics.base:Metric",
         "modelseek.metrics",
         "modelseek.retrieval.metrics.base:check_metric", "a cut-off `@k` in the name (class attribute `cutoff`)",
         properties=("cutoff", "higher_is_better", "missing")),
    Kind("model source", "modelseek.retrieval.vision.sources:SOURCES",
         "modelseek.retrieval.vision.sources.base:ModelSource",
         "modelseek.sources", "modelseek.retrieval.vision.sources:check_source",
         "an entry's `model_parameters` (read by `build(entry, spec)`)", properties=("package", "extra")),
    Kind("executor", "modelseek.retrieval.executors:EXECUTORS", "modelseek.retrieval.executors:Executor",
         "modelseek.executors",
         "modelseek.retrieval.executors:check_executor",
         "constructor keyword parameters (`address`, `max_retries` ...)",
         properties=("in_process", "concurrency")),
    Kind("meta-model", "modelseek.eevee.models:META_MODELS", "modelseek.eevee.models:MetaModel",
         "modelseek.meta_models", "modelseek.eevee.meta_models:check_meta_model",
         "the record's `params` (a Config class: `--meta-param`); a scikit-learn regressor: its constructor's",
         properties=("seeded", "parallel")),
    Kind("style retriever", "modelseek.style.retrievers:RETRIEVERS", "modelseek.style.retrievers:Retriever",
         "modelseek.style_retrievers", "modelseek.style.retrievers:check_retriever",
         "constructor keyword parameters (`blocks`, `pca`, `seed` and its own)"),
    Kind("style feature", "modelseek.style.descriptors:EXTRACTORS", "modelseek.style.descriptors:Extractor",
         "modelseek.style_features", "modelseek.style.descriptors:check_extractor",
         "a `Params` config class (modelseek.core.config.Config) built by `make_extractor`"),
    Kind("task encoder", "modelseek.retrieval.taskrep.encoders:ENCODERS",
         "modelseek.retrieval.taskrep.encoders:Encoder",
         "modelseek.task_encoders", "modelseek.retrieval.taskrep.encoders:check_encoder",
         "keyword parameters of the factory, every one with a default"),
)

_BY_NAME = {k.name: k for k in KINDS}
_BY_LABEL = {k.label: k for k in KINDS}


def declared(name: str, exact: bool = False) -> Kind | None:
    """The declaration of the kind ``name`` (its name, or unless ``exact`` its word in messages); None if none."""
    return _BY_NAME.get(name) or (None if exact else _BY_LABEL.get(name))


def kind(name: str) -> Kind:
    """The declaration of kind ``name``; an unknown one is a :class:`ModelseekError` listing them."""
    found = declared(name)
    if found is None:
        raise ModelseekError(f"unknown kind {name!r}; kinds: {', '.join(_BY_NAME)}")
    return found


def check_member(kind_name: str, obj: Any, name: str | None = None) -> Any:
    """Run kind ``kind_name``'s one check on ``obj`` (registered as ``name``, default its own ``name``): what every
    built-in passes when it registers and every plugin when it is loaded. Returns the member as registered; a broken
    contract raises ``TypeError``/``ValueError`` saying what is wrong. For a plugin author's tests::

        from modelseek.testing import check_member
        check_member("fusion method", MY_METHOD)
    """
    k = kind(kind_name)
    if name is None:
        name = own_name(k, obj)
    if not isinstance(name, str) or not name:
        raise TypeError(f"{k.name}: give the name it is registered under (name=...)")
    return _target(k.check)(name, obj)


_NO_MEMBER: Any = object()


def register(kind_name: str, member: Any = _NO_MEMBER, /, *, name: str | None = None, **properties: Any) -> Any:
    """Register ``member`` as a member of kind ``kind_name`` under ``name`` (default: its own name, as in
    :func:`check_member`), through the kind's one check; without ``member``, a decorator doing so. ``properties``
    are the kind's own (an estimator's ``input``, ``seeded``, ``higher_is_better`` ...: its ``build``); a kind
    without properties refuses them. A name already registered is a ``ValueError`` naming where it was. Returns
    ``member`` as given (a module keeps its plain function or class), so it stacks as a decorator."""
    k = kind(kind_name)
    frame = inspect.currentframe()
    caller = frame.f_back if frame is not None else None
    module = caller.f_globals.get("__name__") if caller is not None else None  # the registering module: its origin
    if properties and k.build is None:
        raise TypeError(f"{k.name}: register takes no properties here ({', '.join(sorted(properties))}); "
                        f"a {k.name} declares {k.parameters}")

    def add(obj: Any) -> Any:
        n = own_name(k, obj) if name is None else name
        built = obj if k.build is None else _target(k.build)(n, obj, **properties)
        k.registry().add(n, built, module)
        return obj

    return add if member is _NO_MEMBER else add(member)


def unregister(kind_name: str, name: str) -> None:
    """Remove the member ``name`` of kind ``kind_name`` (for tests and code that registers temporarily)."""
    kind(kind_name).registry().unregister(name)


def own_name(k: Kind, obj: Any) -> str:
    """The name a member calls itself: its ``name`` (a class attribute or a record's field), a fusion method's
    ``value``, or a function's ``__name__``; a ``TypeError`` asking for ``name=`` when it has none."""
    for attr in ("name", "value", "__name__"):
        found = getattr(obj, attr, None)
        if isinstance(found, str) and found:
            return found
    raise TypeError(f"{k.name}: give the name it is registered under (name=...)")


# ---------------------------------------------------------------------------------------- helpers of the checks
def takes(what: str, fn: Any, params: Sequence[str], *, bound: bool = False) -> None:
    """A ``TypeError`` unless ``fn`` can be called with the positional arguments ``params`` (one more, ``self``,
    when ``fn`` is a method read from a class: ``bound=False``)."""
    if not callable(fn):
        raise TypeError(f"{what} is not callable")
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin without a signature: nothing to check
        return
    args = list(params) if bound else ["self", *params]
    try:
        sig.bind(*args)
    except TypeError:
        raise TypeError(f"{what} must take ({', '.join(params)}); its signature is {sig}") from None


def named(what: str, own: object, name: str) -> None:
    """A ``TypeError`` unless the member's own name ``own`` is the name it is registered under."""
    if own != name:
        raise TypeError(f"{what}'s own name is {own!r}: register it (or name the entry point) {own!r}")


def overrides(cls: type, base: type, method: str) -> bool:
    return getattr(cls, method, None) is not getattr(base, method, None)


# ---------------------------------------------------------------------------------------- one descriptor per member
@dataclass(frozen=True)
class Descriptor:
    """One member of any kind, described one way (``modelseek plugins --json`` prints it): its name, the first line
    of its own description, the typed properties its kind declares (:attr:`Kind.properties`: booleans, names,
    numbers) and its own parameters with their defaults (None: no default)."""

    kind: str
    name: str
    summary: str
    properties: dict[str, Any]
    parameters: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"summary": self.summary, "properties": dict(self.properties), "parameters": dict(self.parameters)}


def describe(kind_name: str, name: str, member: Any) -> Descriptor:
    """The :class:`Descriptor` of ``member`` (as registered: a record, a class, a metric instance, a factory) of kind
    ``kind_name``, registered as ``name``."""
    k = kind(kind_name)
    props = {p: _plain(getattr(member, p, None)) for p in k.properties}
    return Descriptor(k.name, name, _summary(member), props, _parameters(member))


def _summary(member: Any) -> str:
    for attr in ("summary", "description"):  # a record's own (an estimator's, a fusion method's, a meta-model's)
        text = getattr(member, attr, None)
        if isinstance(text, str) and text.strip():
            return text.strip().splitlines()[0]
    obj = member if isinstance(member, type) or inspect.isfunction(member) else type(member)
    doc = vars(obj).get("__doc__") or ""  # its own, never a base class's; else its module's
    if not doc.strip():
        module = importlib.import_module(obj.__module__) if getattr(obj, "__module__", None) else None
        doc = (module.__doc__ if module is not None else None) or ""
    doc = inspect.cleandoc(doc)
    return doc.splitlines()[0] if doc else ""


def _parameters(member: Any) -> dict[str, Any]:
    """The member's own parameters and their defaults: a record's ``params``/``Params`` config class (a meta-model,
    a style feature), an estimator's keywords after (features, labels), a class's constructor's, a factory's."""
    import dataclasses

    config = getattr(member, "params", None) or getattr(member, "Params", None)
    if isinstance(config, type) and dataclasses.is_dataclass(config):
        made = config()
        return {f.name: _plain(getattr(made, f.name)) for f in dataclasses.fields(config) if f.init}
    fn = getattr(member, "fn", None)
    if callable(fn):  # an estimator's record: the keywords of its own function
        target, skip = getattr(fn, "__wrapped__", fn), 2
    elif isinstance(member, type) or inspect.isfunction(member):  # a class: its constructor's, without self
        target, skip = member, 0
    else:  # a record whose calls take per-call values only (a fusion method), a metric instance
        return {}
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):
        return {}
    params = [p for p in sig.parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)][skip:]
    return {p.name: None if p.default is p.empty else _plain(p.default) for p in params}


def _plain(value: Any) -> Any:
    """``value`` as JSON holds it: an enum by its value, a sequence as a list, anything else not plain as text."""
    import enum

    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # JSON has no NaN
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return str(value)


# ---------------------------------------------------------------------------------------- the plugins report
@dataclass(frozen=True)
class Member:
    kind: str
    name: str
    #: "built-in" or the distribution's name
    origin: str
    #: why it cannot be used (None: it can)
    broken: str | None = None
    #: what it is (None: not loaded, or broken)
    descriptor: Descriptor | None = None


def report(load: bool = True) -> list[Member]:
    """Every member of every kind with its origin; with ``load`` every plugin is loaded (and checked), so a broken
    import or contract shows as broken too."""
    out: list[Member] = []
    for k in KINDS:
        reg = k.registry()
        for n, dist, why in reg.members():
            desc = None
            if why is None and load:
                try:
                    member = reg.get(n) if dist is not None else reg.builtin(n)
                    desc = describe(k.name, n, member)
                except ModelseekError as exc:
                    why = str(exc)
            out.append(Member(k.name, n, "built-in" if dist is None else dist, why, desc))
    return out


def _target(target: str) -> Any:
    module, attr = target.split(":", 1)
    return getattr(importlib.import_module(module), attr)


__all__ = ["KINDS", "Descriptor", "Kind", "Member", "check_member", "declared", "describe", "kind", "named",
           "overrides", "own_name",
           "register", "report", "takes", "unregister"]
