"""One cache policy: where caches live, and one verified on-disk format for arrays.

Where: :func:`cache_root` is ``$MODELSEEK_CACHE`` if set, else ``$XDG_CACHE_HOME/modelseek`` if that is
set, else ``~/.cache/modelseek``; each kind of cache has a folder under it (:func:`cache_dir`:
``features``, ``taskrep``, ``align``...).

What: :func:`write_arrays` stores named arrays as ``MSCACHE1\\n`` + a one-line JSON header (the caller's
key fields, each array's name, dtype and shape, the SHA-256 of the payload) + the raw bytes of the arrays,
written atomically (:func:`modelseek.core.io.atomic_write_bytes`). :func:`read_arrays` checks everything before
trusting a byte: magic, header, the expected key fields, the payload size and checksum; any mismatch is a
:class:`CorruptCacheError`. :func:`load_arrays` is the form callers want: ``None`` for a missing or
corrupt entry (a corrupt file is logged and removed, so it is recomputed and rewritten).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .errors import OutputError
from .io import atomic_write_bytes

log = logging.getLogger(__name__)

MAGIC = b"MSCACHE1\n"


def cache_root() -> Path:
    """``$MODELSEEK_CACHE``, else ``$XDG_CACHE_HOME/modelseek``, else ``~/.cache/modelseek``."""
    root = os.environ.get("MODELSEEK_CACHE")
    if root:
        return Path(root).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(os.path.expanduser(xdg)):  # the XDG spec: a relative value is ignored
        return Path(xdg).expanduser() / "modelseek"
    return Path.home() / ".cache" / "modelseek"


def cache_dir(kind: str) -> Path:
    """The folder of one kind of cache (``features``, ``taskrep``, ``align``...) under :func:`cache_root`."""
    return cache_root() / kind


class CorruptCacheError(Exception):
    """A cache file failed verification (internal: the caller recomputes)."""


def encode_arrays(arrays: Mapping[str, np.ndarray], fields: Mapping[str, Any] | None = None) -> bytes:
    parts, specs = [], []
    for name, a in arrays.items():
        a = np.asarray(a, order="C")  # not ascontiguousarray: it turns a 0-d array into 1-d
        if a.dtype.hasobject:
            raise TypeError(f"cache: array {name!r} holds Python objects")
        parts.append(a.tobytes())
        specs.append([str(name), a.dtype.str, list(a.shape)])
    payload = b"".join(parts)
    header = {"fields": dict(fields or {}), "arrays": specs, "sha256": hashlib.sha256(payload).hexdigest()}
    return MAGIC + json.dumps(header, sort_keys=True, default=str).encode("utf-8") + b"\n" + payload


def decode_arrays(data: bytes, fields: Mapping[str, Any] | None = None) -> dict[str, np.ndarray]:
    if not data.startswith(MAGIC):
        raise CorruptCacheError("bad magic")
    nl = data.find(b"\n", len(MAGIC))
    if nl < 0:
        raise CorruptCacheError("no header")
    try:
        header = json.loads(data[len(MAGIC):nl].decode("utf-8"))
        specs = [(str(n), np.dtype(d), tuple(int(s) for s in shape)) for n, d, shape in header["arrays"]]
        stored_fields, digest = header["fields"], header["sha256"]
    except (ValueError, KeyError, TypeError) as exc:
        raise CorruptCacheError(f"bad header ({exc})") from None
    if fields is not None:
        want = json.loads(json.dumps(dict(fields), sort_keys=True, default=str))
        if any(stored_fields.get(k) != v for k, v in want.items()):
            raise CorruptCacheError("key mismatch")
    payload = memoryview(data)[nl + 1:]
    sizes = [int(np.prod(shape, dtype=np.int64)) * dtype.itemsize for _, dtype, shape in specs]
    if len(payload) != sum(sizes):
        raise CorruptCacheError("size mismatch")
    if hashlib.sha256(payload).hexdigest() != digest:
        raise CorruptCacheError("checksum mismatch")
    out, at = {}, 0
    for (name, dtype, shape), size in zip(specs, sizes):
        out[name] = np.frombuffer(payload[at:at + size], dtype=dtype).reshape(shape).copy()
        at += size
    return out


def write_arrays(path: str | os.PathLike, arrays: Mapping[str, np.ndarray],
                 fields: Mapping[str, Any] | None = None) -> Path:
    """Store ``arrays`` (and the key ``fields`` that :func:`read_arrays` checks) atomically at ``path``."""
    p = Path(path)
    atomic_write_bytes(p, encode_arrays(arrays, fields))
    return p


def read_arrays(path: str | os.PathLike, fields: Mapping[str, Any] | None = None) -> dict[str, np.ndarray]:
    """The arrays stored at ``path``; :class:`CorruptCacheError` if the file fails any check (or, when
    ``fields`` is given, was stored under other key fields); ``OSError`` if it cannot be read."""
    return decode_arrays(Path(path).read_bytes(), fields)


def load_arrays(path: str | os.PathLike | None, fields: Mapping[str, Any] | None = None,
                what: str = "cache") -> dict[str, np.ndarray] | None:
    """:func:`read_arrays`, or ``None`` when the entry is missing or corrupt; a corrupt file is logged
    (``WHAT file PATH is corrupt (REASON); recomputing``) and removed."""
    if path is None:
        return None
    p = Path(path)
    if not os.path.lexists(p):
        return None
    if not p.is_file():  # a FIFO, device or folder where an entry goes: never read (a FIFO blocks), never written
        log.warning("%s file %s is not a regular file; moving it aside and recomputing", what, p)
        _move_aside(p)
        return None
    try:
        return read_arrays(p, fields)
    except (CorruptCacheError, OSError) as exc:
        log.warning("%s file %s is corrupt (%s); recomputing", what, p, exc)
        with contextlib.suppress(OSError):
            p.unlink()
        return None


def _move_aside(p: Path) -> None:
    """Rename a special file out of an entry's place (kept as ``NAME.not-a-file-PID``, for inspection)."""
    try:
        os.replace(p, p.with_name(f"{p.name}.not-a-file-{os.getpid()}"))
    except OSError as exc:
        raise OutputError(f"is not a regular file and cannot be moved aside: {exc.strerror or exc}", path=p) from None


__all__ = ["MAGIC", "CorruptCacheError", "cache_dir", "cache_root", "decode_arrays", "encode_arrays", "load_arrays",
           "read_arrays", "write_arrays"]
