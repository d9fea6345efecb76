"""One road from a method name to a fitted ranker, through the CLI: rank, bench and train-ranker agree; foreign
pools are matched by HF id; bad numbers are errors, not silently ignored."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from modelseek.retrieval.data.run import read_run
from modelseek.testing import make_text_task, write_task_table


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MODELSEEK_CACHE", str(tmp_path / "cache"))


@pytest.fixture
def task_csv(tmp_path):
    return write_task_table(make_text_task("mine", n_classes=3, seed=5), tmp_path / "mine.csv")


# ------------------------------------------------------------------------------------------ resolver
@pytest.mark.slow(reason="41 s (setup and call) on 2 busy cores")
def test_rank_cv_works_with_the_default(cli, layout):
    r = cli("rank", layout, "--cv", "3", "--json")  # 'default' used to be an unknown method here
    assert r.code == 0, r.err
    runs = json.loads(r.out)
    (name,) = runs
    assert name == "default" and len(runs[name]) == 15


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
@pytest.mark.parametrize("command", ["rank", "bench", "train-ranker"])
def test_unknown_param_is_exit_1_everywhere_with_did_you_mean(cli, layout, task_csv, command):
    def args(param):
        return {"rank": ("rank", task_csv, "--method", "task_knn", "--train-tasks", layout, "--param", param),
                "bench": ("bench", layout, "--method", "task_knn", "-p", param),
                "train-ranker": ("train-ranker", layout, "-m", "task_knn", "-p", param)}[command]

    r = cli(*args("tpyo=1"))
    assert r.code == 1 and "no parameter 'tpyo'" in r.err and "Traceback" not in r.err
    r = cli(*args("kk=3"))
    assert r.code == 1 and "Did you mean 'k'?" in r.err


def test_param_known_to_one_of_several_methods_goes_to_that_one(cli, layout, task_csv, tmp_path):
    out = tmp_path / "run.txt"
    r = cli("rank", task_csv, "--method", "avgrank", "random", "--train-truth", layout / "ground-truth.csv",
            "--pool", layout / "models.csv", "--param", "seed=7", "-o", out)
    assert r.code == 0, r.err
    assert {line.split()[5] for line in out.read_text().splitlines()} == {"avgrank", "random"}


def test_train_ranker_avgrank_works_and_random_is_a_clean_error(cli, layout, task_csv, tmp_path):
    art = tmp_path / "avg.json"
    r = cli("train-ranker", layout, "-m", "avgrank", "-o", art)
    assert r.code == 0, r.err
    doc = json.loads(art.read_text())
    # the one artifact layout of every persistable ranker (avgrank's own layout of before is still read)
    assert dict(zip(doc["model_ids"], doc["model_hf_ids"]))["1"] == "test-org/model-1"
    assert doc["method"] == "avgrank" and len(doc["fitted_task_ids"]) == 15
    run = tmp_path / "run.txt"
    assert cli("rank", task_csv, "--method", art, "--pool", layout / "models.csv", "-o", run).code == 0
    truth = pd.read_csv(layout / "ground-truth.csv")
    mean_rank = truth.assign(r=truth.groupby("task_id")["f1"].rank(method="min", ascending=False)) \
        .groupby("model_id")["r"].mean()
    assert [e.doc for e in read_run(run)["mine"]] == [str(m) for m in mean_rank.sort_values(kind="stable").index]
    r = cli("train-ranker", layout, "-m", "random")
    assert r.code == 1 and "learns nothing" in r.err and "Traceback" not in r.err


def test_rank_help_lists_the_methods(cli):
    r = cli("rank", "--help")
    assert r.code == 0
    text = "".join(r.out.split())  # argparse wraps lines (also at hyphens)
    for name in ("adaptive", "avgrank", "task_knn", "spider", "ltr", "logme", "ltr-ntcir19", "default"):
        assert name in text


def test_rank_train_tasks_fits_a_learned_method_from_a_separate_folder(cli, layout, task_csv, tmp_path):
    out = tmp_path / "run.txt"
    r = cli("rank", task_csv, "--method", "task_knn", "--train-tasks", layout, "--param", "encoder=hashing",
            "--param", "k=3", "-o", out)
    assert r.code == 0, r.err
    assert sorted(e.doc for e in read_run(out)["mine"]) == [str(i) for i in range(1, 7)]
    r = cli("rank", task_csv, "--method", "task_knn", "--train-truth", layout / "ground-truth.csv",
            "--param", "encoder=hashing")
    assert r.code == 1 and "--train-tasks" in r.err


# ------------------------------------------------------------------------------------------ foreign pools
def test_prior_for_any_pool_with_a_history_matched_by_hf_id(cli, tmp_path, task_csv):
    """A ground truth that names models by HF id, a pool that numbers them its own way."""
    gt = tmp_path / "gt.csv"
    rows = [(t, m, f) for t in ("a", "b", "c") for m, f in (("org/alpha", 0.9), ("org/beta", 0.8), ("org/gamma", 0.7))]
    pd.DataFrame(rows, columns=["task_id", "model_id", "f1"]).to_csv(gt, index=False)
    pool = tmp_path / "pool.yaml"
    pool.write_text("candidates:\n  - {id: '1', hf_id: org/gamma}\n  - {id: '2', hf_id: org/alpha}\n"
                    "  - {id: '3', hf_id: org/beta}\n")
    out = tmp_path / "prior.txt"
    r = cli("rank", task_csv, "--method", "avgrank", "--train-truth", gt, "--pool", pool, "-o", out)
    assert r.code == 0, r.err
    assert [e.doc for e in read_run(out)["mine"]] == ["2", "3", "1"]  # alpha, beta, gamma by their own ids
    bad = tmp_path / "bad.yaml"
    bad.write_text("candidates:\n  - {id: '1', hf_id: org/alpha}\n  - {id: '2', hf_id: org/delta}\n")
    r = cli("rank", task_csv, "--method", "avgrank", "--train-truth", gt, "--pool", bad)
    assert r.code == 1 and "2 (org/delta)" in r.err and "--verify-top" in r.err and "logme" in r.err


@pytest.mark.slow(reason="3 s (setup and call) on 2 busy cores")
def test_default_ranks_a_subset_by_hf_id_and_refuses_renamed_ids(cli, tmp_path, task_csv):
    from modelseek.retrieval.data.pool import ntcir_pool

    ntcir = ntcir_pool()
    sub = tmp_path / "sub.yaml"  # three NTCIR candidates under other ids, in another order
    picked = [ntcir.get("9"), ntcir.get("1"), ntcir.get("15")]
    sub.write_text("candidates:\n" + "".join(f"  - {{id: 'c{i}', hf_id: {c.hf_id}}}\n" for i, c in enumerate(picked)))
    full, part = tmp_path / "full.txt", tmp_path / "part.txt"
    assert cli("rank", task_csv, "--method", "avgrank-ntcir19", "-o", full).code == 0
    r = cli("rank", task_csv, "--method", "avgrank-ntcir19", "--pool", sub, "-o", part)
    assert r.code == 0, r.err
    order = [e.doc for e in read_run(full)["mine"] if e.doc in ("9", "1", "15")]
    assert [picked[int(d[1])].hf_id for d in (e.doc for e in read_run(part)["mine"])] == \
        [ntcir.get(d).hf_id for d in order]
    # ids 1, 2, 3 that name other NTCIR models: scored as those models, never as NTCIR models 1, 2, 3
    renamed = tmp_path / "renamed.yaml"
    names = ["roberta-base", "bert-base-uncased", "distilbert-base-uncased"]
    renamed.write_text("candidates:\n" + "".join(f"  - {{id: '{i + 1}', hf_id: {n}}}\n" for i, n in enumerate(names)))
    out = tmp_path / "renamed.txt"
    assert cli("rank", task_csv, "--method", "avgrank-ntcir19", "--pool", renamed, "-o", out).code == 0
    full_scores = read_run(full).scores("mine")
    by_hf = {ntcir.get(d).hf_id: v for d, v in full_scores.items()}
    got = read_run(out).scores("mine")
    assert got == {str(i + 1): by_hf[n] for i, n in enumerate(names)}
    assert got != {d: full_scores[d] for d in ("1", "2", "3")}
    # models with no history: an error naming them, for every shipped ranker
    foreign = tmp_path / "foreign.yaml"
    foreign.write_text("candidates:\n  - {id: '1', hf_id: roberta-base}\n  - {id: '2', hf_id: microsoft/mpnet-base}\n"
                       "  - {id: '3', hf_id: acme/new-bert}\n")
    r = cli("rank", task_csv, "--pool", foreign, "--json")  # the default ranks them from their profiles
    assert r.code == 0, r.err
    ex = json.loads(r.out)["explanations"]["adaptive"]["mine"]["candidates"]
    assert {c["doc"]: c["history"] for c in ex} == {"1": True, "2": False, "3": False}
    for method in ("avgrank-ntcir19", "ltr-ntcir19"):
        r = cli("rank", task_csv, "--method", method, "--pool", foreign)
        assert r.code == 1, (method, r.out)
        assert "not trained on candidate(s) 2 (microsoft/mpnet-base), 3 (acme/new-bert):" in r.err
        assert "--verify-top" in r.err


# ------------------------------------------------------------------------------------------ bad numbers
def test_zero_counts_are_errors_not_ignored(cli, layout, task_csv):
    for args in (("rank", layout, "--cv", "0"), ("rank", layout, "--cv", "1"),
                 ("bench", layout, "--bootstrap", "0"), ("bench", layout, "--repeats", "0"),
                 ("bench", layout, "--folds", "1")):
        r = cli(*args)
        assert r.code == 2 and "must be an integer >=" in r.err and "Traceback" not in r.err, args
    r = cli("rank", task_csv, "--method", "random", "--verify-top", "0")
    assert r.code == 2 and "--verify-top" in r.err and ">= 1" in r.err


@pytest.mark.slow(reason="2 s (setup and call) on 2 busy cores")
def test_header_only_table_is_a_clear_error(cli, tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("text,label\n")
    r = cli("rank", empty)
    assert r.code == 1 and "empty.csv" in r.err and "no data rows" in r.err
