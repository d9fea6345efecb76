"""One road from a method to a fitted ranker, used by :func:`modelseek.rank`, :func:`modelseek.retrieval.bench.
cross_validate` and every command (``rank``, ``bench``, ``train-ranker``).

A *method* is one of:

* a registered name (``avgrank``, ``adaptive``, ``logme`` ...): built with its parameters and, when it
  learns, fitted on the training ground truth (and the training tasks' text where it reads text);
* ``"default"``: the user's installed default (``train-ranker --install-default``), else the ranker shipped in the
  package (``resources/rankers/default.json`` names its artifact), see :mod:`modelseek.retrieval.rankers.default`;
* the name of another shipped artifact (``ltr-ntcir19``) or the path of a saved artifact (``.json``);
* a :class:`~modelseek.retrieval.rankers.base.Ranker` instance (fitted here if it needs it and is not yet).

Parameters are checked against the ranker's constructor (:meth:`Ranker.param_names`): an unknown one is an
:class:`~modelseek.core.errors.InputError` with a did-you-mean, everywhere; their values are coerced by the
constructor's annotations and checked against the ranker's declared constraints
(:meth:`Ranker.validate_params`) when it is built. For cross-validation, :func:`build`
turns any method (an artifact too) into an *unfitted* ranker of the same method and parameters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ...core.config import coerce
from ..data.pool import Pool
from ..data.task import TaskSet
from ..data.truth import GroundTruth
from ...core.errors import InputError
from ...core.registry import UnknownNameError, closest
from ._artifact import read_artifact
from ._registry import RANKERS
from .base import Ranker
from .default import artifact_dir, builtin_artifact, default_spec, load_artifact
from ..data.pool import ntcir_pool


def _registry():
    return RANKERS


def artifact_path(method: str) -> Path | None:
    """The artifact file that ``method`` names (``default``, a shipped artifact name, a ``.json`` path), or None
    for a registered method name."""
    if method == "default":
        return default_spec().artifact
    if method in _registry():
        return None
    if method.endswith(".json") or "/" in method or Path(method).suffix:
        return Path(method)
    return builtin_artifact(method)


def artifact_spec(path: str | Path) -> tuple[str, dict[str, Any]]:
    """(method name, parameters) recorded in a saved artifact."""
    path = Path(path)
    doc = read_artifact(path)
    try:
        _registry().get(doc["method"])  # unknown method -> did-you-mean error
    except UnknownNameError as exc:  # the registry's did-you-mean error, located in the artifact
        raise InputError(str(getattr(exc, "message", exc)), path=path, field="method") from None
    params = doc.get("params") or {}
    if not isinstance(params, dict):
        raise InputError("'params' must be an object", path=path, field="params")
    return doc["method"], dict(params)


def ranker_class(method: str | Ranker) -> type[Ranker]:
    """The class a method resolves to (without fitting or loading anything heavy)."""
    if isinstance(method, Ranker):
        return type(method)
    if method not in _registry():
        path = artifact_path(method)
        if path is None:
            return _registry().get(method)  # raises with did-you-mean
        return _registry().get(artifact_spec(path)[0])
    return _registry().get(method)


def check_params(method: str | Ranker, params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` if ``method`` declares every one of them; else an InputError with a did-you-mean."""
    cls = ranker_class(method)
    valid = cls.param_names()
    for key in params:
        if key not in valid:
            close = closest(key, valid)
            hint = f" Did you mean {close!r}?" if close else ""
            listed = ", ".join(valid) if valid else "none"
            raise InputError(f"method {getattr(cls, 'name', method)!r} has no parameter {key!r}.{hint} "
                             f"Valid: {listed}", field="params")
    return dict(params)


def split_params(methods: Sequence[str], params: Mapping[str, Any], seed: int | None = None
                 ) -> dict[str, dict[str, Any]]:
    """Per method, the given ``params`` it declares (a key no method declares is an error with a did-you-mean)
    plus ``seed`` where it declares one (not for saved artifacts, whose seed is part of what was fitted)."""
    names = {m: ranker_class(m).param_names() for m in methods}
    for key in params:
        if not any(key in v for v in names.values()):
            if len(methods) == 1:
                check_params(methods[0], {key: params[key]})
            valid = sorted({p for v in names.values() for p in v})
            close = closest(key, valid)
            hint = f" Did you mean {close!r}?" if close else ""
            raise InputError(f"no method of {', '.join(map(str, methods))} has a parameter {key!r}.{hint}",
                             field="params")
    out = {}
    for m in methods:
        p = {k: v for k, v in params.items() if k in names[m]}
        if seed is not None and "seed" in names[m] and "seed" not in p and artifact_path(m) is None:
            p["seed"] = seed
        out[m] = p
    return out


_SCALARS = (bool, int, float, str)


