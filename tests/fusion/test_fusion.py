"""Fusion methods and normalisations against hand-computed cases; the missing-candidate, partial-topic and
tie rules; the two callers (rankers' rrf, style's fusion) agree with the one implementation."""

from __future__ import annotations

import math

import numpy as np
import pytest

import modelseek as ms
from modelseek.retrieval.fusion import normalize_run
from modelseek.core.errors import InputError


def run(scores: dict, rid: str) -> ms.Run:
    return ms.Run.from_scores(scores, rid)


@pytest.fixture
def ab():
    # a ranks x > y > z on t1; b ranks y > x on t1 (z missing) and holds t2 alone
    a = run({"t1": {"x": 3.0, "y": 2.0, "z": 1.0}}, "a")
    b = run({"t1": {"y": 5.0, "x": 1.0}, "t2": {"q": 4.0}}, "b")
    return a, b


# ------------------------------------------------------------------------------------ normalisations
def test_normalisations_hand_computed(ab):
    a, _ = ab
    assert normalize_run(a, "min-max").scores("t1") == pytest.approx({"x": 1.0, "y": 0.5, "z": 0.0})
    sd = math.sqrt(2 / 3)  # population std of 3, 2, 1
    assert normalize_run(a, "zmuv").scores("t1") == pytest.approx({"x": 1 / sd, "y": 0.0, "z": -1 / sd})
    assert normalize_run(a, "rank").scores("t1") == pytest.approx({"x": 1.0, "y": 2 / 3, "z": 1 / 3})
    # sum: shift to 0 (2, 1, 0), then shares of the total 3
    assert normalize_run(a, "sum").scores("t1") == pytest.approx({"x": 2 / 3, "y": 1 / 3, "z": 0.0})
    assert normalize_run(a, "none").scores("t1") == {"x": 3.0, "y": 2.0, "z": 1.0}
    assert normalize_run(a, "z-score").scores("t1") == normalize_run(a, "zmuv").scores("t1")  # alias


def test_normalisations_of_flat_or_single_runs_are_zero():
    flat = run({"t": {"a": 2.0, "b": 2.0}}, "f")
    for norm in ("min-max", "zmuv", "sum"):
        assert normalize_run(flat, norm).scores("t") == {"a": 0.0, "b": 0.0}
    assert normalize_run(flat, "rank").scores("t") == pytest.approx({"a": 1.0, "b": 0.5})


@pytest.mark.parametrize("norm", ["min-max", "zmuv", "rank", "sum"])
def test_normalisations_are_scale_free_even_near_the_float_range(norm):
    base = {"a": 3.0, "b": -2.0, "c": 0.5}
    small = normalize_run(run({"t": base}, "r"), norm).scores("t")
    huge = normalize_run(run({"t": {d: v * 1e300 for d, v in base.items()}}, "r"), norm).scores("t")
    assert all(math.isfinite(v) for v in huge.values())
    assert huge == pytest.approx(small)


def test_unknown_normalisation_lists_the_valid_ones(ab):
    with pytest.raises(InputError, match="min-max, zmuv, rank, sum"):
        ms.fuse(list(ab), "combsum", norm="softmax")


# ------------------------------------------------------------------------------------ methods
def test_rrf_hand_computed_and_ties_by_natural_docid(ab):
    fused = ms.fuse(list(ab), "rrf")
    s = fused.scores("t1")
    assert s["x"] == pytest.approx(1 / 61 + 1 / 62)      # a: 1st, b: 2nd
    assert s["y"] == pytest.approx(1 / 62 + 1 / 61)      # a: 2nd, b: 1st
    assert s["z"] == pytest.approx(1 / 63)               # a: 3rd; missing from b: no term
    assert fused.ranking("t1") == ["x", "y", "z"]        # x and y tie: natural docID order
    assert fused.scores("t2") == pytest.approx({"q": 1 / 61})
    assert fused.run_id == "fused-rrf"


def test_weighted_rrf_and_k(ab):
    s = ms.fuse(list(ab), "rrf", weights=[1, 2], k=10).scores("t1")
    assert s == pytest.approx({"x": 1 / 11 + 2 / 12, "y": 1 / 12 + 2 / 11, "z": 1 / 13})
    assert ms.fuse(list(ab), "rrf", weights={"b": 2, "a": 1}, k=10).scores("t1") == pytest.approx(s)


@pytest.mark.parametrize("norm, expected", [
    # a: x 1, y .5, z 0 ; b: y 1, x 0
    ("min-max", {"x": 1.0, "y": 1.5, "z": 0.0}),
    # a: x 1/sd, y 0, z -1/sd (sd = sqrt(2/3)); b: mean 3, std 2 -> y 1, x -1
    ("zmuv", {"x": 1 / math.sqrt(2 / 3) - 1, "y": 1.0, "z": -1 / math.sqrt(2 / 3)}),
    # a: x 1, y 2/3, z 1/3 ; b: y 1, x 1/2
    ("rank", {"x": 1.5, "y": 5 / 3, "z": 1 / 3}),
    # a: x 2/3, y 1/3, z 0 ; b: y 1, x 0
    ("sum", {"x": 2 / 3, "y": 4 / 3, "z": 0.0}),
])
def test_combsum_hand_computed(ab, norm, expected):
    assert ms.fuse(list(ab), "combsum", norm=norm).scores("t1") == pytest.approx(expected)


