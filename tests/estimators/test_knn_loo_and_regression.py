"""The exact fast leave-one-out kNN (float32 candidates certified in float64) against scikit-learn, and the
regression forms of LogME and kNN (issue #28 item 4)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.neighbors import NearestNeighbors

import modelseek.retrieval.estimators as est
from modelseek.core.errors import InputError
from modelseek.retrieval.estimators.knn_loo import loo_neighbours


@pytest.mark.slow(reason="11 s (setup and call) on 2 busy cores")
@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
@pytest.mark.parametrize("n,d,block", [(300, 12, 2048), (700, 96, 128), (150, 768, 64)])
def test_neighbours_equal_sklearns_float64_neighbours(metric, n, d, block, backend, monkeypatch):
    import modelseek.retrieval.estimators.knn_loo as mod

    torch = pytest.importorskip("torch") if backend == "torch" else None
    monkeypatch.setattr(mod, "_torch", lambda n: torch)  # the product and selection by torch, or numpy only
    rng = np.random.default_rng(n + d)
    X = rng.standard_normal((n, d)) * 3 + 1
    for k in (1, 4):
        got = loo_neighbours(X, k, metric, block=block)
        want = NearestNeighbors(n_neighbors=k, metric=metric, algorithm="brute").fit(X).kneighbors(
            return_distance=False)
        np.testing.assert_array_equal(np.sort(got, 1), np.sort(want, 1))


def test_ties_and_near_ties_are_exact():
    """Duplicated rows (distance 0) and rows a float32 ulp apart: the float32 ranking cannot tell them apart,
    the float64 re-scoring (or the row's full float64 fallback) does; equal distances go to the smaller row."""
    rng = np.random.default_rng(1)
    base = rng.standard_normal((40, 16))
    near = base[:10] * (1 + 1e-12)                 # float32 cannot see the difference
    X = np.vstack([base, base[:10], near])         # rows 40..49 duplicate 0..9; 50..59 are 1e-12 away
    idx = loo_neighbours(X, 2, "euclidean")
    for i in range(10):
        assert set(idx[i]) == {40 + i, 50 + i} and idx[i][0] == 40 + i     # the duplicate is nearer
        assert idx[40 + i][0] == i and idx[50 + i][0] in (i, 40 + i)
        assert idx[50 + i][0] == i                  # equal distance to i and 40+i: the smaller row first
    d = np.linalg.norm(X[:, None] - X[None], axis=2)
    np.fill_diagonal(d, np.inf)
    assert (d[np.arange(len(X)), idx[:, 1]] <= np.sort(d, 1)[:, 1] + 1e-15).all()


def test_iris_reference_value_is_unchanged():
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)           # 17 duplicated rows
    assert est.get("knn_loo")(X, y, k=3, metric="euclidean", score="accuracy") == pytest.approx(0.96, abs=1e-12)


def _logme_reference(f: np.ndarray, y: np.ndarray) -> float:
    """LogME's Algorithm 1 for one target column, written plainly (full SVD, the published fixed point)."""
    N, D = f.shape
    u, s, _ = np.linalg.svd(f, full_matrices=False)
    sigma = s ** 2
    x = u.T @ y
    x2 = x ** 2
    res_x2 = y @ y - x2.sum()
    alpha, beta = 1.0, 1.0
    for _ in range(11):
        t = alpha / beta
        gamma = (sigma / (sigma + t)).sum()
        m2 = (sigma * x2 / (t + sigma) ** 2).sum()
        res2 = (x2 / (1 + sigma / t) ** 2).sum() + res_x2
        alpha, beta = gamma / (m2 + 1e-5), (N - gamma) / (res2 + 1e-5)
        ev = (D / 2 * np.log(alpha) + N / 2 * np.log(beta) - alpha / 2 * m2 - beta / 2 * res2
              - 0.5 * (np.log(alpha + beta * sigma).sum() + (D - len(sigma)) * np.log(alpha))
              - N / 2 * np.log(2 * np.pi)) / N
        if abs(alpha / beta - t) / t <= 1e-3:
            break
    return float(ev)


@pytest.mark.parametrize("n,d", [(300, 20), (40, 60)])
def test_logme_regression_form_equals_the_algorithm(n, d):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, d))
    t = X @ rng.standard_normal(d) + 0.5 * rng.standard_normal(n)
    want = _logme_reference(X, t)
    for route in ("auto", "primal", "dual") + (("tridiagonal",) if n > d else ()):
        assert est.get("logme")(X, t, task="regression", route=route) == pytest.approx(want, abs=1e-9)
    if n > d:  # a target the features explain scores above noise of the same spread
        noise = rng.standard_normal(n) * t.std()
        assert est.get("logme")(X, t, task="regression") > est.get("logme")(X, noise, task="regression")
    # string labels holding numbers are read as numbers
    assert est.get("logme")(X, [str(v) for v in t], task="regression") == pytest.approx(want, abs=1e-12)


def test_knn_regression_is_the_neighbours_mean():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((200, 8))
    t = X[:, 0] + 0.1 * rng.standard_normal(200)
    idx = NearestNeighbors(n_neighbors=5, metric="cosine", algorithm="brute").fit(X).kneighbors(return_distance=False)
    pred = t[idx].mean(1)
    assert est.get("knn_loo")(X, t, task="regression") == pytest.approx(np.corrcoef(t, pred)[0, 1], abs=1e-12)
    r2 = 1 - ((t - pred) ** 2).sum() / ((t - t.mean()) ** 2).sum()
    assert est.get("knn_loo")(X, t, task="regression", score="r2") == pytest.approx(r2, abs=1e-12)


@pytest.mark.parametrize("labels,words", [(["1.5", "x", "2"], "needs numeric labels, got 'x'"),
                                          ([2.0, 2.0, 2.0], "every label is 2"),
                                          ([1.0, np.inf, 2.0], "finite numbers (first bad in row 1)")])
def test_regression_targets_are_checked(labels, words):
    X = np.random.default_rng(0).standard_normal((3, 4))
    for name in ("logme", "knn_loo"):
        with pytest.raises(InputError, match=words.replace("(", r"\(").replace(")", r"\)")):
            est.get(name)(X, labels, task="regression", **({"k": 1} if name == "knn_loo" else {}))
    with pytest.raises(InputError, match="score must be pearson or r2 for regression"):
        est.get("knn_loo")(X, [1.0, 2.0, 3.0], task="regression", score="accuracy", k=1)


def test_only_logme_and_knn_loo_declare_regression():
    assert [n for n in est.names() if est.info(n).regression] == ["knn_loo", "logme"]
