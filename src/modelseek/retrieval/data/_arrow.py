"""The fast path of every text reader (runs, TREC qrels, ground-truth CSV): pyarrow's CSV reader.

Each reader has two paths: this one, for a file of plain printable ASCII whose every value is valid, and its
careful path (line by line, every problem located) only when this one refuses. pyarrow parses in C++ and
dictionary-encodes text columns, so no Python string is made per line, only per distinct value; pandas' C
reader is not used (it made a Python string per cell and cost 80 MB of memory at import).
"""

from __future__ import annotations

import queue
import re
import threading
from collections.abc import Iterable, Iterator
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
from ...core.io import check_file, read_bytes, size_limit

# a file of plain printable ASCII (tabs and line ends allowed) can take the fast path; anything else goes to the
# careful one, so that a control or format character, or a non-ASCII digit, is refused at its line
_PLAIN = bytes([9, 10, 13, *range(0x20, 0x7F)])
_RUNS = re.compile(rb"[ \t]+")
_EDGES = re.compile(rb"^ | $", re.M)


def is_plain(data: bytes) -> bool:
    """Only printable ASCII, tabs and line ends (``bytes.translate`` deletes those: a C loop, no regex)."""
    return not data.translate(None, _PLAIN)


def single_spaced(data: bytes, n_fields: int) -> bytes | None:
    """``data`` (plain) with its white-space separated columns written with single spaces, as ``str.split``
    reads them, and CRLF line ends written LF; None when it ends a line with a bare carriage return or is blank.

    A file with no tab and exactly ``n_fields - 1`` spaces per line is returned as it is (two one-byte counts, no
    search for two-byte patterns, which cost 0.3 s on a 28 MB run): its lines then hold ``n_fields`` single-spaced
    fields, some perhaps empty, which the caller refuses (an empty value in a text column), and blank lines,
    which it refuses by counting rows against :func:`n_lines`."""
    if b"\r" in data:
        if b"\r" in data.replace(b"\r\n", b""):
            return None
        data = data.replace(b"\r\n", b"\n")
    if not data or data.isspace():
        return None
    if b"\t" not in data and data.count(b" ") == (n_fields - 1) * n_lines(data):
        return data
    data = _EDGES.sub(b"", _RUNS.sub(b" ", data))
    return data if data.strip() else None


def n_lines(data: bytes) -> int:
    return data.count(b"\n") + (0 if data.endswith(b"\n") else 1)


def read_table(data: bytes, names: list[str] | None, delimiter: str, floats: tuple[str, ...],
               include: list[str]) -> pa.Table | None:
    """The columns ``include`` of ``data`` (``floats`` as float64, the others dictionary-encoded while parsing, so
    that no string column is ever built whole: one Python string per distinct value; no quoting, no nulls),
    with ``names`` as column names (None: the file's header); None when pyarrow refuses the file (a line of
    another length, a number that is not one ...)."""
    text = pa.dictionary(pa.int32(), pa.string())
    types = {c: (pa.float64() if c in floats else text) for c in include}
    try:
        return pcsv.read_csv(
            pa.BufferReader(data), read_options=pcsv.ReadOptions(column_names=names, use_threads=False),
            parse_options=pcsv.ParseOptions(delimiter=delimiter, quote_char=False, double_quote=False,
                                            escape_char=False),
            convert_options=pcsv.ConvertOptions(column_types=types, null_values=[], strings_can_be_null=False,
                                                include_columns=include), memory_pool=_pool())
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, ValueError, IndexError, KeyError):
        return None


def _pool() -> pa.MemoryPool:
    """The C library's allocator for every table read here (not pyarrow's default, mimalloc or jemalloc, which keep
    what a table frees for pyarrow alone): the memory of a parsed table is then reused by the numpy arrays made
    from it, and a process's peak is the larger of the two, not their sum. Passed per call: the process's
    default pool is left as it is."""
    return pa.system_memory_pool()


def encode(table: pa.Table, column: str) -> tuple[np.ndarray, np.ndarray]:
    """(each row's code, the distinct values by code as an object array) of a text column of :func:`read_table`
    (each parsed block has its own dictionary: they are unified first)."""
    col = table.column(column).unify_dictionaries(memory_pool=_pool())
    if col.num_chunks == 0:
        return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=object)
    codes = [_view(c.indices, np.int32) for c in col.chunks]
    names = np.empty(len(col.chunk(0).dictionary), dtype=object)
    names[:] = col.chunk(0).dictionary.to_pylist()
    return codes[0].copy() if len(codes) == 1 else np.concatenate(codes), names


def floats(table: pa.Table, column: str) -> np.ndarray:
    """A float64 column of :func:`read_table` as one numpy array."""
    parts = [_view(c, np.float64) for c in table.column(column).chunks]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.float64)


