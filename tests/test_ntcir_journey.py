"""Issue #34: the NTCIR-19 participant's journey on the organisers' repository as their downloader leaves it —
``rank --split test`` -> ``validate --official`` -> ``submission`` -> ``evaluate`` — on a generated stand-in
(:func:`modelseek.testing.organisers.make_organisers_layout`): zero-padded test-task folders, integer and string
labels, a 151-class task, a model snapshot in ``data/models/05``."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from modelseek import read_runs
from modelseek.testing.cli import assert_one_error_line
from modelseek.testing.organisers import make_organisers_layout

pytest.importorskip("transformers")

OFFICIAL = [str(i) for i in range(1, 49)]
DOCS = [str(i) for i in range(1, 21)]


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    return make_organisers_layout(tmp_path_factory.mktemp("organisers") / "modelretrieval-1-subtask-a")


@pytest.fixture(scope="module")
def test_run(repo, tmp_path_factory) -> tuple[Path, str]:
    """``rank ROOT --split test`` with the default, once for the module: (the run file, the printed output)."""
    from modelseek.testing.cli import run_cli

    out = tmp_path_factory.mktemp("runs") / "default.txt"
    r = run_cli("rank", repo, "--split", "test", "-o", out, "--show", "1")
    assert r.code == 0, r.err
    return out, r.out


def _pad(src: Path, dst: Path) -> Path:
    """The same run with the topics written as the downloader's folder names (0001 ...)."""
    dst.write_text("".join(f"{int(ln.split()[0]):04d} " + ln.split(" ", 1)[1] + "\n"
                           for ln in src.read_text().splitlines()))
    return dst


# ------------------------------------------------------------------------------------------------ rank --split
def test_a_root_holding_both_splits_needs_split(cli, repo):
    assert_one_error_line(cli("rank", repo), "--split", "test-tasks", "train-tasks")
    assert_one_error_line(cli("rank", repo / "data"), "--split")


def test_the_train_split_cross_fits_with_the_truth_in_data(cli, repo, tmp_path):
    out = tmp_path / "cv.txt"
    r = cli("rank", repo, "--split", "train", "-m", "avgrank", "--cv", "3", "-o", out, "--show", "0")
    assert r.code == 0, r.err
    assert "ranking the 6 training tasks" in r.out
    (run,) = read_runs(out).values()
    assert sorted(run) == [str(1001 + i) for i in range(6)]


def test_split_needs_the_organisers_layout(cli, tmp_path):
    (tmp_path / "t" / "train.jsonl").parent.mkdir()
    assert_one_error_line(cli("rank", tmp_path, "--split", "test"), "--split", "task-data")


def test_the_test_run_has_the_official_topics_and_docids(test_run):
    path, out = test_run
    (run,) = read_runs(path).values()
    assert sorted(run, key=int) == OFFICIAL  # the task_ids of tasks.csv, not the folder names 0001 ...
    assert all(sorted(run.ranking(t), key=int) == DOCS for t in run)
    assert "ranking the 48 test tasks (the official topics)" in out
    assert "method default: the shipped default" in out


def test_the_known_tier_comes_from_tasks_csv(test_run):
    _, out = test_run  # task 1 is "High Criticalness" in tasks.csv
    assert "criticality: HIGH — given by tasks.csv (task_criticalness)" in out


def test_every_tasks_csv_field_reaches_the_task(repo):
    from modelseek.data.organisers import find_layout, load_split

    tasks = load_split(find_layout(repo), "test")
    t3 = tasks.get("3")
    assert t3.num_classes == 151 and t3.metadata["task_type"] == "test" and t3.metadata["text_col"] == "text"
    assert tasks.get("1").criticality.value == "high" and tasks.get("2").criticality.value == "medium"
    assert set(tasks.get("4").label_names) <= {"0", "1", "2", "3", "4", "5"}  # JSON integers, read as they come
    assert "intent" in t3.instruction


