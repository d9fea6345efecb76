"""Property-based fuzzing of ``modelseek rank``, ``bench`` and ``train-ranker`` (issue #14).

Every option (``--cv``, ``--verify-top``, ``--param KEY=VALUE`` with hostile values, ``--folds``,
``--bootstrap``, ``--repeats``, ``--baseline``, ``--plot``, output paths), every file they read (pools,
training ground truth and task folders, saved ranker artifacts) and method names are given hostile values:
the command ends in exit 0 with a valid result, exit 1 with one located error line, or a usage error — never
a traceback. Only cheap methods (``avgrank``, ``random``, ``task_knn`` with the hashing encoder) on a tiny
layout; examples bounded and derandomised.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from modelseek import GroundTruth
from modelseek.testing import make_ntcir_layout
from modelseek.testing.cli import run_cli
from modelseek.testing.fuzz import NASTY_NUMBERS, NASTY_TEXT, assert_clean_exit, damaged, fuzz_settings

FUZZ = fuzz_settings(10)
FEW = fuzz_settings(6)
KNN = ("-m", "task_knn", "--param", "encoder=hashing")


def _layout_copy(layout, name: str):
    """A fresh copy of the valid layout under victims/NAME, for a test to damage."""
    folder = layout["victims"] / name
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(layout["layout"], folder)
    return folder


def _bench(folder):
    return run_cli("bench", folder, "-m", "avgrank", "--bootstrap", "50", "--folds", "2", "--json")


@pytest.fixture(scope="module")
def layout(tmp_path_factory):
    root = tmp_path_factory.mktemp("rankfuzz")
    lay = make_ntcir_layout(root / "layout", n_tasks=6, n_models=4, seed=0)
    truth = GroundTruth.from_csv(lay / "ground-truth.csv")
    art = root / "knn.json"
    r = run_cli("train-ranker", lay, "-m", "task_knn", "-p", "encoder=hashing", "-p", "k=2", "-o", art)
    assert r.code == 0, r.err
    victims = root / "victims"
    victims.mkdir()
    return {"root": root, "layout": lay, "truth": truth, "artifact": art, "victims": victims,
            "task": next((lay / "task-data" / "train-tasks").iterdir())}


def _run_ok(path: Path, pool_ids: set[str], n_tasks: int | None = None) -> None:
    """A written run names only pool candidates, each once per task, with finite scores."""
    from modelseek.retrieval.data.run import read_runs

    for run in read_runs(path).values():
        assert n_tasks is None or len(run) == n_tasks
        for t in run:
            docs = [e.doc for e in run[t]]
            assert len(docs) == len(set(docs)) and set(docs) <= pool_ids, (t, docs)
            assert all(math.isfinite(e.score) for e in run[t])


def _ids(layout) -> set[str]:
    return set(layout["truth"].model_ids)


# ------------------------------------------------------------------------------------------ rank options
@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
@FUZZ
@given(key=st.sampled_from(["k", "temperature", "view", "max_texts", "seed", "encoder"]),
       value=st.sampled_from(NASTY_NUMBERS + NASTY_TEXT + ("0", "-3", "2", "[1, 2]", "{a: 1}", "!!binary AA==")))
def test_rank_param_values(layout, key, value):
    out = layout["victims"] / "param.txt"
    out.unlink(missing_ok=True)
    lay = layout["layout"]
    r = run_cli("rank", lay, "-m", "task_knn", "--param", "encoder=hashing" if key != "encoder" else f"encoder={value}",
                "--param", f"{key}={value}", "--train-truth", lay / "ground-truth.csv", "--train-tasks", lay, "-o", out, "--json")
    assert_clean_exit(r)
    if r.code == 0:
        _run_ok(out, _ids(layout), len(layout["truth"].task_ids))


@FEW
@given(cv=st.sampled_from(["0", "1", "2", "3", "-1", "nan", "1e9", "99"]),
       verify=st.sampled_from([None, "0", "-1", "nan", "1"]))
def test_rank_cv_and_verify_top(layout, cv, verify):
    out = layout["victims"] / "cv.txt"
    out.unlink(missing_ok=True)
    args = ["rank", layout["layout"], "-m", "avgrank", "--cv", cv, "-o", out, "--json"]
    if verify is not None:
        args += ["--verify-top", verify]
    r = run_cli(*args)
    assert_clean_exit(r)
    n = len(layout["truth"].task_ids)
    if verify is not None and verify != "1":  # --verify-top must be a positive integer
        assert r.code == 2, r.err
    elif cv in ("2", "3") and verify is None:
        assert r.code == 0, r.err
        _run_ok(out, _ids(layout), n)
    else:  # --cv below 2, more folds than tasks, or --verify-top with --json: refused, never ignored
        assert r.code != 0, (cv, verify, r.out)


@FEW
@given(method=st.sampled_from(["avgrnk", "", " ", "AVGRANK", "../x.json", "nosuch.json", "dir.json",
                               "random,avgrank", "\x00", "default.json", "a" * 300]))
def test_rank_method_names(layout, method):
    (layout["victims"] / "dir.json").mkdir(exist_ok=True)
    r = run_cli("rank", layout["layout"], "-m", layout["victims"] / method if method.endswith(".json") else method,
                "--train-truth", layout["layout"] / "ground-truth.csv")
    assert_clean_exit(r)
    assert r.code != 0, (method, r.out)


@FUZZ
@given(data=st.data())
def test_rank_survives_a_damaged_artifact(layout, data):
    path = layout["victims"] / "artifact.json"
    path.write_bytes(data.draw(damaged(layout["artifact"].read_bytes())))
    out = layout["victims"] / "art-run.txt"
    out.unlink(missing_ok=True)
    r = run_cli("rank", layout["task"], "-m", path, "--pool", layout["layout"] / "models.csv", "-o", out, "--json")
    assert_clean_exit(r, path)
    if r.code == 0:
        _run_ok(out, _ids(layout), 1)


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
@FUZZ
@given(data=st.data(), which=st.sampled_from(["ground-truth.csv", "models.csv"]))
def test_rank_survives_damaged_training_files(layout, data, which):
    folder = _layout_copy(layout, "train")
    path = folder / which
    path.write_bytes(data.draw(damaged(path.read_bytes())))
    out = layout["victims"] / "train-run.txt"
    out.unlink(missing_ok=True)
    r = run_cli("rank", layout["task"], *KNN, "--train-tasks", folder, "--pool", layout["layout"] / "models.csv",
                "-o", out, "--json")
    assert_clean_exit(r, path, folder)
    if r.code == 0:
        _run_ok(out, _ids(layout), 1)


@pytest.mark.parametrize("what", ["dir-as-truth", "file-as-tasks", "missing", "empty-truth", "header-only-truth",
                                  "dir-as-pool", "empty-pool"])
def test_rank_training_paths(layout, what):
    lay, v = layout["layout"], layout["victims"]
    (v / "empty.csv").write_text("")
    (v / "header.csv").write_text("task_id,model_id,f1\n")
    args = {"dir-as-truth": ["--train-truth", v], "file-as-tasks": ["--train-tasks", lay / "ground-truth.csv"],
            "missing": ["--train-tasks", v / "nope"], "empty-truth": ["--train-truth", v / "empty.csv"],
            "header-only-truth": ["--train-truth", v / "header.csv"], "dir-as-pool": ["--pool", v],
            "empty-pool": ["--pool", v / "empty.csv"]}[what]
    r = run_cli("rank", layout["task"], "-m", "avgrank", *args,
                *([] if "pool" in what else ["--pool", lay / "models.csv"]),
                *([] if "truth" in what or "tasks" in what else ["--train-truth", lay / "ground-truth.csv"]))
    assert_clean_exit(r)
    assert r.code == 1, (what, r.code, r.out, r.err)


# ------------------------------------------------------------------------------------------ train-ranker
@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
@FUZZ
@given(data=st.data())
def test_train_ranker_survives_a_damaged_ground_truth(layout, data):
    folder = _layout_copy(layout, "tr")
    path = folder / "ground-truth.csv"
    path.write_bytes(data.draw(damaged(path.read_bytes())))
    out = layout["victims"] / "tr.json"
    out.unlink(missing_ok=True)
    r = run_cli("train-ranker", folder, "-m", "avgrank", "-o", out)
    assert_clean_exit(r, path, folder)
    if r.code == 0:  # the artifact it wrote ranks the pool, or names itself as trained on other candidates
        rr = run_cli("rank", layout["task"], "-m", out, "--pool", layout["layout"] / "models.csv", "--json")
        assert_clean_exit(rr, out)


@pytest.mark.parametrize("case", ["out-is-dir", "out-below-file", "out-nested-new", "method-random", "method-typo",
                                  "param-unknown", "param-bad-k", "seed-negative", "seed-nan", "path-is-file"])
def test_train_ranker_options(layout, case):
    lay, v = layout["layout"], layout["victims"]
    (v / "afile").write_text("x")
    args = {"out-is-dir": ["-m", "avgrank", "-o", v], "out-below-file": ["-m", "avgrank", "-o", v / "afile" / "x.json"],
            "out-nested-new": ["-m", "avgrank", "-o", v / "new" / "deeper" / "a.json"],
            "method-random": ["-m", "random"], "method-typo": ["-m", "avgrnk"],
            "param-unknown": ["-m", "avgrank", "-p", "kk=1"], "param-bad-k": [*KNN[1:3], "-p", "k=-4", "-p", "encoder=hashing"],
            "seed-negative": ["-m", "avgrank", "--seed", "-1"], "seed-nan": ["-m", "avgrank", "--seed", "nan"],
            "path-is-file": ["-m", "avgrank"]}[case]
    path = v / "afile" if case == "path-is-file" else lay  # a file that is no ground truth (#48: a truth CSV is one)
    r = run_cli("train-ranker", path, *args)
    assert_clean_exit(r)
    if case == "out-nested-new":
        assert r.code == 0 and (v / "new" / "deeper" / "a.json").is_file(), r.err
    else:
        assert r.code in (1, 2), (case, r.code, r.out)


# ------------------------------------------------------------------------------------------ bench
@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
@FEW
@given(opt=st.sampled_from(["--folds", "--bootstrap", "--repeats", "--seed"]),
       value=st.sampled_from(["0", "-1", "1", "2", "nan", "inf", "1e999", "2.5", "", "99"]))
def test_bench_number_options(layout, opt, value):
    r = run_cli("bench", layout["layout"], "-m", "avgrank", "random", "--bootstrap", "50", opt, value, "--json")
    assert_clean_exit(r)
    if r.code == 0:
        res = json.loads(r.out)["methods"]
        for entry in res.values():
            for tier in entry["tiers"].values():
                for k, v in tier.items():
                    if k != "n":
                        assert all(math.isfinite(v[x]) and 0 <= v[x] <= 1 for x in ("mean", "low", "high")), (k, v)
        if opt == "--folds":
            assert 2 <= int(value) <= len(layout["truth"].task_ids), value


@pytest.mark.slow(reason="2 s (setup and call) on 2 busy cores")
@pytest.mark.parametrize("case", ["baseline-typo", "baseline-same", "plot-dir", "plot-below-file", "plot-ok",
                                  "run-out-dir", "gt-dir", "pool-empty"])
def test_bench_paths(layout, case):
    lay, v = layout["layout"], layout["victims"]
    (v / "afile").write_text("x")
    (v / "empty.csv").write_text("")
    args = {"baseline-typo": ["--baseline", "avgrnk"], "baseline-same": ["--baseline", "avgrank"],
            "plot-dir": ["--plot", v], "plot-below-file": ["--plot", v / "afile" / "p.png"],
            "plot-ok": ["--plot", v / "plots" / "p.png"], "run-out-dir": ["--run-out", v],
            "gt-dir": ["-g", v], "pool-empty": ["--pool", v / "empty.csv"]}[case]
    r = run_cli("bench", lay, "-m", "avgrank", "--bootstrap", "50", *args)
    assert_clean_exit(r)
    if case in ("plot-ok", "baseline-same"):
        assert r.code == 0, r.err
        if case == "plot-ok":
            assert (v / "plots" / "p.png").read_bytes()[:4] == b"\x89PNG"
    else:
        assert r.code in (1, 2), (case, r.out)


@FEW
@given(data=st.data())
def test_bench_survives_a_damaged_ground_truth(layout, data):
    folder = _layout_copy(layout, "bench")
    path = folder / "ground-truth.csv"
    path.write_bytes(data.draw(damaged(path.read_bytes())))
    r = _bench(folder)
    assert_clean_exit(r, path, folder)


# ------------------------------------------------------------------------------------------ named regressions
@pytest.mark.parametrize("method,param", [
    ("random", "seed=-1"),            # was a numpy ValueError traceback
    ("task_knn", "max_texts=-3"),     # was exit 0: one text per class embedded, silently
    ("task_knn", "max_texts=0"),
    ("task_knn", "k=nan"),            # was a ValueError traceback from int('nan')
    ("task_knn", "k="),               # was a TypeError traceback from int(None)
    ("task_knn", "temperature=1,5"),  # was a ValueError traceback from float('1,5')
    ("task_knn", "max_texts=nan"),    # was a TypeError traceback (comparing int and str)
])
def test_rank_refuses_a_bad_param_value(layout, method, param):
    lay = layout["layout"]
    r = run_cli("rank", lay, "-m", method, *(["--param", "encoder=hashing"] if method == "task_knn" else []),
                "--param", param, "--train-truth", lay / "ground-truth.csv", "--train-tasks", lay, "--json")
    assert_clean_exit(r)
    assert r.code == 1 and param.split("=")[0] in r.err, r.err


@pytest.mark.parametrize("content,expect", [
    (b"[1, 2]", "no 'method'"),                              # was an AttributeError traceback
    (b'{"method": "nosuch"}', "nosuch"),                     # the did-you-mean error did not name the file
])
def test_rank_damaged_artifact_regressions(layout, content, expect):
    path = layout["victims"] / "regress-artifact.json"
    path.write_bytes(content)
    r = run_cli("rank", layout["task"], "-m", path, "--pool", layout["layout"] / "models.csv", "--json")
    assert_clean_exit(r, path)
    assert r.code == 1 and expect in r.err, r.err


def test_rank_long_method_name_is_an_error_not_an_oserror(layout):
    r = run_cli("rank", layout["task"], "-m", "a" * 300, "--pool", layout["layout"] / "models.csv", "--json")
    assert_clean_exit(r)
    assert r.code == 1 and "unknown" in r.err.lower(), r.err


@pytest.mark.parametrize("rows,expect", [
    ("model_id,model_name\n", "at least one candidate"),                                 # was unlocated
    ("model_id,model_name\n1,org/a\n1,org/b\n", ":3: field 'model_id': duplicate"),  # was unlocated
    ("model_id,model_name\n1,org/\x0ba\n", ":2: field 'hf_id': must not contain control"),  # broke the error line
])
def test_pool_csv_regressions(layout, rows, expect):
    path = layout["victims"] / "regress-models.csv"
    path.write_text(rows, encoding="utf-8")
    r = run_cli("rank", layout["task"], "-m", "random", "--pool", path, "--json")
    assert_clean_exit(r, path)
    assert r.code == 1 and expect in r.err, r.err


def test_artifact_trained_on_other_candidates_names_itself(layout):
    """An avgrank artifact trained on a ground truth with one model cannot rank a 4-model pool: the error names it."""
    folder = _layout_copy(layout, "one-model")
    gt = folder / "ground-truth.csv"
    lines = gt.read_text(encoding="utf-8").splitlines()
    col = lines[0].split(",").index("model_id")
    gt.write_text("\n".join([lines[0]] + [ln for ln in lines[1:] if ln.split(",")[col] == "1"]) + "\n",
                  encoding="utf-8")
    out = layout["victims"] / "one-model.json"
    assert run_cli("train-ranker", folder, "-m", "avgrank", "-o", out).code == 0
    r = run_cli("rank", layout["task"], "-m", out, "--pool", layout["layout"] / "models.csv", "--json")
    assert_clean_exit(r, out)
    assert r.code == 1 and "was not trained on candidate" in r.err


def test_train_ranker_takes_a_ground_truth_file_but_no_other_file(layout, tmp_path, monkeypatch):
    """Issue #48: the ground-truth CSV itself is an input, as its folder is (the same artifact); a file that is no
    ground truth is one line, nothing written (it was exit 0 before #14: the truth beside any file was used)."""
    monkeypatch.chdir(tmp_path)
    r = run_cli("train-ranker", layout["layout"] / "ground-truth.csv", "-m", "avgrank", "-o", tmp_path / "a.json")
    assert r.code == 0, r.err
    assert run_cli("train-ranker", layout["layout"], "-m", "avgrank", "-o", tmp_path / "b.json").code == 0
    assert json.loads((tmp_path / "a.json").read_text())["fitted_task_ids"] == \
        json.loads((tmp_path / "b.json").read_text())["fitted_task_ids"]
    for other in ("tasks.csv", "models.csv"):
        r = run_cli("train-ranker", layout["layout"] / other, "-m", "avgrank")
        assert_clean_exit(r, layout["layout"] / other)
        assert r.code == 1 and "not a ground truth" in r.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "b.json"]


