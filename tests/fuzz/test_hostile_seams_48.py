"""Issue #48's hostile-input seams, through the CLI: a 300,001-digit integer in a ground-truth or qrels field (a
one-line error, no traceback, in ``evaluate`` and ``structure``), a JSON submission with a UTF-8 byte-order mark
(``duel validate``), and a symlink judged by its target's suffix, not its own name's (``rank``, ``profiles
--pool``, ``align --cka-matrix``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from modelseek.testing import make_ground_truth
from modelseek.testing.cli import assert_one_error_line

BIG = "9" * 300_001
TASKS = [str(1001 + i) for i in range(6)]
DOCS = [str(i) for i in range(1, 7)]


@pytest.fixture
def truth_csv(tmp_path) -> Path:
    p = tmp_path / "gt.csv"
    make_ground_truth(TASKS, DOCS, seed=1).to_frame().drop(columns=["criticality"]).to_csv(p, index=False)
    return p


@pytest.fixture
def run_file(tmp_path) -> Path:
    p = tmp_path / "run.txt"
    p.write_text("".join(f"{t} Q0 {d} {r} {10 - r} r\n" for t in TASKS for r, d in enumerate(DOCS, 1)))
    return p


def _with_big(src: Path, dst: Path, column: str) -> Path:
    lines = src.read_text().splitlines()
    header = lines[0].split(",")
    row = lines[1].split(",")
    row[header.index(column)] = BIG
    dst.write_text("\n".join([lines[0], ",".join(row), *lines[2:]]) + "\n")
    return dst


@pytest.mark.parametrize("column", ["task_id", "model_id", "f1", "model_rank"])
def test_a_300001_digit_integer_in_a_ground_truth_is_one_line(cli, tmp_path, truth_csv, run_file, column):
    bad = _with_big(truth_csv, tmp_path / f"big-{column}.csv", column)
    for args in (("evaluate", run_file, "-g", bad), ("structure", bad)):
        r = cli(*args)
        # an id is any text (the run is scored, or the structure test says what it lacks); a value is refused
        assert r.code in (0, 1) and "Traceback" not in r.err and "Exceeds the limit" not in r.err, r.err[-500:]
        if r.code or column == "f1":
            assert r.code == 1 and len(r.err.strip().splitlines()) == 1 and len(r.err) < 1000, r.err[:300]


@pytest.mark.parametrize("where", ["grade", "topic", "docno"])
def test_a_300001_digit_integer_in_qrels_is_one_line(cli, tmp_path, run_file, where):
    lines = [f"{t} 0 {d} {(int(d) + int(t)) % 4}" for t in TASKS for d in DOCS]
    t, it, d, g = lines[0].split()
    lines[0] = " ".join({"grade": (t, it, d, BIG), "topic": (BIG, it, d, g), "docno": (t, it, BIG, g)}[where])
    q = tmp_path / "qrels.txt"
    q.write_text("\n".join(lines) + "\n")
    for args in (("evaluate", run_file, "-g", q, "--truth-format", "qrels"), ("structure", q)):
        r = cli(*args)
        assert r.code in (0, 1) and "Traceback" not in r.err and "Exceeds the limit" not in r.err, r.err[-500:]
        if r.code != 0:
            assert len(r.err.strip().splitlines()) == 1 and len(r.err) < 1000, r.err[:300]
    if where == "grade":
        assert_one_error_line(cli("evaluate", run_file, "-g", q, "--truth-format", "qrels"),
                              "qrels.txt:1", "grade", "beyond 2^31", "300,001 characters")


def test_huge_digit_ids_sort_in_numeric_order():
    from modelseek.retrieval.data.run import natural_key, natural_order

    ids = ["10", BIG, "2", "9" * 5000, "x" + BIG, "x3"]
    assert [ids[i] for i in natural_order(ids)] == ["2", "10", "9" * 5000, BIG, "x3", "x" + BIG]
    assert natural_key("0" * 5000 + "7") == natural_key("7")


def test_duel_validate_accepts_a_json_submission_with_a_byte_order_mark(cli, tmp_path):
    from modelseek.duel.examples import write_examples

    paths, meta = write_examples(tmp_path / "subs", n_models=1, n_samples=(10, 12))
    first = paths[0]
    plain = cli("duel", "validate", first, "--metadata", meta)
    assert plain.code == 0, plain.err
    bom = tmp_path / "bom.json"
    bom.write_bytes(b"\xef\xbb\xbf" + first.read_bytes())
    r = cli("duel", "validate", bom, "--metadata", meta)
    assert r.code == 0 and r.out.replace(str(bom), "X") == plain.out.replace(str(first), "X"), r.err


# ------------------------------------------------------------------------------------------------ symlinks
def _link(tmp_path: Path, name: str, target: Path) -> Path:
    link = tmp_path / name
    try:
        os.symlink(target, link)
    except OSError as exc:  # pragma: no cover - a file system without symlinks
        pytest.skip(f"no symlinks here: {exc}")
    return link


def test_suffix_of_reads_the_target(tmp_path):
    from modelseek.core.io import suffix_of

    real = tmp_path / "models.csv"
    real.write_text("x")
    assert suffix_of(_link(tmp_path, "pool.yaml", real)) == ".csv"
    assert suffix_of(_link(tmp_path, "pool", real)) == ".csv"
    blob = tmp_path / "blob-3f2a"  # the Hugging Face cache: suffix-less blobs behind named links
    blob.write_text("x")
    assert suffix_of(_link(tmp_path, "config.json", blob)) == ".json"
    assert suffix_of(_link(tmp_path, "dangling.csv", tmp_path / "gone.yaml")) == ".csv"


def test_profiles_pool_through_a_symlink_is_read_by_its_targets_suffix(cli, tmp_path):
    real = tmp_path / "models.csv"
    real.write_text("model_id,model_name\n1,bert-base-uncased\n2,roberta-base\n", encoding="utf-8")
    for name in ("pool.yaml", "pool"):
        link = _link(tmp_path, name, real)
        r = cli("profiles", "show", "--pool", link)
        assert r.code == 0 and "bert-base-uncased" in r.out and "roberta-base" in r.out, r.err


def test_rank_a_table_through_a_symlink_is_read_by_its_targets_suffix(cli, tmp_path):
    rows = ["text,label"] + [f"{w} {w} item {i},{'pos' if w == 'good' else 'neg'}"
                             for i in range(20) for w in ("good", "bad")]
    real = tmp_path / "data.csv"
    real.write_text("\n".join(rows) + "\n")
    link = _link(tmp_path, "latest.jsonl", real)
    r = cli("rank", link, "-m", "avgrank-ntcir19", "--show", "1")
    assert r.code == 0 and "task latest" in r.out, r.err


def test_align_cka_matrix_through_a_symlink_is_read_by_its_targets_suffix(cli, tmp_path):
    from modelseek.align.testing import planted_cka

    C, best = planted_cka()
    names = [f"net{i}" for i in range(len(C))]
    real = tmp_path / "M.npz"
    np.savez(real, names=np.array(names), matrix=C)
    link = _link(tmp_path, "latest.csv", real)
    r = cli("align", "optimize", "--team", "blue", "--size", "8", "--cka-matrix", link, "--json")
    assert r.code == 0, r.err
    assert sorted(names.index(n) for n in json.loads(r.out)["selection"]) == best
