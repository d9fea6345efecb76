"""The IR ecosystem's formats in ``evaluate`` (qrels, relevance level, trec_eval order, extra columns, -q
output) and ``compare``'s tests against SciPy and an exact enumeration. Issue #28 items 1-3."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from modelseek import GradingScheme, GroundTruth, evaluate, read_run
from modelseek.retrieval.data.run import Entry, Run
from modelseek.retrieval.metrics import Judgments, get as metric

L2 = math.log2

# topic A: graded 0..3, a negative grade (judged non-relevant), an unjudged doc; tied scores in the run
QRELS = """A 0 d1 3
A 0 d2 -1
A 0 d3 1
A 0 d4 2
A 0 d5 0
B 0 d1 1
B 0 d9 2
C 0 d1 2
"""
# trec_eval order for A: score desc, then docno desc: d4 (0.9), d3 (0.5), d2 (0.5), d6 (0.5), d1 (0.1) ->
# ties at 0.5 sorted d6, d3, d2 (docno descending). Rank column says otherwise and is ignored.
RUN = """A Q0 d1 1 0.1 r extra columns
A Q0 d2 2 0.5 r
A Q0 d3 3 0.5 r
A Q0 d4 4 0.9 r
A Q0 d6 5 0.5 r
B Q0 d9 1 2.0 r
B Q0 d1 2 1.0 r
"""


@pytest.fixture
def files(tmp_path):
    q = tmp_path / "qrels.txt"
    q.write_text(QRELS)
    r = tmp_path / "run.txt"
    r.write_text(RUN)
    return q, r


def expected_a(level=1):
    order = ["d4", "d6", "d3", "d2", "d1"]
    grades = {"d1": 3, "d2": -1, "d3": 1, "d4": 2, "d5": 0}
    gains = [max(grades.get(d, 0), 0) for d in order]
    ideal = [3, 2, 1, 0, 0]
    ndcg = {k: sum(g / L2(i + 2) for i, g in enumerate(gains[:k])) / sum(g / L2(i + 2) for i, g in enumerate(ideal[:k]))
            for k in (1, 3, 5)}
    rr = next((1 / (i + 1) for i, d in enumerate(order) if grades.get(d, 0) >= level), 0.0)
    return ndcg, rr


def test_qrels_trec_eval_order_extra_columns_and_missing_topic(files, cli):
    q, r = files
    res = cli("evaluate", r, "-g", q, "--scheme", "paper", "--order", "trec_eval", "--metrics",
              "ndcg@1,ndcg@3,ndcg@5,mrr", "--json")
    assert res.code == 0, res.err
    rep = json.loads(res.out)["r"]
    ndcg, rr = expected_a()
    a = rep["per_topic"]["A"]
    for k in (1, 3, 5):
        assert a[f"ndcg@{k}"] == pytest.approx(ndcg[k], abs=1e-12)
    assert a["mrr"] == pytest.approx(rr)
    assert rep["per_topic"]["B"]["ndcg@1"] == pytest.approx(1.0)  # d9 (grade 2) first by score
    assert rep["per_topic"]["C"]["ndcg@5"] == 0.0 and rep["missing_topics"] == ["C"]
    assert rep["unknown_models"] == ["d6"] and rep["order"] == "trec_eval"
    # the Rank order differs: d1 (grade 3) first
    by_rank = json.loads(cli("evaluate", r, "-g", q, "--scheme", "paper", "--metrics", "ndcg@1", "--json").out)
    assert by_rank["r"]["per_topic"]["A"]["ndcg@1"] == pytest.approx(1.0)


def test_relevance_level_2_changes_mrr(files, cli):
    q, r = files
    one = json.loads(cli("evaluate", r, "-g", q, "--order", "trec_eval", "--metrics", "mrr", "--json").out)
    two = json.loads(cli("evaluate", r, "-g", q, "--order", "trec_eval", "--metrics", "mrr", "--json",
                         "--relevance-level", "2").out)
    assert one["r"]["per_topic"]["A"]["mrr"] == pytest.approx(expected_a(1)[1]) == pytest.approx(1.0)
    assert two["r"]["per_topic"]["A"]["mrr"] == pytest.approx(expected_a(2)[1]) == pytest.approx(1.0)
    # B: d9 grade 2 first by score; by rank too. C missing. Level 3 on A: d1 is fifth
    three = json.loads(cli("evaluate", r, "-g", q, "--order", "trec_eval", "--metrics", "mrr", "--json",
                           "--relevance-level", "3").out)
    assert three["r"]["per_topic"]["A"]["mrr"] == pytest.approx(expected_a(3)[1]) == pytest.approx(0.2)
    assert cli("evaluate", r, "-g", q, "--relevance-level", "0").code == 2


def test_trec_output_parses_back(files, cli):
    q, r = files
    res = cli("evaluate", r, "-g", q, "--scheme", "paper", "--order", "trec_eval", "--metrics", "ndcg@5,mrr",
              "--trec", "--per-topic")
    assert res.code == 0
    rows = [ln.split("\t") for ln in res.out.strip().splitlines()]
    assert all(len(x) == 3 for x in rows)
    got = {(m.strip(), t): float(v) for m, t, v in rows}
    ndcg, rr = expected_a()
    assert got[("ndcg_cut_5", "A")] == pytest.approx(ndcg[5], abs=5e-5)
    assert got[("recip_rank", "A")] == pytest.approx(rr, abs=5e-5)
    mean = (ndcg[5] + got[("ndcg_cut_5", "B")] + 0.0) / 3
    assert got[("ndcg_cut_5", "all")] == pytest.approx(mean, abs=5e-5)
    assert "note:" in res.err and "d6" in res.err  # notes go to stderr: stdout stays parseable


def test_qrels_named_explicitly_and_malformed_qrels_located(files, tmp_path, cli):
    q, r = files
    assert cli("evaluate", r, "-g", q, "--truth-format", "qrels", "--metrics", "mrr").code == 0
    bad = tmp_path / "bad.qrels"
    bad.write_text("A 0 d1 3\nA 0 d2 x\n")
    res = cli("evaluate", r, "-g", bad, "--truth-format", "qrels")
    assert res.code == 1 and f"{bad}:2: field 'grade'" in res.err and "Traceback" not in res.err


def test_validate_stays_strict_on_extra_columns(files, cli):
    _, r = files
    res = cli("validate", r, "--pool", "ntcir19")
    assert res.code == 1 and "run.txt:1: expected 6 columns" in res.err and "'extra', 'columns'" in res.err


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
@settings(max_examples=40, deadline=None)
@given(st.data())
def test_array_core_equals_reference_metrics(data):
    """The vectorised core gives the per-topic reference functions' values on random runs."""
    n_topics = data.draw(st.integers(1, 4))
    models = [f"m{i}" for i in range(data.draw(st.integers(1, 7)))]
    rows, topics = [], {}
    for t in range(n_topics):
        for m in models:
            rows.append((f"t{t}", m, data.draw(st.floats(0.01, 1.0))))
        if data.draw(st.booleans()) or t == 0:
            docs = data.draw(st.permutations(models + ["x"]))[: data.draw(st.integers(1, len(models) + 1))]
            ranks = sorted(data.draw(st.lists(st.integers(1, 4), min_size=len(docs), max_size=len(docs))))
            topics[f"t{t}"] = [Entry(d, r, -float(r), i) for i, (d, r) in enumerate(zip(docs, ranks))]
    assume(any(e.doc != "x" for es in topics.values() for e in es))  # else the run is refused (no docID matches)
    truth = GroundTruth(pd.DataFrame(rows, columns=["task_id", "model_id", "f1"]))
    run = Run(topics, "r")
    names = ["ndcg@1", "ndcg@3", "mrr", "mrr@2", "regret@1", "regret@3", "kendall"]
    for scheme in ("ntcir", "paper"):
        rep = evaluate(run, truth, names, scheme).per_topic
        for t in truth.task_ids:
            j = Judgments(truth.grades(t, scheme), truth.f1(t), GradingScheme.parse(scheme))
            for m in names:
                got = rep.loc[t, m]
                if t not in run:
                    want = 1.0 if m.startswith("regret") else (math.nan if m == "kendall" else 0.0)
                else:
                    want = metric(m)(run.ranking(t), j)
                if math.isnan(want):
                    assert math.isnan(got)
                else:
                    assert got == pytest.approx(want, abs=1e-12), (t, m, scheme)


