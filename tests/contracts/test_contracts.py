"""Every registered member of each pluggable kind keeps its written contract: the shipped checks
(:func:`modelseek.testing.check_member`, :mod:`modelseek.testing.contract`, the rules a plugin author's tests run
too) over whatever is registered, and what the package adds around a member:

* rankers: constraints checked with an error naming the parameter; persistable rankers share the one mixin's
  ``save``/``load``;
* fusion methods: enum-like names, the public ``fuse`` on runs, every method searched by the optimiser;
* estimators: a record whose signature contradicts it is refused;
* meta-models: the registered ones through the batched evaluator, a kernel of the wrong signature refused.
"""

from __future__ import annotations

import inspect
from numbers import Integral

import numpy as np
import pytest

import modelseek.retrieval.estimators as est
from modelseek.core.config import Interval, Options
from modelseek.core.errors import InputError
from modelseek.retrieval.fusion import FusionMethod, candidate_fusions, fuse
from modelseek.retrieval.rankers import RANKERS, make
from modelseek.retrieval.rankers._artifact import Persistable
from modelseek.testing import check_member
from modelseek.testing.contract import signal_table


# ------------------------------------------------------------------------------------------ rankers
@pytest.mark.parametrize("name", RANKERS.names())
def test_ranker_contract(name):
    cls = RANKERS.get(name)
    assert check_member("ranker", cls) is cls
    if issubclass(cls, Persistable):
        assert cls.save is Persistable.save and cls.load.__func__ is Persistable.load.__func__, name


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
@pytest.mark.parametrize("name", FusionMethod.values())
def test_fusion_method_contract(name):
    m = FusionMethod.parse(name)
    assert m.value == name and FusionMethod.parse(name.upper()) is m and m.summary
    assert check_member("fusion method", m) is m  # combine's types, shape, finiteness, order; search; refusals
    # through the public fuse, on runs
    from modelseek.retrieval.data.run import Run

    runs = [Run.from_scores({"t": {"a": 3.0, "b": 2.0, "c": 1.0}}, "x"),
            Run.from_scores({"t": {"b": 5.0, "a": 1.0}}, "y")]
    out = fuse(runs, method=name)
    assert set(out.ranking("t")) == {"a", "b", "c"} and out.run_id == f"fused-{name}"
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
@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
@pytest.mark.parametrize("name", est.names())
def test_estimator_contract(name):
    info = est.info(name)
    assert check_member("estimator", info) is info  # a finite float, seeded determinism, validation, regression
    assert info.summary and isinstance(info.higher_is_better, bool)


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
        assert check_member("meta-model", m) is m  # finite losses, deterministic under its seed
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
    from modelseek.retrieval.rankers.default import artifact_dir, load_artifact

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
