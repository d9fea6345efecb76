"""A content-addressed, verified on-disk cache of feature matrices.

Each entry is one file ``<key>.feat`` named by the SHA-256 of everything that determines the features
(model id and revision, layer, pooling, max_length, a fingerprint of the texts, the format version), in the
package's one verified cache format (:mod:`modelseek.core.cache`: atomic writes; a read checks the header, the
key, the size and the SHA-256 of the payload), so a truncated, corrupted or mismatched file is reported,
removed and recomputed instead of trusted. The folder follows the one cache policy
(:func:`modelseek.core.cache.cache_dir`).

The scores computed from these features are kept beside them, per candidate job, in ``scores.sqlite`` (see
:mod:`modelseek.retrieval.rankers.feature_jobs`). ``MODELSEEK_FEATURE_WRITE_LOG=FILE`` appends one JSON line per entry
written (key, model, pid, host, time) to ``FILE``: an audit of which process computed what, e.g. that several
processes or Ray workers sharing a cache computed each entry once.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ...core.cache import CorruptCacheError, cache_dir, load_arrays, write_arrays
from ...core.errors import InputError

FORMAT_VERSION = 2  # 2: the shared verified format of modelseek.core.cache
#: environment variable naming the write audit log (see the module doc)
WRITE_LOG_ENV = "MODELSEEK_FEATURE_WRITE_LOG"


def _append_line(path: str, record: Mapping[str, Any]) -> None:
    """One JSON line appended with a single write on an O_APPEND descriptor (lines of concurrent writers do not
    interleave)."""
    line = (json.dumps(record, sort_keys=True, default=str) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def default_cache_dir() -> Path:
    """The feature cache folder: :func:`modelseek.core.cache.cache_dir` ``("features")``."""
    return cache_dir("features")


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


class FeatureCache:
    """Feature matrices stored under ``root`` by content key."""

    def __init__(self, root: str | os.PathLike | None = None) -> None:
        self.root = Path(root) if root is not None else default_cache_dir()

    def ensure_usable(self) -> None:
        """Create the cache folder and prove it writable, or raise InputError naming it (a file in the way,
        no permission): checked once before a run, so that an unusable cache is one clear error instead of
        a failure per candidate."""
        import tempfile


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
        path = write_arrays(self.path(key), {"features": array}, {"key": key, "fields": dict(fields)})
        audit = os.environ.get(WRITE_LOG_ENV)
        if audit:
            _append_line(audit, {"key": key, "model": fields.get("model"), "output": fields.get("output"),
                                 "pid": os.getpid(), "host": socket.gethostname(), "time": time.time()})
        return path

    def get(self, key: str) -> np.ndarray | None:
        """The stored array, or None when absent or corrupt (a corrupt file is logged and removed)."""
        arrays = load_arrays(self.path(key), {"key": key}, what="feature cache")
        return None if arrays is None else arrays.get("features")


__all__ = ["WRITE_LOG_ENV", "CorruptCacheError", "FeatureCache", "cache_key", "default_cache_dir", "texts_fingerprint"]