# ---------------------------------------------------------------------------------------------- compare
def _runs_for_compare(tmp_path):
    rng = np.random.default_rng(7)
    models = [str(i) for i in range(1, 21)]
    gt = tmp_path / "gt.csv"
    rows = [f"t{t},{m},{rng.uniform(0.5, 1.0):.4f}" for t in range(12) for m in models]
    gt.write_text("task_id,model_id,f1\n" + "\n".join(rows) + "\n")
    truth = GroundTruth.from_csv(gt)
    paths = []
    for name, noise in (("good", 0.02), ("bad", 1.0), ("mid", 0.2)):
        scores = {t: {m: f + noise * rng.random() for m, f in truth.f1(t).items()} for t in truth.task_ids}
        p = tmp_path / f"{name}.txt"
        Run.from_scores(scores, name).write(p)
        paths.append(p)
    return gt, truth, paths


def test_compare_ttest_equals_scipy_and_permutation_equals_exact_enumeration(tmp_path, cli):
    from scipy.stats import ttest_rel

    gt, truth, paths = _runs_for_compare(tmp_path)
    res = cli("compare", *paths, "-g", gt, "--metrics", "ndcg@3,mrr", "--json", "--permutations", "5000")
    assert res.code == 0, res.err
    out = json.loads(res.out)
    per = {p.stem: evaluate(read_run(p), truth, ["ndcg@3", "mrr"]).per_topic for p in paths}
    for c in out["comparisons"]:
        x, y = per[c["a"]][c["metric"]].to_numpy(), per[c["b"]][c["metric"]].to_numpy()
        want = ttest_rel(x, y).pvalue
        if math.isnan(want):
            assert c["p_t"] is None
        else:
            assert c["p_t"] == pytest.approx(want, rel=1e-10, abs=1e-300)
        # 12 topics: 4,096 sign assignments <= 5,000 -> enumerated; recount by brute force here
        d = x - y
        count = sum(abs(np.dot(s, d)) / d.size >= abs(d.mean()) - 1e-12
                    for s in itertools.product((1, -1), repeat=d.size))
        assert c["permutation_exact"] is True
        assert c["p_permutation"] == pytest.approx(count / 2 ** d.size, abs=1e-12)
        assert c["ci_low"] <= c["diff"] <= c["ci_high"]
    # Holm: the smallest p times m, then monotone
    rows = [c for c in out["comparisons"] if c["metric"] == "ndcg@3"]
    ps = sorted((c["p_t"], c["p_t_holm"]) for c in rows)
    assert ps[0][1] == pytest.approx(min(1.0, ps[0][0] * len(rows)))
    assert all(b[1] >= a[1] for a, b in zip(ps, ps[1:]))
    # the good run is marked better than the bad one (letter b) on nDCG@3
    assert "b" in out["runs"]["good"]["better_than"]["ndcg@3"]


