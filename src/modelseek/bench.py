"""Honest measurement of a ranking method: task-level k-fold cross-validation.

Tasks are split into folds (stratified by criticality tier where every tier has at least ``folds`` tasks;
seeded). For each fold the method is fitted on the other folds' tasks and ground truth only, then ranks the
held-out tasks; the held-out rankings of all folds form one run, evaluated with :func:`evaluate`.
``repeats`` > 1 repeats the CV with seeds ``seed, seed+1, ...`` and averages per-topic scores.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from .data.pool import Pool
from .data.report import Report
from .data.run import Run
from .data.task import Task, TaskSet
from .data.truth import GradingScheme, GroundTruth
from .errors import InputError
from .evaluate import evaluate
from .progress import progress_bar
from .rankers import Ranker
from .stats.bootstrap import paired_bootstrap

BENCH_METRICS = ("ndcg@1", "ndcg@3", "ndcg@5", "mrr")


def make_folds(task_ids: Sequence[str], tiers: Sequence[str], folds: int = 5, seed: int = 0) -> list[list[str]]:
    """Held-out task ids per fold; stratified by tier when every tier has at least ``folds`` tasks."""
    from sklearn.model_selection import KFold, StratifiedKFold

    ids = np.asarray([str(t) for t in task_ids])
    if folds < 2 or folds > len(ids):
        raise InputError(f"folds must be between 2 and the number of tasks ({len(ids)}), got {folds}")
    _, counts = np.unique(np.asarray(tiers), return_counts=True)
    if counts.min() >= folds:
        splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
        splits = splitter.split(ids, np.asarray(tiers))
    else:
        splits = KFold(n_splits=folds, shuffle=True, random_state=seed).split(ids)
    return [list(ids[test]) for _, test in splits]


@dataclass
class CVResult:
    method: str
    runs: list[Run]                       # one per repeat
    reports: list[Report]                 # one per repeat
    folds: list[list[list[str]]]          # repeat -> fold -> held-out task ids
    fitted: list[list[list[str]]]         # repeat -> fold -> task ids the method was fitted on
    metrics: list[str] = field(default_factory=lambda: list(BENCH_METRICS))

    @property
    def per_topic(self) -> pd.DataFrame:
        """Per-topic metrics averaged over repeats (with the tier column)."""
        frames = [r.per_topic for r in self.reports]
        mean = sum(f[self.metrics] for f in frames) / len(frames)
        mean.insert(0, "tier", frames[0]["tier"])
        return mean

    @property
    def report(self) -> Report:
        r0 = self.reports[0]
        return Report(self.per_topic, self.metrics, run_id=self.method, scheme=r0.scheme)

    def summary(self, n_resamples: int = 1000, seed: int = 0) -> pd.DataFrame:
        return self.report.intervals(n_resamples=n_resamples, seed=seed)


def cross_validate(method: str | Ranker | Callable[[], Ranker], truth: GroundTruth, pool: Pool,
                   tasks: TaskSet | None = None, folds: int = 5, seed: int = 0, repeats: int = 1,
                   scheme: GradingScheme | str = GradingScheme.NTCIR, metrics: Sequence[str] = BENCH_METRICS,
                   progress: bool = False, method_params: dict | None = None,
                   allow_failures: bool = False) -> CVResult:
    """Task-level k-fold CV of ``method`` on the tasks of ``truth`` (see module docstring).

    ``method`` is anything :func:`~modelseek.rankers.resolve.build` takes (a registered name, ``"default"``, an
    artifact: refitted on every fold with its parameters) or a factory returning a new unfitted ranker.
    ``allow_failures``: candidates that cannot be featurised are left out of the held-out tasks' rankings (and
    so count as not retrieved) instead of stopping the CV with
    :class:`~modelseek.rankers.features.CandidateFailures`."""
    from .rankers.base import failures_allowed
    from .rankers.resolve import build, check_params

    if folds is None or int(folds) < 2:
        raise InputError(f"folds must be at least 2, got {folds}", field="folds")
    if repeats is None or int(repeats) < 1:
        raise InputError(f"repeats must be at least 1, got {repeats}", field="repeats")
    if isinstance(method, (str, Ranker)):
        if isinstance(method, Ranker):
            check_params(method, method_params or {})
            proto = method
            factory = lambda: type(proto)(**proto.get_params())  # noqa: E731 - a fresh, unfitted copy per fold
        else:
            factory = lambda: build(method, method_params)  # noqa: E731
    else:
        factory = method
    probe = factory()
    name = method if isinstance(method, str) else probe.name
    task_ids = truth.task_ids
    if tasks is None:
        if probe.needs_text:
            raise InputError(f"method {name!r} needs the tasks' text; give the task folder")
        tasks = TaskSet(Task.from_id(t, truth.criticality(t)) for t in task_ids)
    else:
        missing = [t for t in task_ids if t not in tasks]
        if missing:
            raise InputError(f"{len(missing)} ground-truth task(s) have no task data: {', '.join(missing[:5])}")
        tasks = tasks.subset(task_ids)
    known_models = set(truth.model_ids)  # built once: a set per candidate made the check quadratic
    missing_models = [c.id for c in pool if c.id not in known_models]
    if missing_models:
        raise InputError(f"pool candidate(s) not in the ground truth: {', '.join(missing_models)}",
                         path=truth.source or None)
    tiers = [truth.criticality(t).value for t in task_ids]
    runs, reports, all_folds, all_fitted = [], [], [], []
    for rep in range(repeats):
        try:
            fold_ids = make_folds(task_ids, tiers, folds, seed + rep)
        except InputError as exc:  # too few tasks for the folds: the ground truth's file says which tasks
            raise InputError(exc.message, path=truth.source or None, field=exc.field) from None
        scores: dict[str, dict[str, float]] = {}
        fitted = []
        for fold_no, held in enumerate(progress_bar(fold_ids, desc=f"{name} CV repeat {rep + 1}/{repeats}",
                                                    disable=not progress), 1):
            held_set = set(held)
            train_ids = [t for t in task_ids if t not in held_set]
            ranker = failures_allowed(factory()) if allow_failures else factory()
            try:
                if ranker.needs_fit:
                    ranker.fit(tasks.subset(train_ids), truth.subset(train_ids), pool=pool)
                fitted.append(train_ids)
                for t in held:
                    scores[t] = ranker.rank(tasks.get(t), pool)
            except InputError as exc:
                if exc.path is not None or not truth.source:
                    raise
                # e.g. a ground truth with gaps: the training folds know some candidates on no task at all
                raise InputError(f"cross-validation fold {fold_no} of repeat {rep + 1}: {exc.message}",
                                 path=truth.source, field=exc.field) from None
        run = Run.from_scores({t: scores[t] for t in task_ids}, name)
        runs.append(run)
        reports.append(evaluate(run, truth, metrics, scheme))
        all_folds.append(fold_ids)
        all_fitted.append(fitted)
    return CVResult(name, runs, reports, all_folds, all_fitted, list(metrics))


def compare(a: CVResult, b: CVResult, metric: str = "ndcg@5", n_resamples: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Paired bootstrap of a - b per tier on ``metric`` (same topics)."""
    pa, pb = a.per_topic, b.per_topic.loc[a.per_topic.index]
    rows = []
    for tier in ["low", "medium", "high", "all"]:
        mask = np.ones(len(pa), bool) if tier == "all" else (pa["tier"] == tier).to_numpy()
        if not mask.any():
            continue
        c = paired_bootstrap(pa[metric].to_numpy()[mask], pb[metric].to_numpy()[mask], n_resamples, seed=seed)
        rows.append({"tier": tier, "metric": metric, "mean_diff": c.mean_diff, "low": c.low, "high": c.high,
                     "p_better": c.p_better, "n": int(mask.sum())})
    return pd.DataFrame(rows)