def _view(arr: pa.Array, dtype: type) -> np.ndarray:
    """The values of a primitive array without nulls, viewed through its data buffer: ``Array.to_numpy`` would
    import pandas (pyarrow checks for it: 50 MB and 0.2 s that ``evaluate`` does not need)."""
    if arr.null_count:
        raise ValueError("a null value")  # read_table allows none; a caller's bug, not a user's input
    width = np.dtype(dtype).itemsize
    return np.frombuffer(arr.buffers()[1], dtype=dtype, count=len(arr), offset=arr.offset * width)


class Coded(NamedTuple):
    """Columns of a file read by :func:`read_coded`: each text column as (codes, the distinct values by code, in
    order of first appearance; the codes empty for a column read for its values only), each float column as an
    array; ``rows`` lines."""

    text: dict[str, tuple[np.ndarray, np.ndarray]]
    floats: dict[str, np.ndarray]
    rows: int


class _Checked:
    """A file handed to pyarrow's streaming reader block by block, each block checked as it passes for what the
    fast path asks of the bytes (plain printable ASCII, no tab, no carriage return, never past ``cap``) and its
    line ends counted: the bytes parsed are the bytes checked, and the file is never held whole. A block that
    fails ends the stream early (``ok`` false): the caller then takes its careful path. Spaces need no count:
    with quoting off every space separates two fields, and pyarrow refuses a line of another number of fields
    (two spaces in a row, a space at either end), so each line it accepts holds exactly one space per gap."""

    def __init__(self, fh, cap: int) -> None:
        self.fh, self.cap = fh, cap
        self.ok, self.size, self.newlines, self.last = True, 0, 0, b""
        self.closed = False

    def read(self, n: int = -1) -> bytes:
        if not self.ok:
            return b""
        chunk = self.fh.read(self.cap + 1 - self.size if n is None or n < 0 else min(n, self.cap + 1 - self.size))
        self.size += len(chunk)
        if self.size > self.cap or not is_plain(chunk) or b"\t" in chunk or b"\r" in chunk:
            self.ok = False
            return b""
        self.newlines += chunk.count(b"\n")
        self.last = chunk[-1:] or self.last
        return chunk

    def lines(self) -> int:
        return self.newlines + (0 if self.last == b"\n" else 1)

    def close(self) -> None:
        self.closed = True


def read_spaced(path, what: str, names: list[str], floats: tuple[str, ...],
                values_only: tuple[str, ...] = ()) -> Coded | None:
    """The fast path of a white-space separated file (a run, TREC qrels) of ``len(names)`` columns: streamed by
    :func:`read_coded` when it is single-spaced, else read whole and rewritten by :func:`single_spaced` (tabs,
    runs of spaces, CRLF). None when neither will do: the caller's careful path then reads it line by line.
    Text columns in ``values_only`` keep their distinct values but no codes (an empty array): a run's Q0 column,
    checked and dropped, costs no 4 bytes a line. Missing, a directory, a FIFO, over the cap for ``what``:
    located :class:`InputError`."""
    p = check_file(path, what)
    try:
        coded = read_coded(str(p), size_limit(what), names, floats, values_only)
    except OSError:
        coded = None  # raced with a change: read_bytes says what is wrong
    if coded is not None:
        return coded
    data = read_bytes(path, what)
    spaced = single_spaced(data, len(names)) if is_plain(data) else None
    del data
    return read_coded_bytes(spaced, names, floats, values_only) if spaced is not None else None


def read_coded(path: str, cap: int, names: list[str], floats: tuple[str, ...],
               values_only: tuple[str, ...] = ()) -> Coded | None:
    """A single-spaced file of ``len(names)`` columns (runs, qrels) streamed through pyarrow's CSV reader, a block
    at a time: text columns become codes as each block arrives, so neither the file nor a whole pyarrow table is
    ever in memory (a 28 MB run is read in about 40 MB above the interpreter's own). None when the file is not
    plain and single-spaced (the caller reads it whole and rewrites it, or takes its careful path) or pyarrow
    refuses it; a file that cannot be opened raises OSError."""
    import os

    with open(path, "rb") as fh:
        src = _Checked(fh, cap)
        size = min(os.fstat(fh.fileno()).st_size, cap)
        return _stream(pa.PythonFile(src, mode="r"), names, floats, src, None, size, values_only)


def read_coded_bytes(data: bytes, names: list[str], floats: tuple[str, ...],
                     values_only: tuple[str, ...] = ()) -> Coded | None:
    """:func:`read_coded` over ``data`` (already made single-spaced by :func:`single_spaced`)."""
    return _stream(pa.BufferReader(data), names, floats, None, n_lines(data), len(data), values_only)