def test_a_folder_that_is_no_task_of_tasks_csv_is_named(cli, repo, tmp_path):
    copy = tmp_path / "repo"
    shutil.copytree(repo / "data", copy / "data", ignore=shutil.ignore_patterns("models"))
    shutil.copytree(copy / "data/task-data/test-tasks/0002", copy / "data/task-data/test-tasks/0077")
    r = cli("rank", copy, "--split", "test", "-m", "avgrank-ntcir19", "-o", tmp_path / "x.txt")
    assert_one_error_line(r, "0077", "tasks.csv", "task_id")
    assert not (tmp_path / "x.txt").exists()


# ------------------------------------------------------------------------------------------------ validate
def test_validate_official_accepts_the_run_and_refuses_padded_topics(cli, repo, test_run, tmp_path):
    path, _ = test_run
    ok = cli("validate", path, "--official", repo)
    assert ok.code == 0 and "all 48 official test topics" in ok.out, ok.err
    assert cli("validate", path, "--official", repo / "data").code == 0
    r = cli("validate", _pad(path, tmp_path / "padded.txt"), "--official", repo)
    assert r.code == 1
    assert "unknown topic '0001'" in r.err and "zero-padded: the official topicID is '1'" in r.err
    assert "misses 48 topic(s)" in r.err


def test_validate_official_counts_runs_across_files(cli, repo, test_run, tmp_path):
    path, _ = test_run
    text = path.read_text()
    files = []
    for i in range(6):
        f = tmp_path / f"run{i}.txt"
        f.write_text(text.replace(" adaptive\n", f" team-{i}\n"))
        files.append(f)
    assert cli("validate", *files[:5], "--official", repo).code == 0
    r = cli("validate", *files, "--official", repo)
    assert r.code == 1 and "6 runs in these files" in r.err and "at most 5" in r.err
    shutil.copy(path, path.with_name("copy.txt"))
    r = cli("validate", files[0], path, path.with_name("copy.txt"), "--official", repo)
    assert r.code == 1 and "run id 'adaptive' is also in" in r.err


def test_validate_tasks_accepts_a_tasks_csv(cli, repo, test_run):
    path, _ = test_run
    r = cli("validate", path, "--tasks", repo / "data" / "tasks.csv")
    assert r.code == 1 and "misses 6 topic(s): 1001" in r.err  # every task_id of tasks.csv, train ones too


# ------------------------------------------------------------------------------------------------ the pool
def test_candidate_5_is_scored_from_its_snapshot_offline(cli, repo, tmp_path, caplog):
    out = tmp_path / "logme.txt"
    r = cli("rank", repo, "--split", "test", "-m", "logme", "--pool", repo / "data" / "models.csv",
            "--allow-failures", "-o", out, "--show", "0")
    assert r.code == 0, r.err
    (run,) = read_runs(out).values()
    assert all(run.ranking(t) == ["5"] for t in run) and len(run) == 48
    said = r.err + caplog.text  # the warning goes through logging (stderr in a terminal)
    assert "no folder" in said and str(Path("data", "models", "01")) in said and "Hugging Face cache" in said
    # without the flag: exit 1, every failure named, the flag suggested; --pool ROOT reads the same models.csv
    r = cli("rank", repo, "--split", "test", "-m", "logme", "--pool", repo, "-o", tmp_path / "no.txt")
    assert r.code == 1 and "rerun with --allow-failures" in r.err and "candidate 20" in r.err
    assert not (tmp_path / "no.txt").exists()


def test_when_every_candidate_fails_the_given_flag_is_not_suggested(cli, repo, tmp_path):
    copy = tmp_path / "repo"
    shutil.copytree(repo / "data", copy / "data", ignore=shutil.ignore_patterns("models"))
    r = cli("rank", copy, "--split", "test", "-m", "logme", "--allow-failures", "-o", tmp_path / "x.txt")
    assert r.code == 1 and "20 of 20 candidate(s) failed; no candidate is left to rank" in r.err
    assert "rerun with --allow-failures" not in r.err


def test_a_model_folder_feeds_the_profile(repo, tmp_path):
    from modelseek.data.pool import Candidate, load_pool
    from modelseek.profiles import profile_for

    pool = load_pool(repo / "data" / "models.csv")
    assert pool.get("5").path == str((repo / "data" / "models" / "05").resolve()) and pool.get("4").path is None
    # a model outside the shipped 20 (a folder outside the organisers' data/models, whose NN would name the model):
    # its card and config are read from the folder
    mine = shutil.copytree(pool.get("5").path, tmp_path / "fin-bert")
    prof = profile_for(Candidate(id="21", hf_id="my-org/fin-bert", path=str(mine)))
    assert prof.origin == "model-folder" and prof.architecture == "bert"
    assert "finance" in prof.domain and "financial_phrasebank" in prof.fine_tuned_on


