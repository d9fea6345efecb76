"""Library errors name the library's parameters, the CLI its flags (#45 item 5, last sentence).

A library caller who passes ``methods=["nope"]`` reads ``field 'methods'`` (their own parameter), never
``field '--methods'``; the same bad value through ``modelseek`` reads the command's flag, in one line, exit 1 (or
argparse's usage error, exit 2, where the option's type refuses it before the library runs). The last test keeps
flag names out of library errors for good."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import modelseek as ms
from modelseek.core.config import parse_overrides
from modelseek.retrieval.data.loaders import load_table_task
from modelseek.retrieval.data.truth import GroundTruth
from modelseek.core.errors import InputError
from modelseek.retrieval.finetune.recipe import Recipe
from modelseek.retrieval.funnel import parse_budget
from modelseek.retrieval.funnel.replay import replay
from modelseek.retrieval.submission import make_submission
from modelseek.testing import make_text_task, write_task_table
from modelseek.testing.cli import assert_one_error_line
from modelseek.testing.organisers import make_organisers_layout

SRC = Path(ms.__file__).resolve().parent
SIX = ["default", "avgrank", "logme", "knn", "rrf", "funnel"]


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    """An organisers' layout with test and training tasks (no model snapshots: nothing here loads a model)."""
    return make_organisers_layout(tmp_path_factory.mktemp("names") / "repo", n_test=3, n_train_tasks=2, n_models=3,
                                  snapshots=(), wide_task=None, rating_task=None)


def _raised(fn, *args, **kw) -> InputError:
    with pytest.raises(InputError) as exc:
        fn(*args, **kw)
    assert "--" not in (exc.value.field or ""), exc.value
    return exc.value


def _no_flag(exc: InputError) -> None:
    assert not re.search(r"(?<![\w-])--[a-z]", exc.message), exc.message


@pytest.mark.parametrize("kw, param, flag, value, words", [
    ({"methods": ["nope"]}, "methods", "--methods", ["nope"], "unknown submission method 'nope'"),
    ({"methods": SIX}, "methods", "--methods", SIX, "at most 5 runs"),
    ({"methods": ["funnel"]}, "methods", "--methods", ["funnel"], "fine-tunes candidates"),
    ({"team": "a b"}, "team", "--team", ["a b"], "must be 1-40 printable characters"),
    ({"budget": "4"}, "budget", "--budget", ["4"], "add a unit"),
])
def test_submission_names_its_parameters(repo, tmp_path, cli, kw, param, flag, value, words):
    exc = _raised(make_submission, repo, tmp_path / "api", **kw)
    assert exc.field == param and words in exc.message
    _no_flag(exc)
    r = cli("submission", repo, "--out", tmp_path / "cli", flag, *value)
    assert_one_error_line(r, f"field '{flag}': ", words)
    assert not (tmp_path / "cli").exists() and not (tmp_path / "api").exists()


def test_submission_refuses_to_write_into_its_own_input_through_api_and_cli(repo, cli):
    """The rule of every writing call (#52) holds for the library's make_submission as for the command."""
    exc = _raised(make_submission, repo, repo)
    assert exc.field == "out" and "root" in exc.message
    r = cli("submission", repo, "--out", repo)
    assert_one_error_line(r, "field '--out': ", "ROOT")


def test_submission_advice_names_the_parameter_then_the_flag(repo, tmp_path, cli):
    exc = _raised(make_submission, repo, tmp_path / "o", methods=["funnel"])
    assert "give `budget`" in exc.message
    assert "give --budget" in cli("submission", repo, "--out", tmp_path / "o", "--methods", "funnel").err


