"""Helpers shared by the command modules.

Option types: every option that takes a number, a choice or a path validates through the ``type=`` helpers
below, built on :mod:`modelseek.core.config`'s constraints, so a bad value is argparse's usage error (exit 2)
with one clear line (``argument --seed: must be an integer >= 0, got -1``)::

    p.add_argument("--seed", type=SEED, default=0)
    p.add_argument("--folds", type=int_at_least(2), default=5)
    p.add_argument("--alpha", type=PROBABILITY, default=0.05)
    p.add_argument("--scheme", type=choice(GradingScheme), default=GradingScheme.NTCIR,
                   metavar=metavar(GradingScheme))
    p.add_argument("--threshold", type=number(Interval(Real, 0, 1, closed="both")))
    p.add_argument("data", type=EXISTING_FILE)
    p.add_argument("--ground-truth", type=INPUT_FILE)  # checked, with every input file, before any work
    p.add_argument("--out", type=OUTPUT_FILE)
    p.add_argument("--pool")  # a file or a built-in name: its role is declared
    declare_paths(p, inputs=["pool"])  # no output may be an input, checked before any work (modelseek.core.clash)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from numbers import Integral, Real
from pathlib import Path
from typing import Any

from ..core import clash as paths_rule
from ..core import MAX_SAMPLES, Constraint, Interval, check, coerce
from ..retrieval import check_run_id, find_layout, GradingScheme, GroundTruth, load_pool
from ..core.errors import InputError
from ..core.io import check_readable


#: the role (modelseek.core.clash) of a path option whose ``type=`` says it (input_file_of adds its converters)
_TYPE_ROLES: dict[Callable, str] = {}


# ------------------------------------------------------------------------------------------ option types
def arg_type(annotation: Any, *constraints: Constraint, name: str | None = None,
             nonfinite: bool = False) -> Callable[[str], Any]:
    """An argparse ``type=`` converting the text with :func:`modelseek.core.config.coerce` (``annotation``) and
    checking ``constraints`` (any one satisfies): the same rules as a config file field."""

    def convert(text: str) -> Any:
        try:
            value = coerce(text, annotation, nonfinite=nonfinite)
            return check(value, list(constraints)) if constraints else value
        except InputError as exc:
            raise argparse.ArgumentTypeError(exc.message) from None

    convert.__name__ = name or str(getattr(annotation, "__name__", "value"))
    return convert


def integer(*constraints: Constraint) -> Callable[[str], int]:
    return arg_type(int, *constraints, name="integer")


def number(*constraints: Constraint, nonfinite: bool = False) -> Callable[[str], float]:
    """A float (finite unless ``nonfinite``) satisfying ``constraints``."""
    return arg_type(float, *constraints, name="number", nonfinite=nonfinite)


#: the largest value an integer option takes (a count beyond it is a typo, and would overflow range() and numpy)
MAX_INT_OPTION = 2**31 - 1


def int_at_least(low: int, high: int = MAX_INT_OPTION) -> Callable[[str], int]:
    """An integer >= ``low`` (the message users see) and <= ``high``."""
    at_least = integer(Interval(Integral, low, None, closed="left"))

    def convert(text: str) -> int:
        value = at_least(text)
        if value > high:
            raise argparse.ArgumentTypeError(f"must be an integer <= {high:,}, got {text.strip()[:40]}")
        return value

    convert.__name__ = "integer"
    return convert


class _RegistryNames(Sequence):
    """The names of the registry ``"module:ATTR"``, read when first used."""

    def __init__(self, target: str) -> None:
        self.target = target

    def _names(self) -> list[str]:
        import importlib

        module, attr = self.target.split(":")
        return getattr(importlib.import_module(module), attr).names()

    def __getitem__(self, i):
        return self._names()[i]

    def __len__(self) -> int:
        return len(self._names())

    def __contains__(self, value: object) -> bool:
        return value in self._names()


def add_registry_option(parser, flag: str, registry: str, **kwargs) -> argparse.Action:
    """An option whose value names an entry of the registry ``registry`` (``"module:ATTR"``): its choices
    are the registry's names, read when argparse first checks a value or prints help. They are set after
    the option is added because ``add_argument`` formats the choices at once, and importing a registry can
    cost more than the whole command line's start-up (the executors' package takes over a second)."""
    action = parser.add_argument(flag, **kwargs)
    action.choices = _RegistryNames(registry)
    return action


class LazyText:
    """A help text or metavar made when argparse formats it (``--help``, a usage error), not when the parser is
    built: listing a registry's members (and describing its built-ins) never imports a plugin at start-up."""

    def __init__(self, make: Callable[[], str]) -> None:
        self.make = make

    def __str__(self) -> str:
        return self.make()

    def __mod__(self, params: Any) -> str:
        return self.make() % params

    def __contains__(self, part: str) -> bool:
        return part in self.make()

    def __add__(self, other: str) -> str:
        return self.make() + other

    def strip(self) -> str:
        return self.make().strip()


