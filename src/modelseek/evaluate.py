"""``evaluate(run, truth)``: the official NTCIR-19 Model Retrieval scorer, and more.

Each topic of the ground truth is ordered by the run's Rank column (ties by line order; Score is not used).
nDCG@k uses gain 2^rel - 1 and discount log2(i + 1) with the ideal ranking over *all* candidates of the
topic; candidates missing from the run count as 0; a topic missing from the run scores 0 on every metric
(1 on regret); the score is the plain mean over topics. ``evaluate`` never writes into its inputs.

``kendall`` is Vigna's weighted Kendall tau between the run's order and the ground-truth scores (any
higher-is-better score: F1, accuracy ...); a topic missing from the run has no value (NaN, left out of the
means). A run whose docIDs match no model id of the ground truth on the topics they share is an error, not
a report of zeros (e.g. a run of Hugging Face ids scored against a table of numeric ids).
"""

from __future__ import annotations

import math
from typing import Sequence

from . import metrics as _metrics
from .data.report import Report
from .data.run import Run
from .data.truth import GradingScheme, GroundTruth
from .errors import InputError

DEFAULT_METRICS = ("ndcg@1", "ndcg@3", "ndcg@5", "mrr")


def evaluate(run: Run, truth: GroundTruth, metrics: Sequence[str] = DEFAULT_METRICS,
             scheme: GradingScheme | str = GradingScheme.NTCIR, topics: Sequence[str] | None = None) -> Report:
    """Score ``run`` against ``truth``; ``topics`` restricts to a subset (default: every truth topic)."""
    s = GradingScheme.parse(scheme)
    names = [m.strip().lower() for m in metrics if m.strip()]
    if not names:
        raise InputError(f"no metric given; valid names: {', '.join(_metrics.names())}", field="metrics")
    fns = {m: _metrics.get(m) for m in names}
    wanted = truth.task_ids if topics is None else [str(t) for t in topics]
    shared = [t for t in wanted if t in run]
    models = set(truth.model_ids)
    if shared and not any(e.doc in models for t in shared for e in run[t]):
        example = run[shared[0]][0].doc
        raise InputError(f"run {run.run_id!r}: no docID matches a model id of the ground truth on the "
                         f"{len(shared)} shared topic(s) (run: {example!r} ...; ground truth: "
                         f"{', '.join(repr(m) for m in truth.model_ids[:3])} ...)", field="docID")
    rows = {}
    missing = []
    for topic in wanted:
        j = _metrics.Judgments(truth.grades(topic, s), truth.f1(topic), s)
        if topic in run:
            ranking = run.ranking(topic)
            vals = {m: float(fn(ranking, j)) for m, fn in fns.items()}
        else:
            missing.append(topic)
            vals = {m: (1.0 if m.startswith("regret") else (math.nan if m == "kendall" else 0.0)) for m in names}
        rows[topic] = {"tier": truth.criticality(topic).value, **vals}
    import pandas as pd
    per_topic = pd.DataFrame.from_dict(rows, orient="index")
    per_topic.index.name = "topic"
    extra = [t for t in run if t not in set(wanted)]
    return Report(per_topic, names, run_id=run.run_id, missing_topics=missing, extra_topics=extra, scheme=s.value)