@pytest.mark.parametrize("kw, param, option", [
    ({"finetunes": [-1]}, "finetunes", "--finetunes=-1"),
    ({"noise": -0.5}, "noise", "--noise=-0.5"),
    ({"noise": float("nan")}, "noise", "--noise=nan"),
    ({"repeats": 0}, "repeats", "--repeats=0"),
    ({"trust": -1.0}, "trust", "--trust=-1"),
    ({"scheme": "nope"}, "scheme", "--scheme=nope"),
    ({"acquisition": "nope"}, "acquisition", "--acquisition=nope"),
    ({"prior_form": "nope"}, "prior_form", "--prior-form=nope"),
])
def test_replay_names_its_parameters(repo, cli, kw, param, option):
    truth = repo / "data" / "ground-truth.csv"
    exc = _raised(replay, GroundTruth.from_csv(truth), **kw)
    assert exc.field == param
    _no_flag(exc)
    r = cli("replay", truth, option)  # the option's type refuses it first: argparse's usage error names the flag
    assert r.code == 2 and f"argument {option.split('=')[0]}" in r.err and "Traceback" not in r.err, r.err


def test_split_is_named_as_the_parameter_and_the_flag(repo, cli):
    exc = _raised(ms.rank, repo, method="random")  # both splits present, none chosen
    assert exc.field == "split" and "choose one with `split` (test or train)" in exc.message
    _no_flag(exc)
    assert_one_error_line(cli("rank", repo, "-m", "random"), "choose one with --split (test or train)")
    exc = _raised(ms.rank, repo, method="random", split="nope")
    assert exc.field == "split" and "unknown split 'nope'" in exc.message


def test_table_columns_and_label_kind_are_named_as_parameters(tmp_path, cli):
    table = write_task_table(make_text_task("t", n_train=20, n_val=6, n_test=6), tmp_path / "t.csv")
    exc = _raised(load_table_task, table, text_col="sentence")
    assert exc.field == "sentence" and "name the text column with `text_col`" in exc.message
    _no_flag(exc)
    exc = _raised(load_table_task, table, label_col="y")
    assert "name the label column with `label_col`" in exc.message
    assert_one_error_line(cli("rank", table, "-m", "random", "--text-col", "sentence"),
                          f"{table}:1: field 'sentence'", "name the text column with --text-col")
    exc = _raised(load_table_task, table, label_kind="ordinal")
    assert exc.field == "label_kind"
    _no_flag(exc)
    r = cli("rank", table, "-m", "random", "--label-kind", "ordinal")
    assert r.code == 2 and "argument --label-kind" in r.err


def test_budget_and_overrides_are_named_as_parameters(tmp_path, cli):
    exc = _raised(parse_budget, "4")
    assert exc.field == "budget" and "add a unit" in exc.message
    table = write_task_table(make_text_task("t", n_train=20, n_val=6, n_test=6), tmp_path / "t.csv")
    pool = tmp_path / "pool.txt"
    pool.write_text("a/b\n", encoding="utf-8")
    assert_one_error_line(cli("select", table, "--pool", pool, "--budget", "4", "--out", tmp_path / "o"),
                          "field '--budget': ", "add a unit")
    assert _raised(parse_overrides, ["novalue"]).field == "pairs"
    assert _raised(Recipe().with_overrides, ["novalue"]).field == "overrides"
    assert_one_error_line(cli("finetune", "--pool", pool, "--tasks", table, "--out", tmp_path / "gt.csv", "--set",
                              "novalue"), "field '--set': expected KEY=VALUE, got 'novalue'")
    assert not (tmp_path / "o").exists() and not (tmp_path / "gt.csv").exists()


def test_a_nested_command_maps_its_own_options(tmp_path, cli):
    """``duel db recover``: the parameter ``after_head`` is the nested command's ``--after-head``."""
    pytest.importorskip("sqlalchemy")
    from modelseek.duel.recovery import recover
    from modelseek.duel.storage import Store

    db = tmp_path / "board.db"
    store = Store(f"sqlite:///{db}")
    try:
        exc = _raised(recover, store, after_head="0" * 64)
    finally:
        store.close()
    assert exc.field == "after_head" and "is not in the chain" in exc.message
    assert_one_error_line(cli("duel", "db", "recover", "--db", db, "--after-head", "0" * 64),
                          "field '--after-head': ", "is not in the chain")
    store = Store(f"sqlite:///{db}")
    try:
        exc = _raised(store.reject, "model-01", "carol", "  ")
    finally:
        store.close()
    assert exc.field == "why" and exc.message == "say why: the uploader is told"
    assert_one_error_line(cli("duel", "review", "reject", "model-01", "--db", db, "--by", "carol", "--why", " "),
                          "field '--why': say why: the uploader is told")


