"""Saving and loading a learned fusion: versioned, self-describing JSON, verified on read.

The file holds ``format`` ("modelseek-fusion"), ``version`` (1), the fusion (method, normalisation, RRF's k,
one weight per run id; for weights that differ per task also ``gate``: the feature, the exponent and each gated
run's reference -- absent otherwise, so files saved before gates existed read unchanged), how it was chosen
(metric, grading scheme, the topics it was fitted on, the search grid), the cross-validation summary when one
was run, the modelseek version, the date, and ``sha256``: the digest of the canonical JSON of everything else.
Reading checks the format, the version and the digest (an edited or truncated file is refused) and validates
the fusion like any user input.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..._version import __version__
from ..data.truth import GradingScheme
from ...core.errors import InputError
from ...core.io import atomic_write_text, read_json
from ..metrics import ndcg_cutoff
from .core import Fusion

FORMAT = "modelseek-fusion"
VERSION = 1


def _digest(doc: Mapping[str, Any]) -> str:
    body = {k: v for k, v in doc.items() if k != "sha256"}
    blob = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def fusion_document(learned) -> dict:
    doc = {"format": FORMAT, "version": VERSION, "fusion": learned.fusion.to_dict(),
           "describe": learned.fusion.describe(), "metric": learned.metric, "scheme": learned.scheme,
           "fitted_topics": list(learned.fitted_topics), "train_score": float(learned.train_score),
           "search": dict(learned.info), "cv": learned.cv.to_dict() if learned.cv is not None else None,
           "modelseek_version": __version__,
           "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
    doc["sha256"] = _digest(doc)
    return doc


def save_fusion(learned, path: str | Path) -> None:
    """Write ``learned`` (a :class:`LearnedFusion`) to ``path`` atomically."""
    atomic_write_text(path, json.dumps(fusion_document(learned), indent=2, ensure_ascii=False) + "\n")


def read_fusion(path: str | Path) -> dict[str, Any]:
    """Read and verify a saved fusion: the fields of a :class:`~modelseek.retrieval.fusion.learned.LearnedFusion`
    (:func:`~modelseek.retrieval.fusion.learned.load_fusion` builds it); every problem is an :class:`InputError` naming
    the file and field."""
    path = Path(path)
    doc = read_json(path, "fusion file")
    if not isinstance(doc, dict):
        raise InputError("not a saved fusion (expected a JSON object)", path=path)
    if doc.get("format") != FORMAT:
        raise InputError(f"not a saved fusion: format is {doc.get('format')!r}, expected {FORMAT!r}", path=path,
                         field="format")
    version = doc.get("version")
    if version != VERSION:
        raise InputError(f"unsupported version {version!r}; this modelseek reads version {VERSION}", path=path,
                         field="version")
    try:
        digest = _digest(doc)
    except (TypeError, ValueError):
        raise InputError("values that JSON cannot hold (NaN or infinity)", path=path) from None
    if doc.get("sha256") != digest:
        raise InputError("checksum mismatch: the file was edited or damaged after it was saved; learn the fusion "
                         "again (modelseek fuse --optimize --save)", path=path, field="sha256")
    try:
        fusion = Fusion.from_dict(doc.get("fusion"))
        metric = str(doc.get("metric", ""))
        ndcg_cutoff(metric, "learned fusion")
        scheme = GradingScheme.parse(str(doc.get("scheme", "")), field="scheme").value
        topics = doc.get("fitted_topics")
        if not isinstance(topics, list) or not all(isinstance(t, str) for t in topics):
            raise InputError("must be a list of topic ids", field="fitted_topics")
        train_score = float(doc.get("train_score"))  # type: ignore[arg-type]  # None: the TypeError below names it
    except InputError as exc:
        raise InputError(exc.message, path=path, field=exc.field) from None
    except (TypeError, ValueError) as exc:
        raise InputError(f"malformed saved fusion: {exc}", path=path) from None
    search = doc.get("search")
    info = dict(search) if isinstance(search, dict) else {}
    info["cv"] = doc.get("cv")
    info["created"] = doc.get("created")
    return {"fusion": fusion, "metric": metric, "scheme": scheme, "fitted_topics": topics,
            "train_score": train_score, "cv": None, "info": info}
