"""EEVEE meta-models, one per module: each registers a :class:`~modelseek.eevee.models.MetaModel` with
``register("meta-model", ...)`` (:func:`modelseek.core.kinds.register`; the registry imports every module here on first
use, then the entry points of the group ``modelseek.meta_models``).

Every member passes :func:`check_meta_model` (the kind's one check, :data:`modelseek.core.kinds.KINDS`). A member from
outside is a :class:`MetaModel`, or any scikit-learn-style regressor (a class, or an instance to clone, with
``fit(X, Y)`` and ``predict(X)`` on several target columns) that :func:`regressor_meta_model` adapts: its
parameters are its own constructor's (``--meta-param alpha=3``), never a field of the shared ``MetaConfig``."""

from __future__ import annotations

import copy
import dataclasses
import inspect
from typing import Any

from ..models import KERNEL_PARAMETERS, META_MODELS, MetaModel, NoParams
from ...core.config import Config
from ...core.errors import InputError
from ...core.kinds import named, takes


def check_meta_model(name: str, obj: Any) -> MetaModel:
    """The meta-model kind's one check: a :class:`MetaModel` named ``name`` (its kernel's signature is checked
    when the record is built), or a scikit-learn-style regressor adapted by :func:`regressor_meta_model`."""

    if isinstance(obj, MetaModel):
        named("the meta-model", obj.name, name)
        takes(f"meta-model {name!r}: the kernel", obj.fit, KERNEL_PARAMETERS[:-1], bound=True)
        return obj
    if callable(getattr(obj, "fit", None)) and callable(getattr(obj, "predict", None)):
        return regressor_meta_model(name, obj)
    raise TypeError(f"a meta-model is a MetaModel or a scikit-learn-style regressor (fit and predict), got {obj!r}")


def regressor_meta_model(name: str, regressor: Any, description: str | None = None) -> MetaModel:
    """A :class:`MetaModel` that fits ``regressor`` (a class made with no arguments, or an instance cloned per fit
    by :func:`sklearn.base.clone`) on each (subset, split): the subset's z-scored columns of the split's training
    models in, every column out; its test loss is the squared error on the split's test models, weighted as the
    built-in kernels weigh it. One fit per network, in this process (seconds where the batched kernels take
    milliseconds): for any model a fast kernel does not cover. The member's parameters are the regressor's
    constructor parameters (an instance's own values are their defaults), set per fit with ``set_params``."""
    cls: Any = regressor if isinstance(regressor, type) else type(regressor)
    what = f"meta-model {name!r} ({cls.__name__})"

    takes(f"{what}: fit", cls.fit, ("X", "y"))
    takes(f"{what}: predict", cls.predict, ("X",))

    defaults = _constructor_defaults(regressor)
    params = _regressor_params(cls, defaults, regressor) if defaults else NoParams

    def make(given: Any) -> Any:
        values = {f.name: getattr(given, f.name) for f in dataclasses.fields(given)}
        if isinstance(regressor, type):
            return regressor(**values)
        from sklearn.base import clone  # lazy: sklearn

        est = clone(regressor)
        return est.set_params(**values) if values else est

    def kernel(d, cfg, cand, split, idx, mask, fan=None, return_pred: bool = False):
        import numpy as np
        import torch  # lazy: torch

        losses, preds = [], []
        for c, s in zip(cand.tolist(), split.tolist()):
            cols = idx[c][mask[c] > 0].tolist()
            X = d.Xtr[s][:, cols].double().numpy()
            Y = d.Xtr[s].double().numpy()
            Xte = d.Xte_in[s][:, cols].double().numpy()
            with META_MODELS.calling(name, "fit"):  # a plugin's error names its distribution and the call
                fitted = make(cfg.model_params).fit(X, Y)
            with META_MODELS.calling(name, "predict"):
                yhat = np.asarray(fitted.predict(Xte), dtype=float).reshape(len(Xte), -1)
            if yhat.shape != tuple(d.Xte[s].shape):
                raise ValueError(f"{what}: predict gave shape {yhat.shape}, expected {tuple(d.Xte[s].shape)}")
            err = (torch.from_numpy(yhat) - d.Xte[s].double()) ** 2 * d.Ate[s].double()
            losses.append(err.sum())
            preds.append(torch.from_numpy(yhat).float())
        loss = torch.stack(losses).float()
        return (loss, torch.stack(preds)) if return_pred else loss

    doc = (cls.__doc__ or "").strip().splitlines()
    return MetaModel(name, description or f"{cls.__module__}.{cls.__name__}" + (f": {doc[0]}" if doc else ""),
                     seeded=False, parallel=False, fit=kernel, params=params)


def _constructor_defaults(regressor: Any) -> dict[str, Any]:
    """The regressor's parameters and their defaults: an instance's ``get_params(deep=False)`` (its own values),
    a class's made with no arguments, or else its constructor's keyword parameters with defaults. An instance
    without ``get_params`` has none (it is cloned as it is)."""
    if callable(getattr(regressor, "get_params", None)):
        target = regressor() if isinstance(regressor, type) else regressor
        return dict(target.get_params(deep=False))
    if not isinstance(regressor, type):
        return {}
    try:
        sig = inspect.signature(regressor)  # a class's: its constructor's, without self
    except (TypeError, ValueError):
        return {}
    return {p.name: p.default for p in sig.parameters.values()
            if p.default is not inspect.Parameter.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def _regressor_params(cls: type, defaults: dict[str, Any], regressor: Any) -> type[Config]:
    """A :class:`~modelseek.core.config.Config` whose fields are the regressor's constructor parameters (any value,
    default: the regressor's own); its check builds the regressor with the given values and runs scikit-learn's
    own parameter validation where the regressor has it, so a bad value is refused before any fit."""

    def check(self: Any) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is defaults[f.name] or not callable(getattr(regressor, "set_params", None)):
                continue
            est = regressor() if isinstance(regressor, type) else copy.deepcopy(regressor)
            try:
                est.set_params(**{f.name: value})
                validate = getattr(est, "_validate_params", None)
                if callable(validate):
                    validate()
            except Exception as exc:  # noqa: BLE001 - the regressor's own refusal, whatever its class
                raise InputError(" ".join(str(exc).split()) or type(exc).__name__, field=f.name) from None

    fields = [(n, Any, dataclasses.field(default_factory=_copier(v))) for n, v in defaults.items()]
    return dataclasses.make_dataclass(f"{cls.__name__}Params", fields, bases=(Config,), frozen=True,
                                      namespace={"_check": check, "__doc__": f"the parameters of {cls.__name__}"})


def _copier(value: Any) -> Any:
    """A default factory: a fresh copy of ``value`` (a list default is not shared between configs)."""
    return lambda: copy.deepcopy(value)


__all__ = ["check_meta_model", "regressor_meta_model"]