def _typed(cls: type, params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` coerced to the scalar types the constructor annotates (``int``, ``float``, ``str``, ``bool``,
    optional or not) by the config layer's one :func:`~modelseek.core.config.coerce`: ``--param k=nan`` or
    ``temperature=`` is a one-line error here, not a ``TypeError`` deep in a fit. Other annotations (pools,
    estimators, mappings) are left to the ranker."""
    import types
    import typing


    try:
        hints = typing.get_type_hints(cls.__init__)  # type: ignore[misc]  # the class's constructor, for its hints
    except Exception:  # noqa: BLE001 - an annotation that cannot be resolved here: nothing to coerce by
        return dict(params)
    out = dict(params)
    for key, value in params.items():
        hint = hints.get(key)
        members = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
        if hint is None or not all(m in _SCALARS or m is type(None) for m in members):
            continue
        try:
            out[key] = coerce(value, hint, key)
            declared = key in getattr(cls, "_parameter_constraints", {})  # then validate_params names the rule
            if key == "seed" and not declared and isinstance(out[key], int) and not 0 <= out[key] < 2**32:  # as --seed
                raise InputError(f"must be an integer in [0, 4294967295], got {out[key]}", field=key)
        except InputError as exc:
            raise InputError(f"method {getattr(cls, 'name', cls.__name__)!r}: {exc.message}",
                             field=f"params.{key}") from None
    return out


def make(method: str, **params: Any) -> Ranker:
    """A new, unfitted instance of the registered ``method`` with checked ``params``."""
    cls = _registry().get(method)
    ranker = cls(**_typed(cls, check_params(method, params)))
    ranker.validate_params()  # a bad value is an error before any data is read, not first in fit
    return ranker


def build(method: str | Ranker, params: Mapping[str, Any] | None = None) -> Ranker:
    """An unfitted ranker for ``method``: a registered name, or an artifact's method with the artifact's
    parameters (``params`` override them) — what cross-validation refits on each fold."""
    params = dict(params or {})
    if isinstance(method, Ranker):
        if params:
            raise InputError("parameters cannot be given with a ranker instance", field="params")
        return method
    path = artifact_path(method)
    if path is None:
        return make(method, **params)
    name, stored = artifact_spec(path)
    check_params(name, params)
    return make(name, **{**stored, **params})


def resolve(method: str | Ranker = "default", params: Mapping[str, Any] | None = None, *,
            train_truth: GroundTruth | None = None, train_tasks: TaskSet | None = None,
            pool: Pool | None = None, progress: bool = False) -> Ranker:
    """A fitted ranker for ``method`` (see the module docstring)."""
    params = dict(params or {})
    if isinstance(method, Ranker):
        ranker = build(method, params)
    else:
        path = artifact_path(method)
        if path is not None:
            check_params(method, params)
            return load_artifact(path, **params)
        ranker = make(method, **(with_card_pool(method, params, pool) if train_truth is not None else params))
    if ranker.needs_fit and not ranker.is_fitted:
        name = ranker.name
        if train_truth is None:
            raise InputError(f"method {name!r} learns from past tasks: give their ground truth (`train_truth`: a "
                             f"CSV with columns task_id,model_id,f1)", field="train_truth")
        if ranker.needs_text and train_tasks is None:
            raise InputError(f"method {name!r} learns from the training tasks' text: give their task folder "
                             f"(`train_tasks`)", field="train_tasks")
        ranker.fit(train_tasks, train_truth, pool=pool, progress=progress)
    return ranker


def card_pool(pool: Pool) -> str | None:
    """The one rule for what a card-reading method (``metadata``, ``ltr``: it declares a ``pool`` parameter) reads
    its model cards from when none is given: the built-in ``ntcir19`` (it has card metadata) when ``pool`` holds the
    same candidates (same ids, same or no Hugging Face id), else the file ``pool`` was read from; None for a pool
    built in memory (the method's own default stands). ``bench``, ``rank``, ``rank --cv``, ``train-ranker``,
    :func:`modelseek.rank` and :func:`modelseek.retrieval.bench.cross_validate` all apply it through
    :func:`with_card_pool`."""

    ref = ntcir_pool()
    if all(c.id in ref and (not c.hf_id or c.hf_id == ref.get(c.id).hf_id) for c in pool):
        return "ntcir19"
    return getattr(pool, "file", None)


def with_card_pool(method: object, params: Mapping[str, Any] | None, pool: Pool | None) -> dict[str, Any]:
    """``params`` with ``pool`` set by :func:`card_pool` when ``method`` (a name or an artifact) declares a ``pool``
    parameter that is not given; a :class:`Ranker` instance (or a factory) carries its own."""
    out = dict(params or {})
    if pool is None or "pool" in out or not isinstance(method, str) or "pool" not in ranker_class(method).param_names():
        return out
    cards = card_pool(pool)
    if cards is not None:
        out["pool"] = cards
    return out


def describe_methods() -> str:
    """One line for ``--help``: the registered methods and the shipped artifacts."""
    shipped = sorted(p.stem for p in artifact_dir().glob("*.json") if p.name != "default.json")
    return (f"registered: {', '.join(_registry().names())}; shipped artifacts: default, {', '.join(shipped)}; "
            f"or the path of an artifact from 'modelseek train-ranker'")


__all__ = ["artifact_path", "artifact_spec", "build", "card_pool", "check_params", "describe_methods", "make",
           "ranker_class", "resolve", "split_params", "with_card_pool"]
