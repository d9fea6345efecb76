"""The metric contract (issue #38): every registered metric is one object whose per-list and vectorised forms
agree, ``evaluate`` reaches every metric through the registry, and the criticality bounds are defined once."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import weightedtau

import modelseek.retrieval.data.task as task_module
from modelseek import GroundTruth, Run, evaluate
from modelseek.retrieval.data.run import Entry
from modelseek.retrieval.data.task import CRITICALITY_BOUNDS, Criticality
from modelseek.core.errors import InputError
from modelseek import register
from modelseek.retrieval.metrics import METRICS, Judgments, Metric, get
from modelseek.retrieval.metrics.kendall import weighted_tau_rows
from modelseek.core.registry import UnknownNameError


def _case(seed: int, qrels: bool):
    """A ground truth (F1 or graded qrels, ties included) and a run with ties in score, a topic missing, an
    extra topic and docIDs the ground truth does not judge."""
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(9):
        n = int(rng.integers(1, 14))
        for m in rng.choice(40, size=n, replace=False).tolist():
            v = int(rng.integers(-1, 4)) if qrels else float(np.round(rng.uniform(0.3, 0.9), 2))
            rows.append((f"t{t}", f"m{m}", v))
    frame = pd.DataFrame(rows, columns=["task_id", "model_id", "f1"])
    if qrels:
        frame["grade"] = frame["f1"].astype(np.int64)
        for t in frame["task_id"].unique():  # every topic judges one document relevant at grade 3
            frame.loc[frame.index[frame["task_id"] == t][0], ["f1", "grade"]] = [3.0, 3]
    truth = GroundTruth(frame)
    topics = {}
    for t in [f"t{i}" for i in range(1, 9)] + ["extra"]:  # t0 is missing from the run
        docs = rng.choice(50, size=int(rng.integers(1, 20)), replace=False)
        ranks = np.sort(rng.integers(1, 6, size=docs.size))  # equal ranks: line order decides
        topics[t] = [Entry(f"m{d}", int(r), float(np.round(rng.random(), 1))) for d, r in zip(docs, ranks)]
    return truth, Run(topics, "r")


def _eval_order(run: Run, topic: str, order: str) -> list[str]:
    if order == "rank":
        return run.ranking(topic)
    es = sorted(run[topic], key=lambda e: e.doc, reverse=True)  # trec_eval: score desc, then docID desc
    es.sort(key=lambda e: -e.score)
    return [e.doc for e in es]


def _names_with_cutoffs() -> list[str]:
    out = []
    for name in METRICS.names():
        m = METRICS.get(name)
        out += [name] if m.cutoff == "none" else [f"{name}@1", f"{name}@3"]
        if m.cutoff == "optional":
            out.append(name)
    return out


@pytest.mark.parametrize("qrels", [False, True])
@pytest.mark.parametrize("order", ["rank", "trec_eval"])
@pytest.mark.parametrize("scheme", ["ntcir", "paper"])
def test_every_registered_metric_vectorised_equals_its_per_list_form(qrels, order, scheme):
    names = _names_with_cutoffs()
    assert {n.partition("@")[0] for n in names} == set(METRICS.names())
    for seed in range(4):
        truth, run = _case(seed, qrels)
        level = 2 if seed % 2 else 1
        rep = evaluate(run, truth, names, scheme, order=order, relevance_level=level).per_topic
        for name in names:
            metric = METRICS.get(name.partition("@")[0])
            for topic in truth.task_ids:
                got = rep.loc[topic, name]
                if topic not in run:
                    want = metric.missing
                else:
                    j = Judgments(truth.grades(topic, scheme), truth.f1(topic), truth_scheme(scheme), level)
                    want = get(name)(_eval_order(run, topic, order), j)
                assert (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want, abs=1e-12), \
                    (name, topic, seed)


def truth_scheme(scheme: str):
    from modelseek import GradingScheme

    return GradingScheme.parse(scheme)


def test_vectorised_weighted_tau_equals_scipy_with_ties():
    rng = np.random.default_rng(1)
    for n in (2, 3, 7, 20, 130):  # 130: the rows are summed in several chunks
        x = np.round(rng.random((200, n)), 1)  # ties in x
        y = -rng.integers(0, max(2, n // 2), size=(200, n)).astype(float)  # ties in y
        x[0] = 0.5  # all tied: no untied pair, SciPy's NaN
        got = weighted_tau_rows(x, y)
        want = np.array([weightedtau(a, b).statistic for a, b in zip(x, y)])
        assert np.isnan(got[0]) and np.isnan(want[0])
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12, equal_nan=True)


def test_weighted_tau_by_levels_equals_the_pairwise_form_and_scipy():
    """Few distinct scores (graded qrels): the balances counted level by level are the pairwise ones exactly, and
    a topic of 1,500 judged candidates (once sent to SciPy one by one) is computed in the batch, equal to SciPy."""
    from modelseek.retrieval.metrics.kendall import _by_levels, _pairwise

    rng = np.random.default_rng(2)
    for n in (2, 5, 60, 200):
        x = rng.integers(-1, 4, size=(30, n)).astype(float)
        y = -rng.integers(0, n, size=(30, n)).astype(float)  # ties in the run order too (unranked candidates)
        for got, want in zip(_by_levels(x, y, np.unique(x)), _pairwise(x, y)):
            np.testing.assert_array_equal(got, want)
    x = rng.integers(0, 4, size=(3, 1500)).astype(float)
    y = -np.argsort(rng.random((3, 1500)), axis=1).astype(float)
    want = np.array([weightedtau(a, b).statistic for a, b in zip(x, y)])
    np.testing.assert_allclose(weighted_tau_rows(x, y), want, rtol=0, atol=1e-12)


def test_kendall_of_topics_with_a_thousand_graded_judgments_equals_the_per_list_form(tmp_path):
    """Through evaluate: TREC-style qrels (grades 0..3, 1,200 and 700 judged on two topics, one 60) and a run
    of every judged docID and more; the batch's weighted tau equals SciPy's per topic."""
    rng = np.random.default_rng(3)
    lines, scores = [], {}
    for t, n in (("1", 1200), ("2", 700), ("3", 60)):
        docs = [f"d{i}" for i in range(n + 50)]
        lines += [f"{t} 0 {d} {g}" for d, g in zip(docs[:n], rng.integers(0, 4, size=n).tolist())]
        scores[t] = dict(zip(docs, rng.permutation(len(docs)).astype(float).tolist()))
    (tmp_path / "qrels.txt").write_text("\n".join(lines) + "\n")
    truth = GroundTruth.from_qrels(tmp_path / "qrels.txt")
    run = Run.from_scores(scores, run_id="r")
    got = evaluate(run, truth, ["kendall"]).per_topic["kendall"].to_dict()
    for t in ("1", "2", "3"):
        want = get("kendall")(run.ranking(t), Judgments(truth.grades(t, "paper"), truth.f1(t), truth_scheme("paper")))
        assert got[t] == pytest.approx(want, abs=1e-12), t


class _TopHit(Metric):
    """A throwaway metric with only its per-list form: 1 when the first ranked document is judged."""

    cutoff = "none"

    def per_list(self, ranking, j, k):
        return float(bool(ranking) and ranking[0] in j.grades)


def test_a_metric_with_only_a_per_list_form_is_evaluated_through_the_registry(tmp_path, cli):
    register("metric", _TopHit, name="tophit_contract")
    try:
        truth, run = _case(0, False)
        rep = evaluate(run, truth, ["tophit_contract", "ndcg@3"]).per_topic
        want = {t: float(run.ranking(t)[0] in truth.f1(t)) if t in run else 0.0 for t in truth.task_ids}
        assert rep["tophit_contract"].to_dict() == want
        truth.to_csv(tmp_path / "truth.csv")
        run.write(tmp_path / "run.txt")
        r = cli("evaluate", tmp_path / "run.txt", "-g", tmp_path / "truth.csv", "--metrics", "tophit_contract",
                "--trec", "--pool", "none")
        assert r.code == 0, r.err
        assert f"{'tophit_contract':<22}\tall\t{np.mean(list(want.values())):.4f}" in r.out
    finally:
        del METRICS._items["tophit_contract"]
    with pytest.raises(UnknownNameError, match="unknown metric 'tophit_contract'"):
        evaluate(run, truth, ["tophit_contract"])


def test_cutoff_rules_come_from_the_metric():
    truth, run = _case(0, False)
    with pytest.raises(InputError, match="ndcg needs a cut-off"):
        evaluate(run, truth, ["ndcg"])
    with pytest.raises(InputError, match="kendall takes no cut-off"):
        evaluate(run, truth, ["kendall@3"])
    assert METRICS.get("regret").higher_is_better is False and METRICS.get("ndcg").higher_is_better


def test_criticality_bounds_are_defined_once(monkeypatch):
    """Tiers from regret read CRITICALITY_BOUNDS: moving the bounds moves every tier the ground truth gives."""
    assert CRITICALITY_BOUNDS == (0.03, 0.10)
    assert [Criticality.from_regret(r).value for r in (0.0, 0.0299, 0.03, 0.0999, 0.10, 0.5)] == \
        ["low", "low", "medium", "medium", "high", "high"]
    frame = pd.DataFrame([("a", "m1", 1.0), ("a", "m2", 0.9), ("b", "m1", 1.0), ("b", "m2", 0.98)],
                         columns=["task_id", "model_id", "f1"])
    assert GroundTruth(frame).tiers(["a", "b"]) == ["medium", "low"]  # regrets 0.05 and 0.01
    monkeypatch.setattr(task_module, "CRITICALITY_BOUNDS", (0.005, 0.04))
    assert GroundTruth(frame).tiers(["a", "b"]) == ["high", "medium"]
    assert "low < 0.005 <= medium < 0.04 <= high" in GroundTruth(frame).tier_source()


def test_a_new_metric_is_one_file_of_the_package(tmp_path):
    """Issue #45: the registry discovers the package's modules, so a file with ``@register`` is the whole change
    (no import list to edit). The file sits in a folder added to the package's path in a fresh interpreter."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    import modelseek

    extra = tmp_path / "more_metrics"
    extra.mkdir()
    (extra / "firsthit.py").write_text(
        "from modelseek import register\nfrom modelseek.retrieval.metrics.base import Metric\n\n\n"
        "@register('metric', name='firsthit')\nclass FirstHit(Metric):\n    cutoff = 'none'\n\n"
        "    def per_list(self, ranking, j, k):\n        return float(bool(ranking) and j.grades.get(ranking[0], 0) > 0)\n",
        encoding="utf-8")
    code = ("import modelseek.retrieval.metrics as m; m.__path__.append(%r); from modelseek.retrieval.metrics import METRICS; "
            "print(METRICS.get('firsthit').name, 'firsthit' in METRICS.names())" % str(extra))
    src = str(Path(modelseek.__file__).resolve().parents[1])
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": src})
    assert p.returncode == 0 and p.stdout.split() == ["firsthit", "True"], p.stderr
