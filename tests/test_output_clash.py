"""No command writes over its own input (issue #52): a test generated from the CLI's own parser.

Every command of ``modelseek`` is walked (nested ones too); every option that its declaration
(:func:`modelseek.cli._common.declare_paths`, or a path ``type=``) marks as written — a file, a folder written into,
a database — is given, in turn, the very path one of the command's inputs names (directly, through a symlink and
through ``sub/../``), and the path of another of its outputs. Each is refused before any work: exit 1, one line
naming both options, the input's bytes unchanged. A guard checks that every option that looks like an output is
declared, so a new command is covered by the same walk.
"""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

import pytest

from modelseek.core import clash
from modelseek.cli._common import existing_dir, existing_file, flag_of, path_role
from modelseek.cli.main import build_parser
from modelseek.core.errors import InputError
from modelseek.testing.cli import assert_one_error_line, run_cli

WRITTEN = (clash.OUTPUT, clash.OUTPUT_DIR, clash.DATABASE)
#: what an option that writes looks like (its longest option string)
LOOKS_WRITTEN = re.compile(r"^(-o|--out|--out-.*|--output.*|--save.*|--plot|--.*-out|--trajectory|--db|--.*store"
                           r"|--cache.*)$")


def _commands(parser: argparse.ArgumentParser | None = None, words: tuple[str, ...] = ()):
    """(the words of the command, its parser) for every command that runs (nested commands included)."""
    parser = parser or build_parser()
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield words, parser
        return
    for name, sub in subs[0].choices.items():
        yield from _commands(sub, (*words, name))


COMMANDS = list(_commands())
PARSERS = {" ".join(w): p for w, p in COMMANDS}


def _roles(parser) -> dict[str, argparse.Action]:
    return {a.dest: a for a in parser._actions if path_role(a) is not None}


def _cases():
    """(command, written option's dest, the other option's dest): every written option against every input and
    every other written file of the same command."""
    for words, parser in COMMANDS:
        actions = _roles(parser)
        for out, a in actions.items():
            if path_role(a) not in WRITTEN:
                continue
            for other, b in actions.items():
                if other == out:
                    continue
                if path_role(b) == clash.INPUT or (path_role(b) in (clash.OUTPUT, clash.DATABASE)
                                                   and path_role(a) != clash.OUTPUT_DIR and other < out):
                    yield pytest.param(" ".join(words), out, other, id=f"{' '.join(words)}:{out}={other}")


CASES = list(_cases())


def test_the_walk_finds_the_known_offenders():
    """The commands #52 found writing over their inputs are among the generated cases."""
    seen = {(c.values[0], c.values[1], c.values[2]) for c in CASES}
    for case in [("fuse", "output", "runs"), ("fuse", "save", "ground_truth"), ("rank", "output", "path"),
                 ("rank", "output", "train_truth"), ("bench", "run_out", "path"), ("bench", "plot", "ground_truth"),
                 ("structure", "plot", "truth"), ("replay", "plot", "truth"), ("train-ranker", "output", "pool"),
                 ("train-ranker", "output", "ground_truth"), ("profiles from-facts", "output", "facts"),
                 ("bench", "run_out", "plot"), ("duel presubmit", "db", "submission")]:
        assert case in seen, case
    assert len({c.values[0] for c in CASES}) >= 20


@pytest.mark.parametrize("words,parser", [pytest.param(w, p, id=" ".join(w)) for w, p in COMMANDS])
def test_every_option_that_looks_written_is_declared(words, parser):
    """A new ``--out``, ``--plot``, ``--save``, ``--db``, store or cache option is declared (or the walk misses it)."""
    for a in parser._actions:
        if a.option_strings and LOOKS_WRITTEN.match(flag_of(a)) and a.nargs != 0:
            assert path_role(a) in WRITTEN, f"modelseek {' '.join(words)} {flag_of(a)}: declare it (declare_paths)"