def registry_metavar(registry: str) -> LazyText:
    """``{a,b,c}``: the names of the registry ``"module:ATTR"`` (plugins by name, none imported), when shown."""
    return LazyText(lambda: "{" + ",".join(_RegistryNames(registry)._names()) + "}")


def set_lazy(action: argparse.Action, *, metavar: LazyText | None = None, help: LazyText | None = None) -> None:
    """Give ``action`` a lazy metavar or help (after ``add_argument``, which formats the metavar at once)."""
    if metavar is not None:
        action.metavar = metavar  # type: ignore[assignment]
    if help is not None:
        action.help = help  # type: ignore[assignment]


EXECUTOR_REGISTRY = "modelseek.retrieval.executors:EXECUTORS"
"""The registry that ``--executor`` names (:data:`modelseek.retrieval.executors.EXECUTORS`)."""


SAMPLE_COUNT = int_at_least(1, MAX_SAMPLES)
"""A number of Monte-Carlo draws or bootstrap resamples: 1..10,000,000 (each is an array of that length)."""


SEED = integer(Interval(Integral, 0, 2**32 - 1, closed="both"))
"""A random seed: 0 <= seed < 2**32 (numpy's SeedSequence takes any non-negative int; torch wants 64 bits)."""
NON_NEGATIVE_INT = int_at_least(0)
POSITIVE_INT = int_at_least(1)
FINITE_FLOAT = number()
NON_NEGATIVE_FLOAT = number(Interval(Real, 0, None, closed="left"))
POSITIVE_FLOAT = number(Interval(Real, 0, None, closed="neither"))
PROBABILITY = number(Interval(Real, 0, 1, closed="neither"))
"""A probability strictly between 0 and 1 (a significance level, a quantile)."""
UNIT_INTERVAL = number(Interval(Real, 0, 1, closed="both"))
PORT = integer(Interval(Integral, 1, 65535, closed="both"))


def choice(enum_cls) -> Callable[[str], Any]:
    """``type=`` for a :class:`~modelseek.core.enums.Choice`: case-insensitive, errors with "did you mean" and the
    valid values. Pair with ``metavar=metavar(enum_cls)`` so the usage line lists them."""

    def convert(text: str):
        try:
            return enum_cls.parse(text)
        except InputError as exc:
            raise argparse.ArgumentTypeError(exc.message) from None

    convert.__name__ = enum_cls.__name__
    return convert


def metavar(enum_cls) -> str:
    return "{" + ",".join(m.value for m in enum_cls) + "}"


class InputFile(str):
    """A path given for a file the command reads (an ``INPUT_FILE`` or ``EXISTING_FILE`` option): a ``str``
    wherever a path is taken, and a mark for :func:`check_before_work`, which checks every one of them."""

    what = "file"


def input_file_of(what: str) -> Callable[[str], InputFile]:
    """``type=`` for a file the command reads, of kind ``what`` (``run file``, ``ground-truth file``: the word in
    messages and the size cap of :func:`modelseek.core.io.size_limit`): checked by :func:`check_before_work` (missing,
    unreadable, a directory, a device or FIFO, over its cap: one located line, exit 1) after parsing and before
    any work."""

    def convert(text: str) -> InputFile:
        if not text:
            raise argparse.ArgumentTypeError("empty path")
        value = InputFile(text)
        value.what = what
        return value

    convert.__name__ = what
    _TYPE_ROLES[convert] = paths_rule.INPUT
    return convert


