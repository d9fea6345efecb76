"""The organisers' Subtask B layout, as a participant gets it after cloning their repository::

    data/train.csv                      image_id, split, model_id, content_image_id, best_seed
    data/models.csv                     id, model_name, ... (85 style LoRAs; ``id`` is a run's docID)
    data/train/NNNN/train-CCCC-NNNN.png a folder per model (NNNN = model id, zero-padded; CCCC = content)
    data/test/test-CCCC-XXXX.png        flat; the test queries are the files of this folder

``DATA`` may be the ``data/`` folder or the repository root holding it. Training labels and content groups
come from ``train.csv`` (never from file names): an image must lie in the folder of the model ``train.csv``
gives it. The test queries are every image file of ``data/test/`` (hidden files such as ``.gitkeep`` are
skipped); their topicIDs are the file names without ``.png``.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..retrieval.data.run import natural_key, normalize_b_id
from ..core.errors import InputError
from .data import IMAGE_SUFFIXES, StyleDataset, _read_csv, load_models


def organiser_root(path: str | Path) -> Path | None:
    """The ``data/`` folder of an organisers' layout at ``path`` (the folder itself or the repository root
    holding ``data/``), or None when ``path`` is not one: ``train.csv``, ``models.csv`` and a ``train/``
    folder side by side."""
    path = Path(path)
    for d in (path, path / "data"):
        if (d / "train.csv").is_file() and (d / "train").is_dir():
            if not (d / "models.csv").is_file():  # the organisers' layout with its candidate list lost: say so
                raise InputError("missing: the organisers' repository ships models.csv (the style models, the "
                                 "docIDs of a run) beside train.csv; restore it (git checkout data/models.csv)",
                                 path=d / "models.csv", field="models.csv")
            return d
    return None


def _listing(folder: Path) -> list[os.DirEntry]:
    try:
        with os.scandir(folder) as it:
            return sorted((e for e in it if not e.name.startswith(".")), key=lambda e: natural_key(e.name))
    except NotADirectoryError:
        raise InputError("is a file, expected a folder", path=folder) from None
    except FileNotFoundError:
        raise InputError("no such folder", path=folder) from None
    except OSError as exc:
        raise InputError(f"cannot list the folder ({exc.strerror or exc})", path=folder) from None


def _train_index(train_dir: Path) -> dict[str, list[Path]]:
    """Image name -> the model folders of ``train/`` holding a file of that name."""
    index: dict[str, list[Path]] = {}
    for entry in _listing(train_dir):
        if entry.is_dir():
            for f in _listing(Path(entry.path)):
                index.setdefault(f.name, []).append(Path(entry.path))
    return index


def load_organiser_train(data: str | Path) -> StyleDataset:
    """The labelled training images: ``train.csv`` rows, each image found in ``train/<model folder>/``."""
    data = Path(data)
    models = load_models(data / "models.csv")
    path = data / "train.csv"
    rows = _read_csv(path, ["image_id", "model_id", "content_image_id"])
    index = _train_index(data / "train")
    known = set(models.ids)
    paths, ids, labels, groups = [], [], [], []
    for lineno, row in rows:
        name, mid = row["image_id"], normalize_b_id(row["model_id"])
        if mid not in known:
            raise InputError(f"label {row['model_id']!r} is not in models.csv", path=path, line=lineno,
                             field="model_id")
        if "/" in name or "\\" in name or name in (".", ".."):
            raise InputError(f"image name {name[:60]!r} is not a file name", path=path, line=lineno, field="image_id")
        if name not in index and not name.lower().endswith(".png") and f"{name}.png" in index:
            name += ".png"  # train.csv's image_id with or without the file's .png
        folders = index.get(name, [])
        mine = [f for f in folders if normalize_b_id(f.name) == mid]
        if not mine:
            if folders:
                where = ", ".join(f"train/{f.name}" for f in folders)
                raise InputError(f"image {name!r} is in {where}, but train.csv gives it model {mid} (expected in "
                                 f"train/{int(mid):04d}/)" if mid.isdigit() else
                                 f"image {name!r} is in {where}, but train.csv gives it model {mid}",
                                 path=path, line=lineno, field="model_id")
            folder = f"{int(mid):04d}" if mid.isdigit() else mid
            raise InputError(f"image {name!r} not found in {data / 'train' / folder}", path=path, line=lineno,
                             field="image_id")
        paths.append(mine[0] / name)
        ids.append(normalize_b_id(name))
        labels.append(mid)
        groups.append(normalize_b_id(row["content_image_id"]))
    return StyleDataset(ids=ids, models=models, paths=paths, labels=labels, groups=groups, source=str(path),
                        _lines=[ln for ln, _ in rows])


def load_organiser_test(data: str | Path, folder: str | Path | None = None, models=None) -> StyleDataset:
    """The test queries: every image file of ``data/test/`` (or ``folder``). Anything else in the folder
    (a sub-folder, a file that is not an image) is an error naming it: the folder holds the queries only."""
    data = Path(data)
    folder = Path(folder) if folder is not None else data / "test"
    if models is None:
        models = load_models(data / "models.csv")
    if not folder.exists():
        raise InputError("no such folder (the test images of the organisers' layout: data/test/)", path=folder)
    paths = []
    for entry in _listing(folder):
        p = Path(entry.path)
        if entry.is_dir():
            raise InputError("a folder inside the test folder (it must hold only the test images)", path=p)
        if p.suffix.lower() not in IMAGE_SUFFIXES:
            raise InputError(f"not an image file ({p.suffix or 'no suffix'}); the test folder must hold only the "
                             f"test images", path=p)
        paths.append(p)
    if not paths:
        raise InputError("no test images", path=folder)
    return StyleDataset([normalize_b_id(p.stem) for p in paths], models, paths=paths, source=str(folder))
