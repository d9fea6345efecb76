"""Compiled submissions: one model's per-sample predictions and aggregated results on every task.

.. code-block:: json

    {"metadata": {"model": "org/name", "type": "pretrained", "precision": "bf16", "n_params": 7.2e9, "source": "https://...",
                  "description": "...", "revision": "...", "prompts": {"task": "task_p2"}},
     "results": {"<task>": {"<metric>": 0.71}},
     "predictions": {"<task>": [{"doc_id": 0, "<metric>": <per-sample value>}, ...]}}

Per-sample values by metric: ``acc`` and ``exact_match`` 0 or 1; ``avg_mcauroc`` ``[gold class index,
[class probabilities]]``; ``word_perplexity`` ``[sum log-likelihood, number of words]``;
``rouge_raw_r2_mid_f`` a score in [0, 1]; ``ndcg@5`` (model-retrieval runs) a score in [0, 1].

Samples are identified by ``doc_id`` (an integer or a name; every record has one, or none has and the
position is the id): they are put in ``doc_id`` order, and paired tests pair the samples of two models by
``doc_id`` — two submissions whose id sets differ on a task cannot duel (the first missing id is named).

What is stored of a submission is its *canonical* form (:meth:`Submission.to_json`): the metadata fields
modelseek knows (and lm-evaluation-harness provenance), per task the metric value and the prompt alias, and
the per-sample records ``{"doc_id", metric}``; anything else in the upload is dropped with a warning. Every
string is checked by :mod:`.text` (valid Unicode, NFC; names without invisible or control characters).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import InputError
from ..core.stats import bootstrap as _boot
from ..core.stats.auroc import auroc
from .config import LeaderboardConfig, Metric
from .text import check_single_script, clean_name, clean_text, clean_tree, loads_strict, safe_str
from .text import name_key

log = logging.getLogger(__name__)

#: default upload limit: a compiled BenCzechMark submission (50 tasks, per-sample records) is a few MB to a
#: few tens of MB; ``--max-upload-mb`` / ``Store(max_bytes=...)`` change it
MAX_BYTES = 64 * 1024 * 1024
METADATA_FIELDS: dict[str, type | tuple[type, ...]] = {
    "model": str, "precision": str, "n_params": (int, float), "source": str, "description": str, "revision": str,
    "team": str, "prompts": dict, "type": str}
#: per-field limits (characters) of the fields people read on the leaderboard
FIELD_LIMITS = {"model": 200, "precision": 32, "source": 500, "description": 5000, "revision": 200, "team": 200,
                "type": 32}
MAX_METADATA_BYTES = 256 * 1024
#: what BenCzechMark's compile script copies from the lm-evaluation-harness results header: kept as provenance
PROVENANCE_FIELDS = frozenset({
    "git_hash", "transformers_version", "tokenizer_pad_token", "tokenizer_eos_token", "tokenizer_bos_token",
    "eot_token_id", "max_length", "task_hashes", "model_source", "model_name", "model_name_sanitized",
    "system_instruction", "system_instruction_sha", "fewshot_as_multiturn", "chat_template", "chat_template_sha",
    "start_time", "end_time", "total_evaluation_time_seconds", "n-shot", "config", "date", "pretty_env_info",
    "upper_git_hash", "lm_eval_version"})
#: other spellings of a metric in files (BenCzechMark maps the summarisation metric the same way)
ALIASES = {Metric.ROUGE: ("rouge_raw_r2_mid_f_without_bootstrap",)}
#: how far a self-reported aggregate may be from the computed one: absolute on every metric (a relative
#: tolerance on perplexity became infinite with the perplexity itself)
CROSS_CHECK_ABS, CROSS_CHECK_PERPLEXITY_ABS = 0.01, 0.05
#: the lowest log-likelihood per word a perplexity sample may have: exp(700) is near the largest float, so
#: every perplexity computed from such samples (the task's, every bootstrap resample's) is finite
MIN_LOGLIK_PER_WORD = -700.0
#: a perplexity sample's word count: a whole number from 1 to this (a document of 10 million words is already a
#: book series; one claiming 1e300 words would make any log-likelihood a perplexity of 1)
MAX_WORDS = 10_000_000
#: how far a sample's class probabilities may sum from 1 (float32 softmax rounding is far below it)
PROB_SUM_TOL = 1e-3
#: ``n_params``: a positive number of parameters, at most 100 trillion (some write billions: 7.2 is accepted)
MAX_PARAMS = 1e14
#: ... and at least a thousandth (of a billion: 1e-300 is no count of parameters in any unit)
MIN_PARAMS = 1e-3
_URL = re.compile(r"^https?://[^\s]+$")


@dataclass(frozen=True)
class TaskSamples:
    """One model's samples on one task, as arrays: ``values`` (n,), or AUROC ``gold`` + ``probs``,
    or perplexity ``loglik`` + ``words``."""

    metric: Metric
    values: np.ndarray | None = None
    gold: np.ndarray | None = None
    probs: np.ndarray | None = None
    loglik: np.ndarray | None = None
    words: np.ndarray | None = None
    ids: tuple | None = None          # the samples' doc_ids in sample order; None: the positions

    @property
    def doc_ids(self) -> tuple:
        return self.ids if self.ids is not None else tuple(range(self.n))

    @property
    def n(self) -> int:
        for a in (self.values, self.gold, self.loglik):
            if a is not None:
                return int(a.shape[0])
        return 0

    def need(self, name: str) -> np.ndarray:
        """The array ``name`` ("values", "gold", ...) that the task's metric carries; its absence is a bug
        (readers build a TaskSamples with exactly the arrays of its metric)."""
        a = getattr(self, name)
        if a is None:
            raise ValueError(f"{self.metric.value} task data without its {name!r} array")
        return a


@dataclass(frozen=True)
class Submission:
    metadata: dict
    results: dict
    predictions: dict | None      # None: built from ``data`` when needed
    data: dict = field(repr=False, compare=False, default_factory=dict)  # task -> TaskSamples
    warnings: tuple = field(repr=False, compare=False, default=())      # tolerated oddities, for the uploader

    @property
    def model(self) -> str:
        return self.metadata["model"]

    @property
    def tasks(self) -> list[str]:
        return list(self.data)

    def to_dict(self) -> dict:
        preds = self.predictions
        if preds is None:
            preds = {t: records_from_data(d) for t, d in self.data.items()}
        return {"metadata": self.metadata, "results": self.results, "predictions": preds}

    def to_json(self) -> str:
        """The canonical JSON: ``json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))``, written
        task by task from the arrays without building a dict per sample (a third of a pre-submission's peak
        memory otherwise)."""
        if self.predictions is not None:
            return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        preds = ",".join(f"{_dump(t)}:{records_json(self.data[t])}" for t in sorted(self.data))
        return (f'{{"metadata":{_dump(self.metadata)},"predictions":{{{preds}}},'
                f'"results":{_dump(self.results)}}}')

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.to_json().encode("utf-8")).hexdigest()

    def payload(self) -> tuple[bytes, str]:
        """``(canonical JSON bytes, sha256)`` computed once."""
        data = self.to_json().encode("utf-8")
        return data, hashlib.sha256(data).hexdigest()

    def raw(self, task: str) -> float:
        """The task's metric computed from the predictions (never the self-reported value)."""
        return metric_value(self.data[task])

    @property
    def provenance(self) -> dict:
        """Metadata beyond modelseek's own fields (lm-evaluation-harness header copied by BenCzechMark)."""
        return {k: v for k, v in self.metadata.items() if k not in METADATA_FIELDS}