input_file = input_file_of("file")


def existing_file(text: str) -> InputFile:
    """An existing file (not a directory): a usage error at parse time; readability and the kind of file are
    checked with every other input by :func:`check_before_work`."""
    p = Path(text)
    if p.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: is a directory, expected a file")
    if not p.exists():
        raise argparse.ArgumentTypeError(f"{text}: no such file")
    return InputFile(text)


def check_before_work(args: argparse.Namespace, parser: argparse.ArgumentParser | None = None) -> None:
    """What the entry point runs after parsing and before the command: the command's option check (set by
    ``p.set_defaults(options_check=FUNCTION)``: options that need each other, counts), a run id to write checked
    by the rule ``validate`` applies (:func:`modelseek.retrieval.data.run.check_run_id`) and the one check of every
    input
    file given (:func:`modelseek.core.io.check_readable`) — after, given the command's ``parser``, the one rule that no
    path it writes is one it reads (:func:`check_paths`). Every problem is a ``ModelseekError`` (one line, exit 1)
    before a second of work."""
    if parser is not None:  # first: comparing names reads nothing, and nothing may touch an input written over
        check_paths(parser, args)
    check = getattr(args, "options_check", None)
    if check is not None:
        check(args)
    if isinstance(getattr(args, "run_id", None), str):
        check_run_id(args.run_id, field="--run-id")
    for value in vars(args).values():
        for item in value if isinstance(value, (list, tuple)) else (value,):
            if isinstance(item, InputFile):
                check_readable(item, item.what)


# ------------------------------------------------------------------------------- paths read and written

Names = Mapping[str, Sequence[str]] | Sequence[str]


def declare_paths(parser: argparse.ArgumentParser, *, inputs: Names = (), outputs: Sequence[str] = (),
                  output_dirs: Names = (), databases: Sequence[str] = ()) -> None:
    """Declare, by ``dest``, which options (and positionals) of ``parser`` name paths the command reads
    (``inputs``: files or folders; as a mapping, with the names it reads inside a folder, e.g.
    :data:`modelseek.core.clash.FOLDER_READS`), writes (``outputs``: files), writes into (``output_dirs``: a folder; as
    a
    mapping, with the names it writes there) or reads and writes (``databases``: ``--db``). Options typed
    ``INPUT_FILE``/``EXISTING_FILE``/``EXISTING_DIR``/``OUTPUT_FILE``/``OUTPUT_DIR`` need no declaration. Before
    any work, :func:`check_paths` refuses a written path that is a read one (:mod:`modelseek.core.clash`)."""
    actions = {a.dest: a for a in parser._actions}
    for role, dests in ((paths_rule.INPUT, inputs), (paths_rule.OUTPUT, outputs), (paths_rule.OUTPUT_DIR, output_dirs),
                        (paths_rule.DATABASE, databases)):
        names = dests if isinstance(dests, Mapping) else {d: () for d in dests}
        for dest, inside in names.items():
            action = actions[dest]  # a KeyError is a typo in the command module, found by every test
            action.path_role = role  # type: ignore[attr-defined]
            action.path_inside = tuple(inside)  # type: ignore[attr-defined]


def path_role(action: argparse.Action) -> str | None:
    """The role (:data:`modelseek.core.clash.ROLES`) of ``action``'s path: declared, else said by its ``type=``."""
    return getattr(action, "path_role", None) or _TYPE_ROLES.get(action.type)  # type: ignore[arg-type]


def flag_of(action: argparse.Action) -> str:
    """How a user names ``action``: its longest option string, or a positional's metavar (``RUN``, ``PATH``)."""
    if action.option_strings:
        return max(action.option_strings, key=len)
    return str(action.metavar or action.dest.upper())


def path_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[paths_rule.PathArg]:
    """Every path ``args`` gives to the command of ``parser``, with its role (lists: each item)."""
    out = []
    for action in parser._actions:
        role = path_role(action)
        value = getattr(args, action.dest, None)
        if role is None or value is None:
            continue
        for item in value if isinstance(value, (list, tuple)) else (value,):
            if isinstance(item, (str, os.PathLike)):
                out.append(paths_rule.PathArg(flag_of(action), item, role, getattr(action, "path_inside", ())))
    return out


