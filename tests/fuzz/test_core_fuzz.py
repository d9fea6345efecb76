"""Property-based fuzzing of the core commands and file types (issue #14).

Every file a core command reads (run files, ground truth, topics, pools in CSV and YAML, task tables and
task folders, recipes and JSON documents) is damaged at random (:mod:`modelseek.testing.fuzz`): the command
must end in exit 0, exit 1 with located error lines naming the file, or a usage error — never a
traceback. Examples are bounded (the whole module runs in well under a minute on a quiet machine) and
derandomised, so a failure reproduces.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from modelseek import GroundTruth, Run
from modelseek.core.errors import InputError
from modelseek.testing import make_ntcir_layout, make_text_task, write_task_table
from modelseek.testing.cli import run_cli
from modelseek.testing.fuzz import assert_clean_exit, damaged, fuzz_settings

FUZZ = fuzz_settings(30)
FEW = fuzz_settings(8)


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    """A small valid layout: ground truth, models.csv, tasks, a run, a topics file, a pool YAML, a task table."""
    root = tmp_path_factory.mktemp("fuzz")
    layout = make_ntcir_layout(root / "layout", n_tasks=4, n_models=4, seed=0)
    truth = GroundTruth.from_csv(layout / "ground-truth.csv")
    run = root / "run.txt"
    Run.from_scores({t: truth.f1(t) for t in truth.task_ids}, run_id="f1").write(run)
    topics = root / "topics.txt"
    topics.write_text("".join(t + "\n" for t in truth.task_ids), encoding="utf-8")
    pool = root / "pool.yaml"
    pool.write_text("name: fuzz\ncandidates:\n" + "".join(
        f"  - id: '{m}'\n    hf_id: org/model-{m}\n    params_m: 110\n    pretraining_data: [wiki]\n"
        for m in truth.model_ids), encoding="utf-8")
    table = write_task_table(make_text_task("t", n_classes=3, n_train=24, n_val=9, seed=0), root / "task.csv")
    import pandas as pd

    jsonl = root / "task.jsonl"
    pd.read_csv(table, dtype=str, keep_default_na=False).to_json(jsonl, orient="records", lines=True)
    task_dir = next((layout / "task-data" / "train-tasks").iterdir())
    return {"root": root, "layout": layout, "run": run, "topics": topics, "pool": pool, "table": table, "jsonl": jsonl,
            "task_dir": task_dir, "gt": layout / "ground-truth.csv", "models": layout / "models.csv"}


def _victim(case, key: str, name: str | None = None) -> tuple[Path, bytes]:
    """A fresh copy of one file of ``case`` to damage, and its valid bytes."""
    src = case[key]
    dst = case["root"] / "victims" / (name or src.name)
    dst.parent.mkdir(exist_ok=True)
    return dst, src.read_bytes()


# ------------------------------------------------------------------------------------------ run files
@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
@FUZZ
@given(data=st.data())
def test_validate_survives_a_damaged_run(case, data):
    path, valid = _victim(case, "run")
    path.write_bytes(data.draw(damaged(valid)))
    assert_clean_exit(run_cli("validate", path, "--pool", case["models"], "--ground-truth", case["gt"]), path)


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
@FUZZ
@given(data=st.data())
def test_evaluate_survives_a_damaged_run(case, data):
    path, valid = _victim(case, "run")
    path.write_bytes(data.draw(damaged(valid)))
    r = run_cli("evaluate", path, "-g", case["gt"], "--json")
    assert_clean_exit(r, path)
    if r.code == 0:
        import json
        import math

        for report in json.loads(r.out).values():  # a valid result: finite means in [0, 1]
            for metric, value in report["mean"].items():
                if metric == "kendall":  # weighted Kendall tau: in [-1, 1]; null when no topic has a value
                    assert value is None or (math.isfinite(value) and -1 <= value <= 1), (metric, value)
                    continue
                assert math.isfinite(value) and 0 <= value <= 1, (metric, value)


# ------------------------------------------------------------------------------------------ ground truth
@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
@FUZZ
@given(data=st.data())
def test_evaluate_survives_a_damaged_ground_truth(case, data):
    path, valid = _victim(case, "gt")
    shutil.copy(case["layout"] / "tasks.csv", path.parent / "tasks.csv")
    path.write_bytes(data.draw(damaged(valid)))
    assert_clean_exit(run_cli("evaluate", case["run"], "-g", path), path, case["run"])


# ------------------------------------------------------------------------------------------ topics, pools
@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
@FUZZ
@given(data=st.data())
def test_validate_survives_damaged_topics(case, data):
    path, valid = _victim(case, "topics")
    path.write_bytes(data.draw(damaged(valid)))
    assert_clean_exit(run_cli("validate", case["run"], "--pool", case["models"], "--topics", path), path, case["run"])


@FUZZ
@given(data=st.data(), which=st.sampled_from(["pool", "models"]))
def test_validate_survives_a_damaged_pool(case, data, which):
    path, valid = _victim(case, which)
    path.write_bytes(data.draw(damaged(valid)))
    assert_clean_exit(run_cli("validate", case["run"], "--pool", path), path, case["run"])


# ------------------------------------------------------------------------------------------ tasks
@pytest.mark.slow(reason="2 s (setup and call) on 2 busy cores")
@FUZZ
@given(data=st.data(), fmt=st.sampled_from(["table", "jsonl"]))
def test_rank_survives_a_damaged_task_table(case, data, fmt):
    """Only the input-file layer of ``rank`` (the random method needs nothing else)."""
    path, valid = _victim(case, fmt)
    path.write_bytes(data.draw(damaged(valid)))
    out = case["root"] / "victims" / "rank-out.txt"
    assert_clean_exit(run_cli("rank", path, "-m", "random", "--pool", case["models"], "-o", out), path)


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
@FUZZ
@given(data=st.data(), split=st.sampled_from(["train.jsonl", "val.jsonl"]))
def test_validate_survives_a_damaged_task_folder(case, data, split):
    folder = case["root"] / "victims" / case["task_dir"].name
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(case["task_dir"], folder)
    path = folder / split
    path.write_bytes(data.draw(damaged(path.read_bytes())))
    r = run_cli("validate", case["run"], "--pool", case["models"], "--tasks", folder)
    assert_clean_exit(r, path, folder, case["run"])


# ------------------------------------------------------------------------------------------ config files
@FUZZ
@given(data=st.data(), suffix=st.sampled_from([".yaml", ".json"]))
def test_recipe_file_is_a_recipe_or_a_located_error(case, data, suffix):
    from modelseek.retrieval.finetune.recipe import PROTOCOL, Recipe

    path = case["root"] / "victims" / f"recipe{suffix}"
    path.parent.mkdir(exist_ok=True)  # whichever test of the module a worker runs first
    valid = (b'{"lr": 0.0001, "batch_size": 32, "grad_accum": 4, "precision": "bf16", "max_epochs": 50}'
             if suffix == ".json" else b"lr: 1.0e-4\nbatch_size: 32\ngrad_accum: 4\nprecision: bf16\nmax_epochs: 50\n")
    path.write_bytes(data.draw(damaged(valid)))
    try:
        r = Recipe.from_yaml(path)
    except InputError as exc:
        assert exc.path == str(path) and "\n" not in str(exc)
    else:  # a valid recipe: it round-trips and respects its constraints
        assert Recipe.from_dict(r.to_dict()) == r and r.lr > 0 and r.batch_size % r.grad_accum == 0
        assert r == PROTOCOL.replace(**r.to_dict())


# ------------------------------------------------------------------------------------------ demo options
@pytest.mark.slow(reason="2 s (setup and call) on 2 busy cores")
@FEW
@given(seed=st.one_of(st.integers(-5, 2**33).map(str), st.sampled_from(["nan", "1e3", "", "0x1", "seven"])),
       out=st.sampled_from(["file", "dir", "new/nested", "file/below"]))
def test_demo_options(case, seed, out):
    base = case["root"] / "demo"
    base.mkdir(exist_ok=True)
    (base / "file").write_text("x")
    r = run_cli("demo", "--seed", seed, "--out", base / out)
    assert_clean_exit(r)
    valid_seed = seed.isdigit() and int(seed) < 2**32
    assert (r.code == 0) == (valid_seed and out in ("dir", "new/nested")), (r.code, r.err)


def test_topics_file_with_a_control_character_in_an_id(case, tmp_path):
    """Found by the exploring fuzz run: '1001<VT>1002' was taken as one topic id, and the vertical tab in the
    printed message broke the one-line error into two."""
    topics = tmp_path / "topics.txt"
    topics.write_bytes(b"1001\x0b1002\n1003\n")
    r = run_cli("validate", case["run"], "--pool", case["models"], "--topics", topics)
    assert r.code == 1 and r.err.strip() == (f"error: {topics}:1: field 'topicID': topic id '1001\\x0b1002' holds "
                                            f"white space or a control character")


_TOKEN = st.text(alphabet="abAB019_-.:/+", min_size=1, max_size=5)
_SEP = st.sampled_from([" ", "  ", "\t", " \t"])


@FUZZ
@given(rows=st.lists(st.tuples(_TOKEN, _TOKEN, st.integers(1, 30), st.floats(-5, 5, allow_nan=False), _SEP,
                               st.sampled_from(["a", "b"])), min_size=1, max_size=40),
       blank=st.booleans(), crlf=st.booleans())
def test_fast_readers_agree_with_the_careful_reader(tmp_path_factory, rows, blank, crlf):
    """Whichever path the run reader takes (pyarrow's for plain white-space separated files, the careful line
    reader otherwise), the runs are those the careful line reader builds, or the same located error."""
    from modelseek.retrieval.data import run as R

    lines = [sep.join([t, "Q0", d, str(r), repr(s), rid]) for t, d, r, s, sep, rid in rows]
    if blank:
        lines.insert(len(lines) // 2, "")
    text = ("\r\n" if crlf else "\n").join(lines) + "\n"
    p = tmp_path_factory.mktemp("readers") / "run.txt"
    p.write_bytes(text.encode())
    try:
        want = R._build(p, R._parse_careful(p, text, None, True), None)
    except InputError as exc:
        with pytest.raises(InputError) as got:
            R.read_runs(p)
        assert (got.value.line, got.value.field) == (exc.line, exc.field)
        return
    got = R.read_runs(p)
    assert list(got) == list(want)
    for rid in want:
        assert got[rid].lines() == want[rid].lines()
        assert [e.line for t in got[rid] for e in got[rid][t]] == [e.line for t in want[rid] for e in want[rid][t]]
