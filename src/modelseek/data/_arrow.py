"""The fast path of every text reader (runs, TREC qrels, ground-truth CSV): pyarrow's CSV reader.

Each reader has two paths: this one, for a file of plain printable ASCII whose every value is valid, and its
careful path (line by line, every problem located) only when this one refuses. pyarrow parses in C++ and
dictionary-encodes text columns, so no Python string is made per line, only per distinct value; pandas' C
reader is not used (it made a Python string per cell and cost 80 MB of memory at import).
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv

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
                                                include_columns=include))
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, ValueError, IndexError, KeyError):
        return None


def encode(table: pa.Table, column: str) -> tuple[np.ndarray, np.ndarray]:
    """(each row's code, the distinct values by code as an object array) of a text column of :func:`read_table`
    (each parsed block has its own dictionary: they are unified first)."""
    col = table.column(column).unify_dictionaries()
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
