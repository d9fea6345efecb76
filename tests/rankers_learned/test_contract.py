"""The contract every registered ranker keeps (scikit-learn's ``check_estimator`` idea, for rankers).

Every ranker: declared parameters are constructor parameters; an unknown parameter is an InputError with a
did-you-mean. Every ranker that learns from past tasks (``needs_fit``): fit -> rank -> save -> load gives the
same scores; two fits with the same seed give the same scores; it never uses held-out tasks (given every task's
text but only the training tasks' ground truth, it records and depends on the training tasks only); a candidate
it has no history for is rejected by name. Rankers that need no history (frozen-feature estimators, random)
score any candidate, so the foreign-candidate clause does not apply to them.
"""

from __future__ import annotations

import inspect
import typing

import numpy as np
import pytest

from modelseek.retrieval.data.pool import Candidate, Pool
from modelseek.core.errors import InputError
from modelseek.retrieval.rankers import RANKERS, make

LEARNED = [n for n in RANKERS.names() if RANKERS.get(n).needs_fit]


def test_the_learned_set_is_what_we_think():
    assert set(LEARNED) == {"adaptive", "avgrank", "ltr", "metadata", "spider", "task_knn", "tupate"}


@pytest.mark.parametrize("name", RANKERS.names())
def test_declared_parameters_and_unknown_parameter_rejected(name):
    cls = RANKERS.get(name)
    sig = inspect.signature(cls.__init__).parameters
    assert set(cls.param_names()) <= set(sig), name
    # `--param` values are converted by the constructor's annotations: every declared parameter has one
    hints = typing.get_type_hints(cls.__init__)
    assert [p for p in cls.param_names() if p not in hints] == [], name
    with pytest.raises(InputError, match=r"has no parameter 'sed'\. Did you mean 'seed'\?"
                       if "seed" in cls.param_names() else r"has no parameter 'sed'"):
        make(name, sed=1)


@pytest.fixture
def fitted(request, data, tmp_path_factory, fast_params, layout):
    def fit(name, tasks, truth, **extra):
        if name == "ltr":
            pytest.importorskip("lightgbm")
        if name in ("spider", "tupate"):
            pytest.importorskip("torch")
        path = request.getfixturevalue("tiny_bert_path") if name == "tupate" else None
        params = {} if name == "avgrank" else fast_params(name, layout, tmp_path_factory.getbasetemp() / "cache", path)
        return make(name, **{**params, **extra}).fit(tasks, truth, pool=data[2])

    return fit


def _scores(r, tasks, pool):
    return np.array([[r.rank(t, pool)[c.id] for c in pool] for t in tasks])


@pytest.mark.slow(reason="78 s (setup and call) on 2 busy cores")
@pytest.mark.parametrize("name", LEARNED)
def test_learned_ranker_contract(name, data, fitted, tmp_path):
    tasks, truth, pool = data
    train_ids, held_ids = truth.task_ids[:10], truth.task_ids[10:]
    held = [tasks.get(t) for t in held_ids]
    # no use of held-out tasks: every task's text is offered, only the training tasks' ground truth
    r = fitted(name, tasks.subset(train_ids), truth.subset(train_ids))
    assert list(r.fitted_task_ids_) == train_ids
    r_all = fitted(name, tasks, truth.subset(train_ids)) if name != "avgrank" else r
    assert list(r_all.fitted_task_ids_) == train_ids
    a = _scores(r, held, pool)
    assert np.isfinite(a).all()
    np.testing.assert_allclose(_scores(r_all, held, pool), a, rtol=1e-6, atol=1e-9)
    # determinism under a seed
    again = fitted(name, tasks.subset(train_ids), truth.subset(train_ids))
    np.testing.assert_allclose(_scores(again, held, pool), a, rtol=1e-6, atol=1e-9)
    # save / load round trip (numbers only: no task text in the artifact)
    path = tmp_path / f"{name}.json"
    r.save(path)
    assert tasks[0].train.texts[0] not in path.read_text()
    from modelseek.retrieval.rankers.default import load_artifact

    loaded = load_artifact(path)
    np.testing.assert_allclose(_scores(loaded, held, pool), a, rtol=1e-5, atol=1e-6)
    # a candidate without history is rejected by name, also after loading
    foreign = Pool(list(pool) + [Candidate(id="99", hf_id="someone/new-model")])
    for ranker in (r, loaded):
        if ranker.name == "adaptive":  # the default ranks it from its profile (no history: its family's prior)
            assert set(ranker.rank(held[0], foreign)) == {c.id for c in foreign}
            continue
        with pytest.raises(InputError, match=r"not trained on candidate\(s\) 99 \(someone/new-model\)"):
            ranker.rank(held[0], foreign)
    # the same models under other ids are the same models (matched by HF id)
    renamed = Pool([Candidate(id=f"x{c.id}", hf_id=c.hf_id) for c in reversed(list(pool))])
    got = loaded.rank(held[0], renamed)
    want = loaded.rank(held[0], pool)
    assert got == pytest.approx({f"x{k}": v for k, v in want.items()}, rel=1e-5, abs=1e-6)


def test_random_is_deterministic_and_takes_any_candidate(data):
    tasks, truth, pool = data
    foreign = Pool(list(pool) + [Candidate(id="99", hf_id="someone/new-model")])
    a = make("random", seed=3).rank(tasks[0], foreign)
    assert a == make("random", seed=3).rank(tasks[0], foreign) and set(a) == set(foreign.ids)
    assert a != make("random", seed=4).rank(tasks[0], foreign)
