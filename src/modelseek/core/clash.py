"""No command writes over its own input: the one rule for every path a command or an API call writes.

Before any work, every path the call writes (a file, a folder it writes into, a database) is resolved — symlinks
followed, ``..`` collapsed, hard links seen by their inode — and compared with every path it reads and with every
other path it writes. A clash is one :class:`~modelseek.core.errors.InputError` line naming both (``--output`` and
``--train-truth`` in the CLI, the parameter names in the API), so the input's bytes are never touched::

    refuse_clashes([PathArg("RUN", "a.run", INPUT), PathArg("--output", "sub/../a.run", OUTPUT)])
    # InputError: sub/../a.run: field '--output': --output names the file RUN reads (a.run) ...

What clashes:

- an output file (or a database) and an input, or two outputs, that are one file;
- an output folder that is an input, or that holds an input under a name the command writes there (``writes``:
  the names, as :mod:`fnmatch` patterns, the command writes into it; none declared: only the folder itself);
- an output file that is an existing file the call reads from an input folder (``inside``: its ground truth,
  ``tasks.csv``, ``models.csv``, a task's data, :data:`FOLDER_READS`), or beside an input file;
- a character device or FIFO (``/dev/stdout``, a pipe) never clashes: it is written in place, nothing is replaced.

An output folder that cannot be one (a file, a dangling symlink, a symlink loop, a path below a file) is one line
(:func:`check_output_folder`), and a database (``--db``) is refused when it names a FIFO, a device or a socket
(SQLite would say "disk I/O error"): :func:`check_database_file`.
"""

from __future__ import annotations

import dataclasses
import errno
import fnmatch
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from .errors import InputError

INPUT = "input"
"""A file or folder the call reads."""
OUTPUT = "output"
"""A file the call writes (replaced atomically)."""
OUTPUT_DIR = "output folder"
"""A folder the call writes files into."""
DATABASE = "database"
"""A database the call reads and writes (an SQLite file, or a server URL that is not compared)."""

ROLES = (INPUT, OUTPUT, OUTPUT_DIR, DATABASE)

#: the files a command reads from the data folder it is given (the organisers' layout at its root or its data/, a
#: generated layout, a Subtask B set; a ground truth given as a file: tasks.csv beside it)
FOLDER_READS = ("ground-truth.csv", "tasks.csv", "models.csv", "model-facts.csv", "train.csv", "task-data/*",
                "models/*", "images/*", "test/*")
#: the files ``finetune`` reads from its tasks folder (it writes the ground truth there)
TASK_READS = ("tasks.csv", "task-data/*")


@dataclasses.dataclass(frozen=True)
class PathArg:
    """One path of a call: how the caller names it (``--output``, ``RUN``, ``save``), the path and its role.
    ``inside``: for an output folder, the names the call writes into it; for an input folder, the names it reads
    there (given a file instead, the same names beside it), as :mod:`fnmatch` patterns (:data:`FOLDER_READS`)."""

    flag: str
    path: str | os.PathLike
    role: str
    inside: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class _Resolved:
    arg: PathArg
    real: str  # symlinks followed, ``..`` collapsed
    inode: tuple[int, int] | None  # (device, inode) of an existing path
    stream: bool  # a character device or a FIFO: written in place
    is_dir: bool


def _resolve(arg: PathArg) -> _Resolved | None:
    text = os.fspath(arg.path)
    if not text or text == "-":
        return None
    try:
        real = os.path.realpath(text)
    except (OSError, ValueError):  # a NUL in the path: the command's own check names it
        return None
    try:
        st = os.stat(text)
    except (OSError, ValueError):
        try:  # ``missing/../x``: the write makes ``missing`` and lands on ``x``
            st = os.stat(real)
        except (OSError, ValueError):
            return _Resolved(arg, real, None, False, False)
    stream = stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode)
    return _Resolved(arg, real, (st.st_dev, st.st_ino), stream, stat.S_ISDIR(st.st_mode))


def _same(a: _Resolved, b: _Resolved) -> bool:
    if a.inode is not None and b.inode is not None:
        return a.inode == b.inode
    return a.real == b.real


def _written_into(folder: _Resolved, inp: _Resolved) -> bool:
    """``inp`` lies in ``folder`` under a name the call writes there."""
    if not folder.arg.inside or inp.is_dir:
        return False
    try:
        rel = Path(inp.real).relative_to(folder.real)
    except ValueError:
        return False
    return any(fnmatch.fnmatchcase(rel.as_posix(), pattern) for pattern in folder.arg.inside)


