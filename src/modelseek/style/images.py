"""Reading image files for style retrieval: checked headers, decoding at reduced size, content checksums.

Every image file is assumed hostile. :func:`probe` reads only the header and refuses, with one line naming
the file, what cannot be an image of the task: no image at all, a truncated header, more than
:data:`MAX_PIXELS` pixels (a decompression bomb: a 20,000 x 20,000 PNG is refused before a byte of pixel
data is inflated) or a pixel mode outside :data:`MODES`. Modes are then read as the organisers' loader reads
them (``Image.open(p).convert("RGB")``): palette images through their palette, RGBA and LA with the alpha
channel dropped, grey as grey in all three channels, and 16-bit grey (``I;16``) scaled to 8 bits
(``value / 257``; Pillow's own conversion would clip it to white). 16-bit RGB(A) PNGs are opened by Pillow
as 8-bit RGB(A) (the high byte of each sample).

:func:`decode` decodes at reduced size where the format allows it: JPEG through libjpeg's DCT scaling
(``Image.draft``); PNG cannot be decoded at reduced size, so it is inflated once and at once reduced by an
integer box filter (``Image.reduce``) to at most twice the target before the antialiased resize: a 1024-px
image costs one inflate and a cheap reduce instead of a full-size antialiased resample. The shorter side
then goes to ``size`` and the centre ``size`` x ``size`` square is kept.

:func:`file_digest` is the SHA-1 of a file's bytes: the style feature cache keys an image's features by it,
so that features follow the content (a renamed or copied file reuses them; a changed file never does).
"""

from __future__ import annotations

import hashlib
import io
import os
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..core.errors import InputError

#: the largest image read (pixels); Pillow's own default limit, enforced here before decoding
MAX_PIXELS = 89_478_485
#: pixel modes read (see the module docstring); others are refused
MODES = ("RGB", "RGBA", "RGBX", "L", "LA", "P", "PA", "1", "CMYK", "YCbCr", "I;16", "I;16B", "I;16L", "I")
_SIXTEEN = ("I;16", "I;16B", "I;16L", "I")
#: ``warnings.catch_warnings`` swaps the process's filter list: the reading threads take turns (opening reads
#: only the header, so this costs nothing measurable)
_OPEN_LOCK = threading.Lock()


@dataclass(frozen=True)
class ImageInfo:
    """What the header says: format (``PNG``...), width, height and pixel mode."""

    format: str
    width: int
    height: int
    mode: str


def _fail(path, message: str, field: str | None = None):
    return InputError(message, path=path, field=field)


def _open(src, path):
    """``Image.open`` with every failure located: not an image, a decompression bomb, an unreadable file."""
    from PIL import Image, UnidentifiedImageError  # lazy: PIL

    with _OPEN_LOCK, warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            return Image.open(src)
        except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
            raise _fail(path, f"image too large, a possible decompression bomb ({exc}); at most "
                              f"{MAX_PIXELS:,} pixels are read") from None
        except UnidentifiedImageError:
            raise _fail(path, "cannot decode image: not an image file (no known image format)") from None
        except IsADirectoryError:
            raise _fail(path, "is a folder, expected an image file") from None
        except FileNotFoundError:
            raise _fail(path, "image file does not exist") from None
        except (OSError, SyntaxError, ValueError, EOFError) as exc:
            raise _fail(path, f"cannot read the image header: {exc}") from None


def _check(im, path) -> ImageInfo:
    w, h = im.size
    if w < 1 or h < 1:
        raise _fail(path, f"image has no pixels ({w} x {h})")
    if w * h > MAX_PIXELS:
        raise _fail(path, f"image is {w:,} x {h:,} pixels, more than the {MAX_PIXELS:,} read (a possible "
                          f"decompression bomb)")
    if im.mode not in MODES:
        raise _fail(path, f"image mode {im.mode!r} is not read (read: 8-bit RGB, RGBA, grey, palette, CMYK; "
                          f"16-bit grey and RGB)")
    return ImageInfo(str(im.format or "?"), int(w), int(h), str(im.mode))


def probe(path: str | os.PathLike) -> ImageInfo:
    """The header of the image file at ``path``, checked (see the module docstring); no pixel is decoded."""
    path = Path(path)
    im = _open(path, path)
    try:
        return _check(im, path)
    finally:
        im.close()


def _to_rgb(im, path):
    from PIL import Image  # lazy: PIL

    if im.mode in _SIXTEEN:
        a = np.asarray(im, dtype=np.float64)
        g = np.clip(np.round(a / 257.0), 0, 255).astype(np.uint8)
        return Image.fromarray(np.stack([g] * 3, axis=-1), "RGB")
    if im.mode == "P" and "transparency" in im.info:
        im = im.convert("RGBA")
    return im if im.mode == "RGB" else im.convert("RGB")


def decode(src: str | os.PathLike | bytes, size: int | None = None, path: str | os.PathLike | None = None
           ) -> np.ndarray:
    """The image (a file, or its bytes with ``path`` naming it in errors) as H x W x 3 uint8 RGB; with
    ``size``, reduced as early as the format allows, resized (shorter side = ``size``, antialiased bilinear)
    and centre-cropped to ``size`` x ``size``."""
    from PIL import Image  # lazy: PIL

    where = path if path is not None else src
    im = _open(io.BytesIO(src) if isinstance(src, (bytes, bytearray)) else src, where)
    try:
        _check(im, where)
        if size is not None and im.format == "JPEG":
            im.draft("RGB", (size, size))  # libjpeg decodes at 1/2, 1/4 or 1/8 scale, never below the target
        try:
            im.load()
        except (OSError, SyntaxError, ValueError, EOFError, Image.DecompressionBombError) as exc:
            raise _fail(where, f"cannot decode image: {exc}") from None
        im = _to_rgb(im, where)
        if size is None:
            return np.asarray(im)
        w, h = im.size
        factor = min(w, h) // (2 * size)
        if factor >= 2:
            im = im.reduce(factor)  # integer box filter: exact averaging, a fraction of a resample's cost
        return _square(im, size)
    finally:
        im.close()


def _square(im, size: int) -> np.ndarray:
    from PIL import Image  # lazy: PIL

    w, h = im.size
    if (w, h) == (size, size):
        return np.asarray(im)
    s = size / min(w, h)
    nw, nh = max(size, round(w * s)), max(size, round(h * s))
    im = im.resize((nw, nh), Image.Resampling.BILINEAR)
    top, left = (nh - size) // 2, (nw - size) // 2
    return np.asarray(im.crop((left, top, left + size, top + size)))


def read_bytes(path: str | os.PathLike) -> bytes:
    """The bytes of an image file; a missing file, a folder or an unreadable file is a located error."""
    path = Path(path)
    try:
        return path.read_bytes()
    except IsADirectoryError:
        raise _fail(path, "is a folder, expected an image file") from None
    except FileNotFoundError:
        raise _fail(path, "image file does not exist") from None
    except OSError as exc:
        raise _fail(path, f"cannot read the image file ({exc.strerror or exc})") from None


def digest(data: bytes) -> str:
    """SHA-1 of a file's bytes (the cache key of its features)."""
    return hashlib.sha1(data, usedforsecurity=False).hexdigest()


def file_digest(path: str | os.PathLike) -> str:
    return digest(read_bytes(path))