@pytest.mark.parametrize("args", [("bench", "--bootstrap", "0"), ("bench", "--repeats", "0"), ("bench", "--folds", "1"),
                                  ("rank", "--cv", "0"), ("rank", "--verify-top", "0"), ("rank", "--cv", "1")])
def test_issue_14_option_classes_are_usage_errors(layout, args):
    """Were tracebacks (bench --bootstrap 0 / --repeats 0) or silently ignored (rank --cv 0, --verify-top 0)."""
    cmd, option, value = args
    r = run_cli(cmd, layout["layout"], "-m", "avgrank", option, value)
    assert r.code == 2 and f"argument {option}" in r.err, r.err


def test_bench_ground_truth_without_some_pool_models_is_named(layout):
    """Found by the exploring fuzz run: a ground truth cut short named no file in its error."""
    folder = _layout_copy(layout, "bench-short")
    gt = folder / "ground-truth.csv"
    gt.write_text("task_id,model_id,f1\n1001,1,0.9\n")
    r = _bench(folder)
    assert r.code == 1 and r.err.strip().startswith(f"error: {gt}: pool candidate(s) not in the ground truth"), r.err


def test_artifact_with_a_refused_parameter_names_the_artifact(layout, tmp_path):
    """Found by the exploring fuzz run: a stored parameter the ranker refuses named no file."""
    data = json.loads(layout["artifact"].read_text())
    data["params"]["view"] = "lean"
    bad = tmp_path / "artifact.json"
    bad.write_text(json.dumps(data))
    r = run_cli("rank", layout["task"], "--method", bad)
    assert r.code == 1 and r.err.strip().startswith(f"error: {bad}: field 'params.view': view must be one of "), r.err


