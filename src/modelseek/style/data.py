"""Labelled image sets for style retrieval: the NTCIR-19 Subtask B layout and folder-per-label sets.

A :class:`StyleDataset` is a list of images (files on disk, or arrays held in memory for generated sets)
with optional style labels (model ids) and content groups. Query ids follow Subtask B's run rules: the
image name without ``.png`` (and without leading zeros when the name is a number); model ids are the ``id``
column of ``models.csv`` (the column ``train.csv``'s ``model_id`` refers to).

Subtask B layout (``ROOT``)::

    train.csv            image_id, split, model_id, content_image_id[, best_seed]
    models.csv           id, model_name, ... (85 style LoRAs)
    content-images.csv   image_id, image_url (optional)
    test-image-ids.txt   one test image name per line
    images/ (or --images DIR)   the image files; looked up in DIR, DIR/train and DIR/test

Folder-per-label layout: ``ROOT/<label>/<image>``; the label is the folder name and the content group is
the file stem (the same content rendered in several styles shares its file name).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..retrieval.data.run import natural_key, normalize_b_id
from ..retrieval.data.style_truth import read_csv_rows as _read_csv
from ..core.errors import InputError
from ..core.io import read_text
from .images import decode, read_bytes

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".bmp", ".gif", ".tif", ".tiff")


@dataclass(frozen=True)
class StyleModels:
    """The candidate style models: ids (docIDs of a run) and readable names, in file order."""

    ids: tuple[str, ...]
    names: tuple[str, ...]
    source: str = ""

    def __post_init__(self) -> None:
        if len(set(self.ids)) != len(self.ids):
            raise InputError("duplicate model ids", path=self.source or None, field="id")

    def __len__(self) -> int:
        return len(self.ids)

    def __contains__(self, model_id: object) -> bool:
        return str(model_id) in set(self.ids)

    def name(self, model_id: str) -> str:
        return dict(zip(self.ids, self.names)).get(str(model_id), str(model_id))

    @classmethod
    def from_labels(cls, labels: Sequence[str]) -> StyleModels:
        ids = tuple(sorted({str(x) for x in labels}, key=natural_key))
        return cls(ids, ids)


@dataclass
class StyleDataset:
    """Images with optional labels (model ids) and content groups.

    Either ``paths`` (files) or ``arrays`` (H x W x 3 uint8 images in memory) is set. ``ids`` are query ids
    in Subtask B form. ``labels[i]`` is a model id of ``models`` or None for an unlabelled query.
    """

    ids: list[str]
    models: StyleModels
    paths: list[Path] | None = None
    arrays: list[np.ndarray] | None = None
    labels: list[str] | None = None
    groups: list[str] | None = None
    source: str = ""
    _lines: list[int] | None = field(default=None, repr=False)  # source line of each image (for errors)

    def __post_init__(self) -> None:
        n = len(self.ids)
        if (self.paths is None) == (self.arrays is None):
            raise ValueError("give exactly one of paths or arrays")
        for name in ("paths", "arrays", "labels", "groups"):
            v = getattr(self, name)
            if v is not None and len(v) != n:
                raise ValueError(f"{name} has {len(v)} items for {n} ids")
        if len(set(self.ids)) != n:
            dup = next(i for i in self.ids if self.ids.count(i) > 1)
            raise InputError(f"duplicate image id {dup!r}", path=self.source or None, field="image_id")
        if self.labels is not None:
            known = set(self.models.ids)
            for i, lab in enumerate(self.labels):
                if lab is not None and lab not in known:
                    line = self._lines[i] if self._lines else None
                    raise InputError(f"label {lab!r} is not in models.csv", path=self.source or None, line=line,
                                     field="model_id")

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def labelled(self) -> bool:
        return self.labels is not None and all(x is not None for x in self.labels)

    def known_labels(self, message: str = "training images need labels") -> list[str]:
        """``labels`` of a fully labelled data set; otherwise an InputError naming its file."""
        if self.labels is None or not self.labelled:
            raise InputError(message, path=self.source or None)
        return self.labels

    def subset(self, index: Sequence[int]) -> StyleDataset:
        idx = [int(i) for i in index]

        def pick(xs):
            return None if xs is None else [xs[i] for i in idx]

        return StyleDataset([self.ids[i] for i in idx], self.models, pick(self.paths), pick(self.arrays),
                            pick(self.labels), pick(self.groups), self.source, pick(self._lines))

    def image(self, i: int, size: int | None = None) -> np.ndarray:
        """Image ``i`` as H x W x 3 uint8 (resized and centre-cropped to ``size`` x ``size`` if given)."""
        if self.arrays is not None:
            img = _as_rgb(np.asarray(self.arrays[i]), self.ids[i])
            return img if size is None else resize_square(img, size)
        assert self.paths is not None  # exactly one of paths / arrays (__post_init__)
        return read_image(self.paths[i], size)

    def key(self, i: int) -> str:
        """A string identifying image ``i``'s content for caches (file path, size and mtime; or array hash)."""
        import hashlib

        if self.paths is not None:
            p = Path(self.paths[i])
            try:
                st = p.stat()
            except OSError:
                raise InputError("no such image", path=p) from None
            return f"file:{p.resolve()}:{st.st_size}:{st.st_mtime_ns}"
        assert self.arrays is not None  # exactly one of paths / arrays (__post_init__)
        a = np.ascontiguousarray(self.arrays[i])
        return f"array:{a.shape}:{hashlib.sha256(a.tobytes()).hexdigest()}"


