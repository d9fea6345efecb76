"""Policy in the library (issues #38 and #36): ``evaluate(run, truth, pool=...)`` gives what ``modelseek evaluate``
prints on the same files, the tiers' source is stated in both, and what cannot be computed is an error."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import numpy as np
import pytest

import modelseek as ms
from modelseek.core.errors import InputError
from modelseek.testing import make_ntcir_layout
from modelseek.testing.cli import assert_one_error_line

ROOT = Path(__file__).resolve().parents[1]
METRICS = "ndcg@1,ndcg@3,ndcg@5,mrr"


def _layout(tmp_path: Path) -> Path:
    """The organisers' folder, with tasks.csv tiers that the regret rule would not give (all high), and a run of
    Hugging Face ids (the pool maps them to the ground truth's ids) beside it."""
    root = make_ntcir_layout(tmp_path / "subtask-a", n_tasks=8, n_models=5, seed=3)
    with open(root / "tasks.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    for r in rows[1:]:
        r[-1] = "High Criticalness"
    with open(root / "tasks.csv", "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(rows)
    rng = np.random.default_rng(0)
    scores = {str(1001 + i): {f"test-org/model-{m}": float(rng.random()) for m in range(1, 6)} for i in range(8)}
    ms.Run.from_scores(scores, "hf").write(tmp_path / "run.txt")
    return root


def _doc_snippet() -> str:
    text = (ROOT / "docs" / "evaluate.md").read_text(encoding="utf-8")
    return re.search(r"```python\n(.*?)```", text, re.S).group(1)


def test_the_documented_snippet_and_the_cli_agree(tmp_path, cli, monkeypatch, capsys):
    _layout(tmp_path)
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(_doc_snippet(), scope)  # the page's Python, as a user runs it
    printed = capsys.readouterr().out
    report = scope["report"]
    r = cli("evaluate", "run.txt", "-g", "subtask-a/ground-truth.csv", "--pool", "subtask-a/models.csv", "--json")
    assert r.code == 0, r.err
    got = json.loads(r.out)["hf"]
    api = report.to_dict()
    assert got["tier_source"] == api["tier_source"] == report.tier_source
    assert report.tier_source.startswith("tasks.csv (subtask-a/tasks.csv")
    assert f"tiers from {report.tier_source}" in printed
    assert {t: v["tier"] for t, v in got["per_topic"].items()} == {t: "high" for t in report.topics}
    for m in report.metrics:
        assert got["mean"][m] == pytest.approx(api["mean"][m], abs=1e-12)
        assert got["by_tier"]["high"][m] == pytest.approx(api["by_tier"]["high"][m], abs=1e-12)


def test_a_ground_truth_away_from_its_tasks_csv_says_its_tiers_follow_the_rule(tmp_path, cli):
    root = _layout(tmp_path)
    alone = tmp_path / "elsewhere" / "ground-truth.csv"
    alone.parent.mkdir()
    alone.write_bytes((root / "ground-truth.csv").read_bytes())
    rep = ms.evaluate(ms.read_run(tmp_path / "run.txt"), ms.GroundTruth.from_csv(alone), pool=root / "models.csv")
    assert rep.tier_source.startswith("the regret rule (R = 1 - mean normalized F1: low < 0.03 <= medium < 0.1")
    r = cli("evaluate", tmp_path / "run.txt", "-g", alone, "--pool", root / "models.csv", "--metrics", METRICS)
    assert r.code == 0, r.err
    assert f"tiers from {rep.tier_source}" in r.out
    with_tasks = ms.evaluate(ms.read_run(tmp_path / "run.txt"), ms.GroundTruth.from_csv(alone,
                             tasks_csv=root / "tasks.csv"), pool=root / "models.csv")
    assert with_tasks.tier_source == f"tasks.csv ({root / 'tasks.csv'})"


def test_pool_in_the_library(tmp_path):
    """A run of HF ids against a ground truth of pool ids: an error without the pool, the CLI's numbers with it."""
    root = _layout(tmp_path)
    run, truth = ms.read_run(tmp_path / "run.txt"), ms.GroundTruth.from_csv(root / "ground-truth.csv")
    with pytest.raises(InputError, match="no docID matches a model id"):
        ms.evaluate(run, truth, pool="none")
    with_pool = ms.evaluate(run, truth, pool=root / "models.csv")
    assert not with_pool.unknown_models and with_pool.mean()["ndcg@5"] > 0
    assert ms.evaluate(run, truth, pool=ms.load_pool(root / "models.csv")).mean() == with_pool.mean()
    with pytest.raises(InputError, match="no such pool file"):
        ms.evaluate(run, truth, pool=tmp_path / "missing.csv")


def _qrels(tmp_path: Path) -> tuple[Path, Path]:
    q = tmp_path / "qrels.txt"
    q.write_text("q1 0 d1 2\nq1 0 d2 0\nq1 0 d3 1\nq2 0 d1 1\nq2 0 d4 2\nq3 0 d2 2\n")
    run = tmp_path / "run.txt"
    run.write_text("q1 Q0 d3 1 0.9 r\nq1 Q0 d1 2 0.8 r\nq2 Q0 d4 1 0.7 r\nq9 Q0 d1 1 0.5 r\nq8 Q0 d1 1 0.5 r\n")
    return q, run


def test_relevance_level_above_every_grade_is_an_error(tmp_path, cli):
    q, run = _qrels(tmp_path)
    with pytest.raises(InputError, match="relevance level 3 is above every grade of the ground truth "
                                         r"\(highest: 2\)"):
        ms.evaluate(ms.read_run(run), ms.GroundTruth.from_qrels(q), relevance_level=3)
    r = cli("evaluate", run, "-g", q, "--relevance-level", "99")
    assert_one_error_line(r, str(q), "relevance_level", "relevance level 99 is above every grade")
    ok = cli("evaluate", run, "-g", q, "--relevance-level", "2", "--metrics", "mrr", "--trec")
    assert ok.code == 0 and "recip_rank            \tall\t0.5000" in ok.out  # q1 1/2, q2 1, q3 0


def test_topics_left_out_and_qrels_tiers_are_stated_in_text_and_json(tmp_path, cli):
    q, run = _qrels(tmp_path)
    text = cli("evaluate", run, "-g", q, "--metrics", METRICS)
    assert text.code == 0, text.err
    assert "note: 2 topic(s) of the run not in the ground truth were ignored: q9, q8" in text.out
    assert "note: 1 topic(s) of the ground truth missing from the run scored 0: q3" in text.out
    assert "TREC qrels carry no criticality" in text.out.splitlines()[0]
    js = cli("evaluate", run, "-g", q, "--metrics", METRICS, "--json")
    got = json.loads(js.out)["r"]
    assert got["extra_topics"] == ["q9", "q8"]
    assert "2 topic(s) of the run not in the ground truth were ignored: q9, q8" in got["notes"]
    assert "on grade / best grade: TREC qrels carry no criticality" in got["tier_source"]
    trec = cli("evaluate", run, "-g", q, "--metrics", METRICS, "--trec")
    assert "note: run r: 2 topic(s) of the run not in the ground truth were ignored" in trec.err
