"""Hand-checkable cases for every duel test: clear winner, tie, identical vectors, tiny samples, seeds."""

import math

import numpy as np
import pytest
from scipy import stats as st
from sklearn.metrics import roc_auc_score

from modelseek.core.errors import InputError
from modelseek.core.stats import (auroc, auroc_draws, auroc_pvalue, auroc_pvalue_matrix, bayesian_auroc_test,
                             benjamini_hochberg, bootstrap_pvalue_matrix, derive_rng, paired_bootstrap_perplexity_test,
                             paired_bootstrap_test, paired_ttest, paired_ttest_matrix, perplexity, resample_counts,
                             resampled_mean)


# ------------------------------------------------------------------------------------------ t-test
def test_ttest_known_value_matches_hand_computation():
    a = np.array([1, 1, 1, 0, 1, 1, 0, 1.0])
    b = np.array([0, 1, 0, 0, 1, 0, 0, 1.0])
    d = a - b  # 1,0,1,0,0,1,0,0: mean 3/8, sd sqrt(15/56)
    assert d.mean() == 3 / 8 and d.var(ddof=1) == pytest.approx(15 / 56)
    t = (3 / 8) / (math.sqrt(15 / 56) / math.sqrt(8))
    assert paired_ttest(a, b) == pytest.approx(st.t.sf(t, 7), rel=1e-12)
    assert paired_ttest(a, b) == pytest.approx(0.0398010062276, abs=1e-12)
    assert paired_ttest(b, a) == pytest.approx(1 - 0.0398010062276, abs=1e-12)


def test_ttest_identical_vectors_are_not_a_win():
    a = np.array([1, 0, 1, 1, 0.0])
    assert paired_ttest(a, a) == 1.0
    P = paired_ttest_matrix(np.stack([a, a, 1 - a]))
    assert P[0, 1] == 1.0 and P[1, 0] == 1.0


def test_ttest_clear_winner_and_tie():
    ones, zeros = np.ones(10), np.zeros(10)
    assert paired_ttest(ones, zeros) == 0.0          # constant positive difference
    assert paired_ttest(zeros, ones) == 1.0
    tie_a = np.array([1, 0, 1, 0, 1, 0.0])
    tie_b = np.array([0, 1, 0, 1, 0, 1.0])
    assert paired_ttest(tie_a, tie_b) == pytest.approx(0.5)  # equal means: t = 0


def test_ttest_tiny_samples():
    assert paired_ttest([1.0], [0.0]) == 1.0          # one sample cannot be tested
    assert paired_ttest([1.0, 1.0], [0.0, 1.0]) == pytest.approx(st.ttest_rel([1, 1], [0, 1], alternative="greater").pvalue)


def test_ttest_matrix_matches_pairwise_and_scipy():
    X = np.random.default_rng(0).integers(0, 2, (5, 40)).astype(float)
    P = paired_ttest_matrix(X)
    for i in range(5):
        assert np.isnan(P[i, i])
        for j in range(5):
            if i != j:
                want = st.ttest_rel(X[i], X[j], alternative="greater").pvalue
                if np.isnan(want):
                    want = 1.0
                assert P[i, j] == pytest.approx(want, abs=1e-12)
    Q = paired_ttest_matrix(X[:2], X[2:])
    np.testing.assert_allclose(Q, P[:2, 2:], rtol=0, atol=1e-15)


def test_ttest_rejects_bad_input():
    with pytest.raises(InputError):
        paired_ttest([1, 0], [1, 0, 1])
    with pytest.raises(InputError):
        paired_ttest([1, np.nan], [1, 0])


# ------------------------------------------------------------------------------------------ AUROC
def _binary(n, signal, seed):
    rng = np.random.default_rng(seed)
    gold = rng.integers(0, 2, n)
    score = np.clip(gold * signal + rng.random(n) * (1 - signal), 0, 1)
    return gold, np.stack([1 - score, score], axis=1)