# --------------------------------------------------------------------------------------------- images
def _as_rgb(img: np.ndarray, where: str) -> np.ndarray:
    if img.ndim == 2:
        img = np.stack([img] * 3, axis=-1)
    if img.ndim != 3 or img.shape[2] not in (3, 4):
        raise InputError(f"image must be H x W x 3, got shape {img.shape}", path=where)
    img = img[..., :3]
    if img.dtype != np.uint8:
        if np.issubdtype(img.dtype, np.floating):
            img = np.clip(np.round(img * 255.0), 0, 255)
        img = img.astype(np.uint8)
    return img


def resize_square(img: np.ndarray, size: int) -> np.ndarray:
    """Resize the shorter side to ``size`` (bilinear, antialiased) and centre-crop to ``size`` x ``size``."""
    from PIL import Image  # lazy: PIL

    h, w = img.shape[:2]
    if (h, w) == (size, size):
        return img
    s = size / min(h, w)
    nh, nw = max(size, round(h * s)), max(size, round(w * s))
    im = Image.fromarray(img).resize((nw, nh), Image.Resampling.BILINEAR)
    top, left = (nh - size) // 2, (nw - size) // 2
    return np.asarray(im.crop((left, top, left + size, top + size)))


def read_image(path: str | Path, size: int | None = None) -> np.ndarray:
    """Read an image file as RGB uint8 (:func:`modelseek.style.images.decode`: checked header, reduced
    decoding); :class:`InputError` naming the file when it is missing or cannot be decoded."""
    return decode(read_bytes(path), size, path=path)


# ------------------------------------------------------------------------------------- Subtask B layout
def load_models(path: str | Path) -> StyleModels:
    """``models.csv`` of Subtask B: the ``id`` column (docIDs) and ``model_name``."""
    path = Path(path)
    rows = _read_csv(path, ["id"])
    ids: list[str] = []
    names: list[str] = []
    seen: dict[str, int] = {}
    for lineno, row in rows:
        mid = normalize_b_id(row["id"])
        if mid in seen:
            raise InputError(f"duplicate model id {mid!r} (first on line {seen[mid]})", path=path, line=lineno,
                             field="id")
        seen[mid] = lineno
        ids.append(mid)
        names.append(row.get("model_name") or mid)
    return StyleModels(tuple(ids), tuple(names), str(path))


def _find_image(name: str, dirs: Sequence[Path], source: Path | None = None, line: int | None = None,
                field: str | None = None) -> Path:
    """The file of image ``name`` in the first of ``dirs`` holding it; a missing one is an InputError naming
    ``source`` (the list or table naming the image, at ``line``) when given, else the expected path."""
    # an image_id with or without its file's .png (the organisers' train.csv writes it; a hand-made list may not)
    names = [name] if name.lower().endswith(tuple(IMAGE_SUFFIXES)) else [name, f"{name}.png"]
    for d, nm in ((d, nm) for d in dirs for nm in names):
        p = d / nm
        try:
            if p.is_file():
                return p
        except (OSError, ValueError) as exc:  # a name longer than the file system allows, a NUL byte
            where = {"path": source, "line": line, "field": field} if source is not None else {"path": d}
            raise InputError(f"image name {name[:60]!r}{'...' if len(name) > 60 else ''} is no usable file name "
                             f"({getattr(exc, 'strerror', None) or exc})", **where) from None
    shown = ", ".join(str(d) for d in dirs)
    if source is not None:
        raise InputError(f"image {name!r} not found in {shown}", path=source, line=line, field=field)
    raise InputError(f"image {name!r} not found in {shown}", path=dirs[0] / name if dirs else name)


def _image_dirs(root: Path, images: str | Path | None) -> list[Path]:
    base = Path(images) if images is not None else root / "images"
    if not base.is_dir():
        raise InputError("images folder not found (the Subtask B images are distributed separately; give "
                         "their folder as `images`)", path=base)
    return [d for d in (base, base / "train", base / "test") if d.is_dir()]