def test_eevee_honest_names_split_by_and_outer_splits():
    """An evaluator made on the whole table (the ordering column still in it) and ``split_by`` that column: the
    error names the parameter; ``outer_splits=0``: the note names it too (the CLI prints the library's note)."""
    import numpy as np
    import pandas as pd

    from modelseek.eevee.config import MetaConfig
    from modelseek.eevee.evaluators import BatchedEvaluator
    from modelseek.eevee.honest import NestedConfig
    from modelseek.eevee.search import SearchConfig, search
    from modelseek.eevee.table import Table

    rng = np.random.default_rng(0)
    cols = {**{f"b{i}.acc": rng.normal(size=12) for i in range(4)}, "year.value": np.arange(2000.0, 2012.0)}
    table = Table.from_frame(pd.DataFrame(cols, index=[f"m{i}" for i in range(12)]))
    quick = SearchConfig(generations=0, population=4, keep=2, children=1)
    exc = _raised(search, BatchedEvaluator(table, MetaConfig()), 1, quick, nested=NestedConfig(split_by="year"))
    assert exc.field == "split_by" and exc.message.startswith("`split_by` 'year': take the column out")
    _no_flag(exc)
    res = search(table.without_column("year")[0], 1, quick, nested=NestedConfig(outer_splits=0))
    assert res.honest is None and res.honest_note == "no nested estimate: outer_splits is 0"


def _library_files() -> list[Path]:
    return [p for p in sorted(SRC.rglob("*.py")) if p.relative_to(SRC).parts[0] not in ("cli", "testing")]


def test_no_library_error_names_a_flag_as_its_field():
    """``field="--..."`` (or a ``field``/``option`` parameter defaulting to a flag) anywhere in the library outside
    ``cli/``: the CLI maps parameters to flags, the library never names a flag as the caller's field."""
    found = []
    for path in _library_files():
        text = path.read_text(encoding="utf-8")
        found += [f"{path}:{text.count(chr(10), 0, m.start()) + 1}" for m in re.finditer(r"field=f?[\"']--", text)]
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Call):
                found += [f"{path}:{node.lineno}" for k in node.keywords
                          if k.arg in ("field", "option") and isinstance(k.value, ast.Constant)
                          and str(k.value.value).startswith("--")]
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = node.args
                named = list(zip([*a.posonlyargs, *a.args][::-1], a.defaults[::-1]))
                named += [(x, d) for x, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None]
                found += [f"{path}:{node.lineno} ({x.arg})" for x, d in named
                          if x.arg in ("field", "option") and isinstance(d, ast.Constant)
                          and str(d.value).startswith("--")]
    assert not found, found
    assert len(_library_files()) > 100  # the scan saw the library


def test_style_test_folder_names_pool_as_the_parameter_and_the_flag(tmp_path, cli):
    from modelseek.style.evaluation import test_folder_topics

    folder = tmp_path / "somewhere" / "test"
    folder.mkdir(parents=True)
    (folder / "a.png").write_bytes(b"")
    exc = _raised(test_folder_topics, folder)
    assert "give `pool` (the candidates' models.csv)" in exc.message
    _no_flag(exc)
    run = tmp_path / "run.txt"
    run.write_text("a Q0 1 1 1.0 r\n", encoding="utf-8")
    assert_one_error_line(cli("validate", run, "--test-images", folder), "give --pool (the candidates' models.csv)")