# ------------------------------------------------------------------------------------------------ submission
def test_submission_writes_validated_runs_and_methods_md(cli, repo, tmp_path):
    out = tmp_path / "runs"
    r = cli("submission", repo, "--out", out, "--team", "ms")
    assert r.code == 0, r.err
    files = sorted(out.glob("*.txt"))
    assert [f.name for f in files] == ["ms-avgrank.txt", "ms-default.txt"]  # no weights: no feature runs
    assert "not made: logme" in r.out and "download_models" in r.out
    ok = cli("validate", *files, "--official", repo)
    assert ok.code == 0, ok.err
    md = (out / "METHODS.md").read_text()
    assert "| ms-default | ms-default.txt | default | inference-free | no | 48 |" in md
    assert "| ms-avgrank | ms-avgrank.txt | avgrank | inference-free | no | 48 |" in md
    assert "Command: `modelseek submission" in md or "Command: the Python API" in md
    assert "## Not made" in md and "- rrf:" in md


def test_submission_refuses_what_cannot_be_made_before_writing(cli, repo, tmp_path):
    out = tmp_path / "runs"
    assert_one_error_line(cli("submission", repo, "--out", out, "--methods", "logme"), "--methods", "download_models")
    assert_one_error_line(cli("submission", repo, "--out", out, "--methods", "bogus"), "bogus", "valid:")
    assert_one_error_line(cli("submission", repo, "--out", out, "--team", "a b"), "--team")
    assert not out.exists()
    copy = tmp_path / "repo"
    shutil.copytree(repo / "data", copy / "data", ignore=shutil.ignore_patterns("models", "0007"))
    assert_one_error_line(cli("submission", copy, "--out", out), "1 official test task(s) are not downloaded (7)")
    assert not out.exists()


