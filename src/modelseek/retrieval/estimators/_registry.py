"""The estimator registry: every estimator registers itself, with its properties, in its own module.

``@register("estimator", name="name", input="features", seeded=False, higher_is_better=True)``
(:func:`modelseek.core.kinds.register`) on the function is all a new estimator needs: the package discovers its modules
on first use (every public module of ``modelseek.retrieval.estimators``), and the feature ranker of each registered
estimator is derived from this record (:mod:`modelseek.retrieval.rankers.features`), so no other table lists estimators
or
their properties.

The contract is :class:`Estimator` (a ``typing.Protocol``, for mypy) and :func:`check_contract` (run by
the registration, so a function whose signature contradicts what it declares is refused when its module is
imported): ``fn(features_or_probs, labels, /, **options) -> float``, with a ``seed`` keyword exactly when
``seeded``, ``val_features``/``val_labels`` keywords exactly when ``uses_validation``, and a ``task`` keyword
(``"classification"`` or ``"regression"``) exactly when ``regression``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ...core.enums import Choice
from ...core.errors import InputError
from ...core.registry import PluginRegistry
from ._common import check_inputs, check_targets, unit_scale
from ...core.kinds import named


class InputKind(Choice):
    """What an estimator's first argument is."""

    FEATURES = "features"  # frozen features of the task's examples (N x D)
    PROBS = "probs"        # the source classification head's class probabilities (N x Z)


class Estimator(Protocol):
    """What an estimator function is: features (N x D) or source-head probabilities (N x Z) and N labels in,
    one finite score out (direction as registered), options as keywords."""

    def __call__(self, features: Any, labels: Any, /, **options: Any) -> float: ...


