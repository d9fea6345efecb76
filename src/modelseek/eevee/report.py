"""The machine-readable reports of ``eevee search`` (``--json``), built here so that a caller of the API gets
the very document the CLI prints for the same table and settings."""

from __future__ import annotations

from typing import Any

from .evaluators import Evaluator
from .honest import paired_interval
from .score import Score
from .search import SearchResult

BASELINE = "predict every metric of a test model by the training models' mean"
IN_SAMPLE = ("the best subset's cross-validated loss on the whole table: chosen and scored on the same splits, "
             "so optimistic for a new model (the honest figure is the nested one)")


def json_safe(value: Any) -> Any:
    """Plain data as JSON holds it; another object (a regressor's parameter such as an estimator) as its repr."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    item = getattr(value, "item", None)  # a numpy scalar
    if callable(item) and getattr(value, "shape", None) == ():
        return json_safe(item())
    return repr(value)


def baseline_dict(base: Score) -> dict:
    return {"what": BASELINE, "score": base.mean, "std": base.std, "min": base.min, "max": base.max}


def scored(s: Score, base: Score) -> dict:
    """A score with its gain over the training-means baseline."""
    return {**s.to_dict(), "gain": base.mean - s.mean}


def in_sample_dict(res: SearchResult, confidence: float = 0.9) -> dict:
    """The in-sample figure, labelled as such, with a t interval over its cross-validation splits (which
    overlap, so the interval is narrower than the uncertainty for a new model)."""
    ci = paired_interval(res.best.per_split, confidence) if len(res.best.per_split) > 1 else None
    return {"what": IN_SAMPLE, "loss": res.best.mean, "std": res.best.std,
            "interval": list(ci) if ci else None, "confidence": confidence, "subset": list(res.best.subset)}


def search_report(res: SearchResult, ev: Evaluator, *, top: int = 10, meta_model: str | None = None) -> dict:
    """``eevee search --json``: the honest (nested) estimate first, the in-sample one labelled, the four
    baselines with their paired intervals, then the top subsets (in-sample) and the run's facts."""
    base = ev.baseline()
    h = res.honest
    conf = h.confidence if h is not None else 0.9
    return {
        "k": res.k,
        "loss": res.loss,
        "loss_is": "honest" if h is not None else "in_sample",
        "honest": h.to_dict() if h is not None else None,
        "honest_note": res.honest_note,
        "in_sample": in_sample_dict(res, conf),
        "baselines": h.baselines_dict() if h is not None else None,
        "in_sample_baselines": {m: {"subset": x.subset, "loss": x.in_sample} for m, x in h.methods.items()}
        if h is not None else None,
        "baseline": baseline_dict(base),
        "top": [scored(s, base) for s in res.top[:top]],
        "n_evaluated": res.n_evaluated, "n_trained": res.n_trained, "n_subsets": res.n_subsets,
        "exhaustive": res.exhaustive, "wall_s": res.wall_s,
        "leaky": ev.config.leaky, "loss_scale": ev.config.loss_scale,
        "meta_model": meta_model or ev.config.model,
        "meta_model_params": json_safe(ev.config.model_params.to_mapping()), "seed": ev.config.seed,
        "table": repr(ev.table),
    }
