"""The behavioural contract of every pluggable kind, shipped so that a plugin author's tests and this package's run
the same rules (:func:`modelseek.testing.check_member` runs them after the kind's load-time check).

Each check calls the member on generated data and states what it breaks in one ``TypeError`` (a wrong type) or
``ValueError`` (a wrong value) naming the member:

* **estimator**: a real, finite number (never a string) on generated features (or class probabilities), with
  and without a validation split and on a regression task where it declares one; the same number under the same
  ``seed`` when it is seeded; its inputs untouched;
* **fusion method**: ``combine`` gives a ``T x D`` array of numbers, finite where some run holds the candidate,
  independent of the order of the runs; ``search`` gives ``(phase, Fusion)`` pairs of this method; a rank-based
  method refuses a normalisation and one without weights refuses them;
* **meta-model**: the kernel's losses of a generated table are finite, one per (subset, split), and the same under
  the same seed;
* **metric**: ``per_list`` gives a real number on a generated ranked list;
* **ranker**: concrete, learning in ``_learn`` (``fit`` not overridden), its parameters its constructor's, stored
  under their names, constraints on parameters only;
* **executor** (one running in this process): every unit whose claim is granted runs once and reaches
  ``on_done`` with its value, a raising unit with its error, a refused claim never runs.

Model sources, style retrievers and features and task encoders load models or images: their check is the
load-time one (signatures and properties).
"""

from __future__ import annotations

import inspect
import math
from numbers import Real
from typing import Any

import numpy as np

from ..core.errors import InputError
from ..retrieval.fusion import Fusion
from ..retrieval.fusion.learned import candidate_fusions
from ..eevee import Table
from ..eevee import MetaConfig
from ..eevee.data import SplitData
from ..eevee.models import fit_columns
from ..retrieval.metrics import Judgments
from ..retrieval.rankers import Ranker
from ..retrieval.executors import Unit, make_executor


def check_behaviour(kind: str, name: str, member: Any) -> None:
    """Run kind ``kind``'s behavioural checks on ``member`` (as registered) named ``name`` (see the module
    docstring); a kind without any passes."""
    check = _CHECKS.get(kind)
    if check is not None:
        check(name, member)