def check_contract(name: str, fn: Callable[..., float], *, seeded: bool, uses_validation: bool,
                   regression: bool) -> None:
    """``fn``'s signature against what it declares (a ``TypeError`` naming the mismatch)."""
    params = inspect.signature(fn).parameters
    positional = [p for p in params.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(positional) < 2 or any(p.default is not p.empty for p in positional[:2]):
        raise TypeError(f"estimator {name!r}: takes (features, labels) first, got {inspect.signature(fn)}")
    keywords = {p.name for p in params.values() if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
    for declared, needs in ((seeded, ("seed",)), (uses_validation, ("val_features", "val_labels")),
                            (regression, ("task",))):
        for kw in needs:
            if (kw in keywords) != declared:
                raise TypeError(f"estimator {name!r}: {'declares' if declared else 'does not declare'} what "
                                f"the {kw!r} keyword is for, but its signature {'lacks' if declared else 'has'} it")


@dataclass(frozen=True)
class EstimatorInfo:
    """One registered estimator and the properties a caller needs to run it."""

    name: str
    fn: Estimator
    #: the first argument: frozen features or the source head's class probabilities
    input: InputKind = InputKind.FEATURES
    #: takes a ``seed`` keyword and is deterministic under it
    seeded: bool = False
    #: direction of the score
    higher_is_better: bool = True
    #: fits on a training split and scores ``val_features``/``val_labels`` when given them
    uses_validation: bool = False
    #: the score is unchanged when the features are multiplied by any c > 0 (the contract tests hold each
    #: estimator to what it declares; the others compute a finite value at any scale or raise InputError). Not
    #: declared by default, for a record, a plain function and ``register`` alike: declaring it lets the
    #: registration rescale the features
    scale_invariant: bool = False
    #: also scores a regression task: takes ``task="regression"`` with numeric labels (the others need
    #: classes and are refused for such a task)
    regression: bool = False

    @property
    def summary(self) -> str:
        doc = (self.fn.__doc__ or "").strip()
        return doc.splitlines()[0] if doc else ""


def check_estimator(name: str, obj: Any) -> EstimatorInfo:
    """The estimator kind's one check (:data:`modelseek.core.kinds.KINDS`), run when it registers and on every plugin:
    an :class:`EstimatorInfo` named ``name``, or a plain function ``(features, labels) -> float`` that takes the
    default properties (features in, higher is better, unseeded, not declared scale-invariant). The function's
    signature must match what the record declares (:func:`check_contract`), and the registered function is behind
    the registration's checks (:func:`checked`)."""
    if isinstance(obj, EstimatorInfo):

        named("the estimator record", obj.name, name)
        raw = getattr(obj.fn, "__wrapped__", obj.fn)
        check_contract(name, raw, seeded=obj.seeded, uses_validation=obj.uses_validation, regression=obj.regression)
        if raw is obj.fn:  # a record made by hand: its function behind the checks too
            fn = checked(name, raw, obj.input, scale_invariant=obj.scale_invariant, regression=obj.regression)
            obj = EstimatorInfo(**{**obj.__dict__, "fn": fn})
        return obj
    if not callable(obj):
        raise TypeError(f"an estimator is a function (features, labels) -> float or an EstimatorInfo, got {obj!r}")
    check_contract(name, obj, seeded=False, uses_validation=False, regression=False)
    return EstimatorInfo(name=name, fn=checked(name, obj, InputKind.FEATURES, scale_invariant=False))


def checked(name: str, fn: Callable[..., float], kind: InputKind, *, scale_invariant: bool,
            regression: bool = False) -> Estimator:
    """``fn`` behind the contract's checks, applied by the registration so that an estimator is its formula:
    the inputs as :func:`~._common.check_inputs` requires them (2-D, real and finite, as many labels as rows, at
    least two classes; numeric targets for ``task="regression"``), each failure a located
    :class:`~modelseek.core.errors.InputError`; features rescaled by an exact power of two when the estimator declares
    scale invariance (the validation features by the same factor), so no scale overflows; and a finite result
    (a NaN or infinite score is an InputError, never a score). The labels are passed as an array of the values
    given (any type ``np.unique`` orders)."""
    what = "probs" if kind is InputKind.PROBS else "features"
    rescale = scale_invariant and kind is InputKind.FEATURES

    def estimator(features, labels, /, **options) -> float:
        labels = np.asarray(labels)
        if regression and options.get("task") == "regression":
            X, labels = check_targets(features, labels, name=name)  # the targets as numbers
        else:
            X = check_inputs(features, labels, name=name, what=what)[0]
        if rescale:
            X, k = unit_scale(X)
            if options.get("val_features") is not None:
                options = {**options, "val_features": np.ldexp(np.asarray(options["val_features"], float), -k)}
        with ESTIMATORS.calling(name, "the estimator function"):  # a plugin's error names its distribution
            raw = fn(X, labels, **options)
            given = np.asarray(raw) if isinstance(raw, (int, float, np.generic, np.ndarray)) else None
            if given is None or given.ndim != 0 or given.dtype.kind not in "iuf":
                raise TypeError(f"{name}: the estimator returned {type(raw).__name__} {str(raw)[:40]!r} (a score "
                                f"is one real number)")
        value = float(given)
        if not np.isfinite(value):
            raise InputError(f"{name}: the estimator returned {value} (a score must be finite)", field=what)
        return value

    estimator.__doc__, estimator.__module__, estimator.__name__ = fn.__doc__, fn.__module__, fn.__name__
    estimator.__wrapped__ = fn  # type: ignore[attr-defined]
    return estimator


#: registered estimators; the package's modules (which register themselves) are imported on first use, then the
#: entry points of the kind's group (``modelseek.retrieval.estimators``, :data:`modelseek.core.kinds.KINDS`)
ESTIMATORS: PluginRegistry[EstimatorInfo] = PluginRegistry("estimator", __package__)


def estimator_record(name: str, fn: Callable[..., float] | EstimatorInfo, **properties: Any) -> EstimatorInfo:
    """The estimator kind's ``build`` (:data:`modelseek.core.kinds.KINDS`): what
    ``register("estimator", fn, name=..., input=..., seeded=...)`` registers, ``fn(features_or_probs, labels,
    **options) -> float`` with its properties (:func:`_with_properties`), behind the contract's input, scale and
    result checks (:func:`checked`); the module keeps the plain function. A record is registered as it is."""
    if isinstance(fn, EstimatorInfo):
        if properties:
            raise TypeError(f"estimator {name!r}: an EstimatorInfo carries its own properties; give none")
        return fn
    return _with_properties(name, fn, **properties)


def _with_properties(name: str, fn: Callable[..., float], *, input: str | InputKind = "features",
                     seeded: bool = False, higher_is_better: bool = True, uses_validation: bool = False,
                     scale_invariant: bool = False, regression: bool = False) -> EstimatorInfo:
    kind = InputKind.parse(input, "input")
    return EstimatorInfo(name=name, fn=checked(name, fn, kind, scale_invariant=bool(scale_invariant),
                                               regression=bool(regression)),
                         input=kind, seeded=bool(seeded), higher_is_better=bool(higher_is_better),
                         uses_validation=bool(uses_validation), scale_invariant=bool(scale_invariant),
                         regression=bool(regression))
