"""``modelseek bench`` / ``train-ranker`` / ``rank`` with learned rankers, the shipped default, bad input."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from modelseek.retrieval.data.run import read_run, validate_run

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MODELSEEK_CACHE", str(tmp_path / "cache"))


def test_bench_learned_method_against_avgrank(cli, layout):
    r = cli("bench", layout, "--method", "task_knn", "--baseline", "avgrank", "--folds", "3",
            "-p", "encoder=hashing", "-p", "k=3", "--json")
    assert r.code == 0, r.err
    out = json.loads(r.out)["methods"]["task_knn"]
    assert out["tiers"]["all"]["n"] == 15
    vs = out["vs_baseline"]["all"]
    assert vs["low"] <= vs["mean_diff"] <= vs["high"] and 0 <= vs["p_better"] <= 1


def test_train_ranker_then_rank_with_artifact(cli, layout, tmp_path):
    from modelseek.testing import make_text_task, write_task_table

    art = tmp_path / "knn.json"
    r = cli("train-ranker", layout, "--method", "task_knn", "-p", "encoder=hashing", "-o", art)
    assert r.code == 0, r.err
    doc = json.loads(art.read_text())
    assert doc["method"] == "task_knn" and len(doc["fitted_task_ids"]) == 15 and doc["params"]["encoder"] == "hashing"
    data = write_task_table(make_text_task("mine", n_classes=3, seed=5), tmp_path / "mine.csv")
    run_path = tmp_path / "run.txt"
    r = cli("rank", data, "--method", art, "--pool", layout / "models.csv", "-o", run_path)
    assert r.code == 0, r.err
    validate_run(run_path, topics=["mine"], docs=[str(i) for i in range(1, 7)])
    scores = read_run(run_path).scores("mine")
    assert all(0 < s <= 1 for s in scores.values())  # task_knn scores are predicted normalized F1


def test_rank_pool_with_unknown_candidate_is_a_clear_error(cli, layout, tmp_path):
    from modelseek.testing import make_text_task, write_task_table

    art = tmp_path / "knn.json"
    assert cli("train-ranker", layout, "-m", "task_knn", "-p", "encoder=hashing", "-o", art).code == 0
    pool = tmp_path / "pool.yaml"
    pool.write_text("candidates:\n" + "".join(f"  - {{id: '{i}', hf_id: test-org/model-{i}}}\n" for i in range(1, 7))
                    + "  - {id: '42', hf_id: acme/brand-new-bert}\n")
    data = write_task_table(make_text_task("mine", seed=1), tmp_path / "mine.csv")
    r = cli("rank", data, "--method", art, "--pool", pool)
    assert r.code == 1
    assert "not trained on candidate(s) 42 (acme/brand-new-bert)" in r.err


def test_train_ranker_rejects_unknown_param(cli, layout):
    r = cli("train-ranker", layout, "--method", "task_knn", "-p", "kk=3")
    assert r.code == 1 and "no parameter 'kk'" in r.err


def test_bad_datasets_single_class_and_empty_text(cli, tmp_path):
    one = tmp_path / "one.csv"
    one.write_text("text,label\n" + "".join(f"text number {i},same\n" for i in range(30)))
    r = cli("rank", one)
    assert r.code == 1 and "only one class" in r.err
    empty = tmp_path / "empty.csv"
    empty.write_text("text,label\nhello there,a\n,b\nfine,a\n")
    r = cli("rank", empty)
    assert r.code == 1 and "empty.csv:3" in r.err and "empty text" in r.err


@pytest.mark.slow(reason="a fresh process ranks the committed example offline")
def test_default_ranks_the_example_offline(cli_subprocess, tmp_path):
    """The shipped default on the committed example, in a fresh process, offline, outside the repo."""
    pytest.importorskip("transformers")
    pytest.importorskip("lightgbm")  # the shipped ltr artifact
    example = ROOT / "examples" / "reviews-4class.csv"
    run_path = tmp_path / "run.txt"
    r = cli_subprocess("rank", example, "-o", run_path, cwd=tmp_path)
    assert r.code == 0, r.err
    assert "method adaptive" in r.out  # the default: the prior blended with the nearest past tasks
    assert "criticality: " in r.out and "most similar past tasks: " in r.out
    r = cli_subprocess("rank", example, "--method", "ltr-ntcir19", "-o", run_path, cwd=tmp_path)
    assert r.code == 0, r.err
    validate_run(run_path, topics=["reviews-4class"], docs=[str(i) for i in range(1, 21)])
    assert len(read_run(run_path)["reviews-4class"]) == 20
    assert "wrote 1 ranking(s) of 20 candidates" in r.out


def test_examples_script_reproduces_committed_csv(tmp_path):
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import make_examples
    finally:
        sys.path.pop(0)
    for path in make_examples.main(tmp_path):
        assert path.read_bytes() == (ROOT / "examples" / path.name).read_bytes()
