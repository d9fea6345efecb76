"""Arrays written and read by the alignment commands: a models x models CKA matrix (``.npz`` with ``names``,
``matrix``, optional ``layers``; or the CSV of ``align matrix -o``) and a folder of embeddings (one ``.npy`` per
model and the manifest ``embeddings.json``, written last: a folder with a manifest is complete)."""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ...core.errors import InputError
from ...core.io import atomic_write_bytes, atomic_write_text, read_json, read_text, suffix_of
from ..solvers import cka_out_of_range
from .catalog import StimulusCatalog, parse_stimulus
from ...retrieval.vision.entries import ModelRegistry

if TYPE_CHECKING:
    import numpy as np


def _npy_errors() -> tuple[type[BaseException], ...]:
    import tokenize
    import zipfile
    import zlib

    # what numpy's readers raise on damaged bytes: a bad header (ValueError; SyntaxError or TokenError where
    # the header's Python literal is cut or holds NUL bytes), a short read (EOFError), a damaged zip member
    # (BadZipFile, zlib.error), a pickled array refused (ValueError), a shape too large (OverflowError,
    # MemoryError)
    return (ValueError, OSError, TypeError, EOFError, KeyError, SyntaxError, tokenize.TokenError, OverflowError,
            MemoryError, zipfile.BadZipFile, zlib.error)


_NPY_ERRORS = _npy_errors()


def load_cka_matrix(path) -> tuple[list[str], np.ndarray, list | None]:
    """(names, matrix, layers or None) from an .npz ('names', 'matrix', optional 'layers') or the CSV of
    ``align matrix -o``; every problem is an InputError naming the file."""
    import numpy as np

    path = Path(path)
    if not path.is_file():
        raise InputError("no such CKA matrix file", path=path)
    if suffix_of(path) == ".npz":  # a symlink is judged by its target's suffix
        try:
            with np.load(path, allow_pickle=False) as z:
                keys = set(z.files)
                if not {"names", "matrix"} <= keys:
                    raise InputError(f"an .npz CKA matrix needs arrays 'names' and 'matrix', found "
                                     f"{sorted(keys)}", path=path)
                names = [str(x) for x in z["names"].tolist()]
                C = np.asarray(z["matrix"], dtype=np.float64)
                layers = [str(x) for x in z["layers"].tolist()] if "layers" in keys else None
        except InputError:
            raise
        except _NPY_ERRORS as exc:  # not an npz, pickled object arrays, a bad or truncated zip
            raise InputError(f"cannot read the .npz CKA matrix: {exc or type(exc).__name__}", path=path) from None
    else:

        lines = [ln for ln in read_text(path, "CKA matrix file").splitlines() if ln.strip()]
        if not lines:
            raise InputError("empty CKA matrix file", path=path)
        head = lines[0].split(",")
        names = [h.strip() for h in head[1:]]
        rows = []
        for i, ln in enumerate(lines[1:], 2):
            cells = ln.split(",")
            if len(cells) != len(head) or cells[0].strip() != (names[i - 2] if i - 2 < len(names) else None):
                raise InputError(f"expected the row of {names[i - 2] if i - 2 < len(names) else '(none)'!r} with "
                                 f"{len(head) - 1} values", path=path, line=i)
            try:
                rows.append([float(x) for x in cells[1:]])
            except ValueError:
                raise InputError("a value is not a number", path=path, line=i) from None
        C, layers = np.array(rows, dtype=np.float64), None
    if C.ndim != 2 or C.shape != (len(names), len(names)):
        raise InputError(f"{len(names)} names but a matrix of shape {C.shape}", path=path)
    if len(set(names)) != len(names):
        raise InputError("model names repeat", path=path)
    if layers is not None and len(layers) != len(names):
        raise InputError(f"{len(layers)} layers for {len(names)} names", path=path)
    if not np.all(np.isfinite(C)):
        raise InputError("the matrix has NaN or infinite entries", path=path)
    bad = cka_out_of_range(C)
    if bad is not None:
        i, j, value = bad
        raise InputError(f"{value:g} is not a CKA value (in [-1, 1])", path=path, field=names[j],
                         line=i + 2 if suffix_of(path) != ".npz" else None)
    if not np.allclose(C, C.T, atol=1e-8):
        raise InputError("the matrix is not symmetric", path=path)
    return names, C, layers


