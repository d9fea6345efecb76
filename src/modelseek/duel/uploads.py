"""The files uploaded through the page: read only from Gradio's upload folder (any other path is refused unopened),
at most the store's limit, and deleted once handled or left partial (a mixin of :class:`.handlers.LeaderboardApp`)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from ..core.errors import ModelseekError

#: uploaded files older than this are deleted (identical uploads share one file: not deleted at once)
UPLOAD_TTL = 600.0


def upload_root() -> Path:
    """The folder where Gradio stores the files uploaded through the app."""
    try:
        from gradio.utils import get_upload_folder  # lazy: gradio

        return Path(get_upload_folder()).resolve()
    except ImportError:  # pragma: no cover - gradio is present whenever the app runs
        return Path(os.environ.get("GRADIO_TEMP_DIR", "/tmp/gradio")).resolve()


class UploadFolder:
    """Reading and sweeping the upload folder (``uploads``); the app sets the attributes declared here."""

    store: Any
    uploads: Path
    upload_ttl: float
    _handled: set[Path]

    def _uploaded_path(self, file) -> Path:
        """The path of an uploaded file, refused (without opening it) unless it lies in the upload folder."""
        name: str | os.PathLike | None
        if isinstance(file, (str, os.PathLike)):
            name = file
        else:
            name = getattr(file, "path", None) or getattr(file, "name", None)
        if not name:
            raise ModelseekError("choose a submission file first")
        p = Path(name)
        try:
            real = p.resolve(strict=True)
        except (OSError, RuntimeError):
            raise ModelseekError("the file is not an upload of this page (or it expired: upload it again)") from None
        if self.uploads not in real.parents or p.is_symlink() or not real.is_file():
            raise ModelseekError("only files uploaded through this page are read")
        return real

    def read_upload(self, file) -> tuple[bytes, str]:
        """The bytes of an uploaded file (at most the store's limit; the file is read no further)."""
        p = self._uploaded_path(file)
        limit = self.store.max_bytes
        size = p.stat().st_size
        if size > limit:
            p.unlink(missing_ok=True)
            raise ModelseekError(f"submission too large: {size:,} bytes > limit {limit:,}")
        self._handled.add(p)
        with open(p, "rb") as fh:
            data = fh.read(limit + 1)
        if len(data) > limit:
            raise ModelseekError(f"submission too large: more than {limit:,} bytes")
        return data, p.name

    def sweep_stalled(self, stall: float, now: float | None = None) -> int:
        """Delete the partial uploads (``tmp*`` files Gradio writes at the top of its folder while receiving) that
        no byte reached for ``stall`` seconds: a stalled upload's bytes are freed when it is dropped."""
        now = time.time() if now is None else now
        gone = 0
        if self.uploads.is_dir():
            for path in self.uploads.glob("tmp*"):
                try:
                    if path.is_file() and not path.is_symlink() and now - path.lstat().st_mtime >= stall:
                        path.unlink()
                        gone += 1
                except OSError:
                    continue
        return gone

    def sweep_uploads(self, now: float | None = None) -> int:
        """Delete the uploads this app read and the partial uploads Gradio left (``tmp*`` files at the top of
        its folder) once older than ``upload_ttl``, with their emptied folders; returns how many files.
        Identical uploads share one file, so a file is not deleted when first read; other apps' files in
        Gradio's shared folder are left alone (Gradio's ``delete_cache`` removes unread uploads hourly)."""
        now = time.time() if now is None else now
        gone = 0
        candidates = list(self._handled)
        if self.uploads.is_dir():
            candidates += [q for q in self.uploads.glob("tmp*") if q.is_file() and not q.is_symlink()]
        for path in candidates:
            try:
                if now - path.lstat().st_mtime < self.upload_ttl:
                    continue
                path.unlink()
                gone += 1
            except FileNotFoundError:
                pass
            except OSError:
                continue
            self._handled.discard(path)
            folder = path.parent
            try:
                if folder != self.uploads and self.uploads in folder.parents and not any(folder.iterdir()):
                    folder.rmdir()
            except OSError:
                pass
        return gone
