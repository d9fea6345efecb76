"""An on-disk array cache: atomic writes, verified reads.

Each entry is ``<key>.npy`` plus ``<key>.json`` holding the SHA-256 of the array file and free metadata.
Both are written with :func:`modelseek.io.atomic_write_bytes` (array first, then the manifest), so a
reader never sees a half-written entry: an entry without a manifest, or whose bytes do not match the
recorded hash, or that fails to parse, is treated as missing (and will be recomputed and overwritten).
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
from pathlib import Path
from typing import Any

import numpy as np

from ..io import atomic_write_bytes, atomic_write_text

log = logging.getLogger(__name__)


class ArrayCache:
    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(root)

    def _paths(self, key: str) -> tuple[Path, Path]:
        parts = ["".join(c if c.isalnum() or c in "-_." else "_" for c in part).lstrip(".") or "_"
                 for part in key.split("/")]  # '/' makes sub-folders (one per model)
        base = self.root.joinpath(*parts)
        return base.with_name(base.name + ".npy"), base.with_name(base.name + ".json")

    def get(self, key: str) -> np.ndarray | None:
        arr_p, man_p = self._paths(key)
        if not (arr_p.exists() and man_p.exists()):
            return None
        try:
            manifest = json.loads(man_p.read_text(encoding="utf-8"))
            data = arr_p.read_bytes()
            if hashlib.sha256(data).hexdigest() != manifest.get("sha256"):
                log.warning("cache entry %s is corrupt (hash mismatch); recomputing", arr_p)
                return None
            return np.load(io.BytesIO(data), allow_pickle=False)
        except (OSError, ValueError, json.JSONDecodeError) as exc:
            log.warning("cache entry %s unreadable (%s); recomputing", arr_p, exc)
            return None

    def put(self, key: str, array: np.ndarray, meta: dict[str, Any] | None = None) -> None:
        arr_p, man_p = self._paths(key)
        buf = io.BytesIO()
        np.save(buf, np.ascontiguousarray(array), allow_pickle=False)
        data = buf.getvalue()
        atomic_write_bytes(arr_p, data)
        manifest = {"sha256": hashlib.sha256(data).hexdigest(), "shape": list(array.shape),
                    "dtype": str(array.dtype), **(meta or {})}
        atomic_write_text(man_p, json.dumps(manifest, indent=1, sort_keys=True, default=str))
