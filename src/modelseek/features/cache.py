"""A content-addressed, verified on-disk cache of feature matrices.

Each entry is one file ``<key>.feat`` named by the SHA-256 of everything that determines the features
(model id and revision, layer, pooling, max_length, a fingerprint of the texts, the format version), in the
package's one verified cache format (:mod:`modelseek.cache`: atomic writes; a read checks the header, the
key, the size and the SHA-256 of the payload), so a truncated, corrupted or mismatched file is reported,
removed and recomputed instead of trusted. The folder follows the one cache policy
(:func:`modelseek.cache.cache_dir`).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np

from ..cache import CorruptCacheError, cache_dir, load_arrays, write_arrays

FORMAT_VERSION = 2  # 2: the shared verified format of modelseek.cache


def default_cache_dir() -> Path:
    """The feature cache folder: :func:`modelseek.cache.cache_dir` ``("features")``."""
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
        return write_arrays(self.path(key), {"features": array}, {"key": key, "fields": dict(fields)})

    def get(self, key: str) -> np.ndarray | None:
        """The stored array, or None when absent or corrupt (a corrupt file is logged and removed)."""
        arrays = load_arrays(self.path(key), {"key": key}, what="feature cache")
        return None if arrays is None else arrays.get("features")


__all__ = ["CorruptCacheError", "FeatureCache", "cache_key", "default_cache_dir", "texts_fingerprint"]