def test_submission_then_evaluate_on_a_generated_truth(cli, repo, tmp_path):
    from modelseek.testing import make_ground_truth

    out = tmp_path / "runs"
    assert cli("submission", repo, "--out", out, "--methods", "avgrank").code == 0
    truth = make_ground_truth(OFFICIAL, DOCS, seed=3)
    truth.to_frame().drop(columns=["criticality"]).to_csv(tmp_path / "truth.csv", index=False)
    r = cli("evaluate", out / "modelseek-avgrank.txt", "-g", tmp_path / "truth.csv", "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    text = json.dumps(doc)
    assert "ndcg@5" in text and "48" in text


@pytest.mark.slow(reason="20 tiny BERT snapshots and five runs with frozen features (about a minute on 2 cores)")
def test_submission_with_every_snapshot_makes_five_runs(cli, tmp_path):
    repo = make_organisers_layout(tmp_path / "repo", n_test=4, n_train_tasks=3, snapshots=range(1, 21), wide_task=3)
    # a short tasks.csv (4 test tasks) keeps this quick: the official topics are what tasks.csv lists
    out = tmp_path / "runs"
    r = cli("submission", repo, "--out", out)
    assert r.code == 0, r.err
    names = sorted(f.name for f in out.glob("*.txt"))
    assert names == sorted(f"modelseek-{m}.txt" for m in ("default", "avgrank", "logme", "knn", "rrf"))
    assert cli("validate", *sorted(out.glob("*.txt")), "--official", repo).code == 0
    md = (out / "METHODS.md").read_text()
    assert md.count("| inference-based | no |") == 3 and md.count("| inference-free | no |") == 2
    (run,) = read_runs(out / "modelseek-logme.txt").values()
    assert sorted(run, key=int) == ["1", "2", "3", "4"] and len(run.ranking("3")) == 20  # 151 classes scored


# ------------------------------------------------------------------------------------------------ install-default
def _digest(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(folder.iterdir()):
        h.update(p.name.encode() + p.read_bytes())
    return h.hexdigest()


@pytest.mark.slow(reason="a 3-fold CV and three ranks (about 3 s)")
def test_install_default_writes_the_user_folder_not_the_package(cli, tiny_layout, tmp_path, monkeypatch):
    from modelseek.rankers.default import artifact_dir

    monkeypatch.setenv("MODELSEEK_DATA", str(tmp_path / "user"))
    before = _digest(artifact_dir())
    assert_one_error_line(cli("train-ranker", tiny_layout, "-m", "avgrank", "--install-default"), "--cv", "--force")
    r = cli("train-ranker", tiny_layout, "-m", "avgrank", "--cv", "3", "--install-default")
    assert r.code == 0, r.err
    assert _digest(artifact_dir()) == before  # the package is never written
    spec = json.loads((tmp_path / "user" / "rankers" / "default.json").read_text())
    assert spec["artifact"] == "avgrank-installed.json" and "CV 3-fold" in spec["why"]
    r = cli("rank", tiny_layout, "--show", "0")
    assert r.code == 0 and "method default: the default installed by train-ranker" in r.out, r.err
    assert "--reset-default" in r.out
    r = cli("train-ranker", "--reset-default")
    assert r.code == 0 and "uses the shipped default again" in r.out
    assert not (tmp_path / "user" / "rankers" / "default.json").exists()
    assert (tmp_path / "user" / "rankers" / "default.removed.json").exists()
    assert "method default: the shipped default" in cli("rank", tiny_layout, "--show", "0").out
    assert "no installed default" in cli("train-ranker", "--reset-default").out


def test_a_refit_below_avgrank_is_refused_without_force(cli, tiny_layout, tmp_path, monkeypatch):
    import modelseek.cli.train_ranker as tr

    monkeypatch.setenv("MODELSEEK_DATA", str(tmp_path / "user"))
    monkeypatch.setattr(tr, "_print_cv", lambda *a, **k: -0.005)  # what the CV printed: below avgrank
    r = cli("train-ranker", tiny_layout, "-m", "avgrank", "--cv", "3", "--install-default")
    assert_one_error_line(r, "below avgrank", "-0.005", "--force")
    assert not (tmp_path / "user" / "rankers").exists()
    r = cli("train-ranker", tiny_layout, "-m", "avgrank", "--cv", "3", "--install-default", "--force")
    assert r.code == 0 and (tmp_path / "user" / "rankers" / "default.json").exists()


def test_an_installed_default_that_lost_its_artifact_is_named(cli, tiny_layout, tmp_path, monkeypatch):
    monkeypatch.setenv("MODELSEEK_DATA", str(tmp_path / "user"))
    (tmp_path / "user" / "rankers").mkdir(parents=True)
    (tmp_path / "user" / "rankers" / "default.json").write_text('{"artifact": "gone.json", "why": "x"}')
    assert_one_error_line(cli("rank", tiny_layout, "--show", "0"), "gone.json", "--reset-default")


@pytest.mark.slow(reason="fine-tunes tiny BERTs through the funnel for two test tasks (about a minute on 2 cores)")
def test_submission_with_a_budget_adds_a_declared_fine_tuned_run(cli, tmp_path):
    repo = make_organisers_layout(tmp_path / "repo", n_test=2, n_train_tasks=3, snapshots=(1, 2, 3), n_models=3,
                                  wide_task=None)
    out = tmp_path / "runs"
    assert_one_error_line(cli("submission", repo, "--out", out, "--methods", "funnel"), "--budget")
    assert_one_error_line(cli("submission", repo, "--out", out, "--budget", "soon"), "--budget")
    assert not out.exists()
    r = cli("submission", repo, "--out", out, "--methods", "default", "funnel", "--budget", "4m")
    assert r.code == 0, r.err
    assert cli("validate", *sorted(out.glob("*.txt")), "--official", repo).code == 0
    md = (out / "METHODS.md").read_text()
    row = next(ln for ln in md.splitlines() if ln.startswith("| modelseek-funnel "))
    assert "| inference-based | yes (" in row, row
    assert "candidates were fine-tuned for this run" in md and "validation F1" in md
    assert (out / "funnel-work" / "1" / "state.json").is_file()  # each task's funnel resumes from here
