"""Every registered member of each pluggable kind keeps its written contract.

* rankers (:class:`modelseek.rankers.base.Ranker`): concrete, ``fit`` not overridden (learning is ``_learn``),
  parameters = the constructor's signature, stored under their names, constraints only on parameters and
  checked with an error naming the parameter; persistable rankers share the one mixin's ``save``/``load``;
* fusion methods (:class:`modelseek.fusion.methods.FusionMethod`): combine independent of the runs' order,
  rank-based methods refuse a normalisation, every method is searched by the optimiser;
* estimators (:class:`modelseek.estimators.EstimatorInfo`): the signature holds what the record declares, the
  function returns a finite float, a seeded one is deterministic under its seed;
* meta-models (:class:`modelseek.eevee.models.MetaModel`): the kernel's signature, finite losses.
"""

from __future__ import annotations

import inspect
import math
from numbers import Integral

import numpy as np
import pytest

import modelseek.estimators as est
from modelseek.config import Interval, Options
from modelseek.errors import InputError
from modelseek.fusion import Fusion, FusionMethod, candidate_fusions, fuse
from modelseek.fusion.core import combine
from modelseek.rankers import RANKERS, Ranker, make
from modelseek.rankers._artifact import Persistable


# ------------------------------------------------------------------------------------------ rankers
@pytest.mark.parametrize("name", RANKERS.names())
def test_ranker_contract(name):
    cls = RANKERS.get(name)
    assert issubclass(cls, Ranker) and not inspect.isabstract(cls), name
    assert cls.fit is Ranker.fit, f"{name} overrides fit; implement _learn"
    if cls.needs_fit:
        assert cls._learn is not Ranker._learn, f"{name} needs fit but does not implement _learn"
    sig = [p for p, v in inspect.signature(cls.__init__).parameters.items()
           if p != "self" and v.kind not in (v.VAR_KEYWORD, v.VAR_POSITIONAL)]
    assert list(cls.param_names()) == sig
    assert set(cls._parameter_constraints) <= set(sig), f"{name}: constraints on non-parameters"
    r = make(name)
    assert set(r.get_params()) == set(sig)  # every parameter is stored under its own name
    if issubclass(cls, Persistable):
        assert cls.save is Persistable.save and cls.load.__func__ is Persistable.load.__func__, name
    assert r.is_fitted == (not cls.needs_fit)


def _violations(rules) -> list:
    """Values that break every one of ``rules`` (a bound crossed, an unknown option)."""
    out = []
    for rule in rules:
        if isinstance(rule, Interval):
            if rule.left is not None:
                out.append(rule.left - 1)
            if rule.right is not None:
                out.append(rule.right + 1)
        elif isinstance(rule, Options):
            out.append("no-such-option")
    return [v for v in out if not any(r is not None and r.is_satisfied_by(v) for r in rules)]


CONSTRAINED = [(n, p, v) for n in RANKERS.names() for p, rules in RANKERS.get(n)._parameter_constraints.items()
               for v in _violations(rules)]


def test_some_rankers_declare_constraints():
    assert {n for n, _, _ in CONSTRAINED} >= {"adaptive", "metadata", "task_knn", "tupate"}


@pytest.mark.parametrize("name,param,value", CONSTRAINED)
def test_ranker_parameter_constraints_are_checked_with_the_parameter_named(name, param, value):
    with pytest.raises(InputError, match=rf"^field '{param}': {param} must be ") as info:
        make(name, **{param: value})
    assert info.value.field == param
    r = RANKERS.get(name)()  # constructed directly: the same check runs on fit
    setattr(r, param, value)
    with pytest.raises(InputError, match=rf"{param} must be "):
        r.fit(None, None)


# ------------------------------------------------------------------------------------------ fusion methods
def _values(rng, runs=3, topics=2, docs=5):
    v = rng.random((runs, topics, docs))
    v[0, 0, 1] = np.nan  # a candidate run 0 lacks
    v[:, 1, 4] = np.nan  # a candidate no run holds
    return v


@pytest.mark.parametrize("name", FusionMethod.values())
def test_fusion_method_contract(name):
    m = FusionMethod.parse(name)
    assert m.value == name and FusionMethod.parse(name.upper()) is m
    assert isinstance(m.uses_scores, bool) and isinstance(m.takes_weights, bool) and m.summary
    rng = np.random.default_rng(0)
    v = _values(rng)
    w = np.array([0.2, 0.5, 0.3]) if m.takes_weights else np.ones(3)
    fused = combine(v, m, w)
    assert fused.shape == v.shape[1:]
    assert np.isnan(fused[1, 4]) and np.isfinite(np.delete(fused.ravel(), 9)).all()
    perm = [2, 0, 1]
    np.testing.assert_array_equal(combine(v[perm], m, w[perm]), fused)  # independent of the runs' order
    # through the public fuse, on runs
    from modelseek.data.run import Run

    runs = [Run.from_scores({"t": {"a": 3.0, "b": 2.0, "c": 1.0}}, "x"),
            Run.from_scores({"t": {"b": 5.0, "a": 1.0}}, "y")]
    out = fuse(runs, method=name)
    assert set(out.ranking("t")) == {"a", "b", "c"} and out.run_id == f"fused-{name}"
    if not m.uses_scores:
        with pytest.raises(InputError, match="fuses ranks"):
            Fusion.build(["x", "y"], name, "min-max")
    if not m.takes_weights:
        with pytest.raises(InputError, match="takes no weights"):
            Fusion.build(["x", "y"], name, None, [1, 2])
    # the optimiser searches it
    grid = candidate_fusions(["x", "y"], step=0.5)
    assert any(g.method is m for g in grid)
    only = candidate_fusions(["x", "y"], methods=[name], step=0.5)
    assert only and all(g.method is m for g in only)