def check_paths(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """The one rule for every writing command: no output is an input or another output, whatever the names
    (symlinks, ``..``); a database is no FIFO or device (:func:`modelseek.core.clash.refuse_clashes`)."""
    paths_rule.refuse_clashes(path_args(parser, args))


def existing_dir(text: str) -> Path:
    p = Path(text)
    if not p.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: {'not a directory' if p.exists() else 'no such directory'}")
    return p


def output_file(text: str) -> Path:
    """A file to write: not a directory, and its parent is a directory or can be made (the nearest existing
    ancestor is a writable directory). An existing file is overwritten; a character device or FIFO (``/dev/stdout``,
    a process substitution's ``/dev/fd/63``) is written in place, whatever its folder."""
    import stat

    try:
        if text and (stat.S_ISCHR(os.stat(text).st_mode) or stat.S_ISFIFO(os.stat(text).st_mode)):
            return Path(text)
    except OSError:
        pass  # no such path (or none reachable): the checks below name what is wrong
    p = _creatable(text)
    if p.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: is a directory, expected a file to write")
    return p


def output_dir(text: str) -> Path:
    """A folder to write into: an existing directory, or a path that can be made (not an existing file, and
    the nearest existing ancestor is a writable directory)."""
    p = _creatable(text)
    if p.exists() and not p.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: is a file, expected a folder")
    return p


def _creatable(text: str) -> Path:
    """``text`` as a path whose nearest existing ancestor is a writable directory (so it can be made)."""
    if not text:
        raise argparse.ArgumentTypeError("empty path")
    p = Path(text)
    parent = p.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: {parent} is not a directory")
    if not os.access(parent, os.W_OK):
        raise argparse.ArgumentTypeError(f"{text}: {parent} is not writable")
    return p


_TYPE_ROLES.update({existing_file: paths_rule.INPUT, existing_dir: paths_rule.INPUT, output_file: paths_rule.OUTPUT,
                    output_dir: paths_rule.OUTPUT_DIR})
EXISTING_FILE = existing_file
INPUT_FILE = input_file
RUN_FILE = input_file_of("run file")
TRUTH_FILE = input_file_of("ground-truth file")
TASKS_FILE = input_file_of("tasks file")
EXISTING_DIR = existing_dir
OUTPUT_FILE = output_file
OUTPUT_DIR = output_dir


# ------------------------------------------------------------------------------------------ output


def print_json(obj: Any) -> None:
    json.dump(obj, sys.stdout, indent=2, default=_default)
    sys.stdout.write("\n")


def _default(o: Any):
    import numpy as np

    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if hasattr(o, "value"):
        return o.value
    raise TypeError(f"not JSON serialisable: {type(o)}")


def find_in_root(root: Path, name: str) -> Path | None:
    for p in (root, *list(root.parents)[:3]):
        if (p / name).exists():
            return p / name
    return None


def load_truth(path: str | None, root: Path | None = None, tasks_csv: str | None = None, any_score: bool = False):
    if path is None:
        found = find_in_root(root, "ground-truth.csv") if root is not None else None
        if found is None:
            raise InputError("no ground truth given (--ground-truth) and none found beside the tasks")
        path = str(found)
    check_readable(path, "ground-truth file")
    if tasks_csv is not None:
        check_readable(tasks_csv, "tasks file")
    return GroundTruth.from_csv(path, tasks_csv=tasks_csv, any_score=any_score)


def load_pool_arg(value: str | None, root: Path | None = None):
    if value is None:
        found = None
        if root is not None and root.is_dir():
            layout = find_layout(root, need_tasks=False)  # the organisers' repository root: data/models.csv
            found = layout.models_csv if layout is not None and layout.models_csv else find_in_root(root, "models.csv")
        return load_pool(found if found is not None else "ntcir19")
    return load_pool(value)


def add_scheme(p) -> None:
    p.add_argument("--scheme", default=GradingScheme.NTCIR, type=choice(GradingScheme), metavar=metavar(GradingScheme),
                   help="relevance grading: ntcir (official; gain 2^rel-1) or paper (gain rel)")