# ------------------------------------------------------------------------------------------ estimators
def _features(rng: np.random.Generator, n: int = 60, d: int = 6, c: int = 3) -> tuple[np.ndarray, list[str]]:
    y = np.repeat(np.arange(c), n // c)
    x = rng.normal(size=(n, d)) + y[:, None] * 0.8
    return x, [f"l{v}" for v in y]


def _score(name: str, what: str, fn: Any, *args: Any, **kw: Any) -> float:
    value = fn(*args, **kw)
    if not isinstance(value, Real) or isinstance(value, bool):
        raise TypeError(f"estimator {name!r}: {what} gave {type(value).__name__} {value!r}, not a real number")
    if not math.isfinite(value):
        raise ValueError(f"estimator {name!r}: {what} gave {value}, not a finite number")
    return float(value)


def check_estimator_behaviour(name: str, info: Any) -> None:
    rng = np.random.default_rng(0)
    x, y = _features(rng)
    if info.input.value == "probs":
        e = np.exp(x[:, :4])
        x = e / e.sum(axis=1, keepdims=True)
    before = x.copy()
    kw = {"seed": 3} if info.seeded else {}
    value = _score(name, "a call", info.fn, x, y, **kw)
    if not np.array_equal(x, before):
        raise ValueError(f"estimator {name!r}: it changed its input features")
    if info.seeded and _score(name, "a second call", info.fn, x, y, seed=3) != value:
        raise ValueError(f"estimator {name!r}: two calls with seed=3 gave different scores (seeded: deterministic)")
    if info.uses_validation:
        _score(name, "a call with a validation split", info.fn, x[::2], y[::2], val_features=x[1::2],
               val_labels=y[1::2], **kw)
    if info.regression:
        t = x[:, 0] * 2 + rng.normal(size=len(x)) * 0.1
        _score(name, "a regression call", info.fn, x, [float(v) for v in t], task="regression")


# ------------------------------------------------------------------------------------------ fusion methods
def _values(rng: np.random.Generator, runs: int = 3, topics: int = 2, docs: int = 5) -> np.ndarray:
    v = rng.random((runs, topics, docs))
    v[0, 0, 1] = np.nan  # a candidate run 0 lacks
    v[:, 1, 4] = np.nan  # a candidate no run holds
    return v


def _combined(name: str, method: Any, v: np.ndarray, w: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        raw = method.combine(v, w)
    out = np.asarray(raw)
    if out.dtype.kind not in "fiu":
        raise TypeError(f"fusion method {name!r}: combine gave {type(raw).__name__} {str(raw)[:40]!r}, not an "
                        f"array of numbers")
    if out.shape != v.shape[1:]:
        raise ValueError(f"fusion method {name!r}: combine gave shape {out.shape} for values of shape {v.shape} "
                         f"(expected {v.shape[1:]}: topics x candidates)")
    return out.astype(float)


def check_fusion_behaviour(name: str, method: Any) -> None:
    v = _values(np.random.default_rng(0))
    w = np.array([0.2, 0.5, 0.3]) if method.takes_weights else np.ones(3)
    fused = _combined(name, method, v, w)
    held = ~np.isnan(v).all(axis=0)
    if not np.isfinite(fused[held]).all():
        raise ValueError(f"fusion method {name!r}: combine gave a non-finite score to a candidate a run holds")
    perm = [2, 0, 1]
    if not np.array_equal(_combined(name, method, v[perm], w[perm])[held], fused[held]):
        raise ValueError(f"fusion method {name!r}: combine depends on the order of the runs (sum terms with "
                         f"modelseek.retrieval.fusion.methods.ordered_sum)")
    for spec in candidate_fusions(["x", "y"], methods=[method], step=0.5):
        if not isinstance(spec, Fusion) or spec.method != method:
            raise TypeError(f"fusion method {name!r}: search gave {spec!r}, not a Fusion of this method "
                            f"(build them with space.build)")
    if not method.uses_scores:
        _refused(name, "a normalisation (it fuses ranks)", Fusion.build, ["x", "y"], method, "min-max")
    if not method.takes_weights:
        _refused(name, "weights (it takes none)", Fusion.build, ["x", "y"], method, None, [1, 2])


def _refused(name: str, what: str, fn: Any, *args: Any) -> None:
    try:
        fn(*args)
    except InputError:
        return
    raise ValueError(f"fusion method {name!r}: a fusion of it accepted {what}")


# ------------------------------------------------------------------------------------------ meta-models
def signal_table(n_models: int = 16, seed: int = 0) -> Any:
    """A table of benchmark ``target``, its copy and two noise benchmarks (each its own task group)."""
    import pandas as pd  # lazy: pandas

    rng = np.random.default_rng(seed)
    target = rng.normal(size=n_models)
    cols = {"target.acc": target, "copy.acc": target.copy(), "noise0.acc": rng.normal(size=n_models),
            "noise1.acc": rng.normal(size=n_models)}
    return Table.from_frame(pd.DataFrame(cols, index=[f"m{i}" for i in range(n_models)]))


def _meta_losses(name: str, model: Any, seed: int) -> np.ndarray:
    import dataclasses

    base = MetaConfig(model="ridge", seed=seed)  # a built-in's config, then the member's own parameters (it
    cfg = dataclasses.replace(base)              # need not be registered to be checked)
    object.__setattr__(cfg, "model", name)
    object.__setattr__(cfg, "model_params", model.make_params(None))
    table = signal_table()
    d = SplitData(table, cfg)
    cols = [d.columns(("target",)), d.columns(("noise0", "noise1"))]
    return np.asarray(fit_columns(d, cols, max(len(c) for c in cols), kernel=model.fit))


def check_meta_model_behaviour(name: str, model: Any) -> None:
    losses = _meta_losses(name, model, seed=0)
    if losses.shape[0] != 2 or not np.all(np.isfinite(losses)):
        raise ValueError(f"meta-model {name!r}: the losses of two subsets are {losses!r}, not finite, one row each")
    if not np.array_equal(_meta_losses(name, model, seed=0), losses):
        raise ValueError(f"meta-model {name!r}: two fits with the same seed gave different losses")


# ------------------------------------------------------------------------------------------ metrics
def check_metric_behaviour(name: str, metric: Any) -> None:
    grades = {"a": 3, "b": 1, "c": 0, "d": 2}
    j = Judgments(grades, {"a": 0.9, "b": 0.5, "c": 0.2, "d": 0.7})
    k = 3 if metric.cutoff != "none" else None
    value = metric.per_list(["b", "a", "d", "c"], j, k)
    if not isinstance(value, Real) or isinstance(value, bool):
        raise TypeError(f"metric {name!r}: per_list gave {type(value).__name__} {value!r}, not a real number")


# ------------------------------------------------------------------------------------------ rankers
def check_ranker_behaviour(name: str, cls: Any) -> None:
    if not (isinstance(cls, type) and issubclass(cls, Ranker)) or inspect.isabstract(cls):
        raise TypeError(f"ranker {name!r}: not a concrete Ranker subclass")
    if cls.fit is not Ranker.fit:
        raise TypeError(f"ranker {name!r}: it overrides fit; implement _learn")
    if cls.needs_fit and cls._learn is Ranker._learn:
        raise TypeError(f"ranker {name!r}: it needs fit but does not implement _learn")
    sig = [p for p, v in inspect.signature(cls.__init__).parameters.items()
           if p != "self" and v.kind not in (v.VAR_KEYWORD, v.VAR_POSITIONAL)]
    if list(cls.param_names()) != sig:
        raise TypeError(f"ranker {name!r}: its parameters {list(cls.param_names())} are not its constructor's {sig}")
    if not set(cls._parameter_constraints) <= set(sig):
        raise TypeError(f"ranker {name!r}: constraints on non-parameters "
                        f"{sorted(set(cls._parameter_constraints) - set(sig))}")
    r = cls()
    if set(r.get_params()) != set(sig):
        raise TypeError(f"ranker {name!r}: a parameter is not stored under its own name")
    if r.is_fitted != (not cls.needs_fit):
        raise ValueError(f"ranker {name!r}: is_fitted is {r.is_fitted} before fit (needs_fit={cls.needs_fit})")


# ------------------------------------------------------------------------------------------ executors
def _double(x: int) -> int:
    if x < 0:
        raise ValueError(f"negative {x}")
    return 2 * x


def check_executor_behaviour(name: str, cls: Any) -> None:
    if not cls.in_process:  # a cluster's: it needs one running
        return
    ex = make_executor(cls())
    units = [Unit(f"u{i}", _double, (x,)) for i, x in enumerate((1, 2, -1, 4))]
    done: dict[str, Any] = {}

    def on_start(unit: Any) -> int | None:
        return None if unit.key == "u3" else 1

    def on_done(unit: Any, outcome: Any, attempt: int) -> None:
        if unit.key in done:
            raise ValueError(f"executor {name!r}: unit {unit.key} reached on_done twice")
        done[unit.key] = outcome

    ex.run(units, on_start, on_done)
    if sorted(done) != ["u0", "u1", "u2"]:
        raise ValueError(f"executor {name!r}: units {sorted(done)} reached on_done; expected u0, u1, u2 (u3's claim "
                         f"was refused)")
    if (done["u0"].value, done["u1"].value) != (2, 4) or done["u2"].ok or "negative -1" not in str(done["u2"].error):
        raise ValueError(f"executor {name!r}: outcomes {done!r} are not the units' values and error")


_CHECKS = {"estimator": check_estimator_behaviour, "fusion method": check_fusion_behaviour,
           "meta-model": check_meta_model_behaviour, "metric": check_metric_behaviour,
           "ranker": check_ranker_behaviour, "executor": check_executor_behaviour}

__all__ = ["check_behaviour", "signal_table"]