def test_fusion_method_names_and_enum_like_access():
    assert FusionMethod.values()[:4] == ["rrf", "combsum", "combmnz", "wsum"]
    assert FusionMethod.RRF is FusionMethod.parse("rrf") and str(FusionMethod.WSUM) == "wsum"
    with pytest.raises(InputError, match=r"unknown fusion method 'wsun' \(did you mean 'wsum'\?\); valid values"):
        FusionMethod.parse("wsun")


# ------------------------------------------------------------------------------------------ estimators
def _features(rng, n=60, d=6, c=3):
    y = np.repeat(np.arange(c), n // c)
    x = rng.normal(size=(n, d)) + y[:, None] * 0.8
    return x, [f"l{v}" for v in y]


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
@pytest.mark.parametrize("name", est.names())
def test_estimator_contract(name):
    from modelseek.estimators._registry import check_contract

    info = est.info(name)
    check_contract(name, info.fn, seeded=info.seeded, uses_validation=info.uses_validation,
                   regression=info.regression)
    assert info.summary and isinstance(info.higher_is_better, bool)
    rng = np.random.default_rng(0)
    x, y = _features(rng)
    if info.input.value == "probs":
        e = np.exp(x[:, :4])
        x = e / e.sum(axis=1, keepdims=True)
    kw = {"seed": 3} if info.seeded else {}
    value = info.fn(x, y, **kw)
    assert isinstance(value, float) and math.isfinite(value)
    if info.seeded:
        assert info.fn(x, y, seed=3) == value
    if info.uses_validation:
        v = info.fn(x[::2], y[::2], val_features=x[1::2], val_labels=y[1::2], **kw)
        assert math.isfinite(v)
    if info.regression:
        t = x[:, 0] * 2 + rng.normal(size=len(x)) * 0.1
        assert math.isfinite(info.fn(x, [float(v) for v in t], task="regression"))


def test_an_estimator_whose_signature_contradicts_its_record_is_refused():
    from modelseek import register

    def no_seed(features, labels) -> float:
        return 0.0

    with pytest.raises(TypeError, match="'seed'"):
        register("estimator", no_seed, name="contract_bad_seed", seeded=True)
    with pytest.raises(TypeError, match=r"takes \(features, labels\) first"):
        register("estimator", lambda features: 0.0, name="contract_bad_args")
    assert "contract_bad_seed" not in est.names() and "contract_bad_args" not in est.names()


# ------------------------------------------------------------------------------------------ meta-models
def signal_table(n_models: int = 16, seed: int = 0):
    """Benchmark ``target``, its copy and two noise benchmarks (each its own task group)."""
    import pandas as pd

    from modelseek.eevee import Table

    rng = np.random.default_rng(seed)
    target = rng.normal(size=n_models)
    cols = {"target.acc": target, "copy.acc": target.copy(), "noise0.acc": rng.normal(size=n_models),
            "noise1.acc": rng.normal(size=n_models)}
    return Table.from_frame(pd.DataFrame(cols, index=[f"m{i}" for i in range(n_models)]))


@pytest.mark.slow(reason="2 s (setup and call) on 2 busy cores")
def test_meta_model_contract():
    pytest.importorskip("torch")
    from modelseek.eevee import META_MODELS, BatchedEvaluator, MetaConfig
    from modelseek.eevee.models import KERNEL_PARAMETERS, MetaModel

    t = signal_table()
    for name in META_MODELS.names():
        m = META_MODELS.get(name)
        assert m.name == name and m.description and isinstance(m.seeded, bool) and isinstance(m.parallel, bool)
        assert tuple(inspect.signature(m.fit).parameters)[: len(KERNEL_PARAMETERS)] == KERNEL_PARAMETERS
        losses = BatchedEvaluator(t, MetaConfig(model=name, seed=0)).losses([("target",), ("noise0", "noise1")])
        assert np.asarray(losses).shape[0] == 2 and np.all(np.isfinite(losses))
    with pytest.raises(TypeError, match="the kernel must take"):
        MetaModel("contract-bad", "a kernel with the wrong signature", seeded=False, parallel=False,
                  fit=lambda d, cfg: None)


def test_integral_intervals_reject_bools():  # a constraint the rankers rely on (True is not k=1)
    assert not Interval(Integral, 1, None, closed="left").is_satisfied_by(True)


def test_every_shipped_artifact_loads_through_the_one_reader(tmp_path):
    """Every artifact in the package (avgrank's in its layout of before the common one) loads through the one
    mixin; avgrank saved again in the common layout loads back to the same numbers."""
    from modelseek.rankers.default import artifact_dir, load_artifact

    shipped = sorted(p for p in artifact_dir().glob("*.json") if p.name != "default.json")
    assert {p.stem for p in shipped} >= {"avgrank-ntcir19", "adaptive-ntcir19"}
    for p in shipped:
        if p.stem.startswith("ltr"):
            pytest.importorskip("lightgbm")
        r = load_artifact(p)
        assert isinstance(r, Persistable) and r.is_fitted and r.artifact_ == str(p)
        assert len(r.trained_.model_ids) == 20 and len(r.fitted_task_ids_) == 70
    old = load_artifact(artifact_dir() / "avgrank-ntcir19.json")
    old.save(tmp_path / "avg.json")
    new = load_artifact(tmp_path / "avg.json")
    np.testing.assert_array_equal(new.mean_rank_, old.mean_rank_)
    assert new.trained_ == old.trained_ and new.fitted_task_ids_ == old.fitted_task_ids_