def load_subtask_b_train(root: str | Path, images: str | Path | None = None) -> StyleDataset:
    """The labelled training images of a Subtask B layout (groups = ``content_image_id``)."""
    root = Path(root)
    models = load_models(root / "models.csv")
    path = root / "train.csv"
    rows = _read_csv(path, ["image_id", "model_id", "content_image_id"])
    known = set(models.ids)
    for lineno, row in rows:
        if normalize_b_id(row["model_id"]) not in known:
            raise InputError(f"label {row['model_id']!r} is not in models.csv", path=path, line=lineno,
                             field="model_id")
    dirs = _image_dirs(root, images)

    def where(mid: str) -> list[Path]:  # also DIR/train/NNNN/: --images pointing at the organisers' data/ folder
        sub = f"{int(mid):04d}" if mid.isdigit() else mid
        return dirs + [d / sub for d in dirs if (d / sub).is_dir()]

    paths = [_find_image(row["image_id"], where(normalize_b_id(row["model_id"])), path, lineno, "image_id")
             for lineno, row in rows]
    return StyleDataset(ids=[normalize_b_id(r["image_id"]) for _, r in rows], models=models, paths=paths,
                        labels=[normalize_b_id(r["model_id"]) for _, r in rows],
                        groups=[normalize_b_id(r["content_image_id"]) for _, r in rows], source=str(path),
                        _lines=[ln for ln, _ in rows])


def read_image_list(path: str | Path) -> list[str]:
    """Image names, one per line (blank lines ignored; duplicates rejected)."""
    return [name for _, name in read_image_list_located(path)]


def read_image_list_located(path: str | Path) -> list[tuple[int, str]]:
    """``(line, name)`` of each image name of a list file (see :func:`read_image_list`)."""
    path = Path(path)
    names: list[tuple[int, str]] = []
    seen: dict[str, int] = {}
    for lineno, raw in enumerate(read_text(path).split("\n"), start=1):
        name = raw.strip()
        if not name:
            continue
        if name in seen:
            raise InputError(f"duplicate image {name!r} (first on line {seen[name]})", path=path, line=lineno)
        seen[name] = lineno
        names.append((lineno, name))
    if not names:
        raise InputError("no image names", path=path)
    return names


def load_subtask_b_test(root: str | Path, images: str | Path | None = None,
                        ids_file: str | Path | None = None) -> StyleDataset:
    """The unlabelled test images named in ``test-image-ids.txt`` (query ids without ``.png``)."""
    root = Path(root)
    models = load_models(root / "models.csv")
    ids_file = Path(ids_file or root / "test-image-ids.txt")
    located = read_image_list_located(ids_file)
    dirs = _image_dirs(root, images)
    return StyleDataset(ids=[normalize_b_id(n) for _, n in located], models=models,
                        paths=[_find_image(n, dirs, ids_file, ln) for ln, n in located], source=str(ids_file))


def is_subtask_b(root: str | Path) -> bool:
    root = Path(root)
    return (root / "train.csv").is_file() and (root / "models.csv").is_file()


# --------------------------------------------------------------------------------------- folder layout
def _images_in(folder: Path) -> list[Path]:
    return sorted((p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES),
                  key=lambda p: natural_key(p.name))


def load_folder_dataset(root: str | Path, models: StyleModels | str | Path | None = None) -> StyleDataset:
    """``ROOT/<label>/<image>``: labels are folder names, groups are file stems, ids are ``label/stem``.

    ``models`` (a models.csv or :class:`StyleModels`) fixes the candidate set; a folder whose name is not
    one of its ids is an error. Without it the candidates are the folder names.
    """
    root = Path(root)
    if not root.is_dir():
        raise InputError("no such folder", path=root)
    folders = sorted((d for d in root.iterdir() if d.is_dir()), key=lambda d: natural_key(d.name))
    if not folders:
        raise InputError("no label folders (expected ROOT/<label>/<image>)", path=root)
    if models is not None and not isinstance(models, StyleModels):
        models = load_models(models)
    if models is None:
        models = StyleModels.from_labels([d.name for d in folders])
    ids, paths, labels, groups = [], [], [], []
    for d in folders:
        label = normalize_b_id(d.name)
        if label not in models:
            raise InputError(f"label {d.name!r} is not in models.csv ({models.source})", path=d, field="label")
        for p in _images_in(d):
            ids.append(f"{label}/{p.stem}")
            paths.append(p)
            labels.append(label)
            groups.append(p.stem)
    if not ids:
        raise InputError("no images in the label folders", path=root)
    return StyleDataset(ids, models, paths=paths, labels=labels, groups=groups, source=str(root))


def load_query_folder(folder: str | Path, models: StyleModels) -> StyleDataset:
    """Unlabelled query images: every image file of ``folder`` (query id = file name without suffix)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError("no such folder", path=folder)
    paths = _images_in(folder)
    if not paths:
        raise InputError("no images", path=folder)
    return StyleDataset([normalize_b_id(p.stem) for p in paths], models, paths=paths, source=str(folder))
