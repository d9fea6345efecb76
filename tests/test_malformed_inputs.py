"""Regression cases of issue #14 through the CLI: malformed input ends in exit 1 with one located line (or
argparse's usage error, exit 2) — never a traceback, never a silent wrong answer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from modelseek import GroundTruth
from modelseek.testing.cli import assert_one_error_line


def test_non_utf8_run_to_validate_and_evaluate(tmp_path, cli, tiny_layout, layout_run):
    data = layout_run.read_bytes().split(b"\n")
    data[2] = data[2].replace(b"byorder", b"by\xe9order")
    bad = tmp_path / "latin1.txt"
    bad.write_bytes(b"\n".join(data))
    offset = b"\n".join(data).index(b"\xe9")
    for args in (("validate", bad, "--pool", tiny_layout / "models.csv"),
                 ("evaluate", bad, "-g", tiny_layout / "ground-truth.csv")):
        assert_one_error_line(cli(*args), f"{bad}:3: not UTF-8 text (byte 0xe9 at offset {offset})")


def test_non_utf8_ground_truth_to_evaluate(tmp_path, cli, tiny_layout, layout_run):
    gt = tmp_path / "gt.csv"
    gt.write_bytes((tiny_layout / "ground-truth.csv").read_bytes().replace(b"\n", b"\n\xff", 1))
    assert_one_error_line(cli("evaluate", layout_run, "-g", gt), f"{gt}:2: not UTF-8 text (byte 0xff")


def test_directory_given_as_a_file(tmp_path, cli, tiny_layout, layout_run):
    assert_one_error_line(cli("validate", tmp_path, "--pool", tiny_layout / "models.csv"), "is a directory")
    assert_one_error_line(cli("evaluate", layout_run, "-g", tmp_path), "is a directory")
    assert_one_error_line(cli("validate", layout_run, "--topics", tmp_path), "is a directory")
    (tmp_path / "pool.yaml").mkdir()
    assert_one_error_line(cli("validate", layout_run, "--pool", tmp_path / "pool.yaml"), "is a directory")


@pytest.mark.parametrize("score", ["inf", "-inf", "nan", "1e999", "Infinity"])
def test_run_with_a_non_finite_score_is_refused(tmp_path, cli, tiny_layout, layout_run, score):
    lines = layout_run.read_text().splitlines()
    parts = lines[4].split()
    parts[4] = score
    lines[4] = " ".join(parts)
    bad = tmp_path / "r.txt"
    bad.write_text("\n".join(lines) + "\n")
    r = cli("evaluate", bad, "-g", tiny_layout / "ground-truth.csv")
    assert_one_error_line(r, f"{bad}:5: field 'Score': must be a finite number, got {score!r}")
    r = cli("validate", bad, "--pool", tiny_layout / "models.csv")
    assert r.code == 1 and f"{bad}:5: field 'Score'" in r.err and "Traceback" not in r.err


def test_demo_out_naming_a_file_and_negative_seed(tmp_path, cli):
    f = tmp_path / "taken"
    f.write_text("x")
    r = cli("demo", "--out", f)
    assert r.code == 2 and "argument --out" in r.err and "is a file, expected a folder" in r.err
    r = cli("demo", "--out", tmp_path / "o", "--seed", "-1")
    assert r.code == 2 and "argument --seed: must be an integer in [0, 4294967295], got -1" in r.err
    assert not (tmp_path / "o").exists()


def test_json_number_too_large_for_a_float_in_a_task(tmp_path, cli):
    task = tmp_path / "t1"
    task.mkdir()
    rows = [{"text": f"text {i}", "labels": i % 2} for i in range(6)]
    (task / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (task / "val.jsonl").write_text('{"text": "a", "labels": 0}\n{"text": "b", "labels": 1e999}\n', encoding="utf-8")
    run = tmp_path / "run.txt"
    run.write_text("t1 Q0 1 1 0.5 r\n")
    assert_one_error_line(cli("validate", run, "--tasks", task, "--pool", "ntcir19"),
                          f"{task / 'val.jsonl'}:2: number 1e999 is too large for a float")


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
def test_json_output_into_a_closed_pipe_is_quiet(tiny_layout, layout_run):
    """``modelseek evaluate ... --json | head -c0``: the reader is gone before the first write."""
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = dict(os.environ, PYTHONPATH=src, HF_HUB_OFFLINE="1")
    p = subprocess.Popen([sys.executable, "-m", "modelseek", "evaluate", str(layout_run), "-g",
                          str(tiny_layout / "ground-truth.csv"), "--json", "--per-topic"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    p.stdout.close()  # the reader goes away at once, long before the command has imported its modules
    err = p.stderr.read().decode()
    p.stderr.close()
    assert p.wait() == 141
    assert err == "", err


@pytest.mark.parametrize("argv, words", [
    (("rank-style", "x", "--seed", "-2"), "argument --seed: must be an integer in [0, 4294967295], got -2"),
    (("rank-style", "x", "--size", "4"), "argument --size: must be an integer >= 8, got 4"),
    (("bench-style", "--generated", "--folds", "1"), "argument --folds: must be an integer >= 2, got 1"),
    (("bench-style", "--generated", "--styles", "nan"), "argument --styles: must be an integer, got 'nan'"),
    (("finetune", "--pool", "p", "--tasks", "t", "--out", "o.csv", "--seeds", "1", "-1"),
     "argument --seeds: must be an integer in [0, 4294967295], got -1"),
    (("finetune", "--pool", "p", "--tasks", "t", "--out", ".", "--seeds", "1"), "argument --out: .: is a directory"),
    (("evaluate", "r.txt", "--scheme", "ntcri"), "argument --scheme: unknown grading scheme 'ntcri' (did you mean 'ntcir'?)"),
])
def test_option_values_are_usage_errors(cli, argv, words):
    r = cli(*argv)
    assert r.code == 2 and words in r.err and "Traceback" not in r.err, r.err


def test_table_files_go_through_the_one_reader(tmp_path, cli):
    rows = "".join(f'{{"text": "text {i}", "label": "{"ab"[i % 2]}"}}\n' for i in range(12))
    t = tmp_path / "task.jsonl"
    t.write_text(rows + '{"text": "x", "label": 1e999}\n', encoding="utf-8")
    assert_one_error_line(cli("rank", t, "-m", "random", "--pool", "ntcir19"), f"{t}:13: number 1e999 is too large")
    c = tmp_path / "task.csv"
    c.write_bytes(b"text,label\nfine,a\ncaf\xe9,b\n")
    assert_one_error_line(cli("rank", c, "-m", "random", "--pool", "ntcir19"), f"{c}:3: not UTF-8 text (byte 0xe9")
    (tmp_path / "dir.csv").mkdir()  # rank takes folders too: an empty one has no task folders
    assert_one_error_line(cli("rank", tmp_path / "dir.csv", "-m", "random", "--pool", "ntcir19"), "no task folders")


@pytest.mark.parametrize("metrics, words", [
    ("", "no metric given; valid names: kendall, mrr, ndcg, regret"),
    (" , ", "no metric given"),
    ("kendall@3", "kendall takes no cut-off"),
    ("ndcg@1e9", "bad cut-off"),
])
def test_evaluate_metric_names(cli, tiny_layout, layout_run, metrics, words):
    assert_one_error_line(cli("evaluate", layout_run, "-g", tiny_layout / "ground-truth.csv", "--metrics", metrics), words)


def test_task_table_row_without_its_split_is_located(tmp_path, cli):
    """Found by the exploring fuzz run: a JSONL row lacking the split key (pandas 3 keeps it missing, not
    "nan") ended in AttributeError; an empty split cell in a CSV is the same case."""
    rows = [{"text": f"text number {i}", "label": "ab"[i % 2], "split": "train"} for i in range(8)]
    rows[3] = {"text": "no split here", "label": "a", "rplit": "train"}
    jsonl = tmp_path / "task.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert_one_error_line(cli("rank", jsonl, "-o", tmp_path / "run.txt"), str(jsonl) + ":4", "field 'split'",
                          "missing split (use train, val, test)")
    csv = tmp_path / "task.csv"
    csv.write_text("text,label,split\n" + "".join(f"t{i},{'ab'[i % 2]},{'' if i == 5 else 'train'}\n"
                                                  for i in range(8)))
    assert_one_error_line(cli("rank", csv, "-o", tmp_path / "run.txt"), str(csv) + ":7", "missing split")


def test_ground_truth_frame_with_a_missing_id_is_refused():
    import numpy as np
    import pandas as pd

    from modelseek.core.errors import InputError

    frame = pd.DataFrame({"task_id": ["t1", "t1", np.nan], "model_id": ["m1", "m2", "m1"], "f1": [0.5, 0.6, 0.7]})
    with pytest.raises(InputError, match="ground truth row 2: missing task_id"):
        GroundTruth(frame)
    frame = pd.DataFrame({"task_id": ["t1", "t1"], "model_id": ["m1", None], "f1": [0.5, 0.6]})
    with pytest.raises(InputError, match="ground truth row 1: missing model_id"):
        GroundTruth(frame)
