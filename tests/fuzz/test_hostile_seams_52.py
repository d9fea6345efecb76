"""Issue #52's families, fuzzed through the CLI: an output named, by any chain of symlinks, ``..`` and ``.``, as one
of the command's inputs (refused before any work, the input's bytes unchanged); a run id holding a control or format
character (refused up front by the rule ``validate`` applies); ``duel example`` into a path that cannot be a folder;
``rank --json --run-id explanations`` (#56); a FIFO or a device given as a database."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from modelseek.retrieval.data.run import Run, bad_identifier_char, check_run_id, validate_run
from modelseek.core.errors import InputError
from modelseek.testing import make_ntcir_layout
from modelseek.testing.cli import assert_one_error_line, run_cli
from modelseek.testing.fuzz import fuzz_settings

FUZZ = fuzz_settings(25)
RUN_A = "1 Q0 1 1 0.9 a\n1 Q0 2 2 0.5 a\n"
RUN_B = "1 Q0 2 1 0.9 b\n1 Q0 1 2 0.5 b\n"
TRUTH = "task_id,model_id,f1\n1,1,0.5\n1,2,0.7\n"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Two runs, a ground truth, a facts table, and folders to name them through: a symlinked folder, a subfolder."""
    root = tmp_path_factory.mktemp("seams52")
    (root / "a.run").write_text(RUN_A)
    (root / "b.run").write_text(RUN_B)
    (root / "truth.csv").write_text(TRUTH)
    (root / "facts.csv").write_text("model_id,hf_id\n1,org/a\n")
    (root / "sub" / "deeper").mkdir(parents=True)
    (root / "via").symlink_to(root / "sub")
    (root / "a-link.run").symlink_to(root / "a.run")
    return root


#: a hop of a path naming the same place: through a subfolder and back, through a symlinked folder and back, ``.``
HOPS = st.lists(st.sampled_from(["sub/..", "via/..", ".", "sub/deeper/../..", "via/deeper/../.."]), max_size=4)

#: (the command, the input it reads, the option written onto it)
WRITERS = [
    (("fuse", "{a}", "{b}", "-o", "{out}"), "a.run", "-o"),
    (("fuse", "{a}", "{b}", "-o", "{root}/fused.run", "-g", "{truth}", "--save", "{out}"), "truth.csv", "--save"),
    (("structure", "{truth}", "--plot", "{out}"), "truth.csv", "--plot"),
    (("profiles", "from-facts", "{facts}", "-o", "{out}"), "facts.csv", "--output"),
    (("train-ranker", "{truth}", "-m", "avgrank", "-o", "{out}"), "truth.csv", "--output"),
    (("rank", "{facts}", "-o", "{out}"), "facts.csv", "--output"),
]


@FUZZ
@given(hops=HOPS, which=st.integers(0, len(WRITERS) - 1), through_link=st.booleans())
def test_an_output_named_as_an_input_any_way_is_refused(files, hops, which, through_link):
    template, victim, flag = WRITERS[which]
    name = "a-link.run" if through_link and victim == "a.run" else victim
    out = "/".join([str(files), *hops, name])
    before = {p.name: p.read_bytes() for p in files.iterdir() if p.is_file() and not p.is_symlink()}
    argv = [w.format(a=files / "a.run", b=files / "b.run", truth=files / "truth.csv", facts=files / "facts.csv",
                     root=files, out=out) for w in template]
    r = run_cli(*argv)
    assert_one_error_line(r, flag, "name the same file")
    assert {p.name: p.read_bytes() for p in files.iterdir() if p.is_file() and not p.is_symlink()} == before


#: characters validate refuses in a run id: controls, format characters (bidi overrides, zero-width), separators
HOSTILE = st.sampled_from(["\u202e", "\u200b", "\u2066", "\ufeff", "\x00", "\x1b", "\x7f", "\u00ad"])


@FUZZ
@given(prefix=st.text(st.characters(categories=["L", "N"]), min_size=1, max_size=6), bad=HOSTILE,
       suffix=st.text(st.characters(categories=["L", "N"]), max_size=6))
def test_a_run_id_validate_refuses_is_refused_before_writing(files, tmp_path_factory, prefix, bad, suffix):
    run_id = prefix + bad + suffix
    out = tmp_path_factory.mktemp("rid") / "fused.run"
    r = run_cli("fuse", files / "a.run", files / "b.run", "-o", out, "--run-id", run_id)
    assert_one_error_line(r, "--run-id", "control or format character")
    assert not out.exists()
    with pytest.raises(InputError, match="control or format character"):
        Run.from_scores({"1": {"1": 0.5}}, run_id=run_id)


@FUZZ
@given(run_id=st.text(st.characters(exclude_categories=["Zs"]), min_size=1, max_size=8))
def test_a_run_id_writes_exactly_when_validate_would_accept_it(tmp_path_factory, run_id):
    """The write-time rule and validate's rule agree: every id written can be validated, every other is refused."""
    if any(c.isspace() for c in run_id):
        with pytest.raises(InputError):
            check_run_id(run_id)
        return
    path = tmp_path_factory.mktemp("agree") / "run.txt"
    bad = bad_identifier_char(run_id)
    if bad is not None:
        with pytest.raises(InputError, match=f"U\\+{ord(bad):04X}"):
            check_run_id(run_id)
        return
    Run.from_scores({"1": {"1": 0.5, "2": 0.3}}, run_id=run_id).write(path)
    assert list(validate_run(path)) == [run_id]  # raises ValidationError (every problem) where validate refuses


@pytest.mark.parametrize("kind", ["file", "dangling symlink", "symlink loop", "below a file"])
def test_duel_example_into_what_cannot_be_a_folder_is_one_line(tmp_path, kind):
    (tmp_path / "afile").write_text("keep\n")
    target = {"file": tmp_path / "afile", "dangling symlink": tmp_path / "dangling",
              "symlink loop": tmp_path / "loop", "below a file": tmp_path / "afile" / "below"}[kind]
    if kind == "dangling symlink":
        target.symlink_to(tmp_path / "nowhere")
    if kind == "symlink loop":
        target.symlink_to(target)
    r = run_cli("duel", "example", target)
    assert_one_error_line(r, "FOLDER")
    assert (tmp_path / "afile").read_text() == "keep\n"
    assert not (tmp_path / "nowhere").exists()


def test_rank_json_keeps_every_run_beside_the_explanations(tmp_path):
    """#56: ``--run-id explanations`` would be overwritten by ``--json``'s explanations key: refused, nothing run."""
    lay = make_ntcir_layout(tmp_path / "layout", n_tasks=4, n_models=3, seed=0)
    out = tmp_path / "run.txt"
    r = run_cli("rank", lay, "--split", "test", "--json", "--run-id", "explanations", "-o", out)
    assert_one_error_line(r, "--run-id", "explanations")
    assert not out.exists()


@pytest.mark.parametrize("command", [("duel", "leaderboard"), ("duel", "db", "upgrade"), ("duel", "db", "verify"),
                                     ("duel", "review", "list"), ("duel", "example", "{tmp}/ex")])
def test_a_fifo_given_as_a_database_is_named(tmp_path, command):
    fifo = tmp_path / "board.db"
    os.mkfifo(fifo)
    r = run_cli(*[w.format(tmp=tmp_path) for w in command], "--db", fifo)
    assert_one_error_line(r, "--db", "is a FIFO (named pipe), not a database file")
    assert Path(fifo).is_fifo()