def test_bench_with_fewer_tasks_than_folds_names_the_ground_truth(layout):
    folder = _layout_copy(layout, "bench-one-task")
    gt = folder / "ground-truth.csv"
    lines = gt.read_text().splitlines()
    gt.write_text("\n".join([lines[0]] + [ln for ln in lines[1:] if ln.startswith("1001,")]) + "\n")
    r = _bench(folder)
    assert r.code == 1 and r.err.strip().startswith(f"error: {gt}: folds must be between 2 and the number of "
                                                    f"tasks (1)"), r.err


def test_bench_on_a_ground_truth_with_gaps_names_it(layout):
    """Found by the exploring fuzz run (seed 3): with models missing from the training folds the ranker's
    error named no file."""
    folder = _layout_copy(layout, "bench-gaps")
    gt = folder / "ground-truth.csv"
    lines = gt.read_text().splitlines()
    keep = [ln for ln in lines[1:] if ln.split(",")[1] == "1" or ln.startswith("1001,")]
    gt.write_text("\n".join([lines[0], *keep]) + "\n")
    r = _bench(folder)
    assert r.code == 1 and "Traceback" not in r.err and len(r.err.strip().splitlines()) == 1, r.err
    assert r.err.startswith(f"error: {gt}: cross-validation fold ") and "was not trained on candidate" in r.err