def records_from_data(d: TaskSamples) -> list[dict]:
    """Per-sample records ``{"doc_id", metric}`` of one task's arrays (the canonical predictions)."""
    m, ids = d.metric.value, d.doc_ids
    if d.metric is Metric.AVG_MCAUROC:
        return [{"doc_id": i, m: [int(g), p]} for i, g, p in zip(ids, d.need("gold").tolist(),
                                                                   d.need("probs").tolist())]
    if d.metric is Metric.WORD_PERPLEXITY:
        return [{"doc_id": i, m: [ll, w]} for i, ll, w in zip(ids, d.need("loglik").tolist(),
                                                               d.need("words").tolist())]
    if d.metric in (Metric.ACC, Metric.EXACT_MATCH):
        return [{"doc_id": i, m: int(v)} for i, v in zip(ids, d.need("values").tolist())]
    return [{"doc_id": i, m: v} for i, v in zip(ids, d.need("values").tolist())]


def _dump(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def records_json(d: TaskSamples) -> str:
    """``json.dumps(records_from_data(d), sort_keys=True, separators=(",", ":"))``, one string per record
    instead of one dict (the numbers are written as json writes them: ``int`` and ``float`` reprs)."""
    m = d.metric.value
    ids = [_dump(i) if isinstance(i, str) else str(int(i)) for i in d.doc_ids]
    if d.metric is Metric.AVG_MCAUROC:
        vals = [f"[{int(g)},{_dump(p)}]" for g, p in zip(d.need("gold").tolist(), d.need("probs").tolist())]
    elif d.metric is Metric.WORD_PERPLEXITY:
        vals = [f"[{float(ll)!r},{float(w)!r}]" for ll, w in zip(d.need("loglik").tolist(), d.need("words").tolist())]
    elif d.metric in (Metric.ACC, Metric.EXACT_MATCH):
        vals = [str(int(v)) for v in d.need("values").tolist()]
    else:
        vals = [repr(float(v)) for v in d.need("values").tolist()]
    key = _dump(m)
    first = m < "doc_id"             # sort_keys: the metric's field before or after "doc_id"
    body = ",".join(f'{{{key}:{v},"doc_id":{i}}}' if first else f'{{"doc_id":{i},{key}:{v}}}'
                    for i, v in zip(ids, vals))
    return f"[{body}]"


def id_difference(ref: tuple, ids: tuple) -> str | None:
    """``None`` when two samples' doc_id lists are the same set, else what differs (the first missing id,
    else the first extra one)."""
    if ref == ids:
        return None
    have, want = set(ids), set(ref)
    missing = next((i for i in ref if i not in have), None)
    if missing is not None:
        return f"doc_id {missing!r} is missing"
    extra = next((i for i in ids if i not in want), None)
    if extra is not None:
        return f"doc_id {extra!r} is not a sample of this task"
    return "the samples differ"  # pragma: no cover - equal sets in sorted order are equal tuples


# ----------------------------------------------------------------------------------------------- loading
def parse_bytes(data: bytes, source: str = "<upload>", max_bytes: int = MAX_BYTES) -> dict:
    if len(data) > max_bytes:
        raise InputError(f"submission too large: {len(data):,} bytes > limit {max_bytes:,}", path=source)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError("submission is not UTF-8 text", path=source, line=line) from None
    text = text.removeprefix("\ufeff")  # a byte-order mark (Windows editors write one) is no part of the JSON
    # the strict upload reader: duplicate keys, NaN, numbers a float does not hold (1e999, 1e-400) and lone
    # surrogates are located errors
    return loads_strict(text, source)


def load_submission(path: str | Path, config: LeaderboardConfig | None = None,
                    max_bytes: int = MAX_BYTES) -> Submission:
    p = Path(path)
    if not p.is_file():
        raise InputError("no such submission file", path=p)
    size = p.stat().st_size
    if size > max_bytes:
        raise InputError(f"submission too large: {size:,} bytes > limit {max_bytes:,}", path=p)
    return validate_submission(parse_bytes(p.read_bytes(), str(p), max_bytes), config, source=str(p))


def submission_from_bytes(data: bytes, config: LeaderboardConfig | None = None, source: str = "<upload>",
                          max_bytes: int = MAX_BYTES) -> Submission:
    return validate_submission(parse_bytes(data, source, max_bytes), config, source=source)


# -------------------------------------------------------------------------------------------- validation
def _num(v: Any) -> bool:
    """A finite number a float holds (a Python int beyond 1.8e308 is not: float() of it overflows)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    try:
        return math.isfinite(v)
    except OverflowError:
        return False


def _key(metric: Metric, rec: Mapping) -> str:
    """The field holding ``metric`` in a per-sample record (its own name first, then an accepted alias)."""
    if metric.value in rec:
        return metric.value
    return next((a for a in ALIASES.get(metric, ()) if a in rec), metric.value)


def _fast_records_to_data(metric: Metric, records: list) -> TaskSamples | None:
    """Vectorised conversion of well-formed records; ``None`` when anything is off (the record-by-record
    path then names the first bad record)."""
    try:
        vals = [r[_key(metric, r)] for r in records]
        if metric is Metric.AVG_MCAUROC:
            gold = np.array([v[0] for v in vals], dtype=float)
            probs = np.array([v[1] for v in vals], dtype=float)
            if (any(len(v) != 2 or isinstance(v[0], bool) for v in vals) or probs.ndim != 2 or probs.shape[1] < 2
                    or not np.isfinite(probs).all() or not np.all(gold == np.round(gold))
                    or gold.min() < 0 or gold.max() >= probs.shape[1] or probs.min() < 0 or probs.max() > 1
                    or (np.abs(probs.sum(axis=1) - 1.0) > PROB_SUM_TOL).any()):
                return None
            data = TaskSamples(metric, gold=gold.astype(int), probs=probs)
        elif metric is Metric.WORD_PERPLEXITY:
            arr = np.array(vals, dtype=float)
            if arr.ndim != 2 or arr.shape[1] != 2 or not np.isfinite(arr).all() or (arr[:, 1] < 1).any() \
                    or (arr[:, 1] > MAX_WORDS).any() or (arr[:, 1] != np.round(arr[:, 1])).any() \
                    or (arr[:, 0] > 0).any() or (arr[:, 0] / arr[:, 1] < MIN_LOGLIK_PER_WORD).any():
                return None
            data = TaskSamples(metric, loglik=arr[:, 0].copy(), words=arr[:, 1].copy())
        else:
            if any(isinstance(v, (list, dict, str, bool)) or v is None for v in vals):
                return None
            arr = np.array(vals, dtype=float)
            if arr.ndim != 1 or not np.isfinite(arr).all():
                return None
            ok = np.isin(arr, (0.0, 1.0)).all() if metric in (Metric.ACC, Metric.EXACT_MATCH) else \
                ((arr >= 0) & (arr <= 1)).all()
            if not ok:
                return None
            data = TaskSamples(metric, values=arr)
    except (TypeError, KeyError, ValueError, IndexError, AttributeError, OverflowError):
        return None
    return data


def _doc_ids(records: list, source: str, fld: str) -> tuple[tuple | None, list[int] | None]:
    """``(doc_ids in sorted order, the records' order)``, or ``(None, None)`` when no record has one.
    A doc_id is an integer (not a float: ``1.0``) or a name; integers sort before names."""
    raw = [r.get("doc_id") for r in records]
    if all(i is None for i in raw):
        return None, None
    ids = []
    for k, i in enumerate(raw):
        where = f"{fld}[{k}].doc_id"
        if i is None:
            raise InputError("missing doc_id (other records have one: every record needs one, or none)",
                             path=source, field=where)
        if isinstance(i, bool):
            raise InputError("must be an integer or a name", path=source, field=where)
        if isinstance(i, float):             # 1.0 and 1 would be one sample written two ways
            raise InputError(f"must be an integer or a name, got the number {i!r}", path=source, field=where)
        if isinstance(i, str):
            i = clean_name(i, where, source)
        elif not isinstance(i, int):
            raise InputError(f"must be an integer or a name, got {type(i).__name__}", path=source, field=where)
        ids.append(i)
    keys = [(0, i, "") if isinstance(i, int) else (1, 0, i) for i in ids]
    if len(set(keys)) != len(keys):
        seen: set[tuple[int, int, str]] = set()
        for dup in keys:  # the first key seen twice
            if dup in seen:
                break
            seen.add(dup)
        raise InputError(f"duplicate doc_id {(dup[1] if dup[0] == 0 else dup[2])!r}", path=source, field=fld)
    order = sorted(range(len(ids)), key=keys.__getitem__)
    return tuple(ids[k] for k in order), order


def _records_to_data(task: str, metric: Metric, records: list, source: str) -> TaskSamples:
    fld = f"predictions.{task}"
    if not isinstance(records, list) or not records:
        raise InputError("must be a non-empty list of per-sample records", path=source, field=fld)
    fast = _fast_records_to_data(metric, records) if all(isinstance(r, Mapping) for r in records) else None
    data = fast if fast is not None else _records_to_data_slow(task, metric, records, source)
    ids, order = _doc_ids(records, source, fld)
    if ids is None or order is None:
        return data
    arrays = {k: getattr(data, k) for k in ("values", "gold", "probs", "loglik", "words")
              if getattr(data, k) is not None}
    if order != list(range(len(order))):
        arrays = {k: v[np.asarray(order)] for k, v in arrays.items()}
    return TaskSamples(metric, ids=ids, **arrays)


def _records_to_data_slow(task: str, metric: Metric, records: list, source: str) -> TaskSamples:
    """Record by record: names the first bad record."""
    fld = f"predictions.{task}"
    vals: list[Any] = []
    for i, rec in enumerate(records):
        where = f"{fld}[{i}]"
        if not isinstance(rec, Mapping):
            raise InputError("per-sample record must be an object", path=source, field=where)
        if _key(metric, rec) not in rec:
            raise InputError(f"missing '{metric.value}'", path=source, field=where)
        v = rec[_key(metric, rec)]
        f = f"{where}.{metric.value}"
        if metric in (Metric.ACC, Metric.EXACT_MATCH):
            if not _num(v) or v not in (0, 1):           # (a JSON true is not a number: refused)
                raise InputError(f"must be 0 or 1, got {json.dumps(v) if isinstance(v, bool) else repr(v)}",
                                 path=source, field=f)
        elif metric in (Metric.ROUGE, Metric.NDCG5):
            if not _num(v) or not 0 <= v <= 1:
                raise InputError(f"must be a number in [0, 1], got {v!r}", path=source, field=f)
        elif metric is Metric.AVG_MCAUROC:
            ok = (isinstance(v, list) and len(v) == 2 and _num(v[0]) and float(v[0]).is_integer()
                  and isinstance(v[1], list) and len(v[1]) >= 2 and all(_num(x) for x in v[1]))
            if not ok:
                raise InputError("must be [gold class index, [class probabilities]]", path=source, field=f)
            if not 0 <= v[0] < len(v[1]):
                raise InputError(f"gold class {v[0]} outside 0..{len(v[1]) - 1}", path=source, field=f)
            if vals and len(v[1]) != len(vals[0][1]):
                raise InputError(f"{len(v[1])} class probabilities, earlier samples have {len(vals[0][1])}",
                                 path=source, field=f)
            bad = next((x for x in v[1] if not 0 <= x <= 1), None)
            if bad is not None:
                raise InputError(f"class probability {bad!r} outside [0, 1]", path=source, field=f)
            total = math.fsum(v[1])
            if abs(total - 1.0) > PROB_SUM_TOL:
                raise InputError(f"class probabilities sum to {total:.6g}, not 1 (tolerance {PROB_SUM_TOL:g})",
                                 path=source, field=f)
        elif metric is Metric.WORD_PERPLEXITY:
            ok = isinstance(v, list) and len(v) == 2 and _num(v[0]) and _num(v[1]) and v[1] > 0 and v[0] <= 0
            if not ok:
                raise InputError("must be [sum log-likelihood <= 0, number of words > 0]", path=source, field=f)
            if not (1 <= v[1] <= MAX_WORDS and float(v[1]).is_integer()):
                raise InputError(f"the number of words must be a whole number from 1 to {MAX_WORDS:,}, got {v[1]!r}",
                                 path=source, field=f)
            if v[0] / v[1] < MIN_LOGLIK_PER_WORD:
                raise InputError(f"log-likelihood per word {v[0] / v[1]:.6g} < {MIN_LOGLIK_PER_WORD:g}: its perplexity "
                                 "overflows a float", path=source, field=f)
        vals.append(v)
    if metric is Metric.AVG_MCAUROC:
        return TaskSamples(metric, gold=np.array([int(v[0]) for v in vals]),
                           probs=np.array([v[1] for v in vals], dtype=float))
    if metric is Metric.WORD_PERPLEXITY:
        arr = np.array(vals, dtype=float)
        return TaskSamples(metric, loglik=arr[:, 0].copy(), words=arr[:, 1].copy())
    return TaskSamples(metric, values=np.array(vals, dtype=float))


NAME_FIELDS = ("model", "precision", "revision", "team", "type")


def _check_metadata(meta: Mapping, source: str) -> tuple[dict, list[str]]:
    """Typed and bounded modelseek fields (names by :func:`.text.clean_name`, text by
    :func:`.text.clean_text`), lm-evaluation-harness provenance kept (its strings checked), anything else
    dropped with a warning (never stored)."""
    warnings = []
    if "model" not in meta and isinstance(meta.get("model_name"), str):
        meta = {**meta, "model": meta["model_name"]}     # BenCzechMark files name the model by lm-eval's field
    size = len(json.dumps(meta, default=str))
    if size > MAX_METADATA_BYTES:
        raise InputError(f"metadata too large: {size:,} bytes > limit {MAX_METADATA_BYTES:,}", path=source,
                         field="metadata")
    if not isinstance(meta.get("model"), str) or not meta["model"].strip():
        raise InputError("a non-empty model name is required", path=source, field="metadata.model")
    out = {}
    for k, v in meta.items():
        fld = f"metadata.{k}"
        if k in METADATA_FIELDS:
            if not isinstance(v, METADATA_FIELDS[k]) or isinstance(v, bool):
                raise InputError(f"wrong type {type(v).__name__}", path=source, field=fld)
            if isinstance(v, float) and not math.isfinite(v):
                raise InputError("must be a finite number", path=source, field=fld)
            limit = FIELD_LIMITS.get(k)
            if k in NAME_FIELDS:
                v = clean_name(v, fld, source, FIELD_LIMITS[k])
                if k in ("model", "team"):
                    check_single_script(v, fld, source)
            if k == "n_params" and not MIN_PARAMS <= v <= MAX_PARAMS:
                raise InputError(f"must be a number of parameters from {MIN_PARAMS:g} (in billions) to "
                                 f"{MAX_PARAMS:g}, got {v!r}", path=source, field=fld)
            elif isinstance(v, str):
                v = clean_text(v, fld, source, limit)
            if k == "source" and v and not _URL.match(v):
                raise InputError("must be an http(s) link", path=source, field=fld)
            if k == "prompts":
                if not all(isinstance(x, str) for x in (*v.keys(), *v.values())):
                    raise InputError("must map task names to prompt names", path=source, field=fld)
                v = {clean_name(a, f"{fld}.{a}", source): clean_text(b, f"{fld}.{a}", source, FIELD_LIMITS["model"])
                     for a, b in v.items()}
            out[k] = v
        elif k in PROVENANCE_FIELDS:
            out[k] = clean_tree(v, fld, source)
        else:
            warnings.append(f"{source}: field '{fld}': unknown metadata field dropped")
    return out, warnings


def _aggregate(task: str, metric: Metric, res: Any, source: str, warnings: list[str]) -> dict:
    """The ``results`` entry of one task as stored: the metric (BenCzechMark's ``<metric>_without_bootstrap``
    and lm-eval's ``<metric>,<filter>`` spellings accepted) and the winning prompt's ``alias``; other
    numbers are checked to be finite and dropped."""
    fld = f"results.{task}"
    if not isinstance(res, Mapping):
        raise InputError(f"needs the aggregated '{metric.value}' value", path=source, field=fld)
    numbers: dict[str, float] = {}
    out: dict[str, Any] = {}
    for k, v in res.items():
        if k == "alias":
            out[k] = clean_text(v, f"{fld}.alias", source, FIELD_LIMITS["model"])
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            if not _num(v):
                raise InputError("aggregated metrics must be finite numbers", path=source, field=f"{fld}.{k}")
            numbers[k] = v
        else:
            warnings.append(f"{source}: field '{fld}.{k}': not a number, ignored")
    for name in (metric.value, *ALIASES.get(metric, ())):
        for key in (name, f"{name},none"):
            if key in numbers:
                out[metric.value] = numbers[key]
                return out
    raise InputError(f"needs the aggregated '{metric.value}' value", path=source, field=fld)


def cross_check_tolerance(metric: Metric, computed: float) -> float:
    """How far a self-reported aggregate may be from the one computed from the predictions, absolute (never
    infinite): 0.01 on bounded metrics (rounding, BenCzechMark's bootstrap 'mid' ROUGE vs the plain mean), 0.05
    on perplexity (``computed`` is kept in the signature for callers; the tolerance does not grow with it)."""
    del computed
    return CROSS_CHECK_PERPLEXITY_ABS if metric is Metric.WORD_PERPLEXITY else CROSS_CHECK_ABS


def validate_submission(obj: Any, config: LeaderboardConfig | None = None, source: str = "<submission>") -> Submission:
    """Check a parsed submission against the leaderboard's tasks; raise :class:`InputError` on the first problem.

    Scores come from the predictions: each self-reported ``results`` value is only cross-checked against
    the value the predictions give (see :func:`cross_check_tolerance`). BenCzechMark's compiled files are
    accepted as they are (lm-eval metadata kept as provenance, ``alias`` and extra numbers in ``results``);
    unknown extra fields are dropped with a warning (``Submission.warnings``, also logged): the submission
    holds only its canonical form."""
    config = config or LeaderboardConfig.load()
    if not isinstance(obj, Mapping):
        raise InputError("submission must be a JSON object", path=source)
    warnings: list[str] = []
    for k in obj:
        if k not in ("metadata", "results", "predictions"):
            warnings.append(f"{source}: unknown top-level key {safe_str(k)[:80]!r} dropped")
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        raise InputError("missing 'metadata' object", path=source, field="metadata")
    meta, more = _check_metadata(meta, source)
    warnings += more
    preds, results = obj.get("predictions"), obj.get("results")
    if not isinstance(preds, Mapping):
        raise InputError("missing 'predictions' object", path=source, field="predictions")
    if not isinstance(results, Mapping):
        raise InputError("missing 'results' object", path=source, field="results")
    wanted = config.task_ids
    wanted_set = set(wanted)  # built once: a set per item made the checks quadratic
    missing = [t for t in wanted if t not in preds]
    if missing:
        more_ = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise InputError(f"missing task {missing[0]!r}{more_}", path=source, field="predictions")
    extra = [t for t in preds if t not in wanted_set]
    if extra:
        raise InputError(f"task {extra[0]!r} is not on this leaderboard", path=source, field="predictions")
    data, res_out = {}, {}
    for t in wanted:
        spec = config.spec(t)
        data[t] = _records_to_data(t, spec.metric, preds[t], source)
        res_out[t] = _aggregate(t, spec.metric, results.get(t), source, warnings)
        reported, computed = float(res_out[t][spec.metric.value]), metric_value(data[t])
        if not math.isfinite(computed):
            raise InputError(f"task {t!r}: the predictions give a non-finite {spec.metric.value} ({computed!r})",
                             path=source, field=f"predictions.{t}")
        tol = cross_check_tolerance(spec.metric, computed)
        if not abs(reported - computed) <= tol:
            raise InputError(f"task {t!r}: reported {spec.metric.value} = {reported:.6g} but the predictions give "
                             f"{computed:.6g} (tolerance {tol:.3g})", path=source,
                             field=f"results.{t}.{spec.metric.value}")
    extra = [t for t in results if t not in wanted_set]
    if extra:
        raise InputError(f"task {extra[0]!r} is not on this leaderboard", path=source, field="results")
    for w in warnings:
        log.warning(w)
    # canonical: predictions are rebuilt from the arrays (doc_id + metric per record), nothing else is kept
    return Submission(meta, res_out, None, data, tuple(warnings))


def metric_value(data: TaskSamples) -> float:
    """The task metric computed from the per-sample records: what the leaderboard shows beside the win
    scores, and what a submission's self-reported ``results`` are checked against."""
    if data.metric is Metric.AVG_MCAUROC:
        return float(auroc(data.need("gold"), data.need("probs")))
    if data.metric is Metric.WORD_PERPLEXITY:
        return float(_boot.perplexity(data.need("loglik"), data.need("words")))
    return float(np.mean(data.need("values")))


def check_distinct_models(subs: list[Submission], sources: list[str] | None = None) -> None:
    """Two submissions naming the same model are an error naming the later one (by its file when ``sources`` are
    given). Names are compared as a board compares them (:func:`.text.name_key`: case, width and invisible
    characters do not count), so the API and the CLI's tournament agree."""

    seen: dict[str, int] = {}
    for k, s in enumerate(subs):
        key = name_key(s.model)
        if key in seen:
            first = subs[seen[key]]
            where = f"{sources[seen[key]]} ({first.model!r}" if sources else f"{first.model!r} ("
            raise InputError(f"names the same model {s.model!r} as {where}; names are compared ignoring case, "
                             "width and invisible characters)", path=sources[k] if sources else None,
                             field="metadata.model")
        seen[key] = k


def check_sample_counts(subs: list[Submission], config: LeaderboardConfig, sources: list[str] | None = None) -> None:
    """Every model must have the same samples (doc_ids) on a task: paired tests pair them by doc_id. The error
    names the later model (its file when ``sources`` are given)."""
    if not subs:
        return
    for t in config.task_ids:
        ref = subs[0].data[t].doc_ids
        for k, s in enumerate(subs[1:], 1):
            diff = id_difference(ref, s.data[t].doc_ids)
            if diff is not None:
                first = sources[0] if sources else repr(subs[0].model)
                raise InputError(f"task {t!r}: model {s.model!r} has {s.data[t].n} samples and {first} "
                                 f"{len(ref)}: {diff} (paired tests pair samples by doc_id)",
                                 path=sources[k] if sources else None, field=f"predictions.{t}")