def test_observed_auroc_equals_sklearn():
    gold, probs = _binary(200, 0.3, 1)
    assert auroc(gold, probs) == pytest.approx(roc_auc_score(gold, probs[:, 1]), abs=1e-12)
    rng = np.random.default_rng(2)
    g3 = rng.integers(0, 3, 150)
    p3 = rng.dirichlet([1, 1, 1], 150)
    p3[np.arange(150), g3] += 0.5
    p3 /= p3.sum(1, keepdims=True)
    assert auroc(g3, p3) == pytest.approx(roc_auc_score(g3, p3, multi_class="ovr", average="macro"), abs=1e-12)


def test_auroc_posterior_is_a_beta_shrunk_auc():
    # perfect separation, 2 positives + 2 negatives: ROC points FPR 0,0,0.5,1 with TP 0,2,2,2 (drop w=0)
    gold = np.array([1, 1, 0, 0])
    probs = np.array([[0.1, 0.9], [0.2, 0.8], [0.7, 0.3], [0.8, 0.2]])
    d = auroc_draws(gold, probs, derive_rng(0, "x"), n_draws=20000)
    # class 1 AUC = 0.25*T(2) + 0.5*T(2) + 0.25*T(2) with T(2) ~ Beta(3, 1) (mean 3/4); class 0 the same
    assert d.mean() == pytest.approx(0.75, abs=0.01)
    assert np.all(np.diff(d) >= 0)


def test_auroc_clear_winner_identical_and_seeded():
    good = _binary(300, 0.6, 3)
    bad = (good[0], np.roll(good[1], 7, axis=0))   # probabilities no longer aligned with gold
    assert bayesian_auroc_test(*good, *bad, seed=0) < 0.001
    assert bayesian_auroc_test(*bad, *good, seed=0) > 0.999
    p_same = bayesian_auroc_test(*good, *good, seed=0)
    assert 0.05 < p_same < 0.95                       # identical predictions: no win
    assert bayesian_auroc_test(*good, *bad, seed=5) == bayesian_auroc_test(*good, *bad, seed=5)
    d1 = auroc_draws(*good, derive_rng(1, "t", "m"))
    d2 = auroc_draws(*good, derive_rng(1, "t", "m"))
    np.testing.assert_array_equal(d1, d2)


def test_auroc_pvalue_counts_pairs_of_draws():
    a = np.array([0.1, 0.2, 0.3])
    b = np.array([0.2, 0.25])
    # pairs with a <= b: 0.1<=0.2, 0.1<=0.25, 0.2<=0.2, 0.2<=0.25 -> 4 of 6
    assert auroc_pvalue(a, b) == pytest.approx(4 / 6)
    D = np.random.default_rng(0).random((4, 50))
    P = auroc_pvalue_matrix(D)
    for i in range(4):
        for j in range(4):
            if i != j:
                assert P[i, j] == auroc_pvalue(D[i], D[j])


def test_auroc_tiny_and_bad_input():
    d = auroc_draws([0, 1], [[0.8, 0.2], [0.3, 0.7]], derive_rng(0), n_draws=50)
    assert d.shape == (50,) and np.all((d >= 0) & (d <= 1))
    with pytest.raises(InputError, match="no class has both"):
        auroc_draws([1, 1], [[0.2, 0.8], [0.3, 0.7]], derive_rng(0))
    with pytest.raises(InputError, match="gold label"):
        auroc([0, 3], [[0.2, 0.8], [0.3, 0.7]])


# --------------------------------------------------------------------------------------- bootstrap
def test_resample_counts_reproducible_and_complete():
    c = resample_counts(7, 100, 3)
    assert c.shape == (100, 7) and np.all(c.sum(axis=1) == 7)
    np.testing.assert_array_equal(c, resample_counts(7, 100, 3))
    x = np.arange(7.0)
    np.testing.assert_allclose(resampled_mean(x, c), (c * x).sum(1) / 7)