def save_cka_matrix(path, names: Sequence[str], C, layers: Sequence[str]) -> None:
    """Write ``C`` as ``.npz`` (names, matrix, layers) when ``path`` ends so, else as CSV (a header of names,
    one row per model, 10 decimals); :func:`load_cka_matrix` reads both."""
    import numpy as np

    if str(path).lower().endswith(".npz"):
        buf = io.BytesIO()
        np.savez(buf, names=np.array(names), matrix=C, layers=np.array(list(layers)))
        atomic_write_bytes(path, buf.getvalue())
        return
    lines = ["model," + ",".join(names)] + [names[i] + "," + ",".join(f"{x:.10f}" for x in C[i])
                                           for i in range(len(names))]
    atomic_write_text(path, "\n".join(lines) + "\n")


MANIFEST = "embeddings.json"


def load_embeddings(folder, models=None):
    """(names, features, stimuli, catalog version) from the folder written by ``align embed -o``."""
    import numpy as np


    folder = Path(folder)
    mpath = folder / MANIFEST
    d = read_json(mpath, what=f"embeddings manifest (write it with 'align embed -o {folder}')")
    if not isinstance(d, dict) or not isinstance(d.get("models"), list) or not isinstance(d.get("stimuli"), list):
        raise InputError("expected {models: [...], stimuli: [...]}", path=mpath)
    stimuli = [parse_stimulus(s, path=mpath) for s in d["stimuli"]]
    entries = d["models"]
    by_name = {m.get("model_name"): m for m in entries if isinstance(m, dict)}
    names = list(models) if models else list(by_name)
    feats = []
    for n in names:
        if n not in by_name:
            raise InputError(f"model {n!r} is not in the embeddings", path=mpath, field="models")
        f = folder / str(by_name[n].get("file", ""))
        if not f.is_file():  # the manifest names it: the manifest is what to fix (or the file to restore)
            raise InputError(f"embeddings of {n!r}: no such file {str(f)!r}", path=mpath, field="models.file")
        try:
            F = np.load(f, allow_pickle=False)
        except _NPY_ERRORS as exc:
            raise InputError(f"cannot read embeddings of {n!r}: {exc or type(exc).__name__}", path=f) from None
        if not isinstance(F, np.ndarray) or not np.issubdtype(F.dtype, np.number) or np.iscomplexobj(F):
            raise InputError(f"embeddings of {n!r}: expected a real-valued .npy array", path=f)
        if F.ndim != 2 or F.shape[0] != len(stimuli):
            raise InputError(f"shape {F.shape}, expected ({len(stimuli)}, dim)", path=f)
        if not np.all(np.isfinite(F)):
            raise InputError("NaN or infinite values", path=f)
        feats.append(F)
    return names, feats, stimuli, d.get("catalog_version")


def save_embeddings(folder, features: Mapping[str, np.ndarray], registry: ModelRegistry,
                    catalog: StimulusCatalog) -> None:
    """Write one ``.npy`` per model (a file-safe name; numbered where two names collide) and then the
    manifest that :func:`load_embeddings` reads."""
    import numpy as np

    files: list[dict] = []
    for i, (name, F) in enumerate(features.items()):
        buf = io.BytesIO()
        np.save(buf, F, allow_pickle=False)
        fname = "".join(c if c.isalnum() or c in "-_." else "_" for c in name) + ".npy"
        if any(f["file"] == fname for f in files):
            fname = f"{i:03d}_{fname}"
        atomic_write_bytes(Path(folder) / fname, buf.getvalue())
        files.append({"model_name": name, "file": fname, "layer": registry.get(name).layer, "shape": list(F.shape)})
    atomic_write_text(Path(folder) / MANIFEST, json.dumps(
        {"catalog_version": catalog.version(), "models": files,
         "stimuli": [{"dataset_name": s.dataset_name, "image_identifier": s.image_identifier} for s in catalog]},
        indent=1) + "\n")
