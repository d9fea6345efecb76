"""Issue #25, the evaluation and reader items, each through the CLI: written files honour the umask; inputs
are bounded (FIFOs and devices refused up front, a size cap per kind, CSV fields of any length); evaluate
reports unknown topics and docIDs in every output mode and fails with --strict; identifiers with control or
format characters and ranks in non-ASCII digits are refused; a column named twice is an error; HF ids and
NTCIR docIDs name the same models through the pool."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from modelseek import GroundTruth, Run
from modelseek.testing.cli import assert_one_error_line


# ------------------------------------------------------------------------------------------ written files
@pytest.mark.parametrize("mask", [0o022, 0o002, 0o077])
def test_written_files_honour_the_umask(tmp_path, tiny_layout, layout_run, cli, mask):
    old = os.umask(mask)
    try:
        out = tmp_path / f"fused-{mask:o}.txt"
        from modelseek.core.io import atomic_write_text

        atomic_write_text(out, "x\n")
        run = Run.from_scores({"1": {"a": 1.0}}, "r")
        run.write(tmp_path / f"run-{mask:o}.txt")
        truth_out = tmp_path / f"gt-{mask:o}.csv"
        GroundTruth.from_csv(tiny_layout / "ground-truth.csv").to_csv(truth_out)
    finally:
        os.umask(old)
    for p in (out, tmp_path / f"run-{mask:o}.txt", truth_out):
        assert stat.S_IMODE(p.stat().st_mode) == 0o666 & ~mask, (p, oct(p.stat().st_mode))


@pytest.mark.slow(reason="5 s (setup and call) on 2 busy cores")
def test_rank_output_is_readable_by_the_group(tmp_path, cli):
    old = os.umask(0o022)
    try:
        res = cli("demo", "--out", tmp_path / "demo")
    finally:
        os.umask(old)
    assert res.code == 0, res.err
    written = [p for p in (tmp_path / "demo").rglob("*") if p.is_file()]
    assert written and all(stat.S_IMODE(p.stat().st_mode) == 0o644 for p in written), \
        [(p.name, oct(p.stat().st_mode)) for p in written]


# ------------------------------------------------------------------------------------------ bounded readers
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_fifo_and_devices_are_refused_up_front(tmp_path, cli, tiny_layout, layout_run):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)  # no writer: opening it would block for ever
    assert_one_error_line(cli("evaluate", fifo, "-g", tiny_layout / "ground-truth.csv"), "is a FIFO", "regular run file")
    assert_one_error_line(cli("evaluate", layout_run, "-g", fifo), "is a FIFO")
    assert_one_error_line(cli("validate", fifo), "is a FIFO")
    if Path("/dev/zero").exists():
        assert_one_error_line(cli("evaluate", "/dev/zero", "-g", tiny_layout / "ground-truth.csv"), "character device")
        assert_one_error_line(cli("evaluate", layout_run, "-g", "/dev/urandom"), "character device")


def test_size_cap_per_kind_is_configurable(tmp_path, cli, tiny_layout, layout_run, monkeypatch):
    monkeypatch.setenv("MODELSEEK_MAX_MB_RUN_FILE", "0.0001")  # ~100 bytes
    assert_one_error_line(cli("evaluate", layout_run, "-g", tiny_layout / "ground-truth.csv"), "over the", "MiB cap",
                          "MODELSEEK_MAX_MB_RUN_FILE")
    monkeypatch.setenv("MODELSEEK_MAX_MB_RUN_FILE", "1")
    assert cli("evaluate", layout_run, "-g", tiny_layout / "ground-truth.csv").code == 0
    monkeypatch.setenv("MODELSEEK_MAX_MB_GROUND_TRUTH_FILE", "0.0001")
    assert_one_error_line(cli("evaluate", layout_run, "-g", tiny_layout / "ground-truth.csv"), "ground-truth file is",
                          "MODELSEEK_MAX_MB_GROUND_TRUTH_FILE")
    monkeypatch.setenv("MODELSEEK_MAX_MB_GROUND_TRUTH_FILE", "lots")
    assert_one_error_line(cli("evaluate", layout_run, "-g", tiny_layout / "ground-truth.csv"), "must be a number of MiB")


def test_csv_fields_and_headers_of_any_length(tmp_path, cli, tiny_layout, layout_run):
    gt = tiny_layout / "ground-truth.csv"
    lines = gt.read_text().splitlines()
    # a field over csv's 131,072-character limit in an extra column: read, no _csv.Error
    long_field = tmp_path / "long.csv"
    long_field.write_text("\n".join([lines[0] + ",note"] + [ln + ",x" for ln in lines[1:-1]] +
                                    [lines[-1] + ',"' + "y" * 200_000 + '"']) + "\n")
    assert cli("evaluate", layout_run, "-g", long_field).code == 0
    # a model id of 200,000 characters is read like any other (the run does not name it: that topic ranks
    # one candidate fewer)
    long_id = tmp_path / "longid.csv"
    parts = lines[3].split(",")
    parts[1] = "m" * 200_000
    long_id.write_text("\n".join(lines[:3] + [",".join(parts)] + lines[4:]) + "\n")
    r = cli("evaluate", layout_run, "-g", long_id, "--json")
    assert r.code == 0 and "Traceback" not in r.err
    assert "m" * 200_000 in GroundTruth.from_csv(long_id).model_ids
    # a header column of 200,000 characters: read (it is just an unused column)
    long_head = tmp_path / "longhead.csv"
    long_head.write_text("\n".join([lines[0] + "," + "h" * 200_000] + [ln + ",1" for ln in lines[1:]]) + "\n")
    assert cli("evaluate", layout_run, "-g", long_head).code == 0


def test_duplicated_header_column_is_an_error(tmp_path, cli, layout_run, tiny_layout):
    lines = (tiny_layout / "ground-truth.csv").read_text().splitlines()
    dup = tmp_path / "dup.csv"
    dup.write_text("\n".join([lines[0] + ",f1"] + [ln + ",0.5" for ln in lines[1:]]) + "\n")
    assert_one_error_line(cli("evaluate", layout_run, "-g", dup), f"{dup}:1: field 'f1': column 'f1' is named twice")


# ------------------------------------------------------------------------------------------ identifiers
def test_control_character_in_a_ground_truth_model_id_is_refused(tmp_path, cli, layout_run, tiny_layout):
    lines = (tiny_layout / "ground-truth.csv").read_text().splitlines()
    parts = lines[2].split(",")
    parts[1] = "1\x00"
    bad = tmp_path / "nul.csv"
    bad.write_text("\n".join(lines[:2] + [",".join(parts)] + lines[3:]) + "\n")
    assert_one_error_line(cli("evaluate", layout_run, "-g", bad), f"{bad}:3: field 'model_id'", "U+0000")


def test_byte_order_mark_inside_a_run_is_refused_at_its_line(tmp_path, cli, tiny_layout, layout_run):
    text = layout_run.read_text().splitlines()
    text[5] = "\ufeff" + text[5]  # two files concatenated: the second one's BOM lands inside a topic id
    bad = tmp_path / "cat.txt"
    bad.write_text("\n".join(text) + "\n", encoding="utf-8")
    assert_one_error_line(cli("evaluate", bad, "-g", tiny_layout / "ground-truth.csv"), f"{bad}:6: field 'topicID'",
                          "U+FEFF")


@pytest.mark.parametrize("digits", ["\u0661", "\uff11", "\u0967"])  # Arabic-Indic, full-width, Devanagari one
def test_validate_refuses_ranks_in_non_ascii_digits(tmp_path, cli, tiny_layout, layout_run, digits):
    lines = layout_run.read_text().splitlines()
    parts = lines[0].split()
    parts[3] = digits
    lines[0] = " ".join(parts)
    bad = tmp_path / "digits.txt"
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
    r = cli("validate", bad, "--pool", tiny_layout / "models.csv")
    assert r.code == 1 and f"{bad}:1: field 'Rank': not an integer" in r.err and "ASCII digits" in r.err
    assert_one_error_line(cli("evaluate", bad, "-g", tiny_layout / "ground-truth.csv"), f"{bad}:1: field 'Rank'")


# ------------------------------------------------------------------------------------------ unknown ids
def test_unknown_topics_and_models_reported_in_every_mode_and_strict_fails(tmp_path, cli, tiny_layout, layout_run):
    gt = tiny_layout / "ground-truth.csv"
    extra = tmp_path / "extra.txt"
    extra.write_text(layout_run.read_text() + "9999 Q0 1 1 0.5 byorder\n1001 Q0 77 99 0.01 byorder\n")
    text = cli("evaluate", extra, "-g", gt)
    assert text.code == 0
    assert "1 topic(s) of the run not in the ground truth were ignored: 9999" in text.out
    assert "1 docID(s) of the run not in the ground truth count as non-relevant: 77" in text.out
    js = json.loads(cli("evaluate", extra, "-g", gt, "--json").out)["byorder"]
    assert js["extra_topics"] == ["9999"] and js["unknown_models"] == ["77"]
    for mode in ("--csv", "--trec"):
        r = cli("evaluate", extra, "-g", gt, mode)
        assert r.code == 0 and "9999" in r.err and "77" in r.err and "9999" not in r.out
    md = cli("evaluate", extra, "-g", gt, "--markdown")
    assert "> note:" in md.out and "9999" in md.out
    strict = cli("evaluate", extra, "-g", gt, "--strict")
    assert strict.code == 1 and "--strict" in strict.err and "9999" in strict.err
    assert cli("evaluate", layout_run, "-g", gt, "--strict").code == 0


# ------------------------------------------------------------------------------------------ model identity
def test_hf_ids_and_ntcir_docids_match_through_the_pool(tmp_path, cli, tiny_layout, layout_run):
    pool = tiny_layout / "models.csv"
    gt = tiny_layout / "ground-truth.csv"
    lines = gt.read_text().splitlines()
    hf = tmp_path / "my-gt.csv"  # my own fine-tuning results, models named by HF id
    hf.write_text("\n".join([lines[0]] + [",".join([p[0], f"test-org/model-{p[1]}", *p[2:]])
                                          for p in (ln.split(",") for ln in lines[1:])]) + "\n")
    want = json.loads(cli("evaluate", layout_run, "-g", gt, "--json").out)["byorder"]["mean"]
    got = cli("evaluate", layout_run, "-g", hf, "--pool", pool, "--json")
    assert got.code == 0, got.err
    assert json.loads(got.out)["byorder"]["mean"] == want
    # without the pool the ids cannot meet: the existing located error
    assert "no docID matches" in cli("evaluate", layout_run, "-g", hf, "--pool", "none").err
    # and the other way: a run of HF ids against the NTCIR-style ground truth
    hf_run = tmp_path / "hf-run.txt"
    hf_run.write_text("".join(f"{p[0]} Q0 test-org/model-{p[2]} {' '.join(p[3:])}\n"
                              for p in (ln.split() for ln in layout_run.read_text().splitlines())))
    got = cli("evaluate", hf_run, "-g", gt, "--pool", pool, "--json")
    assert got.code == 0 and json.loads(got.out)["byorder"]["mean"] == want


@pytest.mark.slow(reason="6 s (setup and call) on 2 busy cores")
def test_rank_writes_hf_ids_on_request(tmp_path, cli):
    out = tmp_path / "run.txt"
    r = cli("demo", "--out", tmp_path / "d")
    assert r.code == 0
    task = next((tmp_path / "d").glob("*.csv"))
    res = cli("rank", task, "-m", "random", "--docid", "hf", "-o", out)
    assert res.code == 0, res.err
    from modelseek.retrieval.data.pool import ntcir_pool

    hf = {c.hf_id for c in ntcir_pool()}
    docs = {ln.split()[2] for ln in out.read_text().splitlines()}
    assert docs and docs <= hf


def test_long_fields_in_pool_and_tasks_tables(tmp_path, cli, tiny_layout, layout_run):
    pool = tmp_path / "models.csv"
    text = (tiny_layout / "models.csv").read_text().splitlines()
    pool.write_text("\n".join([text[0] + ",notes"] + [ln + ",x" for ln in text[1:-1]] +
                              [text[-1] + ',"' + "z" * 200_000 + '"']) + "\n")
    r = cli("validate", layout_run, "--pool", pool)
    assert r.code == 0, r.err
    dup = tmp_path / "dup-models.csv"
    dup.write_text("\n".join([text[0] + ",model_name"] + [ln + ",y" for ln in text[1:]]) + "\n")
    assert_one_error_line(cli("validate", layout_run, "--pool", dup), f"{dup}:1: field 'model_name': column 'model_name' is "
                                                          f"named twice")
    tasks = tmp_path / "tasks.csv"
    rows = (tiny_layout / "tasks.csv").read_text().splitlines()
    tasks.write_text("\n".join(rows[:2] + [rows[2] + ',"' + "\n" * 3 + '"x', *rows[3:]]) + "\n")
    r = cli("evaluate", layout_run, "-g", tiny_layout / "ground-truth.csv", "--tasks-csv", tasks)
    assert r.code in (0, 1) and "Traceback" not in r.err
    long_tasks = tmp_path / "long-tasks.csv"
    long_tasks.write_text("\n".join([rows[0] + ",notes"] + [ln + ",'" for ln in rows[1:-1]] +
                                    [rows[-1] + "," + "w" * 200_000]) + "\n")
    assert cli("evaluate", layout_run, "-g", tiny_layout / "ground-truth.csv", "--tasks-csv", long_tasks).code == 0