def test_bootstrap_identical_clear_and_tie():
    a = np.array([0.9, 0.8, 0.7, 0.95, 0.85, 0.9, 0.8, 0.75])
    assert paired_bootstrap_test(a, a) == 1.0          # delta = 0: never a win
    assert paired_bootstrap_test(a, a - 0.5, seed=1) == 0.0  # every resample keeps delta = 0.5 < 2 x 0.5
    assert paired_bootstrap_test(a - 0.5, a, seed=1) == 1.0  # A observed worse: p = 1
    b = a[::-1].copy()                                  # same mean
    assert paired_bootstrap_test(a, b) == 1.0


def test_bootstrap_tiny_samples():
    assert paired_bootstrap_test([0.9], [0.1]) == 1.0          # one sample: cannot be tested
    assert paired_bootstrap_perplexity_test([-1.0], [5], [-9.0], [5]) == 1.0
    # two samples, differences 1.0 and -0.2 (mean 0.4): the resampled mean difference is 1.0, 0.4 or -0.2;
    # only 1.0 exceeds 2 x 0.4, drawn with probability 1/4
    p = paired_bootstrap_test([1.0, 0.0], [0.0, 0.2], n_resamples=4000, seed=0)
    assert p == pytest.approx(0.25, abs=0.03)
    # differences 0.8 and 0.1 (mean 0.45): no resample exceeds 0.9 -> p = 0
    assert paired_bootstrap_test([0.9, 0.6], [0.1, 0.5], seed=0) == 0.0


def test_bootstrap_pvalue_is_share_above_twice_observed():
    S = np.array([[1.0, 2.0, 3.0, 4.0], [0.0, 0.0, 0.0, 0.0]])
    # observed delta 1; resampled deltas 1,2,3,4; share > 2: 2 of 4
    P = bootstrap_pvalue_matrix(S, [1.0, 0.0])
    assert P[0, 1] == 0.5 and P[1, 0] == 1.0
    # lower is better (perplexity): row 1 beats row 0 by 1; resampled deltas 1..4
    assert bootstrap_pvalue_matrix(S, [1.0, 0.0], higher_is_better=False)[1, 0] == 0.5


def test_perplexity_by_hand_and_test():
    assert perplexity([-10.0, -20.0], [5, 10]) == pytest.approx(math.exp(2.0))
    rng = np.random.default_rng(0)
    words = rng.integers(10, 50, 100).astype(float)
    ll_good = -2.0 * words + rng.normal(0, 1, 100)
    ll_bad = -2.5 * words + rng.normal(0, 1, 100)
    assert paired_bootstrap_perplexity_test(ll_good, words, ll_bad, words, seed=0) < 0.01
    assert paired_bootstrap_perplexity_test(ll_bad, words, ll_good, words, seed=0) == 1.0
    assert paired_bootstrap_perplexity_test(ll_good, words, ll_good, words, seed=0) == 1.0
    p1 = paired_bootstrap_perplexity_test(ll_good, words, ll_good - 0.05, words, seed=4)
    assert p1 == paired_bootstrap_perplexity_test(ll_good, words, ll_good - 0.05, words, seed=4)


# --------------------------------------------------------------------------------------------- BH
def test_benjamini_hochberg_by_hand():
    # sorted 0.01, 0.03, 0.04, 0.2 (m=4): 0.04, 0.06, 0.0533, 0.2 -> monotone 0.04, 0.0533, 0.0533, 0.2
    adj = benjamini_hochberg([0.01, 0.04, 0.03, 0.2])
    np.testing.assert_allclose(adj, [0.04, 0.16 / 3, 0.16 / 3, 0.2])
    assert benjamini_hochberg([0.9, 0.95])[1] == pytest.approx(0.95)
    both = benjamini_hochberg(np.array([[0.01, 0.04, 0.03, 0.2], [0.5, np.nan, 0.01, 0.02]]), axis=1)
    np.testing.assert_allclose(both[1], [0.5, np.nan, 0.03, 0.03])
