"""A content-addressed, verified on-disk cache of feature matrices.

Each entry is one file ``<key>.feat`` named by the SHA-256 of everything that determines the features
(model id and revision, layer, pooling, max_length, a fingerprint of the texts, the format version). The file
holds a one-line JSON header (the key fields, shape, dtype and the SHA-256 of the payload) followed by the raw
array bytes. Writes are atomic (:func:`modelseek.io.atomic_write_bytes`); a read re-hashes the payload and
compares the header with the expected key, so a truncated, corrupted or mismatched file is reported, removed
and recomputed instead of trusted.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np

from ..io import atomic_write_bytes

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
_MAGIC = b"MSFEAT1\n"


def default_cache_dir() -> Path:
    """``$MODELSEEK_CACHE/features`` if set, else ``~/.cache/modelseek/features``."""
    root = os.environ.get("MODELSEEK_CACHE")
    return (Path(root) if root else Path.home() / ".cache" / "modelseek") / "features"


def texts_fingerprint(texts: Iterable[str]) -> str:
    """SHA-256 over the texts in order, each length-prefixed so that boundaries count."""
    h = hashlib.sha256()
    n = 0
    for t in texts:
        b = t.encode("utf-8")
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
        n += 1
    h.update(n.to_bytes(8, "little"))
    return h.hexdigest()


def cache_key(fields: Mapping[str, Any]) -> str:
    blob = json.dumps({"format": FORMAT_VERSION, **fields}, sort_keys=True, default=str).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()


class CorruptCacheError(Exception):
    """A cache file failed verification (internal: the caller recomputes)."""


class FeatureCache:
    """Feature matrices stored under ``root`` by content key."""

    def __init__(self, root: str | os.PathLike | None = None) -> None:
        self.root = Path(root) if root is not None else default_cache_dir()

    def ensure_usable(self) -> None:
        """Create the cache folder and prove it writable, or raise InputError naming it (a file in the way,
        no permission): checked once before a run, so that an unusable cache is one clear error instead of
        a failure per candidate."""
        import tempfile

        from ..errors import InputError

        try:
            if self.root.exists() and not self.root.is_dir():
                raise NotADirectoryError(f"{self.root} is not a folder")
            self.root.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=self.root, prefix=".probe-"):
                pass
        except OSError as exc:
            raise InputError(f"feature cache is not a usable folder ({exc.strerror or exc})",
                             path=self.root, field="cache_dir") from None

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.feat"

    def put(self, key: str, fields: Mapping[str, Any], array: np.ndarray) -> Path:
        array = np.ascontiguousarray(array)
        payload = array.tobytes()
        header = {"key": key, "fields": dict(fields), "shape": list(array.shape), "dtype": array.dtype.str,
                  "sha256": hashlib.sha256(payload).hexdigest()}
        head = json.dumps(header, sort_keys=True, default=str).encode("utf-8") + b"\n"
        p = self.path(key)
        atomic_write_bytes(p, _MAGIC + head + payload)
        return p

    def _read(self, p: Path, key: str) -> np.ndarray:
        data = p.read_bytes()
        if not data.startswith(_MAGIC):
            raise CorruptCacheError("bad magic")
        nl = data.find(b"\n", len(_MAGIC))
        if nl < 0:
            raise CorruptCacheError("no header")
        try:
            header = json.loads(data[len(_MAGIC):nl].decode("utf-8"))
            shape = tuple(int(s) for s in header["shape"])
            dtype = np.dtype(header["dtype"])
        except (ValueError, KeyError, TypeError) as exc:
            raise CorruptCacheError(f"bad header ({exc})") from None
        if header.get("key") != key:
            raise CorruptCacheError("key mismatch")
        payload = data[nl + 1:]
        if hashlib.sha256(payload).hexdigest() != header.get("sha256"):
            raise CorruptCacheError("checksum mismatch")
        if len(payload) != int(np.prod(shape, dtype=np.int64)) * dtype.itemsize:
            raise CorruptCacheError("size mismatch")
        return np.frombuffer(payload, dtype=dtype).reshape(shape).copy()

    def get(self, key: str) -> np.ndarray | None:
        """The stored array, or None when absent or corrupt (a corrupt file is logged and removed)."""
        p = self.path(key)
        if not p.exists():
            return None
        try:
            return self._read(p, key)
        except (CorruptCacheError, OSError) as exc:
            log.warning("feature cache file %s is corrupt (%s); recomputing", p, exc)
            try:
                p.unlink()
            except OSError:
                pass
            return None