def test_compare_monte_carlo_is_seeded_and_close_to_exact(tmp_path, cli):
    from modelseek.core.stats.paired import randomization_test

    rng = np.random.default_rng(1)
    a, b = rng.random(12), rng.random(12)
    exact, is_exact = randomization_test(a, b, 5000)
    mc1, e1 = randomization_test(a, b, 2000, seed=3)
    mc2, _ = randomization_test(a, b, 2000, seed=3)
    assert is_exact and not e1 and mc1 == mc2
    assert abs(mc1 - exact) < 0.04
    gt, _, paths = _runs_for_compare(tmp_path)
    for fmt in ("--markdown", "--latex", None):
        res = cli("compare", *paths, "-g", gt, "--baseline", "bad", *([fmt] if fmt else []))
        assert res.code == 0 and "good" in res.out
    assert cli("compare", paths[0], "-g", gt).code == 1
    assert "not a run id" in cli("compare", *paths, "-g", gt, "--baseline", "nope").err


def test_qrels_line_with_extra_fields_is_refused(files, tmp_path, cli):
    _, r = files
    bad = tmp_path / "extra.qrels"
    bad.write_text("A 0 d1 3\nA 0 d2 1 x y\n")
    res = cli("evaluate", r, "-g", bad, "--truth-format", "qrels")
    assert res.code == 1 and f"{bad}:2: expected 4 columns" in res.err
