"""One way to read and write files.

Writing: :func:`atomic_write_bytes` / :func:`atomic_write_text`, the one write path of every command: a
regular file or new path is replaced atomically (temporary file in the same folder, fsync, rename; its mode
kept), a symlink is written through to its target, a character device or FIFO is written to in place; every
failure is one :class:`~modelseek.core.errors.OutputError` line naming the path.

Reading: every input file goes through :func:`read_bytes` → :func:`read_text` → :func:`read_json` /
:func:`read_yaml` / :func:`read_config`. Whatever goes wrong is an :class:`~modelseek.core.errors.InputError`
naming the file (and the line where there is one):

- a missing file (``no such file``), a directory where a file is expected, a file that cannot be read;
- bytes that are not UTF-8 (``not UTF-8 text (byte 0xff at offset 12)``, with the line); a UTF-8 byte-order
  mark is dropped;
- malformed JSON or YAML (the line and column of the parser), a duplicate key in a YAML mapping;
- JSON numbers a float cannot hold (``1e999``), ``NaN``/``Infinity`` constants, integers too long to
  convert — Python's :mod:`json` would silently return ``inf`` or ``nan`` (hooks reject them, located).

:func:`read_yaml_located` and :func:`read_config` also return a :class:`Source` carrying
the line of every key, so that :meth:`~modelseek.core.config.Config.from_mapping` errors can name the line.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import io
import json
import math
import os
import re
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from .errors import InputError, OutputError


# --------------------------------------------------------------------------------------------- where from
@dataclasses.dataclass(frozen=True)
class Source:
    """Where a mapping came from: the file and the 1-based line of each key's dotted path (from
    :func:`read_yaml_located`; :mod:`modelseek.core.config` re-exports it). ``prefix`` is the dotted path of the
    mapping in that file."""

    path: str | None = None
    lines: Mapping[str, int] = dataclasses.field(default_factory=dict)
    prefix: str = ""

    @classmethod
    def of(cls, source: Source | str | os.PathLike | None) -> Source:
        if isinstance(source, Source):
            return source
        return cls(None if source is None else str(source))

    def line(self, field: str | None) -> int | None:
        """The line of ``field`` or of the nearest enclosing key that has one."""
        where = _join(self.prefix, field or "")
        while True:
            if where in self.lines:
                return self.lines[where]
            if not where:
                return None
            where = _parent(where)

    def error(self, message: str, field: str | None = None) -> InputError:
        return InputError(message, path=self.path, line=self.line(field), field=_join(self.prefix, field or "") or None)

    def relocate(self, exc: InputError) -> InputError:
        """``exc`` (raised without a file) located in this source; its field is relative to ``prefix``."""
        if exc.path is not None:
            return exc
        return self.error(exc.message, exc.field)


def _join(prefix: str, field: str) -> str:
    if not prefix:
        return field
    if not field:
        return prefix
    return prefix + field if field.startswith("[") else f"{prefix}.{field}"


def _parent(path: str) -> str:
    cut = max(path.rfind("."), path.rfind("["))
    return path[:cut] if cut > 0 else ""


# ------------------------------------------------------------------------------------------------ writing
def _umask() -> int:
    # os.umask can only be read by setting it; set it back at once (the value, not the process, is what we need)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_WRITE_ERRORS = {errno.ENOSPC: "no space left on device (the disk is full)",
                 errno.EDQUOT: "disk quota exceeded",
                 errno.EACCES: "permission denied", errno.EPERM: "permission denied",
                 errno.EROFS: "read-only file system", errno.ENOTDIR: "a parent is not a directory",
                 errno.ENOENT: "the parent folder does not exist", errno.EISDIR: "is a directory",
                 errno.ELOOP: "too many levels of symbolic links", errno.ENAMETOOLONG: "file name too long"}


def write_error(path: str | os.PathLike, exc: OSError, what: str = "cannot write") -> OutputError:
    """One line naming ``path`` and what the system said (a full disk named as such)."""
    reason = _WRITE_ERRORS.get(exc.errno or 0) or exc.strerror or str(exc)
    return OutputError(f"{what}: {reason}", path=path, errno=exc.errno)


def output_kind(path: str | os.PathLike) -> str:
    """How :func:`atomic_write_bytes` writes ``path``: ``"replace"`` (a regular file or a new path, the
    target of a symlink included) or ``"stream"`` (a character device or a FIFO: written in place, never
    replaced); anything else (a directory, a block device, a socket, a path under a file) is an
    :class:`~modelseek.core.errors.OutputError` naming the path. Nothing is created."""
    import stat

    try:
        st = os.stat(path)  # follows a symlink: its target is what gets written
    except FileNotFoundError:
        return "replace"
    except OSError as exc:
        raise write_error(path, exc) from None
    if stat.S_ISDIR(st.st_mode):
        raise OutputError("is a directory, expected a file to write", path=path)
    if stat.S_ISREG(st.st_mode):
        return "replace"
    if stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode):
        return "stream"
    raise OutputError(f"is {file_kind(st.st_mode)}; refusing to write to it", path=path)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """The one way modelseek writes a file, with what each kind of path should get:

    - a regular file or a new path: a temporary file in the same folder (fsync, rename), so a reader never
      sees half a file; an existing file keeps its mode, a new one gets the mode ``open()`` would give (0666
      less the umask), not mkstemp's 0600 (a teammate or a grader must be able to read a submission);
    - a symlink: written through to its target (the same way), the link kept;
    - a character device or a FIFO (``/dev/stdout``, ``/dev/null``, a pipe): written to directly, never
      replaced by a regular file;
    - a directory, a block device or a socket: an :class:`~modelseek.core.errors.OutputError` naming the path;
    - a full disk, a permission or a read-only file system, a parent that cannot be made: one
      ``OutputError`` line naming the path, no temporary file left behind.

    Missing parent folders are made (the caches and stores write into folders of their own)."""
    kind = output_kind(path)
    if kind == "stream":
        _write_stream(path, data)
        return
    target = Path(os.path.realpath(path)) if os.path.islink(path) else Path(path)
    try:
        mode = os.stat(target).st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    except OSError as exc:
        raise write_error(path, exc) from None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # a parent is a file
        raise OutputError(f"cannot write: {target.parent} is not a directory", path=path) from None
    except OSError as exc:
        raise write_error(path, exc, f"cannot make the folder {target.parent}") from None
    _replace(path, target, data, mode)


def _replace(path: str | os.PathLike, target: Path, data: bytes, mode: int) -> None:
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise write_error(path, exc) from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fchmod(fh.fileno(), mode)
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise write_error(path, exc) from None
        raise


#: seconds a write into a FIFO waits for a process to open it for reading (then an error, never a hang)
FIFO_WAIT_S = 10.0


def _open_stream(path: str | os.PathLike) -> int:
    """A descriptor writing into the device or FIFO ``path``. A FIFO is opened without blocking, retried until a
    reader has it open (at most :data:`FIFO_WAIT_S`): opening one that nobody reads would block for ever."""
    import fcntl
    import stat
    import time

    flags = os.O_WRONLY | getattr(os, "O_NOCTTY", 0)
    if not stat.S_ISFIFO(os.stat(path).st_mode):
        return os.open(path, flags)
    deadline = time.monotonic() + FIFO_WAIT_S
    while True:
        try:
            fd = os.open(path, flags | os.O_NONBLOCK)
            break
        except OSError as exc:
            if exc.errno != errno.ENXIO:  # ENXIO: no reader yet
                raise
            if time.monotonic() > deadline:
                raise OutputError(f"cannot write: no process opened the FIFO for reading within {FIFO_WAIT_S:g} s",
                                  path=path, errno=errno.ENXIO) from None
            time.sleep(0.05)
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)  # then write as usual
    return fd


def _write_stream(path: str | os.PathLike, data: bytes) -> None:
    """Write into a character device or a FIFO as it is (no temporary file, no rename, no truncation)."""
    try:
        fd = _open_stream(path)
    except OSError as exc:
        raise write_error(path, exc) from None
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
    except OSError as exc:
        raise write_error(path, exc) from None
    finally:
        os.close(fd)


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """:func:`atomic_write_bytes` of ``text`` as UTF-8."""
    atomic_write_bytes(path, text.encode("utf-8"))


# ------------------------------------------------------------------------------------------------ reading
#: the largest file each kind of input may be, in MiB (``what`` as the readers name it); override one with
#: the environment variable ``MODELSEEK_MAX_MB_<KIND>`` (e.g. ``MODELSEEK_MAX_MB_RUN_FILE=4096``) or all with
#: ``MODELSEEK_MAX_MB``. A file over its cap is refused before a byte is read, so memory stays bounded.
SIZE_LIMITS_MB = {
    "run file": 2048,
    "ground-truth file": 2048,
    "pool file": 64,
    "topics file": 256,
    "task table": 512,
    "config file": 16,
    "file": 1024,
}


def size_limit(what: str) -> int:
    """The byte cap for an input of kind ``what`` (see :data:`SIZE_LIMITS_MB`)."""
    key = "MODELSEEK_MAX_MB_" + re.sub(r"[^A-Za-z0-9]+", "_", what).strip("_").upper()
    for name in (key, "MODELSEEK_MAX_MB"):
        raw = os.environ.get(name)
        if raw:
            try:
                mb = float(raw)
            except ValueError:
                raise InputError(f"environment variable {name} must be a number of MiB, got {raw!r}") from None
            if mb > 0 and math.isfinite(mb):
                return int(mb * 2**20)
            raise InputError(f"environment variable {name} must be a positive number of MiB, got {raw!r}")
    return int(SIZE_LIMITS_MB.get(what, SIZE_LIMITS_MB["file"]) * 2**20)


def file_kind(mode: int) -> str:
    import stat

    for test, name in ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def check_file(path: str | os.PathLike, what: str = "file") -> Path:
    """``path`` as a :class:`Path` if it names an existing regular file no larger than the cap for ``what``;
    else an ``InputError``: ``no such WHAT``, ``is a directory, expected a WHAT``, ``is a FIFO ...``, or the
    size and the cap. Nothing is opened: a FIFO without a writer would block for ever, ``/dev/zero`` never ends."""
    import stat

    p = Path(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise InputError(f"no such {what}", path=p) from None
    except OSError as exc:
        raise InputError(f"cannot read {what}: {exc.strerror or exc}", path=p) from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(f"is a directory, expected a {what}", path=p)
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"is {file_kind(st.st_mode)}, expected a regular {what}", path=p)
    cap = size_limit(what)
    if st.st_size > cap:
        key = "MODELSEEK_MAX_MB_" + re.sub(r"[^A-Za-z0-9]+", "_", what).strip("_").upper()
        raise InputError(f"{what} is {st.st_size / 2**20:,.1f} MiB, over the {cap / 2**20:,.0f} MiB cap (raise it with "
                         f"{key}=N)", path=p)
    return p


def check_readable(path: str | os.PathLike, what: str = "file") -> Path:
    """The one check of an input file before any work: :func:`check_file` (missing, a directory, a device or
    FIFO, over the cap) and then that it can be opened for reading (a mode-000 file, a folder without search
    permission): every problem one located ``InputError``. Opening a regular file neither blocks nor reads."""
    p = check_file(path, what)
    try:
        with open(p, "rb"):
            pass
    except OSError as exc:
        raise InputError(f"cannot read {what}: {exc.strerror or exc}", path=p) from None
    return p


def read_bytes(path: str | os.PathLike, what: str = "file") -> bytes:
    p = check_file(path, what)
    cap = size_limit(what)
    try:
        with open(p, "rb") as fh:
            data = fh.read(cap + 1)  # the file may have grown since the check: never read past the cap
    except IsADirectoryError:  # raced with a rename
        raise InputError(f"is a directory, expected a {what}", path=p) from None
    except OSError as exc:
        raise InputError(f"cannot read {what}: {exc.strerror or exc}", path=p) from None
    if len(data) > cap:
        raise InputError(f"{what} is over the {cap / 2**20:,.0f} MiB cap", path=p)
    return data


def utf16_bom(data: bytes) -> str | None:
    """``"UTF-16LE"``/``"UTF-16BE"`` when ``data`` starts with that byte-order mark (Excel's "Unicode text", a
    Windows editor's default), else None. A UTF-32 mark (``ff fe 00 00``) is named as UTF-16LE's prefix would be:
    either way the file is not UTF-8."""
    if data[:2] == b"\xff\xfe":
        return "UTF-32LE" if data[2:4] == b"\x00\x00" else "UTF-16LE"
    if data[:2] == b"\xfe\xff":
        return "UTF-16BE"
    return None


def decode_text(data: bytes, path: str | os.PathLike | None = None) -> str:
    """UTF-8 bytes → text (a leading byte-order mark dropped, ``\\r\\n`` kept as is); UTF-16 (by its byte-order
    mark) is named as such, other bytes are an ``InputError`` naming the offending byte, its offset and its line."""
    bom = utf16_bom(data)
    if bom:
        raise InputError(f"{bom} text (byte-order mark 0x{data[0]:02x} 0x{data[1]:02x}); modelseek reads UTF-8: "
                         f"save it as UTF-8 (e.g. iconv -f UTF-16 -t UTF-8)", path=path, line=1)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})", path=path,
                         line=line) from None
    return text[1:] if text.startswith("\ufeff") else text


def read_text(path: str | os.PathLike, what: str = "file") -> str:
    """The whole file as text; see the module docstring for the errors."""
    return decode_text(read_bytes(path, what), path)


def open_text(path: str | os.PathLike, what: str = "file") -> io.StringIO:
    """:func:`read_text` as a file object (for :mod:`csv` readers): decoding errors surface here, located,
    instead of halfway through a loop as a raw ``UnicodeDecodeError``. ``newline=''`` semantics, as the
    csv module wants."""
    return io.StringIO(read_text(path, what), newline="")


class _LongFields:
    """Lift :mod:`csv`'s 131,072-character field limit while a reader parses (the file itself is capped)."""

    def __enter__(self):
        import csv

        self._old = csv.field_size_limit(2**31 - 1)

    def __exit__(self, *exc):
        import csv

        csv.field_size_limit(self._old)
        return False


#: the context in which a :mod:`csv` reader takes fields of any length (for readers that are no DictReader)
long_csv_fields = _LongFields


def csv_dict_reader(fh, path: str | os.PathLike | None = None):
    """A :class:`csv.DictReader` whose problems are located ``InputError`` errors: a field or header of any length
    is read (no ``_csv.Error`` at 131,072 characters), a malformed row names its line, and a header naming a
    column twice is refused (DictReader would silently keep the last)."""
    import csv

    class Reader(csv.DictReader):
        @property
        def fieldnames(self):
            if self._fieldnames is None:
                with _LongFields():
                    try:
                        names = super().fieldnames
                    except csv.Error as exc:
                        raise InputError(f"malformed CSV header: {exc}", path=path, line=1) from None
                seen: dict[str, int] = {}
                for i, name in enumerate(names or [], 1):
                    if name in seen and name.strip():
                        raise InputError(f"column {name!r} is named twice (columns {seen[name]} and {i})", path=path,
                                         line=1, field=name)
                    seen[name] = i
            return self._fieldnames

        @fieldnames.setter
        def fieldnames(self, value):
            self._fieldnames = value

        def __next__(self):
            with _LongFields():
                try:
                    return super().__next__()
                except csv.Error as exc:
                    raise InputError(f"malformed CSV: {exc}", path=path, line=self.line_num) from None

    return Reader(fh)


def keyed_rows(reader, column: str, path: str | os.PathLike | None, empty: str,
               again: str) -> Iterator[tuple[int, str, dict]]:
    """``(line, key, row)`` for each row of a :func:`csv_dict_reader`, its key the stripped ``column``: an empty key
    is the located error ``empty``, a key seen before the located error ``again`` (a format string given ``key`` and
    ``first``, the line it was first on). One rule for every file whose rows are keyed by an id."""
    seen: dict[str, int] = {}
    for lineno, row in enumerate(reader, start=2):
        key = (row.get(column) or "").strip()
        if not key:
            raise InputError(empty, path=path, line=lineno, field=column)
        if key in seen:
            raise InputError(again.format(key=key, first=seen[key]), path=path, line=lineno, field=column)
        seen[key] = lineno
        yield lineno, key, row


def line_of(text: str, offset: int) -> int:
    """1-based line number of character ``offset`` in ``text``."""
    return text.count("\n", 0, max(0, offset)) + 1


# ------------------------------------------------------------------------------------------------ JSON
# Strings are matched first so that digits inside them are skipped; then every number or constant token
# in document order. Used only to locate the token a hook refused (the prefix parsed, so it is valid JSON).
_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|(-?(?:\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?|NaN|-?Infinity)')


_FLOAT_MAX = int(sys.float_info.max)


class _Refused(Exception):
    def __init__(self, index: int, message: str) -> None:
        self.index, self.message = index, message


def _strict_hooks():
    """``parse_int``/``parse_float``/``parse_constant`` that count the number tokens seen and refuse
    non-finite values (Python's json turns ``1e999`` into inf and accepts ``NaN``)."""
    seen = [0]

    def _float(token: str) -> float:
        seen[0] += 1
        value = float(token)
        if not math.isfinite(value):
            raise _Refused(seen[0], f"number {_short(token)} is too large for a float")
        return value

    def _int(token: str) -> int:
        seen[0] += 1
        try:
            value = int(token)
        except ValueError:  # more digits than Python converts (sys.get_int_max_str_digits)
            raise _Refused(seen[0], f"integer with {len(token)} digits is too long") from None
        if abs(value) > _FLOAT_MAX:  # every number is a float somewhere downstream: float(value) would overflow
            raise _Refused(seen[0], f"number {_short(token)} is too large for a float")
        return value

    def _constant(token: str) -> float:
        seen[0] += 1
        raise _Refused(seen[0], f"{token} is not a number JSON allows (NaN and Infinity are refused)")

    return {"parse_float": _float, "parse_int": _int, "parse_constant": _constant}


def _short(token: str, n: int = 24) -> str:
    return token if len(token) <= n else token[:n] + "..."


def _locate_token(text: str, index: int) -> int | None:
    k = 0
    for m in _JSON_TOKEN.finditer(text):
        if m.group(1) is not None:
            k += 1
            if k == index:
                return line_of(text, m.start(1))
    return None


def loads_json(text: str, path: str | os.PathLike | None = None, line_offset: int = 0) -> Any:
    """Strict :func:`json.loads`: malformed JSON and numbers a float cannot hold are ``InputError``\\ s
    naming ``path`` and the line (``line_offset`` is added: for one record of a JSON-lines file)."""
    try:
        return json.loads(text, **_strict_hooks())
    except json.JSONDecodeError as exc:
        raise InputError(f"malformed JSON: {exc.msg} (column {exc.colno})", path=path,
                         line=exc.lineno + line_offset) from None
    except _Refused as exc:
        line = _locate_token(text, exc.index)
        raise InputError(exc.message, path=path, line=None if line is None else line + line_offset) from None
    except RecursionError:
        raise InputError("malformed JSON: nested too deeply", path=path) from None


def read_json(path: str | os.PathLike, what: str = "file") -> Any:
    """Parse a JSON file; every problem is an ``InputError`` naming the path and line."""
    return loads_json(read_text(path, what), path)


def iter_jsonl(path: str | os.PathLike, what: str = "file") -> Iterator[tuple[int, Any]]:
    """``(line number, record)`` for each non-blank line of a JSON-lines file; errors as :func:`read_json`."""
    text = read_text(path, what)
    for ln, raw in enumerate(text.splitlines(), 1):
        if raw.strip():
            yield ln, loads_json(raw, path, line_offset=ln - 1)


# ------------------------------------------------------------------------------------------------ YAML
def _yaml_error(exc: Exception, text: str, path) -> InputError:
    import yaml

    if isinstance(exc, yaml.reader.ReaderError):  # a control character: position, not a mark
        return InputError(f"invalid YAML: unacceptable character #x{exc.character:04x}" if isinstance(
            exc.character, int) else f"invalid YAML: {exc.reason}", path=path, line=line_of(text, exc.position))
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or getattr(exc, "context", None) or str(exc).splitlines()[0]
    return InputError(f"invalid YAML: {problem}", path=path, line=mark.line + 1 if mark else None)


def loads_yaml_located(text: str, path: str | os.PathLike | None = None) -> tuple[Any, dict[str, int]]:
    """Parse YAML (safe loader) and return ``(data, lines)``: ``lines`` maps each key's dotted path
    (``candidates[0].hf_id``; ``""`` for the document) to its 1-based line. A key given twice in one mapping
    is an error (PyYAML would silently keep the last)."""
    import yaml

    loader = None
    try:
        loader = yaml.SafeLoader(text)  # checks for unprintable characters already
        node = loader.get_single_node()
        lines: dict[str, int] = {}
        if node is not None:
            _walk(node, "", lines, path, set())
            _check_expansion(node, path)
        data = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as exc:
        raise _yaml_error(exc, text, path) from None
    except RecursionError:
        raise InputError("invalid YAML: nested too deeply", path=path) from None
    except InputError:
        raise
    except (ValueError, TypeError, AttributeError, OverflowError) as exc:  # a tagged value PyYAML cannot build
        raise InputError(f"invalid YAML: cannot build a value ({type(exc).__name__}: {exc})", path=path) from None
    finally:
        if loader is not None:
            loader.dispose()
    return data, lines


#: the most values a YAML document may hold once its aliases are expanded (a "billion laughs" document of a few
#: hundred bytes expands to billions: every reader that walks the data would take gigabytes and hours)
MAX_YAML_VALUES = 1_000_000
#: the most digits of a YAML integer (Python's int() refuses more: sys.get_int_max_str_digits)
MAX_INT_DIGITS = 4300


def _check_expansion(root, path) -> None:
    """Refuse a document whose aliases expand past :data:`MAX_YAML_VALUES` values. Each node is sized once (its
    expanded size memoised), so the check is linear in the document, not in its expansion."""
    import yaml

    size: dict[int, int] = {}

    def walk(node) -> int:
        if id(node) in size:
            return size[id(node)]
        size[id(node)] = 1  # a node that contains itself: counted once (the constructor refuses it later)
        n = 1
        if isinstance(node, yaml.MappingNode):
            n += sum(walk(k) + walk(v) for k, v in node.value)
        elif isinstance(node, yaml.SequenceNode):
            n += sum(walk(v) for v in node.value)
        size[id(node)] = n
        if n > MAX_YAML_VALUES:
            raise InputError(f"invalid YAML: its aliases expand to over {MAX_YAML_VALUES:,} values (at most "
                             f"{MAX_YAML_VALUES:,}; a 'billion laughs' document?)", path=path,
                             line=node.start_mark.line + 1)
        return n

    walk(root)


def _walk(node, where: str, lines: dict[str, int], path, seen_nodes: set[int]) -> None:
    import yaml

    lines.setdefault(where, node.start_mark.line + 1)
    if (isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:int"
            and len(node.value) > MAX_INT_DIGITS):
        raise InputError(f"invalid YAML: an integer of {len(node.value):,} characters is too long (at most "
                         f"{MAX_INT_DIGITS:,} digits)", path=path, line=node.start_mark.line + 1,
                         field=where or None)
    if id(node) in seen_nodes:  # an alias: walked once (else "billion laughs" documents take forever)
        return
    seen_nodes.add(id(node))
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for knode, vnode in node.value:
            if not isinstance(knode, yaml.ScalarNode) or knode.tag == "tag:yaml.org,2002:merge":
                continue
            key = str(knode.value)
            line = knode.start_mark.line + 1
            if key in seen:
                raise InputError(f"duplicate key (first on line {seen[key]})", path=path, line=line,
                                 field=f"{where}.{key}" if where else key)
            seen[key] = line
            sub = f"{where}.{key}" if where else key
            lines[sub] = line
            _walk(vnode, sub, lines, path, seen_nodes)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _walk(item, f"{where}[{i}]", lines, path, seen_nodes)


def read_yaml_located(path: str | os.PathLike, what: str = "file") -> tuple[Any, Source]:
    """:func:`read_yaml` plus a :class:`Source` (the path and the line of every key)."""
    data, lines = loads_yaml_located(read_text(path, what), path)
    return data, Source(str(path), lines)


def read_yaml(path: str | os.PathLike, what: str = "file") -> Any:
    """Parse a YAML file (safe loader); errors name the path and line."""
    return read_yaml_located(path, what)[0]


def suffix_of(path: str | os.PathLike) -> str:
    """The lower-case suffix that says what kind of file ``path`` is: for a symlink its target's (a link named
    ``pool`` or ``latest.yaml`` to ``models.csv`` is a CSV), unless the target has none (the Hugging Face cache
    links names to suffix-less blobs), then the link's own. The one rule every reader that picks a format by
    suffix uses."""
    p = Path(path)
    if p.is_symlink():
        try:
            target = p.resolve(strict=True).suffix.lower()
        except (OSError, RuntimeError):  # a dangling link or a loop: the reader names the path
            target = ""
        if target:
            return target
    return p.suffix.lower()


def read_config(path: str | os.PathLike, what: str = "config file") -> tuple[Any, Source]:
    """A config document and its :class:`Source`: ``.json`` files through the strict JSON
    reader (no key lines), anything else as YAML (of which JSON is a subset)."""
    if suffix_of(path) == ".json":
        return read_json(path, what), Source(str(path))
    return read_yaml_located(path, what)