def _read_from(inp: _Resolved, out: _Resolved) -> bool:
    """``out`` is an existing file that the call reads from the input folder ``inp`` (or beside the input file)."""
    if not inp.arg.inside or out.inode is None or out.is_dir or inp.inode is None:
        return False
    folder = inp.real if inp.is_dir else os.path.dirname(inp.real)
    patterns = inp.arg.inside if inp.is_dir else [p for p in inp.arg.inside if "/" not in p]
    try:
        rel = Path(out.real).relative_to(folder).as_posix()
    except ValueError:
        return False
    rel = rel.removeprefix("data/") if inp.is_dir else rel
    return any(fnmatch.fnmatchcase(rel, pattern) for pattern in patterns)


def database_file(text: str | os.PathLike | None) -> str | None:
    """The file an SQLite ``--db`` names (a path or an ``sqlite:///PATH`` URL); None for a server URL or an
    in-memory database, which name no file."""
    value = os.fspath(text) if text is not None else ""
    if "://" in value:
        scheme, rest = value.split("://", 1)
        if not scheme.startswith("sqlite") or not rest.startswith("/"):
            return None
        value = rest[1:].split("?", 1)[0]
    return value if value and value != ":memory:" else None


def check_database_file(text: str | os.PathLike | None, flag: str = "--db") -> None:
    """A database that names a FIFO, a character or block device or a socket: one line saying so (SQLite would
    fail later with "disk I/O error"). A missing file or a server URL passes (the database layer makes or opens
    it)."""
    path = database_file(text)
    if path is None:
        return
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return
    kinds = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
    for test, what in kinds:
        if test(mode):
            raise InputError(f"is {what}, not a database file: give an SQLite file or a server URL",
                             path=path, field=flag)


def check_output_folder(path: str | os.PathLike, flag: str = "--out") -> None:
    """A folder to write into that can be one: an existing directory (a symlink to one included) or a path that
    can be made. A file, a dangling symlink, a symlink loop or a path below a file is one line naming it."""
    text = os.fspath(path)
    try:
        mode = os.stat(text).st_mode
    except FileNotFoundError:
        if os.path.lexists(text):
            raise InputError("is a symlink to nothing (its target does not exist); expected a folder to write into",
                             path=text, field=flag) from None
        return
    except NotADirectoryError:
        raise InputError("a parent of this path is a file, not a folder", path=text, field=flag) from None
    except OSError as exc:
        reason = "a symlink loop" if exc.errno == errno.ELOOP else (exc.strerror or str(exc))
        raise InputError(f"cannot be used as a folder: {reason}", path=text, field=flag) from None
    if not stat.S_ISDIR(mode):
        raise InputError("is a file, expected a folder to write into", path=text, field=flag)


def refuse_clashes(paths: Iterable[PathArg]) -> None:
    """Refuse, in one :class:`~modelseek.core.errors.InputError` line naming both, any path written by the call that
    is one of its inputs (or another of its outputs); see the module's rule. Nothing is read or written."""
    resolved = [r for r in map(_resolve, paths) if r is not None]
    for r in resolved:
        if r.arg.role not in ROLES:
            raise ValueError(f"unknown path role {r.arg.role!r} of {r.arg.flag}")
        if r.arg.role == DATABASE:
            check_database_file(r.arg.path, r.arg.flag)
        if r.arg.role == OUTPUT_DIR:
            check_output_folder(r.arg.path, r.arg.flag)
    inputs = [r for r in resolved if r.arg.role == INPUT]
    written = [r for r in resolved if r.arg.role != INPUT and not r.stream]
    for i, out in enumerate(written):
        for inp in inputs:
            if _same(out, inp) or (out.arg.role == OUTPUT_DIR and _written_into(out, inp)):
                raise _clash(out, inp, "reads")
            if out.arg.role != OUTPUT_DIR and _read_from(inp, out):
                where = "of the folder" if inp.is_dir else "beside the file"
                raise InputError(f"{out.arg.flag} names a file {where} {inp.arg.flag} reads "
                                 f"({os.fspath(inp.arg.path)}): refusing to overwrite an input; give another path",
                                 path=os.fspath(out.arg.path), field=out.arg.flag)
        for other in written[:i]:
            if _same(out, other):
                raise _clash(out, other, "writes")
            for folder, file in ((out, other), (other, out)):  # a file written where a folder's files go
                if folder.arg.role == OUTPUT_DIR and file.arg.role != OUTPUT_DIR and _written_into(folder, file):
                    raise _clash(folder, file, "writes")


def _clash(out: _Resolved, other: _Resolved, verb: str) -> InputError:
    hint = "refusing to overwrite an input" if verb == "reads" else "two outputs would overwrite each other"
    if _same(out, other):
        what = "folder" if out.arg.role == OUTPUT_DIR else "file"
        text = f"{out.arg.flag} and {other.arg.flag} name the same {what} ({os.fspath(other.arg.path)})"
    else:
        text = f"{out.arg.flag} writes into this folder the file {other.arg.flag} {verb} ({os.fspath(other.arg.path)})"
    return InputError(f"{text}: {hint}; give another path", path=os.fspath(out.arg.path), field=out.arg.flag)
