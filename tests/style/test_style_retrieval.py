"""Retrievers, fusion, single-relevant MRR through the shared scorer, grouped CV, the generated benchmark."""

from __future__ import annotations

import numpy as np
import pytest

from modelseek import Run, evaluate
from modelseek.retrieval.data.run import Entry
from modelseek.core.errors import InputError, NotFittedError
from modelseek.style import (chance_mrr, content_folds, cross_validate_style, generated_style_dataset, make_styles,
                             parse_method, style_truth)
from modelseek.style.retrievers import make_retriever, ranks_from_scores, rrf

MODELS = ["1", "2", "3", "4"]


def _blobs(n_per=6, seed=0, models=("1", "2", "3")):
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 5, (len(models), 10))
    X = np.concatenate([c + rng.normal(0, 0.5, (n_per, 10)) for c in centres])
    y = [m for m in models for _ in range(n_per)]
    return X, y


@pytest.mark.parametrize("name", ["centroid", "knn", "logreg"])
def test_retrievers_rank_every_model_and_find_the_right_one(name):
    X, y = _blobs()
    Xq, yq = _blobs(seed=0)  # same centres, same noise: the training points themselves
    r = make_retriever(name).fit(X, y, MODELS)
    s = r.scores(Xq + np.random.default_rng(1).normal(0, 0.1, Xq.shape))
    assert s.shape == (len(Xq), 4) and np.isfinite(s).all()
    top = [MODELS[i] for i in s.argmax(1)]
    assert top == yq
    # model "4" has no training image: ranked last for every query
    assert (ranks_from_scores(s)[:, 3] == 4).all()


@pytest.mark.parametrize("name", ["centroid", "knn", "logreg"])
def test_retrievers_are_invariant_to_training_order(name):
    X, y = _blobs(seed=2)
    perm = np.random.default_rng(0).permutation(len(y))
    a = make_retriever(name).fit(X, y, MODELS).scores(X[:5])
    b = make_retriever(name).fit(X[perm], [y[i] for i in perm], MODELS).scores(X[:5])
    assert np.argsort(-a, 1, kind="stable").tolist() == np.argsort(-b, 1, kind="stable").tolist()


def test_retriever_errors():
    X, y = _blobs()
    with pytest.raises(InputError, match="not among the candidate models"):
        make_retriever("centroid").fit(X, ["9"] * len(y), MODELS)
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(InputError, match="NaN"):
        make_retriever("logreg").fit(bad, y, MODELS)
    with pytest.raises(InputError, match="at least 2 models"):
        make_retriever("knn").fit(X[:6], y[:6], MODELS)
    with pytest.raises(NotFittedError, match="not fitted"):
        make_retriever("knn").scores(X)


def test_logreg_in_training_span_equals_full_fit():
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 40))  # more features than images: fitted in the span of the training features
    y = [str(1 + i % 3) for i in range(12)]
    r = make_retriever("logreg", C=1.0).fit(X, y, ["1", "2", "3"])
    Z = r.pre_.transform(X)
    full = LogisticRegression(C=1.0, max_iter=5000, tol=1e-10).fit(Z, y)
    Xq = rng.normal(size=(4, 40))
    ref = full.predict_log_proba(r.pre_.transform(Xq))
    assert r.scores(Xq) == pytest.approx(ref, abs=1e-2)  # equal up to the solver's tolerance (tol=1e-4)
    assert r.scores(Xq).argsort(1).tolist() == ref.argsort(1).tolist()


def test_rrf_known_values():
    a = np.array([[3.0, 2.0, 1.0]])
    b = np.array([[1.0, 3.0, 2.0]])
    fused = rrf([a, b])
    # ranks: model0 (1, 3), model1 (2, 1), model2 (3, 2)
    assert fused[0] == pytest.approx([1 / 61 + 1 / 63, 1 / 62 + 1 / 61, 1 / 63 + 1 / 62])
    assert ranks_from_scores(np.array([[0.5, 0.5, 0.9]])).tolist() == [[2, 3, 1]]


def test_mrr_matches_hand_computed_cases():
    truth = style_truth(["q1", "q2", "q3", "q4"], ["2", "3", "1", "4"])
    run = Run({
        "q1": [Entry("2", 1, 0.9), Entry("1", 2, 0.5), Entry("3", 3, 0.1)],   # rank 1 -> 1
        "q2": [Entry("1", 1, 0.9), Entry("2", 2, 0.5), Entry("3", 3, 0.1)],   # rank 3 -> 1/3
        "q3": [Entry("3", 1, 0.9), Entry("1", 2, 0.5), Entry("2", 3, 0.1)],   # rank 2 -> 1/2
        "q4": [Entry("1", 1, 0.9), Entry("2", 2, 0.5), Entry("3", 3, 0.1)],   # never ranked -> 0
    }, "hand")
    rep = evaluate(run, truth, metrics=["mrr", "ndcg@1"])
    assert rep.per_topic["mrr"].tolist() == pytest.approx([1, 1 / 3, 1 / 2, 0])
    assert rep.mean()["mrr"] == pytest.approx((1 + 1 / 3 + 1 / 2) / 4)
    assert rep.mean()["ndcg@1"] == pytest.approx(1 / 4)  # top-1 accuracy with one relevant model


def test_chance_mrr():
    assert chance_mrr(1) == 1.0
    assert chance_mrr(2) == pytest.approx(0.75)
    assert chance_mrr(4) == pytest.approx((1 + 1 / 2 + 1 / 3 + 1 / 4) / 4)
    rng = np.random.default_rng(0)
    sim = np.mean([1 / (rng.permutation(20).tolist().index(0) + 1) for _ in range(20000)])
    assert sim == pytest.approx(chance_mrr(20), abs=0.01)


