"""An organisers'-format Subtask B folder with pixels drawn by code, for tests and benchmarks.

:func:`write_organiser_layout` writes the files of a listing like the organisers' ``image-files.txt``
(``data/train/NNNN/train-CCCC-NNNN.png``, ``data/test/test-CCCC-XXXX.png``) beside their ``train.csv`` and
``models.csv``: content CCCC is a scene drawn by code (:func:`~modelseek.style.generated.draw_content`),
model NNNN a parametric style (:func:`~modelseek.style.generated.make_styles`), rendered at ``render`` px,
enlarged to ``size`` px and given a per-image grain, so that a 1024-px file holds about as many bytes as a
real SDXL render (about 1 MB) and costs as much to decode. A test image's model is hidden in the real task;
here every test content is rendered once in each model's style (a seeded permutation) and the answers go to
``DEST/test-truth.csv`` (``image_id,model_id``), outside ``data/``.

PNGs are encoded here (8-bit RGB, the ``Up`` filter, zlib level 1): the format a participant's files have,
written several times faster than Pillow's adaptive encoder, so that generating 7,565 files at 1024 px
takes minutes.
"""

from __future__ import annotations

import csv
import re
import struct
import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from ..core.errors import InputError

_TRAIN = re.compile(r"^data/train/(\d+)/(train-(\d+)-(\d+)\.png)$")
_TEST = re.compile(r"^data/test/(test-(\d+)-(\d+)\.png)$")


def png_bytes(img: np.ndarray, level: int = 1) -> bytes:
    """An 8-bit RGB PNG of an H x W x 3 uint8 array (filter ``Up`` on every row, zlib ``level``)."""
    h, w, _ = img.shape
    rows = np.ascontiguousarray(img, np.uint8).reshape(h, w * 3)
    up = np.empty_like(rows)
    up[0] = rows[0]
    np.subtract(rows[1:], rows[:-1], out=up[1:])  # modulo 256, as the filter defines
    raw = np.concatenate([np.full((h, 1), 2, np.uint8), up], axis=1).tobytes()

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, level)) + chunk(b"IEND", b""))


def parse_listing(lines: Iterable[str]) -> tuple[list[tuple[str, int, int]], list[tuple[str, int]]]:
    """``(path, content, model)`` of the training files and ``(path, content)`` of the test files of a
    listing like ``image-files.txt``."""
    train, test = [], []
    for lineno, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line:
            continue
        if m := _TRAIN.match(line):
            if int(m.group(1)) != int(m.group(4)):
                raise InputError(f"folder {m.group(1)} holds an image of model {m.group(4)}", line=lineno)
            train.append((line, int(m.group(3)), int(m.group(4))))
        elif m := _TEST.match(line):
            test.append((line, int(m.group(2))))
        else:
            raise InputError(f"not a Subtask B image path: {line[:80]!r}", line=lineno)
    return train, test


