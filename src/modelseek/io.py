"""Small file helpers: atomic writes (write to a temporary file in the same folder, fsync, rename)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def read_json(path: str | os.PathLike, what: str = "file"):
    """Parse a JSON file; a missing file or malformed JSON is an ``InputError`` naming the path and line."""
    import json

    from .errors import InputError

    path = Path(path)
    if not path.is_file():
        raise InputError(f"no such {what}", path=path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"malformed JSON: {exc.msg} (column {exc.colno})", path=path, line=exc.lineno) from None
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", path=path) from None


def iter_jsonl(path: str | os.PathLike):
    """``(line number, record)`` for each non-blank line of a JSON-lines file; malformed JSON is an
    ``InputError`` naming the path and line."""
    import json

    from .errors import InputError

    with open(path, encoding="utf-8") as fh:
        for ln, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                yield ln, json.loads(raw)
            except json.JSONDecodeError as exc:
                raise InputError(f"malformed JSON: {exc.msg}", path=path, line=ln) from None