def test_content_folds_never_split_a_content_image():
    groups = [str(g) for g in np.repeat(np.arange(10), 3)]
    folds = content_folds(groups, 4, seed=1)
    assert sorted(np.concatenate(folds).tolist()) == list(range(30))
    seen = [set(np.asarray(groups)[f]) for f in folds]
    assert all(not (a & b) for i, a in enumerate(seen) for b in seen[i + 1:])
    assert [f.tolist() for f in folds] == [f.tolist() for f in content_folds(groups, 4, seed=1)]
    with pytest.raises(InputError, match="folds must be between 2 and the number of content groups"):
        content_folds(groups, 11)


def test_parse_method():
    s = parse_method("texture+colour-logreg@pca16")
    assert s.features == ("texture", "colour") and s.retriever == "logreg" and s.pca == 16
    assert parse_method("enc:vit-tiny-knn").features == ("enc:vit-tiny",)
    f = parse_method("fusion:gram-knn,hist-centroid")
    assert f.is_fusion and [m.name for m in f.members] == ["gram-knn", "hist-centroid"]
    for bad, msg in [("gram", "FEATURES-RETRIEVER"), ("gram-svm", "Did you mean|Valid names"),
                     ("grma-knn", "Valid names"), ("gram-knn@pcax", "@pcaN"), ("gram+gram-knn", "repeats"),
                     ("fusion:", "name the fused")]:
        with pytest.raises(Exception, match=msg):
            parse_method(bad)


def test_generated_dataset_is_deterministic_and_content_grouped():
    a = generated_style_dataset(n_styles=5, n_content=3, size=24, seed=0)
    b = generated_style_dataset(n_styles=5, n_content=3, size=24, seed=0)
    assert len(a) == 15 and a.ids[0] == "gen-1-1" and a.groups[:5] == ["1"] * 5
    assert all(np.array_equal(x, y) for x, y in zip(a.arrays, b.arrays))
    c = generated_style_dataset(n_styles=5, n_content=3, size=24, seed=1)
    assert not np.array_equal(a.arrays[0], c.arrays[0])
    names = [n for n, _ in make_styles(22, 0)]
    assert len({n.split("-", 1)[1].split("+")[0] for n in names}) == 22  # 22 styles: every family once


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
def test_cv_on_generated_styles_beats_chance_and_hist(tmp_path):
    data = generated_style_dataset(n_styles=8, n_content=6, size=32, seed=0)
    res = cross_validate_style(data, ["hist-centroid", "texture+colour-logreg", "fusion:texture+colour-logreg,"
                                      "colour-centroid"], folds=3, seed=0, size=32, cache=tmp_path)
    mrr = res.mrr
    assert set(mrr) == {"hist-centroid", "texture+colour-logreg", "fusion:texture+colour-logreg,colour-centroid"}
    assert res.chance == pytest.approx(chance_mrr(8))
    assert mrr["texture+colour-logreg"] > mrr["hist-centroid"] > res.chance
    assert mrr["texture+colour-logreg"] > 2 * res.chance
    # every query ranked all 8 models, in one run per method
    run = res.runs["texture+colour-logreg"]
    assert len(run) == len(data) and all(len(run[q]) == 8 for q in run)


def test_subtask_b_id_rules_apply_to_style_runs(tmp_path):
    from modelseek import ValidationError, validate_run
    from modelseek.style.pipeline import scores_to_run

    good = scores_to_run(["test-0001-0011", "test-0002-0190"], np.array([[0.1, 0.9], [0.8, 0.2]]), ["1", "2"], "r")
    path = tmp_path / "run.txt"
    good.write(path)
    runs = validate_run(path, topics=["test-0001-0011.png", "test-0002-0190.png"], docs=["1", "2"], subtask="B")
    assert runs["r"].ranking("test-0001-0011") == ["2", "1"]
    path.write_text("test-0001-0011.png Q0 01 1 0.9 r\ntest-0001-0011.png Q0 2 2 0.1 r\n")
    with pytest.raises(ValidationError) as exc:
        validate_run(path, subtask="B")
    msgs = " ".join(str(p) for p in exc.value.problems)
    assert "'test-0001-0011.png' must be written 'test-0001-0011'" in msgs and "'01' must be written '1'" in msgs


def test_generated_mixed_content_uses_sample_photos():
    pytest.importorskip("skimage", reason="scikit-image (the vision extra) ships the sample photographs")
    shapes = generated_style_dataset(n_styles=2, n_content=2, size=24, seed=0)
    mixed = generated_style_dataset(n_styles=2, n_content=2, size=24, seed=0, content="mixed")
    assert np.array_equal(shapes.arrays[0], mixed.arrays[0])  # content 1 is drawn by code in both
    assert not np.array_equal(shapes.arrays[2], mixed.arrays[2])  # content 2 is a photo crop in "mixed"
    with pytest.raises(InputError, match="valid: shapes, mixed"):
        generated_style_dataset(n_styles=2, n_content=2, content="photos")


def test_not_fitted_is_the_one_not_fitted_error():
    from modelseek.retrieval.rankers import NotFittedError as RankersNotFitted
    from modelseek.style import StyleRanker

    assert RankersNotFitted is NotFittedError
    with pytest.raises(NotFittedError, match="StyleRanker is not fitted"):
        StyleRanker("hist-centroid").scores(None)
