"""The official scorer: hand-computed nDCG cases, both grading schemes, MRR, properties."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from modelseek import GradingScheme, GroundTruth, Run, evaluate
from modelseek.retrieval.data.run import Entry
from modelseek.retrieval.metrics import get as metric
from modelseek.retrieval.metrics import Judgments, ndcg_at_k, reciprocal_rank, regret_at_k, weighted_tau

L2 = math.log2


def truth_from(f1: dict[str, float], task: str = "t1", crit: str = "low") -> GroundTruth:
    return GroundTruth(pd.DataFrame([(task, m, v) for m, v in f1.items()], columns=["task_id", "model_id", "f1"]),
                       criticality={task: crit})


def run_from(order: list[str], task: str = "t1", ranks: list[int] | None = None) -> Run:
    ranks = ranks or list(range(1, len(order) + 1))
    return Run({task: [Entry(d, r, float(-r)) for d, r in zip(order, ranks)]}, "r")


@pytest.mark.parametrize("value,ntcir,paper", [
    (1.0, 3, 4), (0.995, 3, 4), (0.99, 2, 4), (0.975, 2, 4), (0.97, 2, 3), (0.95, 1, 3), (0.949, 1, 2),
    (0.925, 1, 2), (0.92, 1, 1), (0.90, 0, 1), (0.8999, 0, 0), (0.0, 0, 0)])
def test_grades_at_thresholds(value, ntcir, paper):
    assert GradingScheme.NTCIR.grade(value) == ntcir
    assert GradingScheme.PAPER.grade(value) == paper


def test_grade_of_ratio_exactly_at_threshold_despite_float_error():
    # 0.27 / 0.30 = 0.9000000000000001 in floating point: still "<= 0.90" -> grade 0
    t = truth_from({"a": 0.30, "b": 0.27, "c": 0.2985, "d": 0.285})
    assert t.grades("t1") == {"a": 3, "b": 0, "c": 3, "d": 1}
    assert t.grades("t1", "paper") == {"a": 4, "b": 1, "c": 4, "d": 3}


def test_gains():
    assert GradingScheme.NTCIR.gain(3) == 7 and GradingScheme.NTCIR.gain(0) == 0
    assert GradingScheme.PAPER.gain(4) == 4


def test_ndcg_hand_computed():
    # normalized f1: a 1.0 (3), b 0.96 (2), c 0.93 (1), d 0.5 (0)
    t = truth_from({"a": 1.0, "b": 0.96, "c": 0.93, "d": 0.5})
    r = run_from(["d", "c", "a", "b"])
    rep = evaluate(r, t, ["ndcg@1", "ndcg@3", "ndcg@5"])
    idcg3 = 7 / L2(2) + 3 / L2(3) + 1 / L2(4)
    dcg3 = 0 + 1 / L2(3) + 7 / L2(4)
    dcg4 = dcg3 + 3 / L2(5)
    assert rep.mean()["ndcg@1"] == 0.0
    assert rep.mean()["ndcg@3"] == pytest.approx(dcg3 / idcg3, abs=1e-12)
    assert rep.mean()["ndcg@5"] == pytest.approx(dcg4 / idcg3, abs=1e-12)  # IDCG@5 = IDCG@3 + 0 gain
    assert rep.mean()["ndcg@3"] == pytest.approx(0.4397980, abs=1e-6)  # (1/log2 3 + 7/2) / (7 + 3/log2 3 + 1/2)


def test_ndcg_paper_scheme_hand_computed():
    t = truth_from({"a": 1.0, "b": 0.96, "c": 0.93, "d": 0.5})  # paper grades 4, 3, 2, 0
    rep = evaluate(run_from(["b", "a", "c", "d"]), t, ["ndcg@3"], scheme="paper")
    dcg = 3 / L2(2) + 4 / L2(3) + 2 / L2(4)
    idcg = 4 / L2(2) + 3 / L2(3) + 2 / L2(4)
    assert rep.mean()["ndcg@3"] == pytest.approx(dcg / idcg, abs=1e-12)


def test_ties_in_rank_are_broken_by_line_order_not_score():
    t = truth_from({"a": 1.0, "b": 0.5})
    # both rank 1; b comes first in the file, and its score is lower: line order wins
    run = Run({"t1": [Entry("b", 1, 0.1, 1), Entry("a", 1, 0.9, 2)]}, "r")
    assert run.ranking("t1") == ["b", "a"]
    assert evaluate(run, t, ["ndcg@1"]).mean()["ndcg@1"] == 0.0


def test_missing_candidates_count_zero_and_ideal_uses_all():
    t = truth_from({"a": 1.0, "b": 0.96, "c": 0.5})
    # only b ranked: DCG@3 = 3; IDCG@3 = 7 + 3/log2(3)
    rep = evaluate(run_from(["b"]), t, ["ndcg@3"])
    assert rep.mean()["ndcg@3"] == pytest.approx(3 / (7 + 3 / L2(3)), abs=1e-12)


def test_all_zero_grades_score_zero():
    t = truth_from({"a": 1.0, "b": 1.0})
    assert t.grades("t1") == {"a": 3, "b": 3}
    j = Judgments({"a": 0, "b": 0}, {"a": 0.5, "b": 0.4})
    assert metric("ndcg@5")(["a", "b"], j) == 0.0


def test_missing_topic_scores_zero_and_is_reported():
    t = GroundTruth(pd.DataFrame([("t1", "a", 1.0), ("t1", "b", 0.5), ("t2", "a", 0.9), ("t2", "b", 0.9)],
                                 columns=["task_id", "model_id", "f1"]))
    rep = evaluate(run_from(["a", "b"], "t1"), t, ["ndcg@1"])
    assert rep.missing_topics == ["t2"]
    assert rep.mean()["ndcg@1"] == pytest.approx(0.5)


def test_mrr_first_relevant():
    grades = {"a": 0, "b": 0, "c": 2, "d": 1}
    assert reciprocal_rank(["a", "b", "c", "d"], grades) == pytest.approx(1 / 3)
    assert reciprocal_rank(["d", "c"], grades) == 1.0
    assert reciprocal_rank(["a", "b"], grades) == 0.0
    assert reciprocal_rank(["a", "b", "c", "d"], grades, min_grade=2) == pytest.approx(1 / 3)


@pytest.mark.slow(reason="2 s (setup and call) on 2 busy cores")
def test_regret_and_kendall():
    f1 = {"a": 0.8, "b": 0.6, "c": 0.4}
    assert regret_at_k(["b", "a", "c"], f1, 1) == pytest.approx(0.25)
    assert regret_at_k(["b", "a", "c"], f1, 2) == 0.0
    assert weighted_tau(["a", "b", "c"], f1) == pytest.approx(1.0)
    assert weighted_tau(["c", "b", "a"], f1) == pytest.approx(-1.0)


def test_evaluate_does_not_touch_inputs():
    t = truth_from({"a": 1.0, "b": 0.7})
    r = run_from(["b", "a"])
    before = (t.frame.copy(), r.lines())
    evaluate(r, t)
    pd.testing.assert_frame_equal(before[0], t.frame)
    assert before[1] == r.lines()


def test_report_exports():
    t = truth_from({"a": 1.0, "b": 0.7})
    rep = evaluate(run_from(["a", "b"]), t)
    assert '"ndcg@5": 1.0' in rep.to_json()
    assert rep.to_csv().splitlines()[0] == "tier,n,ndcg@1,ndcg@3,ndcg@5,mrr,kendall"  # metrics.DEFAULT_METRICS
    assert rep.to_markdown().startswith("| tier | n | ndcg@1")
    assert "low" in rep.table() and "all" in rep.table()


grades_st = st.lists(st.floats(0.05, 1.0, allow_nan=False), min_size=2, max_size=12)


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
@settings(max_examples=80, deadline=None)
@given(grades_st, st.randoms(use_true_random=False), st.sampled_from(["ntcir", "paper"]),
       st.integers(1, 10))
def test_ndcg_properties(f1s, rnd, scheme, k):
    f1 = {str(i): v for i, v in enumerate(f1s)}
    t = truth_from(f1)
    s = GradingScheme(scheme)
    grades = t.grades("t1", s)
    order = list(f1)
    rnd.shuffle(order)
    value = ndcg_at_k(order, grades, k, s.gain)
    assert 0.0 <= value <= 1.0 + 1e-12
    ideal = sorted(f1, key=lambda d: -grades[d])
    best = ndcg_at_k(ideal, grades, k, s.gain)
    assert best == pytest.approx(1.0) or all(g == 0 for g in grades.values())