def _value(action: argparse.Action, tmp: Path) -> str:
    """A value that parses for a required option the case does not set."""
    role = path_role(action)
    if action.type is existing_dir:
        (tmp / f"other-{action.dest}").mkdir(exist_ok=True)
        return str(tmp / f"other-{action.dest}")
    if role == clash.INPUT:
        return str(_file(tmp / f"other-{action.dest}.txt"))
    if role in WRITTEN:
        return str(tmp / f"other-{action.dest}.out")
    if action.choices:
        return str(next(iter(action.choices)))
    candidates = ["2", *re.findall(r"[\w-]+", str(action.metavar or "")), "x"]
    for text in candidates:
        try:
            (action.type or str)(text)
            return text
        except (argparse.ArgumentTypeError, ValueError, TypeError):
            continue
    return "x"


def _file(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        path.write_bytes(b"task_id,model_id,f1\n1,1,0.5\n")
    return path


def _argv(parser, given: dict[str, str], tmp: Path) -> list[str]:
    argv: list[str] = []
    needed = {g._group_actions[0].dest for g in parser._mutually_exclusive_groups
              if g.required and not any(a.dest in given for a in g._group_actions)}
    for a in parser._actions:
        if a.dest in given:
            value = given[a.dest]
        elif a.required or a.dest in needed:
            value = _value(a, tmp)
        else:
            continue
        argv += [a.option_strings[0], value] if a.option_strings else [value]
    return argv


def _named(kind: str, target: Path, tmp: Path) -> str:
    """``target`` named directly, through a symlink, or through ``sub/../``."""
    if kind == "direct":
        return str(target)
    if kind == "symlink":
        link = tmp / f"link-to-{target.name}"
        link.symlink_to(target)
        return str(link)
    (tmp / "sub").mkdir(exist_ok=True)
    return str(tmp / "sub" / ".." / target.relative_to(tmp))


@pytest.mark.parametrize("kind", ["direct", *(pytest.param(k, marks=pytest.mark.slow(
    reason="every written option again, named another way: 10 s on 2 busy cores")) for k in ("symlink", "dotdot"))])
@pytest.mark.parametrize("command,out,other", CASES)
def test_no_output_names_an_input_or_another_output(command, out, other, kind, tmp_path):
    parser = PARSERS[command]
    actions = _roles(parser)
    out_action, other_action = actions[out], actions[other]
    given: dict[str, str] = {}
    if path_role(other_action) == clash.INPUT:
        if path_role(out_action) == clash.OUTPUT_DIR:
            folder = tmp_path / "out-folder"
            writes = getattr(out_action, "path_inside", ())
            # an input lying in the folder under a name the command writes there
            if writes and other_action.type is not existing_dir:
                target = _file(folder / writes[0].replace("*", "x"))
                given[other], given[out] = str(target), _named(kind, folder, tmp_path)
            else:  # the folder is the input itself (a folder given where a file or folder is read)
                folder.mkdir()
                if other_action.type is existing_file:
                    pytest.skip(f"{flag_of(other_action)} takes only a file; {flag_of(out_action)} is a folder")
                given[other], given[out] = str(folder), _named(kind, folder, tmp_path)
        else:
            target = _file(tmp_path / "input.csv")
            given[other], given[out] = str(target), _named(kind, target, tmp_path)
    else:  # two written files
        target = tmp_path / "output.out"
        given[other], given[out] = str(target), _named(kind, target, tmp_path)
    argv = [*command.split(), *_argv(parser, given, tmp_path)]
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and not p.is_symlink()}
    r = run_cli(*argv)
    assert_one_error_line(r, flag_of(out_action), flag_of(other_action))
    after = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and not p.is_symlink()}
    assert after == before, argv


def _inside_cases():
    """(command, written file option, input folder option): every input declared with the names it reads inside."""
    for words, parser in COMMANDS:
        actions = _roles(parser)
        for out, a in actions.items():
            for other, b in actions.items():
                if path_role(a) in (clash.OUTPUT, clash.DATABASE) and path_role(b) == clash.INPUT and \
                        getattr(b, "path_inside", ()):
                    yield pytest.param(" ".join(words), out, other, id=f"{' '.join(words)}:{out}<{other}")


