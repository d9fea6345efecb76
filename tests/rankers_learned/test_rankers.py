"""The learned rankers through their public API and ``cross_validate``: reproducibility, leakage, artifacts,
known values, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from modelseek.retrieval.bench import cross_validate
from modelseek.retrieval.data.pool import Candidate, Pool
from modelseek.retrieval.data.truth import GroundTruth
from modelseek.core.errors import InputError
from modelseek.retrieval.rankers import RANKERS, make

METHODS = ["adaptive", "task_knn", "metadata", "ltr", "spider", "tupate"]


@pytest.fixture
def params(request, layout, tmp_path_factory, fast_params):
    def get(method):
        path = request.getfixturevalue("tiny_bert_path") if method == "tupate" else None
        if method == "ltr":
            pytest.importorskip("lightgbm")
        if method in ("spider", "tupate"):
            pytest.importorskip("torch")
        return fast_params(method, layout, tmp_path_factory.getbasetemp() / "cache", path)

    return get


@pytest.mark.slow(reason="28 s (setup and call) on 2 busy cores")
@pytest.mark.parametrize("method", METHODS)
def test_cv_reproducible_and_never_fits_on_held_out(method, data, params):
    tasks, truth, pool = data
    fitted_seen = []

    def factory():
        r = make(method, **params(method))
        orig = r.fit

        def fit(ts, tr, **kw):
            out = orig(ts, tr, **kw)
            fitted_seen.append(list(out.fitted_task_ids_))
            return out

        r.fit = fit
        return r

    res = cross_validate(factory, truth, pool, tasks=tasks, folds=3, seed=0)
    # leakage: the ids each fold's ranker actually fitted on exclude that fold's held-out tasks
    assert len(fitted_seen) == 3
    for held, fitted, recorded in zip(res.folds[0], res.fitted[0], fitted_seen):
        assert set(recorded) == set(fitted)
        assert not set(recorded) & set(held)
        assert set(recorded) | set(held) == set(truth.task_ids)
    run = res.runs[0]
    assert sorted(run) == sorted(truth.task_ids)
    for t in run:
        assert sorted(e.doc for e in run[t]) == sorted(pool.ids)
        assert all(np.isfinite(e.score) for e in run[t])
    again = cross_validate(method, truth, pool, tasks=tasks, folds=3, seed=0, method_params=params(method))
    assert again.runs[0].lines() == [line.replace(method, method) for line in run.lines()]


@pytest.mark.slow(reason="7 s (setup and call) on 2 busy cores")
@pytest.mark.parametrize("method", METHODS)
def test_artifact_round_trip_and_unknown_candidate(method, data, params, tmp_path):
    tasks, truth, pool = data
    r = make(method, **params(method)).fit(tasks, truth, pool=pool)
    path = tmp_path / f"{method}.json"
    r.save(path)
    text = path.read_text()
    assert tasks[0].train.texts[0] not in text  # numbers only, no task text
    loaded = RANKERS.get(method).load(path, cache_dir=params(method)["cache_dir"])
    assert loaded.fitted_task_ids_ == truth.task_ids
    for t in list(tasks)[:3]:
        a, b = r.rank(t, pool), loaded.rank(t, pool)
        assert a.keys() == b.keys()
        np.testing.assert_allclose(list(a.values()), list(b.values()), rtol=1e-5, atol=1e-6)
    bigger = Pool(list(pool) + [Candidate(id="99", hf_id="someone/new-model")])
    if method == "adaptive":  # the default ranks a candidate without history from its profile
        got = loaded.rank(tasks[0], bigger)
        assert set(got) == {c.id for c in bigger} and np.isfinite(list(got.values())).all()
    else:
        with pytest.raises(InputError, match=r"not trained on candidate\(s\) 99 \(someone/new-model\)"):
            loaded.rank(tasks[0], bigger)
    # a sub-pool is fine: scores of the kept candidates do not depend on the others
    sub = Pool(list(pool)[:3])
    got = loaded.rank(tasks[0], sub)
    assert list(got) == [c.id for c in sub]


def test_task_knn_nearest_neighbour_known_value(data, tmp_path):
    tasks, truth, pool = data
    # k=1: a task whose twin is in training gets exactly the twin's normalized F1
    ids = truth.task_ids[:6]
    r = make("task_knn", k=1, encoder="hashing", cache_dir=str(tmp_path)).fit(tasks.subset(ids), truth.subset(ids), pool=pool)
    got = r.rank(tasks.get(ids[2]), pool)
    want = truth.normalized(ids[2])
    for m in pool.ids:
        assert got[m] == pytest.approx(want[m])


def test_metadata_alpha_zero_is_mean_prior(data, tmp_path, layout):
    tasks, truth, pool = data
    r = make("metadata", alpha=0.0, encoder="hashing", pool=str(layout / "models.csv"),
             cache_dir=str(tmp_path)).fit(tasks, truth)
    scores = r.rank(tasks[0], pool)
    prior = truth.matrix("normalized_f1").mean(axis=0)
    assert sorted(pool.ids, key=lambda m: -scores[m]) == sorted(pool.ids, key=lambda m: -prior[m])


def test_ltr_fuses_an_estimator_run(data, tmp_path, layout):
    pytest.importorskip("lightgbm")
    from modelseek.retrieval.data.run import Run

    tasks, truth, pool = data
    oracle = Run.from_scores({t: truth.f1(t) for t in truth.task_ids}, "oracle")
    base = dict(encoder="hashing", pool=str(layout / "models.csv"), cache_dir=str(tmp_path), n_estimators=60,
                min_child_samples=5)
    plain = cross_validate("ltr", truth, pool, tasks=tasks, folds=3, method_params=base)
    fused = cross_validate("ltr", truth, pool, tasks=tasks, folds=3,
                           method_params={**base, "estimator_runs": {"oracle": oracle}})
    assert "est:oracle" in make("ltr", estimator_runs={"oracle": oracle}).feature_names
    p, f = plain.report.per_topic["ndcg@5"].mean(), fused.report.per_topic["ndcg@5"].mean()
    assert f > p and f > 0.9


def test_listnet_loss_known_value():
    torch = pytest.importorskip("torch")
    from modelseek.retrieval.rankers._torch import listnet_loss

    # equal scores: cross-entropy of any target distribution against uniform = log(M)
    loss = listnet_loss(torch.zeros(2, 5), torch.rand(2, 5), 0.1)
    assert float(loss) == pytest.approx(np.log(5))


def test_learned_ranker_needs_text_and_complete_truth(data, tmp_path):
    tasks, truth, pool = data
    with pytest.raises(InputError, match="needs the tasks' text"):
        cross_validate("task_knn", truth, pool, tasks=None, method_params={"encoder": "hashing"})
    partial = GroundTruth(truth.frame[~((truth.frame.task_id == truth.task_ids[0]) &
                                        (truth.frame.model_id == truth.model_ids[0]))])
    with pytest.raises(InputError, match="incomplete"):
        make("task_knn", encoder="hashing", cache_dir=None).fit(tasks, partial)


def test_unseen_labels_are_fine(data, tmp_path):
    from modelseek.testing import make_text_task

    tasks, truth, pool = data
    r = make("task_knn", encoder="hashing", cache_dir=None).fit(tasks, truth, pool=pool)
    new = make_text_task("new", n_classes=7, domain="medical", seed=9)  # labels never seen in training
    assert len(r.rank(new, pool)) == len(pool)