class _Renderer:
    def __init__(self, n_models: int, size: int, render: int, seed: int, grain: float) -> None:
        from .generated import make_styles  # lazy: scipy

        self.styles = make_styles(max(n_models, 2), seed)
        self.size, self.render, self.seed, self.grain = size, min(render, size), seed, grain

    def __call__(self, content: int, model: int, key: int) -> np.ndarray:
        from PIL import Image  # lazy: PIL

        from .generated import draw_content  # lazy: scipy

        x = draw_content(self.render, np.random.default_rng([self.seed, 3, content])).astype(np.float64) / 255
        r = np.random.default_rng([self.seed, 4, content, model, key])
        y = np.clip(self.styles[(model - 1) % len(self.styles)][1](x, r), 0, 1)
        img = np.round(y * 255).astype(np.uint8)
        if self.size != self.render:
            img = np.asarray(Image.fromarray(img).resize((self.size, self.size), Image.Resampling.BICUBIC))
        if self.grain > 0:  # sensor-like grain at half resolution: about a real render's bytes per pixel
            half = max(1, self.size // 2)
            g = r.normal(0, self.grain, (half, half, 1)).astype(np.float32)
            g = np.repeat(np.repeat(g, 2, axis=0), 2, axis=1)[: self.size, : self.size]
            img = np.clip(img.astype(np.float32) + g, 0, 255).astype(np.uint8)
        return img


_RENDERER: _Renderer | None = None


def _init(*args) -> None:
    global _RENDERER
    _RENDERER = _Renderer(*args)


def _write(job) -> None:
    path, content, model, key = job
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    if _RENDERER is None:
        raise RuntimeError("_write runs in a worker set up by _init_renderer")
    tmp.write_bytes(png_bytes(_RENDERER(content, model, key)))
    tmp.replace(path)


def write_organiser_layout(dest: str | Path, listing: str | Path, train_csv: str | Path, models_csv: str | Path,
                           size: int = 1024, render: int = 256, seed: int = 0, grain: float = 2.0,
                           models: Sequence[int] | None = None, test_contents: int | None = None,
                           workers: int = 1, progress: bool = False) -> Path:
    """Write ``DEST/data`` (the organisers' layout: CSVs, ``train/NNNN/``, ``test/``) for the files of
    ``listing``, and ``DEST/test-truth.csv``; returns ``DEST/data``. Files already there are kept (a
    generation can be resumed). ``models`` keeps only those model ids (train rows, models.csv rows, and test
    images rendered in their styles); ``test_contents`` keeps the first N test contents."""
    dest = Path(dest)
    data = dest / "data"
    train, test = parse_listing(Path(listing).read_text().splitlines())
    with open(models_csv, newline="") as fh:
        mrows = list(csv.DictReader(fh))
    keep = {int(r["id"]) for r in mrows} if models is None else {int(m) for m in models}
    mrows = [r for r in mrows if int(r["id"]) in keep]
    ids = sorted(keep)
    with open(train_csv, newline="") as fh:
        reader = csv.DictReader(fh)
        fields = list(reader.fieldnames or [])
        trows = [r for r in reader if int(r["model_id"]) in keep]
    wanted = {r["image_id"] for r in trows}
    train = [t for t in train if t[2] in keep and Path(t[0]).name in wanted]
    contents = sorted({c for _, c in test})
    if test_contents is not None:
        contents = contents[:test_contents]
    test = [t for t in test if t[1] in set(contents)]
    data.mkdir(parents=True, exist_ok=True)
    with open(data / "models.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(mrows[0].keys()))
        w.writeheader()
        w.writerows(mrows)
    with open(data / "train.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields)
        w.writeheader()
        w.writerows(trows)
    params = (max(ids), size, render, seed, grain)
    jobs = [(data / Path(p).relative_to("data"), c, m, 0) for p, c, m in train]
    truth = []
    by_content: dict[int, list[str]] = {}
    for p, c in test:
        by_content.setdefault(c, []).append(p)
    for c, paths in sorted(by_content.items()):
        perm = np.random.default_rng([seed, 5, c]).permutation(len(paths))
        for j, p in enumerate(paths):
            m = ids[int(perm[j]) % len(ids)]
            jobs.append((data / Path(p).relative_to("data"), c, m, 1 + j))
            truth.append((Path(p).name, m))
    with open(dest / "test-truth.csv", "w", newline="") as fh:
        tw = csv.writer(fh)
        tw.writerow(["image_id", "model_id"])
        tw.writerows(truth)
    jobs = [j for j in jobs if not j[0].exists()]
    if workers > 1 and jobs:
        from multiprocessing import get_context

        with get_context("spawn").Pool(workers, initializer=_init, initargs=params) as pool:
            for k, _ in enumerate(pool.imap_unordered(_write, jobs, chunksize=16)):
                if progress and k % 500 == 0:
                    print(f"  generated {k:,}/{len(jobs):,} files", flush=True)
    else:
        _init(*params)
        for job in jobs:
            _write(job)
    (data / "test").mkdir(exist_ok=True)
    return data


def write_organiser_sources(dest: str | Path, n_models: int = 4, train_contents: Sequence[int] = (1, 2, 3, 4),
                            test_contents: Sequence[int] = (5, 6), seed: int = 0) -> tuple[Path, Path, Path]:
    """A small listing, ``train.csv`` and ``models.csv`` in the organisers' formats (for tests on a fresh
    clone, where their files are absent): every training content in every model's style, and ``n_models``
    test images per test content. Returns the three paths."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng([seed, 6])
    lines, rows = [], []
    for m in range(1, n_models + 1):
        for c in train_contents:
            name = f"train-{c:04d}-{m:04d}.png"
            lines.append(f"data/train/{m:04d}/{name}")
            rows.append([name, "train", m, c, int(rng.integers(0, 16))])
    for c in test_contents:
        for x in sorted(rng.choice(9999, n_models, replace=False) + 1):
            lines.append(f"data/test/test-{c:04d}-{int(x):04d}.png")
    listing = dest / "image-files.txt"
    listing.write_text("".join(line + "\n" for line in sorted(lines)))
    with open(dest / "train.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["image_id", "split", "model_id", "content_image_id", "best_seed"])
        w.writerows(rows)
    with open(dest / "models.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "model_name", "model_id", "model_version_id", "version_name", "civitai_url",
                    "trigger_words"])
        for m in range(1, n_models + 1):
            w.writerow([m, f"style LoRA {m}", 100 + m, 200 + m, "v1", f"https://example.org/{m}", f"style{m}"])
    return listing, dest / "train.csv", dest / "models.csv"