# pyarrow's streaming reader keeps several blocks in flight, and each block's dictionaries are turned into the
# file's codes in Python (one string per distinct value per block): on a 28 MB run of 10,000 topics x 100, whole
# `modelseek evaluate` processes took 0.88 s / 147 MiB with 256 KiB blocks, 0.83 s / 150 MiB with 512 KiB and
# 0.82 s / 152 MiB with 1 MiB (pyarrow's default)
_BLOCK = 1 << 19


_END = object()


def _parsed_ahead(reader: Iterable[pa.RecordBatch], depth: int = 1) -> Iterator[pa.RecordBatch]:
    """The reader's batches, parsed ahead in a second thread (at most ``depth`` waiting): pyarrow parses without
    the GIL while this thread turns the previous batch's dictionaries into the file's codes. On 2 cores a
    million-line run was read in 0.23 s instead of 0.29 s, 100,000 topics x 20 in 0.42 s instead of 0.59 s, for
    1 to 4 MiB more. The reader's errors are raised here, in the caller's thread; a caller that stops early stops
    the thread too (it ends after the block it is parsing)."""
    waiting: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def hand_over(item: object) -> bool:
        while not stop.is_set():
            try:
                waiting.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def parse() -> None:
        try:
            for batch in reader:
                if not hand_over(batch):
                    return
        except BaseException as exc:  # noqa: BLE001 - any error, handed to the caller's thread, which raises it
            hand_over(exc)
            return
        hand_over(_END)

    worker = threading.Thread(target=parse, name="modelseek-read-ahead", daemon=True)
    worker.start()
    try:
        while (item := waiting.get()) is not _END:
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        worker.join()


def _to_file(seen: dict[str, int], values: list[str]) -> np.ndarray:
    """A block's dictionary (distinct ``values``) onto the file's codes: values not ``seen`` before take the next
    codes, in order; then one lookup per value, in C (``map``: a Python loop per value cost 0.1 s on 28 MB)."""
    new = [v for v in values if v not in seen]
    if new:
        seen.update(zip(new, range(len(seen), len(seen) + len(new))))
    return np.fromiter(map(seen.__getitem__, values), dtype=np.int32, count=len(values))


def _stream(source, names: list[str], floats: tuple[str, ...], checked: _Checked | None,
            lines: int | None, size: int, values_only: tuple[str, ...] = ()) -> Coded | None:
    text_type = pa.dictionary(pa.int32(), pa.string())
    types = {c: (pa.float64() if c in floats else text_type) for c in names}
    # the columns are filled in place, sized for the most lines that ``size`` bytes can hold (one character per
    # field): pages never written are never resident, and no block is copied twice (joining per-block arrays
    # at the end cost 30 MB more on a 28 MB run)
    bound = (size + 1) // (2 * len(names)) + 1
    # a text column holds codes only once it has a second value (a run's RunID and Q0 columns seldom do): until
    # then every code is 0, and np.zeros' pages cost nothing until written
    numbers = {c: np.empty(bound, dtype=np.float64) for c in floats}
    out: dict[str, np.ndarray | None] = {c: None for c in names if c not in floats}
    index: dict[str, dict[str, int]] = {c: {} for c in names if c not in floats}
    rows = 0
    try:
        reader = pcsv.open_csv(
            source, read_options=pcsv.ReadOptions(column_names=names, use_threads=False, block_size=_BLOCK),
            parse_options=pcsv.ParseOptions(delimiter=" ", quote_char=False, double_quote=False, escape_char=False),
            convert_options=pcsv.ConvertOptions(column_types=types, null_values=[], strings_can_be_null=False),
            memory_pool=_pool())
        for batch in _parsed_ahead(reader):
            k = batch.num_rows
            if rows + k > bound:
                return None  # the file grew while it was read: the careful path reads it as it is now
            for c, col in zip(names, batch.columns):
                if c in floats:
                    numbers[c][rows:rows + k] = _view(col, np.float64)
                    continue
                codes = out[c]
                to_file = _to_file(index[c], col.dictionary.to_pylist())
                if c in values_only or (codes is None and len(index[c]) == 1):
                    continue
                if codes is None:
                    codes = out[c] = np.zeros(bound, dtype=np.int32)  # the rows so far: code 0
                np.take(to_file, _view(col.indices, np.int32), out=codes[rows:rows + k], mode="clip")
            rows += k
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, ValueError, IndexError, KeyError):
        return None
    if checked is not None:
        if not checked.ok:
            return None  # a tab, a carriage return, a byte not plain: read whole and rewritten, or careful
        lines = checked.lines()
    if rows == 0 or rows != lines:
        return None  # a blank line (pyarrow skips it: the rows do not count the lines)
    text = {}
    for c, seen in index.items():
        values = np.empty(len(seen), dtype=object)
        values[:] = list(seen)
        a = out[c]
        text[c] = (a[:rows] if a is not None else np.zeros(0 if c in values_only else rows, dtype=np.int32), values)
    return Coded(text, {c: a[:rows] for c, a in numbers.items()}, rows)
