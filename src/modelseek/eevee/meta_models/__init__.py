"""EEVEE meta-models, one per module: each registers a :class:`~modelseek.eevee.models.MetaModel` with
:func:`~modelseek.eevee.models.register_meta_model` (the registry imports every module here on first use, then the
entry points of the group ``modelseek.meta_models``).

Every member passes :func:`check_meta_model` (the kind's one check, :data:`modelseek.kinds.KINDS`). A member from
outside is a :class:`MetaModel`, or any scikit-learn-style regressor (a class, or an instance to clone, with
``fit(X, Y)`` and ``predict(X)`` on several target columns) that :func:`regressor_meta_model` adapts: its
parameters are its own constructor's, never a field of the shared ``MetaConfig``."""

from __future__ import annotations

from typing import Any

from ..models import KERNEL_PARAMETERS, MetaModel
from ...kinds import named, takes


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
    milliseconds): for any model a fast kernel does not cover."""
    cls: Any = regressor if isinstance(regressor, type) else type(regressor)
    what = f"meta-model {name!r} ({cls.__name__})"

    takes(f"{what}: fit", cls.fit, ("X", "y"))
    takes(f"{what}: predict", cls.predict, ("X",))

    def make() -> Any:
        if isinstance(regressor, type):
            return regressor()
        from sklearn.base import clone  # lazy: sklearn

        return clone(regressor)

    def kernel(d, cfg, cand, split, idx, mask, fan=None, return_pred: bool = False):
        import numpy as np
        import torch  # lazy: torch

        losses, preds = [], []
        for c, s in zip(cand.tolist(), split.tolist()):
            cols = idx[c][mask[c] > 0].tolist()
            X = d.Xtr[s][:, cols].double().numpy()
            Y = d.Xtr[s].double().numpy()
            Xte = d.Xte_in[s][:, cols].double().numpy()
            yhat = np.asarray(make().fit(X, Y).predict(Xte), dtype=float).reshape(len(Xte), -1)
            if yhat.shape != tuple(d.Xte[s].shape):
                raise ValueError(f"{what}: predict gave shape {yhat.shape}, expected {tuple(d.Xte[s].shape)}")
            err = (torch.from_numpy(yhat) - d.Xte[s].double()) ** 2 * d.Ate[s].double()
            losses.append(err.sum())
            preds.append(torch.from_numpy(yhat).float())
        loss = torch.stack(losses).float()
        return (loss, torch.stack(preds)) if return_pred else loss

    doc = (cls.__doc__ or "").strip().splitlines()
    return MetaModel(name, description or f"{cls.__module__}.{cls.__name__}" + (f": {doc[0]}" if doc else ""),
                     seeded=False, parallel=False, fit=kernel)


__all__ = ["check_meta_model", "regressor_meta_model"]