@pytest.mark.parametrize("command,out,other", list(_inside_cases()))
def test_no_output_names_a_file_an_input_folder_reads(command, out, other, tmp_path):
    """``bench ROOT --run-out ROOT/ground-truth.csv``: a file the command reads from a folder it is given (named
    through ``missing/..``, which the write would create) is refused like the input itself."""
    parser = PARSERS[command]
    actions = _roles(parser)
    folder = tmp_path / "data-folder"
    inside = _file(folder / actions[other].path_inside[0].replace("*", "x"))
    named = str(folder / "missing" / ".." / inside.relative_to(folder))
    argv = [*command.split(), *_argv(parser, {other: str(folder), out: named}, tmp_path)]
    before = inside.read_bytes()
    assert_one_error_line(run_cli(*argv), flag_of(actions[out]), flag_of(actions[other]), "reads")
    assert inside.read_bytes() == before and not (folder / "missing").exists()


def test_finetune_writes_the_ground_truth_into_its_tasks_folder_but_not_over_its_tasks(tmp_path):
    """The names read inside a folder are the command's own: finetune reads tasks.csv there, not the ground truth."""
    folder = tmp_path / "layout"
    tasks = _file(folder / "tasks.csv")
    r = run_cli("finetune", "--pool", "ntcir19", "--tasks", folder, "--out", folder / "sub" / ".." / "tasks.csv")
    assert_one_error_line(r, "--out", "--tasks")
    assert tasks.read_bytes() == b"task_id,model_id,f1\n1,1,0.5\n"
    paths = clash.refuse_clashes  # the ground truth beside the tasks is what finetune writes: no clash
    paths([clash.PathArg("--tasks", folder, clash.INPUT, clash.TASK_READS),
           clash.PathArg("--out", _file(folder / "ground-truth.csv"), clash.OUTPUT)])


def test_a_fifo_or_device_given_as_a_database_is_named(tmp_path):
    fifo = tmp_path / "board.fifo"
    os.mkfifo(fifo)
    r = run_cli("duel", "leaderboard", "--db", fifo)
    assert_one_error_line(r, "--db", "FIFO")
    r = run_cli("duel", "db", "upgrade", "--db", f"sqlite:///{fifo}")
    assert_one_error_line(r, "--db", "FIFO")
    for db in ("/dev/null", "/dev/zero"):
        assert_one_error_line(run_cli("duel", "leaderboard", "--db", db), "--db", "character device")


def test_writes_with_distinct_paths_still_run(tmp_path):
    """The rule refuses only clashes: a fuse with its own output beside its inputs writes it."""
    a, b = tmp_path / "a.run", tmp_path / "b.run"
    a.write_text("1 Q0 1 1 0.9 a\n1 Q0 2 2 0.5 a\n")
    b.write_text("1 Q0 2 1 0.9 b\n1 Q0 1 2 0.5 b\n")
    r = run_cli("fuse", a, b, "-o", tmp_path / "fused.run", "--run-id", "fused")
    assert r.code == 0, r.err
    assert (tmp_path / "fused.run").read_text().split()[-1] == "fused"


def test_the_library_rule_alone():
    """The API's callers get the same rule: :func:`modelseek.core.clash.refuse_clashes` names both paths' names."""
    here = Path(__file__)
    with pytest.raises(InputError, match="save and truth name the same file"):
        clash.refuse_clashes([clash.PathArg("truth", here, clash.INPUT),
                              clash.PathArg("save", here.parent / ".." / here.parent.name / here.name, clash.OUTPUT)])
    clash.refuse_clashes([clash.PathArg("truth", here, clash.INPUT),
                          clash.PathArg("save", here.with_name("elsewhere.json"), clash.OUTPUT)])
    # a file written where a folder output writes one of its files: two outputs over each other
    with pytest.raises(InputError, match="out writes into this folder the file db writes"):
        clash.refuse_clashes([clash.PathArg("out", here.parent / "new-folder", clash.OUTPUT_DIR, ("*.json",)),
                              clash.PathArg("db", here.parent / "new-folder" / "metadata.json", clash.DATABASE)])
