"""Issue #52's hostile inputs, through the CLI: each is refused in one ``error:`` line with exit 1 before the work
it would cause (or, for a 20 MB table cell, handled in bounded work), never a traceback, a hang or gigabytes.

Families: numbers that ask for unbounded work (``fuse --step``, ``eevee --k``, ``--meta-param epochs``, ``--param
max_examples``, ``--set max_epochs``, the pairs of ``compare``); integers of any length (a 300,001-digit Rank in every
run reader, a 100,000-digit value for ``--param``/``-p``/``--meta-param``/``--set``); nesting of any depth (a
ranker artifact, a YAML "billion laughs" mapping); fields of any size (a facts cell over 128 KiB, a 300,000-character
text cell); ground truths named by their columns (no ``.csv`` suffix, UTF-16); a one-row table; the Hub offline.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from modelseek.testing import make_ntcir_layout
from modelseek.testing.cli import assert_one_error_line

HUGE = "9" * 100_000  # over Python's 4,300-digit int() limit


@pytest.fixture(scope="module")
def layout(tmp_path_factory) -> Path:
    return make_ntcir_layout(tmp_path_factory.mktemp("h52") / "lay", n_tasks=6, n_models=5, seed=0)


def _run_lines(truth: Path, run_id: str, seed: int) -> list[str]:
    rows = [ln.split(",") for ln in truth.read_text().splitlines()[1:]]
    tasks = sorted({r[0] for r in rows})
    docs = sorted({r[1] for r in rows})
    rng = np.random.default_rng(seed)
    return [f"{t} Q0 {d} {r} {10 - r} {run_id}" for t in tasks for r, d in enumerate(rng.permutation(docs), 1)]


@pytest.fixture(scope="module")
def runs(layout, tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("h52runs")
    truth = layout / "ground-truth.csv"
    a, b = root / "a.txt", root / "b.txt"
    a.write_text("\n".join(_run_lines(truth, "a", 1)) + "\n")
    b.write_text("\n".join(_run_lines(truth, "b", 2)) + "\n")
    big = _run_lines(truth, "a", 1)
    t, q, d, _, s, r = big[0].split()
    big[0] = " ".join((t, q, d, "9" * 300_001, s, r))
    bigrank = root / "bigrank.txt"
    bigrank.write_text("\n".join(big) + "\n")
    many = root / "many.txt"
    many.write_text("\n".join(ln for k in range(40) for ln in _run_lines(truth, f"r{k}", k)) + "\n")
    return {"a": a, "b": b, "bigrank": bigrank, "many": many, "truth": truth}


@pytest.fixture(scope="module")
def gate(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("h52gate")
    rng = np.random.default_rng(1)
    q = rng.normal(size=10)
    vals = np.stack([q + 0.1 * rng.normal(size=10), -q, q ** 2, -0.5 * q, rng.normal(size=10)], axis=1)
    table = root / "gate.csv"
    table.write_text("Model,b1,b2,b3,b4,b5\nMetric,acc,acc,acc,auc,acc\n" + "".join(
        f"model{i}," + ",".join(repr(float(v)) for v in row) + "\n" for i, row in enumerate(vals)))
    return table


EEVEE_TINY = ("--meta-model", "ridge", "--population", "6", "--keep", "3", "--children", "2", "--generations", "1",
              "--workers", "1")


# ------------------------------------------------------------------------------------------- bounded work
def test_a_fusion_grid_finer_than_the_search_affords_is_refused_naming_the_step(cli, runs, tmp_path):
    r = cli("fuse", runs["a"], runs["b"], "--optimize", "-g", runs["truth"], "--step", "1e-9", "-o", tmp_path / "f")
    assert_one_error_line(r, "1,000,000,001 weight vectors", "200,000", "at least 1e-05")
    assert not (tmp_path / "f").exists()


@pytest.mark.parametrize("ks", ["1-" + "9" * 30, "9" * 5000, "1,2," + "9" * 30])
def test_eevee_k_values_are_bounded_before_a_range_is_made(cli, gate, tmp_path, ks):
    r = cli("eevee", "sweep", "--table", gate, "--k", ks, *EEVEE_TINY, "--out", tmp_path / "sw")
    assert_one_error_line(r, "larger than the number of benchmarks (5)")


def test_meta_model_epochs_are_bounded(cli, gate):
    r = cli("eevee", "search", "--table", gate, "-k", "2", "--meta-param", "epochs=99999999999999999999")
    assert_one_error_line(r, "--meta-param epochs", "[0, 10000]")


def test_a_negative_max_examples_is_refused_before_any_model_is_read(cli, layout, tmp_path):
    r = cli("rank", layout, "-m", "knn", "--param", "max_examples=-1", "-o", tmp_path / "r.txt")
    assert_one_error_line(r, "max_examples", "[1, 10000000]", "-1")


def test_recipe_counts_are_bounded(cli, layout, tmp_path):
    pool = tmp_path / "pool.csv"
    pool.write_text("model_id,hf_id\n1,org/m\n")
    r = cli("finetune", "--pool", pool, "--tasks", layout, "--out", tmp_path / "gt.csv",
            "--set", "max_epochs=99999999999999999999")
    assert_one_error_line(r, "max_epochs", "[1, 100000]")


@pytest.mark.parametrize("args", [
    ("rank", "{lay}", "-m", "knn", "--param", f"max_examples={HUGE}"),
    ("train-ranker", "{lay}", "-m", "task_knn", "-p", f"k={HUGE}", "-o", "{out}"),
    ("eevee", "search", "--table", "{gate}", "-k", "2", "--meta-param", f"epochs={HUGE}"),
    ("finetune", "--pool", "{pool}", "--tasks", "{lay}", "--out", "{out}", "--set", f"max_epochs={HUGE}"),
], ids=["--param", "-p", "--meta-param", "--set"])
def test_a_100000_digit_option_value_is_one_line_naming_the_option(cli, layout, gate, tmp_path, args):
    pool = tmp_path / "pool.csv"
    pool.write_text("model_id,hf_id\n1,org/m\n")
    fill = {"{lay}": layout, "{gate}": gate, "{pool}": pool, "{out}": tmp_path / "out"}
    r = cli(*(fill.get(a, a) for a in args))
    option = next(a for a in args if a.startswith("-") and a not in ("-m", "-k", "-o", "--table", "--pool",
                                                                     "--tasks", "--out"))
    assert_one_error_line(r, option, "100,000 characters is too long", "4,300 digits")
    assert "Exceeds the limit" not in r.err


def test_compare_bounds_its_pairs_and_names_the_way_out(cli, runs):
    r = cli("compare", runs["many"], "-g", runs["truth"])
    assert_one_error_line(r, "40 runs make 780 pairs", "500", "--baseline")


def test_a_billion_laughs_mapping_is_refused_on_its_line(cli, gate, tmp_path):
    lol = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    prev = "a"
    for c in "bcdefghi":
        lol += f"{c}: &{c} [" + ",".join([f"*{prev}"] * 9) + "]\n"
        prev = c
    mapping = tmp_path / "task_mapping.yaml"
    mapping.write_text(lol)
    r = cli("eevee", "search", "--table", gate, "-k", "2", "--mapping", mapping, *EEVEE_TINY)
    assert_one_error_line(r, "task_mapping.yaml:", "aliases expand to over 1,000,000 values")


def test_a_text_cell_past_the_cap_is_cut_with_a_warning(tmp_path, caplog):
    from modelseek.retrieval.data.loaders import load_table_task
    from modelseek.retrieval.data.task import MAX_TEXT_CHARS

    table = tmp_path / "t.csv"
    table.write_text("text,label\n" + "x " * 150_000 + ",a\n" + "".join(f"w{i},{'ab'[i % 2]}\n" for i in range(20)))
    with caplog.at_level(logging.WARNING):
        task = load_table_task(table)
    texts = [*task.train.texts, *task.val.texts, *(task.test.texts if task.test else ())]
    assert max(map(len, texts)) == MAX_TEXT_CHARS and len(texts) == 21
    assert "1 text(s) longer than 100,000 characters (the longest 299,999) cut" in caplog.text


# ------------------------------------------------------------------------------------------- readers
@pytest.mark.parametrize("command", ["evaluate", "compare", "fuse"])
def test_a_300001_digit_rank_is_one_line_in_every_run_reader(cli, runs, tmp_path, command):
    args = {"evaluate": (runs["bigrank"], "-g", runs["truth"]),
            "compare": (runs["bigrank"], runs["b"], "-g", runs["truth"]),
            "fuse": (runs["bigrank"], runs["b"], "-o", tmp_path / "f.txt")}[command]
    r = cli(command, *args)
    assert_one_error_line(r, "bigrank.txt:1: field 'Rank'", "must be <= 2147483647", "(300,001 characters)")


def test_validate_names_the_300001_digit_rank_among_its_problems(cli, runs):
    r = cli("validate", runs["bigrank"])
    assert r.code == 1 and "Traceback" not in r.err and "Exceeds the limit" not in r.err
    assert "bigrank.txt:1: field 'Rank': must be <= 2147483647" in r.err


def test_a_ranker_artifact_nested_100000_deep_is_one_line(cli, layout, tmp_path):
    art = tmp_path / "deep.json"
    art.write_text("[" * 100_000 + "]" * 100_000)
    for args in (("rank", layout, "-m", art, "-o", tmp_path / "r.txt"),
                 ("train-ranker", layout, "-m", art, "-o", tmp_path / "a.json")):
        assert_one_error_line(cli(*args), "deep.json", "nested too deeply")


def test_a_facts_cell_over_128_kib_is_read(cli, tmp_path):
    facts = tmp_path / "facts.csv"
    facts.write_text("model_id,hf_id,domain\nm1,org/m," + "y" * 200_000 + "\n")
    r = cli("profiles", "from-facts", facts, "-o", tmp_path / "p.json")
    assert r.code == 0 and "Traceback" not in r.err, r.err
    assert "y" * 200_000 in (tmp_path / "p.json").read_text()


def test_a_yaml_integer_of_any_length_is_one_located_line(tmp_path):
    from modelseek.core.errors import InputError
    from modelseek.core.io import read_yaml

    p = tmp_path / "c.yaml"
    p.write_text(f"a: 1\nb: {HUGE}\n")
    with pytest.raises(InputError) as ei:
        read_yaml(p)
    assert str(ei.value).startswith(f"{p}:2: field 'b': invalid YAML: an integer of 100,000 characters")


# ------------------------------------------------------------------------------------------- the real problem
@pytest.mark.parametrize("name", ["truth", "truth.txt"])
def test_a_ground_truth_is_known_by_its_columns_whatever_its_suffix(cli, layout, tmp_path, name):
    gt = layout / name
    gt.write_bytes((layout / "ground-truth.csv").read_bytes())
    out = tmp_path / "a.json"
    r = cli("train-ranker", gt, "-m", "avgrank", "-o", out)
    assert r.code == 0 and "not a ground truth" not in r.err, r.err
    assert json.loads(out.read_text())["method"] == "avgrank"


def test_a_utf16_ground_truth_is_named_as_such(cli, layout, tmp_path):
    gt = tmp_path / "gt16.csv"
    gt.write_bytes((layout / "ground-truth.csv").read_text().encode("utf-16"))
    for args in (("bench", gt), ("train-ranker", gt, "-m", "avgrank", "-o", tmp_path / "a.json")):
        assert_one_error_line(cli(*args), "gt16.csv:1", "UTF-16LE text", "save it as UTF-8")


def test_a_one_row_table_names_its_rows_not_the_split_option(cli, tmp_path):
    table = tmp_path / "one.csv"
    table.write_text("text,label\nhello world,a\n")
    r = cli("rank", table, "-o", tmp_path / "r.txt")
    assert_one_error_line(r, "one.csv", "only 1 example(s) to train on", "at least 11", "'split' column")
    assert "--split" not in r.err and "field 'split'" not in r.err


def test_finetune_with_the_hub_offline_names_the_model_and_what_to_do(cli, layout, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    pool = tmp_path / "pool.csv"
    pool.write_text("model_id,hf_id\n1,org/never-downloaded-h52\n")
    r = cli("finetune", "--pool", pool, "--tasks", layout, "--out", tmp_path / "gt.csv")
    assert_one_error_line(r, "'1' (org/never-downloaded-h52)", "Hub is offline (HF_HUB_OFFLINE=1)",
                          "huggingface-cli download org/never-downloaded-h52")
    assert "OSError" not in r.err


def test_one_job_of_an_uncached_hub_model_offline_names_the_model_and_what_to_do(monkeypatch):
    """The per-job form (a ranking's verification lets each job fail on its own): no transformers OSError."""
    from modelseek.retrieval.finetune.protocol import CandidateLoadError, ModelSpec, load_model

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(CandidateLoadError) as ei:
        load_model(ModelSpec("1", "org/never-downloaded-h52"), ["a", "b"])
    text = str(ei.value)
    assert "'1' (org/never-downloaded-h52)" in text and "Hub is offline (HF_HUB_OFFLINE=1)" in text
    assert "huggingface-cli download org/never-downloaded-h52" in text and "\n" not in text
