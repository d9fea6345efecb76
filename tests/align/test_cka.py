"""Linear CKA: identities, invariances, route agreement, unbiased estimator, reference values, eps convention."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from modelseek.align import cka, cka_matrix, hsic, minibatch_cka
from modelseek.align.linear_cka import MinibatchCKA, choose_route
from modelseek.core.errors import InputError


def naive_biased(X, Y):
    """Textbook tr(K H L H) / sqrt(...) with explicit H — O(n^3), only for checking."""
    n = len(X)
    H = np.eye(n) - np.ones((n, n)) / n
    K, L = X @ X.T, Y @ Y.T
    hxy, hxx, hyy = (np.trace(A @ H @ B @ H) for A, B in ((K, L), (K, K), (L, L)))
    return hxy / np.sqrt(hxx * hyy)


def naive_unbiased_hsic(X, Y):
    """Song et al. (2012) eq. 5 on explicit Grams with zeroed diagonals."""
    n = len(X)
    K, L = X @ X.T, Y @ Y.T
    np.fill_diagonal(K, 0)
    np.fill_diagonal(L, 0)
    one = np.ones(n)
    return (np.trace(K @ L) + (one @ K @ one) * (one @ L @ one) / ((n - 1) * (n - 2))
            - 2 / (n - 2) * (one @ K @ L @ one)) / (n * (n - 3))


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


def test_self_similarity_is_one(rng):
    X = rng.normal(size=(40, 7))
    assert cka(X, X) == pytest.approx(1.0, abs=1e-12)
    assert cka(X, X, unbiased=True) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("unbiased", [False, True])
def test_invariant_to_orthogonal_transform_isotropic_scaling_and_shift(rng, unbiased):
    X, Y = rng.normal(size=(30, 6)), rng.normal(size=(30, 9))
    Y = Y + X @ rng.normal(size=(6, 9))
    Q, _ = np.linalg.qr(rng.normal(size=(9, 9)))
    base = cka(X, Y, unbiased=unbiased)
    assert cka(X, Y @ Q, unbiased=unbiased) == pytest.approx(base, abs=1e-12)
    assert cka(3.7 * X, 0.01 * Y, unbiased=unbiased) == pytest.approx(base, abs=1e-12)
    assert cka(X + 5.0, Y - 2.0, unbiased=unbiased) == pytest.approx(base, abs=1e-12)
    assert cka(Y, X, unbiased=unbiased) == pytest.approx(base, abs=1e-14)
    # not invariant to a general (anisotropic) linear map
    A = np.diag(np.linspace(0.1, 10, 9))
    assert abs(cka(X, Y @ A, unbiased=unbiased) - base) > 1e-3


@pytest.mark.parametrize("unbiased", [False, True])
@pytest.mark.parametrize("shape", [(50, 3, 200), (300, 20, 8), (12, 40, 40)])
def test_gram_and_feature_routes_agree(rng, unbiased, shape):
    n, p, q = shape
    X = rng.normal(size=(n, p)) * rng.uniform(0.1, 5, p) + 3
    Y = np.tanh(X @ rng.normal(size=(p, q))) + 0.5 * rng.normal(size=(n, q))
    g = cka(X, Y, unbiased=unbiased, route="gram")
    f = cka(X, Y, unbiased=unbiased, route="feature")
    assert abs(g - f) < 1e-10
    assert hsic(X, Y, unbiased, "gram") == pytest.approx(hsic(X, Y, unbiased, "feature"), rel=1e-10)


def test_biased_equals_textbook_formula(rng):
    X, Y = rng.normal(size=(15, 4)), rng.normal(size=(15, 6))
    assert cka(X, Y) == pytest.approx(naive_biased(X, Y), abs=1e-12)
    n = 15
    H = np.eye(n) - 1 / n
    assert hsic(X, Y) == pytest.approx(np.trace(X @ X.T @ H @ Y @ Y.T @ H) / (n - 1) ** 2, rel=1e-12)


def test_unbiased_equals_song_et_al(rng):
    X = rng.normal(size=(11, 3)) + 2
    Y = X @ rng.normal(size=(3, 5)) + rng.normal(size=(11, 5))
    # the estimator is defined on Grams of the centred features
    Xc, Yc = X - X.mean(0), Y - Y.mean(0)
    assert hsic(X, Y, unbiased=True) == pytest.approx(naive_unbiased_hsic(Xc, Yc), rel=1e-12)
    assert cka(X, Y, unbiased=True) == pytest.approx(
        naive_unbiased_hsic(Xc, Yc) / np.sqrt(naive_unbiased_hsic(Xc, Xc) * naive_unbiased_hsic(Yc, Yc)), abs=1e-12)


def test_reference_values_fixed_inputs():
    # one feature each: linear CKA is the squared Pearson correlation
    x = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    y = x ** 2
    r = np.corrcoef(x, y)[0, 1]
    assert cka(x[:, None], y[:, None]) == pytest.approx(r ** 2, abs=1e-14)
    assert cka(x[:, None], y[:, None]) == pytest.approx(0.9625668449197863, abs=1e-14)
    # a fixed 4 x 2 pair, value computed by hand: Xc = diag-free, <Kc,Lc> = ||Yc^T Xc||^2
    X = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]])
    Y = np.array([[2.0, 0.0], [0.0, 0.0], [-2.0, 0.0], [0.0, 0.0]])
    # Xc^T Xc = 2 I -> ||.||=sqrt(8); Yc^T Yc = diag(8, 0) -> 8; Yc^T Xc = [[4,0],[0,0]] -> 16; 16/(sqrt(8)*8)
    assert cka(X, Y) == pytest.approx(16 / (np.sqrt(8) * 8), abs=1e-15)
    assert cka(X, Y) == pytest.approx(1 / np.sqrt(2), abs=1e-15)


def test_unbiased_near_zero_biased_not_for_independent_gaussians():
    # For independent isotropic Gaussians the biased estimate concentrates near p / (n - 1 + p): with n = 32
    # stimuli and 256 features that is 0.89 (the issue text says "about 0.2", which is the value for 8
    # features: 8 / 39 = 0.205); the unbiased estimate stays near 0 in both cases.
    for p, expect in ((256, 256 / 287), (8, 8 / 39)):
        b, u = [], []
        for seed in range(20):
            g = np.random.default_rng(seed)
            X, Y = g.normal(size=(32, p)), g.normal(size=(32, p))
            b.append(cka(X, Y))
            u.append(cka(X, Y, unbiased=True))
        assert np.mean(b) == pytest.approx(expect, abs=0.02)
        assert abs(np.mean(u)) < 0.03
        assert np.mean(b) > np.mean(u) + 0.15


def test_unbiased_needs_four_stimuli(rng):
    X = rng.normal(size=(3, 2))
    with pytest.raises(InputError, match="at least 4 stimuli"):
        cka(X, X, unbiased=True)
    assert cka(X, X) == pytest.approx(1.0)


def test_eps_convention_constant_gives_zero_not_nan(rng):
    X = rng.normal(size=(10, 3))
    const = np.full((10, 4), 0.1)  # mean of 0.1s is not exactly 0.1 in float64: residue must count as constant
    for unbiased in (False, True):
        assert cka(const, X, unbiased=unbiased) == 0.0
        assert cka(X, const, unbiased=unbiased) == 0.0
        assert cka(const, const, unbiased=unbiased) == 0.0
    C = cka_matrix([X, const, X * 2])
    assert not np.isnan(C).any()
    assert C[1].tolist() == [0.0, 0.0, 0.0] and C[0, 2] == pytest.approx(1.0)


def test_bad_input(rng):
    with pytest.raises(InputError, match="different numbers of stimuli"):
        cka(rng.normal(size=(5, 2)), rng.normal(size=(6, 2)))
    with pytest.raises(InputError, match="NaN"):
        cka(np.array([[1.0], [np.nan], [2.0]]), rng.normal(size=(3, 1)))
    with pytest.raises(InputError, match="2-D"):
        cka(np.zeros((2, 2, 2)), np.zeros((2, 2, 2)))
    with pytest.raises(InputError, match="route"):
        cka(rng.normal(size=(5, 2)), rng.normal(size=(5, 2)), route="fast")


@pytest.mark.parametrize("unbiased", [False, True])
@pytest.mark.parametrize("route", ["gram", "feature"])
def test_cka_matrix_matches_pairwise(rng, unbiased, route):
    base = rng.normal(size=(60, 5))
    feats = [base @ rng.normal(size=(5, d)) + s * rng.normal(size=(60, d))
             for d, s in ((4, 0.1), (30, 1.0), (2, 0.0), (80, 3.0))]
    C = cka_matrix(feats, unbiased=unbiased, route=route, block_bytes=60 * 60 * 8 * 4 * 7)  # forces row blocks
    P = np.array([[cka(a, b, unbiased=unbiased) for b in feats] for a in feats])
    assert np.allclose(C, C.T, atol=0) and np.max(np.abs(C - P)) < 1e-10
    assert np.allclose(np.diag(C), 1.0)


def test_cka_matrix_wide_feature_blocks(rng):
    feats = [rng.normal(size=(30, d)) for d in (5, 7, 9)]
    one = cka_matrix(feats, route="feature")
    blocked = cka_matrix(feats, route="feature", block_bytes=100)  # per-model products instead of Z^T Z
    assert np.max(np.abs(one - blocked)) < 1e-12


def test_route_choice():
    assert choose_route(10_000, [512, 512]) == "feature"
    assert choose_route(100, [4096, 2048]) == "gram"


def test_minibatch_cka(rng):
    X = rng.normal(size=(400, 6))
    Y = X @ rng.normal(size=(6, 10)) + 0.5 * rng.normal(size=(400, 10))
    full_u = cka(X, Y, unbiased=True)
    assert minibatch_cka(X, Y, batch_size=100, rng=0) == pytest.approx(full_u, abs=0.05)
    assert minibatch_cka(X, Y, batch_size=400) == pytest.approx(full_u, abs=1e-12)  # one batch = full
    assert minibatch_cka(X, Y, batch_size=50, rng=1) == minibatch_cka(X, Y, batch_size=50, rng=1)
    indep = minibatch_cka(X, rng.normal(size=(400, 10)), batch_size=32, rng=0)
    assert abs(indep) < 0.05
    acc = MinibatchCKA(3, unbiased=False)
    acc.update([X, Y, X * 2])
    assert np.max(np.abs(acc.result() - cka_matrix([X, Y, X * 2]))) < 1e-12
    with pytest.raises(InputError, match="batch_size"):
        minibatch_cka(X, Y, batch_size=2)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(4, 25), p=st.integers(1, 12), q=st.integers(1, 12), seed=st.integers(0, 10_000))
def test_properties(n, p, q, seed):
    g = np.random.default_rng(seed)
    X, Y = g.normal(size=(n, p)), g.normal(size=(n, q))
    for unbiased in (False, True):
        c = cka(X, Y, unbiased=unbiased)
        assert np.isfinite(c) and c <= 1 + 1e-9
        assert abs(cka(X, Y, unbiased, "gram") - cka(X, Y, unbiased, "feature")) < 1e-10
    assert 0 <= cka(X, Y) <= 1 + 1e-12
    perm = g.permutation(n)
    assert cka(X[perm], Y[perm]) == pytest.approx(cka(X, Y), abs=1e-12)  # sample order does not matter


@pytest.mark.parametrize("scale", [1e80, 1e-80, 1e200, 1e-300, 3.0])
@pytest.mark.parametrize("unbiased", [False, True])
def test_cka_is_scale_invariant_in_float64(scale, unbiased):
    """Issue #14: features scaled by 1e80 gave 0.0 (biased) or NaN (unbiased); CKA is scale-invariant."""
    from modelseek.align.linear_cka import MinibatchCKA, cka, cka_matrix

    rng = np.random.default_rng(4)
    X = rng.normal(size=(40, 6))
    Y = np.tanh(X @ rng.normal(size=(6, 9))) + rng.normal(size=(40, 9))
    ref = cka(X, Y, unbiased=unbiased)
    assert 0.05 < abs(ref) < 0.95
    for route in ("gram", "feature"):
        assert cka(X * scale, Y, unbiased=unbiased, route=route) == pytest.approx(ref, rel=1e-9)
        assert cka(X * scale, Y / scale, unbiased=unbiased, route=route) == pytest.approx(ref, rel=1e-9)
    C = cka_matrix([X * scale, Y, X], unbiased=unbiased)
    assert np.all(np.isfinite(C)) and C[0, 1] == pytest.approx(ref, rel=1e-9) and C[0, 2] == pytest.approx(1.0)
    mb = MinibatchCKA(2, unbiased=unbiased)
    plain = MinibatchCKA(2, unbiased=unbiased)
    for a in range(0, 40, 10):
        mb.update([X[a:a + 10] * scale, Y[a:a + 10]])
        plain.update([X[a:a + 10], Y[a:a + 10]])
    assert mb.result()[0, 1] == pytest.approx(plain.result()[0, 1], rel=1e-9)
