"""``modelseek duel compile``: lm-evaluation-harness output folders -> one compiled submission.

The harness (run with ``--log_samples``) writes ``results_<timestamp>.json`` (aggregated metrics under
``results[<task>]["<metric>,<filter>"]``) and ``samples_<task>_<timestamp>.jsonl`` (one line per sample with
``doc_id`` and the per-sample metric) -- one folder per task, or several tasks per folder; folders are
searched recursively. A leaderboard task evaluated with several prompts appears as ``<task>_p0``,
``<task>_p1``... (also ``_prompt1``, ``_v1``, ``_1``): the prompt with the best aggregated metric is kept
with its samples (max-pooling; the lowest for perplexity), and the choice is recorded in
``metadata.prompts``. When a results key has several filters, ``none`` is preferred, else the first by name.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..core.errors import InputError
from ..core.io import iter_jsonl, read_json
from .config import LeaderboardConfig
from .submission import PROVENANCE_FIELDS, validate_submission

_SAMPLES = re.compile(r"^samples_(?P<task>.+?)_(?P<stamp>\d{4}-\d{2}-\d{2}T[\d\-.:]+)\.jsonl$")
_PROMPT = re.compile(r"^(?:p|prompt|v|var)?_?\d+$")


def _scan(folders: list[Path]):
    results: dict[str, tuple[str, dict, Path]] = {}   # key -> (stamp/file name, metrics, path)
    samples: dict[str, tuple[str, Path]] = {}
    header: dict = {}
    for folder in folders:
        if not folder.is_dir():
            raise InputError("not a folder", path=folder)
        found = False
        for p in sorted(folder.rglob("results*.json")):
            found = True
            doc = read_json(p)
            if not isinstance(doc.get("results"), dict):
                raise InputError("no 'results' object (not an lm-evaluation-harness results file?)", path=p,
                                 field="results")
            header = header or doc
            for key, metrics in doc["results"].items():
                if isinstance(metrics, dict) and (key not in results or p.name >= results[key][0]):
                    results[key] = (p.name, metrics, p)
        for p in sorted(folder.rglob("samples_*.jsonl")):
            m = _SAMPLES.match(p.name)
            key = m.group("task") if m else p.name[len("samples_"):-len(".jsonl")]
            stamp = m.group("stamp") if m else ""
            if key not in samples or stamp >= samples[key][0]:
                samples[key] = (stamp, p)
        if not found:
            raise InputError("no results*.json found (run lm-evaluation-harness with --output_path)", path=folder)
    return results, samples, header


def _metric_entry(metrics: dict, metric: str) -> tuple[str, float] | None:
    entries = {k.split(",", 1)[1] if "," in k else "none": v for k, v in metrics.items()
               if k.split(",", 1)[0] == metric and isinstance(v, (int, float)) and not isinstance(v, bool)}
    if not entries:
        return None
    filt = "none" if "none" in entries else sorted(entries)[0]
    return filt, float(entries[filt])


def _read_samples(path: Path, metric: str, filt: str) -> list[dict]:
    out: list[dict] = []
    for ln, rec in iter_jsonl(path):
        if not isinstance(rec, dict):
            raise InputError("a sample must be a JSON object", path=path, line=ln)
        if rec.get("filter", filt) != filt:
            continue
        if metric not in rec:
            raise InputError(f"sample has no '{metric}'", path=path, line=ln, field=metric)
        out.append({"doc_id": rec.get("doc_id", len(out)), metric: rec[metric]})
    if not out:
        raise InputError(f"no samples with filter {filt!r}", path=path)
    return out


def _model_name(header: dict) -> str | None:
    if isinstance(header.get("model_name"), str) and header["model_name"]:
        return header["model_name"]
    args = (header.get("config") or {}).get("model_args") or ""
    if isinstance(args, str):
        for part in args.split(","):
            if part.startswith("pretrained="):
                return part.split("=", 1)[1]
    return None


def compile_submission(folders: list[str | Path], config: LeaderboardConfig | None = None, model: str | None = None,
                       metadata: dict | None = None) -> dict:
    """Compile harness output folders into a validated submission dict (see module docstring)."""
    if model is not None and not model.strip():
        raise InputError("the model name is empty; give a name or leave it out to take the harness's",
                         field="model")
    config = config or LeaderboardConfig.load()
    results, samples, header = _scan([Path(f) for f in folders])
    preds, res, prompts = {}, {}, {}
    for spec in config.tasks:
        metric = spec.metric.value
        cands = []
        for key, (_, metrics, rpath) in results.items():
            if key == spec.task or (key.startswith(spec.task + "_") and _PROMPT.match(key[len(spec.task) + 1:])):
                entry = _metric_entry(metrics, metric)
                if entry is not None:
                    cands.append((key, entry[0], entry[1], rpath))
        if not cands:
            raise InputError(f"no results for task {spec.task!r} (metric {metric!r}) in the given folders",
                             field=spec.task)
        better = max if spec.metric.higher_is_better else min
        best = better(sorted(cands), key=lambda c: c[2])
        key, filt, value, rpath = best
        if key not in samples:
            raise InputError(f"no samples_{key}_*.jsonl beside the results (run the harness with --log_samples)",
                             path=rpath.parent, field=spec.task)
        preds[spec.task] = _read_samples(samples[key][1], metric, filt)
        res[spec.task] = {metric: value}
        if key != spec.task:
            prompts[spec.task] = key
    meta: dict[str, Any] = {"model": model or _model_name(header) or ""}
    args = (header.get("config") or {}).get("model_args")
    if isinstance(args, str) and "dtype=" in args:
        meta["precision"] = args.split("dtype=", 1)[1].split(",", 1)[0]
    # the harness's provenance (versions, tokenizer, chat template, timings) travels with the submission
    meta.update({k: header[k] for k in sorted(PROVENANCE_FIELDS) if k in header and k != "config"})
    meta.update(metadata or {})
    if prompts:
        meta["prompts"] = prompts
    obj = {"metadata": meta, "results": res, "predictions": preds}
    validate_submission(obj, config, source="<compiled>")
    return obj
