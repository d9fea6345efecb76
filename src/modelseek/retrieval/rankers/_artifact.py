"""Ranker persistence: the one mixin (:class:`Persistable`) and the one artifact reader (:func:`read_artifact`).

An artifact is one JSON file: the method, the parameters, the trained candidates (ids and HF ids), the
training task ids, free ``info``, JSON ``extra`` values and numeric arrays (base64, little-endian) — numbers
only, never task text. A persistable ranker supplies its fitted state as ``(arrays, extra)``
(:meth:`Persistable._state`) and takes it back (:meth:`Persistable._set_state`); everything else (the layout,
checking the method, the parameters and their constraints, locating errors in the file) is here.
"""

from __future__ import annotations

import abc
import base64
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..data.pool import Pool
from ...core.errors import InputError
from ...core.io import atomic_write_text, read_json
from .base import Ranker, Trained

if TYPE_CHECKING:
    from typing_extensions import Self  # typing.Self is 3.11+; the package supports 3.10

#: 2: candidates carry their HF ids (``model_hf_ids``); version-1 artifacts know them by id only
ARTIFACT_VERSION = 2


def pack_array(a: np.ndarray) -> dict[str, Any]:
    a = np.ascontiguousarray(a)
    dtype = a.dtype.newbyteorder("<") if a.dtype.byteorder == ">" else a.dtype
    return {"dtype": dtype.str, "shape": list(a.shape), "b64": base64.b64encode(a.astype(dtype).tobytes()).decode()}


def unpack_array(d: dict[str, Any]) -> np.ndarray:
    return np.frombuffer(base64.b64decode(d["b64"]), dtype=np.dtype(d["dtype"])).reshape(d["shape"]).copy()


def read_artifact(path: str | Path) -> dict[str, Any]:
    """The JSON document of a saved ranker artifact, checked to name its method (the one reader)."""
    path = Path(path)
    # the one strict JSON reader: a missing file, bytes that are not UTF-8, nesting of any depth, numbers of any
    # length are each one located line
    data = read_json(path, "ranker artifact")
    if not isinstance(data, dict) or not isinstance(data.get("method"), str):
        raise InputError("not a ranker artifact (no 'method')", path=path, field="method")
    return data


class Persistable(Ranker):
    """A ranker whose fitted state is saved to and loaded from an artifact (mix in before its base)."""

    #: the candidates it learned about, and the training tasks (set by ``_learn`` or by :meth:`load`)
    trained_: Trained
    fitted_task_ids_: list[str]
    info_: dict[str, Any]

    @abc.abstractmethod
    def _state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """(arrays, extra JSON values) that define the fitted ranker."""

    @abc.abstractmethod
    def _set_state(self, arrays: dict[str, np.ndarray], extra: dict[str, Any]) -> None:
        """Take back what :meth:`_state` gave."""

    def _default_pool(self) -> Pool | None:
        """The pool that ties a version-1 artifact's model ids to HF ids (none by default)."""
        return None

    @classmethod
    def _upgrade(cls, doc: dict[str, Any]) -> dict[str, Any]:
        """An older artifact layout of this method in the current one (the current layout unchanged)."""
        return doc

    # ------------------------------------------------------------------------------------ save / load
    def save(self, path: str | Path, **info: Any) -> None:
        self._check_fitted()
        arrays, extra = self._state()
        params = {k: v for k, v in self.get_params().items() if k != "cache_dir"}
        if not all(isinstance(v, (str, int, float, bool, type(None), list, dict)) for v in params.values()):
            raise InputError(f"{self.name}: only rankers built from named encoders/parameters can be saved")
        doc = {"method": self.name, "artifact_version": ARTIFACT_VERSION, "params": params,
               "model_ids": list(self.trained_.model_ids),
               "model_hf_ids": list(self.trained_.hf_ids), "fitted_task_ids": self.fitted_task_ids_, "info": info,
               "extra": extra, "arrays": {k: pack_array(v) for k, v in arrays.items()}}
        atomic_write_text(path, json.dumps(doc, separators=(",", ":")) + "\n")

    @classmethod
    def load(cls, path: str | Path, **overrides: Any) -> Self:
        """The fitted ranker saved at ``path``; ``overrides`` replace stored parameters. Every problem is an
        ``InputError`` located in the file (a stored parameter its constraints refuse: ``params.NAME``)."""
        path = Path(path)
        doc = read_artifact(path)
        if doc["method"] != cls.name:
            raise InputError(f"artifact is for method {doc['method']!r}, not {cls.name!r}", path=path, field="method")
        names = cls.param_names()
        for key in overrides:
            if key not in names:
                raise InputError(f"method {cls.name!r} has no parameter {key!r}", field="params")
        try:
            doc = cls._upgrade(doc)
            params = doc.get("params") or {}
            if not isinstance(params, dict):
                raise InputError("'params' must be an object", field="params")
            unknown = [k for k in params if k not in names]
            if unknown:
                raise InputError(f"method {cls.name!r} has no parameter {unknown[0]!r}", field=f"params.{unknown[0]}")
            r = cls(**{**params, **overrides})
            try:
                r.validate_params()  # stored parameters are checked on load, not first at rank time
            except InputError as exc:
                raise InputError(exc.message, field=f"params.{exc.field}" if exc.field else None) from None
            ids = [str(m) for m in doc["model_ids"]]
            if "model_hf_ids" in doc:
                r.trained_ = Trained(tuple(ids), tuple(str(h) for h in doc["model_hf_ids"]))
            else:  # a version-1 artifact: its own card pool (ltr, metadata) names the models, else ids only
                r.trained_ = Trained.from_truth(ids, r._default_pool())
            r.fitted_task_ids_ = [str(t) for t in doc.get("fitted_task_ids", [])]
            r.info_ = doc.get("info", {})
            r._set_state({k: unpack_array(v) for k, v in doc.get("arrays", {}).items()}, doc.get("extra", {}))
        except InputError as exc:
            if exc.path is not None:
                raise
            raise InputError(exc.message, path=path, field=exc.field) from None
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise InputError(f"not a valid {cls.name} artifact: {exc}", path=path) from None
        r._fitted = True
        r.artifact_ = str(path)  # errors about the candidates it was trained on name the artifact
        return r