def test_combmnz_and_wsum_hand_computed(ab):
    # min-max: x = (1 + 0) * 2 runs, y = (0.5 + 1) * 2, z = 0 * 1 run
    assert ms.fuse(list(ab), "combmnz").scores("t1") == pytest.approx({"x": 2.0, "y": 3.0, "z": 0.0})
    # rank: x = 1 * 2, y = (2/3 + 1) * 2, z = 1/3 * 1 -- z is counted in one run only
    assert ms.fuse(list(ab), "combmnz", norm="rank").scores("t1") == pytest.approx(
        {"x": 3.0, "y": 10 / 3, "z": 1 / 3})
    fused = ms.fuse(list(ab), "wsum", weights=[0.25, 0.75])
    assert fused.scores("t1") == pytest.approx({"x": 0.25, "y": 0.125 + 0.75, "z": 0.0})
    assert fused.ranking("t1") == ["y", "x", "z"]
    # default wsum weights are 1 each: the combsum scores
    assert ms.fuse(list(ab), "wsum").scores("t1") == pytest.approx(ms.fuse(list(ab), "combsum").scores("t1"))


def test_fused_run_is_new_and_inputs_untouched(ab):
    a, b = ab
    before = (a.lines(), b.lines())
    fused = ms.fuse([a, b], "wsum", weights=[1, 1], run_id="mine")
    assert fused.run_id == "mine" and fused is not a
    assert (a.lines(), b.lines()) == before
    assert [e.rank for e in fused["t1"]] == [1, 2, 3]


# ------------------------------------------------------------------------------------ the rules
def test_candidate_in_no_run_is_absent_and_failed_scores_are_missing():
    a = run({"t": {"x": 2.0, "y": 1.0, "bad": -math.inf}}, "a")
    b = ms.Run({"t": [ms.retrieval.data.run.Entry("y", 1, 9.0), ms.retrieval.data.run.Entry("bad", 2, -1e308)]}, "b")
    for method in ("rrf", "combsum", "combmnz", "wsum"):
        fused = ms.fuse([a, b], method)
        assert set(fused.ranking("t")) == {"x", "y"}, method     # 'bad' failed in both: absent
    # min-max within a sees only x and y (the failed candidate does not stretch the range)
    assert ms.fuse([a, b], "combsum").scores("t") == pytest.approx({"x": 1.0, "y": 0.0 + 0.0})


def test_topic_in_only_some_runs_is_fused_from_those(ab):
    a, b = ab
    fused = ms.fuse([a, b], "wsum", weights=[0.5, 0.5], norm="rank")
    assert list(fused) == ["t1", "t2"]                           # union, order of first appearance
    assert fused.scores("t2") == pytest.approx({"q": 0.5})       # b alone, weight not renormalised


def test_ties_follow_natural_docid_order():
    a = run({"t": {"10": 1.0, "2": 0.0}}, "a")
    b = run({"t": {"2": 1.0, "10": 0.0}}, "b")
    for method in ("rrf", "combsum", "combmnz"):
        assert ms.fuse([a, b], method).ranking("t") == ["2", "10"]


@pytest.mark.parametrize("kwargs, match", [
    ({"method": "rrf", "norm": "min-max"}, "rrf fuses ranks"),
    ({"method": "combsum", "weights": [1, 2]}, "takes no weights"),
    ({"method": "wsum", "weights": [1]}, "1 weight"),
    ({"method": "wsum", "weights": [1, -1]}, ">= 0"),
    ({"method": "wsum", "weights": [0, 0]}, "at least one weight"),
    ({"method": "wsum", "weights": {"a": 1, "zz": 1}}, "zz"),
    ({"method": "borda"}, "valid values: rrf, combsum, combmnz, wsum"),
    ({"method": "rrf", "k": -1}, "k must be"),
])
def test_bad_specifications_are_input_errors(ab, kwargs, match):
    with pytest.raises(InputError, match=match):
        ms.fuse(list(ab), **kwargs)


def test_duplicate_run_ids_are_refused(ab):
    a, _ = ab
    with pytest.raises(InputError, match="duplicate run id"):
        ms.fuse([a, a.with_id("a")])


def test_overflowing_raw_sums_are_an_error_not_a_ranking():
    a = run({"t": {"x": 1e308 * 0.9, "y": 1.0}}, "a")
    b = run({"t": {"x": 1e308 * 0.9, "y": 2.0}}, "b")
    with pytest.raises(InputError, match="overflow"):
        ms.fuse([a, b], "combsum", norm="none")
    assert ms.fuse([a, b], "combsum").ranking("t") == ["x", "y"]   # min-max is fine


# ------------------------------------------------------------------------------------ one implementation
def test_ranker_rrf_is_the_fusion_rrf():
    from modelseek.retrieval.rankers.features import reciprocal_rank_fusion

    per_method = [{"a": 0.1, "b": 0.9, "c": -math.inf}, {"a": 5.0, "b": 1.0, "c": -math.inf}]
    got = reciprocal_rank_fusion(per_method, k=60)
    assert got["a"] == pytest.approx(1 / 62 + 1 / 61) and got["b"] == pytest.approx(1 / 61 + 1 / 62)
    assert got["c"] == -math.inf      # failed everywhere: marked, never a placeholder


def test_style_rrf_is_the_fusion_rrf():
    from modelseek.style.retrievers import ranks_from_scores, rrf

    rng = np.random.default_rng(0)
    mats = [rng.integers(0, 4, size=(7, 12)).astype(float) for _ in range(3)]   # many ties
    # the formula, column-order ties; the terms added smallest first (the same sum in any order of the lists)
    expected = sum(np.sort([1.0 / (60 + ranks_from_scores(m)) for m in mats], axis=0))
    assert np.array_equal(rrf(mats), expected)
