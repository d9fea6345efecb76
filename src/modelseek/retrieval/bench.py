"""Honest measurement of a ranking method: task-level k-fold cross-validation.

Tasks are split into folds (stratified by criticality tier where every tier has at least ``folds`` tasks;
seeded). For each fold the method is fitted on the other folds' tasks and ground truth only, then ranks the
held-out tasks; the held-out rankings of all folds form one run, evaluated with :func:`evaluate`.
``repeats`` > 1 repeats the CV with seeds ``seed, seed+1, ...`` and averages per-topic scores.

The data may be given loaded (a :class:`GroundTruth`, a :class:`Pool`, a :class:`TaskSet`) or as a path read by
:func:`~modelseek.retrieval.data.folder.resolve_folder` (the organisers' root or its ``data/``, a generated layout, a
ground-truth CSV): its ground truth, the ``models.csv`` beside it (else the built-in ntcir19) and, for a method
that reads the tasks' text, its task folders. :func:`bench` is what ``modelseek bench PATH`` does (several methods,
intervals, a baseline), returning what ``bench --json`` prints::

    from modelseek.retrieval.bench import bench, cross_validate
    res = cross_validate("avgrank", "modelretrieval-1-subtask-a", folds=5)    # or .../data, or the CSV
    doc = bench("modelretrieval-1-subtask-a", ["avgrank", "random"], baseline="avgrank").to_json()
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .data.folder import ResolvedFolder, resolve_folder
from .data.folds import make_folds
from .data.pool import Pool, load_pool
from .data.report import Report
from .data.run import Run, natural_key
from .data.task import Task, TaskSet
from .data.truth import GradingScheme, GroundTruth
from ..core.errors import InputError
from .evaluation import evaluate
from .metrics import RANKING_METRICS
from ..core.progress import progress_bar
from .rankers import Ranker
from .rankers.base import failures_allowed
from .rankers.features import CandidateFailures
from .rankers.resolve import build, check_params, ranker_class, split_params, with_card_pool
from ..core.stats.bootstrap import paired_bootstrap


@dataclass
class CVResult:
    method: str
    runs: list[Run]                       # one per repeat
    reports: list[Report]                 # one per repeat
    folds: list[list[list[str]]]          # repeat -> fold -> held-out task ids
    fitted: list[list[list[str]]]         # repeat -> fold -> task ids the method was fitted on
    metrics: list[str] = field(default_factory=lambda: list(RANKING_METRICS))
    dropped: list[str] = field(default_factory=list)  # tasks no candidate could score (allow_failures)

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



#: the most repeats of a cross-validation (each one is the whole k-fold CV again, with the next seed)
MAX_REPEATS = 1000


def cross_validate(method: str | Ranker | Callable[[], Ranker],
                   truth: GroundTruth | str | Path | ResolvedFolder, pool: Pool | str | Path | None = None,
                   tasks: TaskSet | None = None, folds: int = 5, seed: int = 0, repeats: int = 1,
                   scheme: GradingScheme | str = GradingScheme.NTCIR, metrics: Sequence[str] = RANKING_METRICS,
                   progress: bool = False, method_params: dict | None = None,
                   allow_failures: bool = False) -> CVResult:
    """Task-level k-fold CV of ``method`` on the tasks of ``truth`` (see module docstring).

    ``method`` is anything :func:`~modelseek.retrieval.rankers.resolve.build` takes (a registered name, ``"default"``,
    an
    artifact: refitted on every fold with its parameters) or a factory returning a new unfitted ranker.
    ``truth`` is a ground truth, or a path (or :func:`~modelseek.retrieval.data.folder.resolve_folder`'s result) read as
    ``modelseek bench PATH`` reads it: its ground truth, its pool (the ``models.csv`` beside it, unless ``pool``
    names one) and, for a method that reads text and no ``tasks`` given, its task folders. ``pool`` with a loaded
    ground truth defaults to the built-in ntcir19.
    ``allow_failures``: candidates that cannot be featurised are left out of the held-out tasks' rankings (and
    so count as not retrieved) instead of stopping the CV with
    :class:`~modelseek.retrieval.rankers.features.CandidateFailures`."""
    if folds is None or int(folds) < 2:
        raise InputError(f"folds must be at least 2, got {folds}", field="folds")
    if repeats is None or not 1 <= int(repeats) <= MAX_REPEATS:
        raise InputError(f"repeats must be an integer in [1, {MAX_REPEATS:,}] (each repeat is a whole "
                         f"cross-validation), got {repeats}", field="repeats")
    folder = None
    if isinstance(truth, (str, Path, ResolvedFolder)):
        folder = truth if isinstance(truth, ResolvedFolder) else resolve_folder(truth)
        truth = folder.truth()
    pool = _the_pool(pool, folder)
    factory = _factory(method, with_card_pool(method, method_params, pool))  # the one card-pool rule
    probe = factory()
    name = method if isinstance(method, str) else probe.name
    if folder is not None and tasks is None and probe.needs_text:
        tasks = folder.training_tasks(truth.task_ids)
    task_ids = truth.task_ids
    tasks = _cv_tasks(truth, pool, tasks, probe.needs_text, name)
    tiers = [truth.criticality(t).value for t in task_ids]
    runs, all_folds, all_fitted = [], [], []
    dropped: dict[str, None] = {}  # tasks no candidate could score (with allow_failures), in order
    last_failure: Exception | None = None
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
                part, failure = _fit_and_rank(ranker, tasks, truth, pool, train_ids, held, name, allow_failures)
                fitted.append(train_ids)
                if failure is not None:
                    last_failure = failure
                for t in held:
                    if t in part and len(part[t]):
                        scores[t] = part.scores(t)
                    elif allow_failures:
                        dropped.setdefault(t, None)
                    else:  # pragma: no cover - a ranker that returns no ranking without a failure
                        raise InputError(f"method {name!r} returned no ranking for task {t!r}")
            except InputError as exc:
                if exc.path is not None or not truth.source:
                    raise
                # e.g. a ground truth with gaps: the training folds know some candidates on no task at all
                raise InputError(f"cross-validation fold {fold_no} of repeat {rep + 1}: {exc.message}",
                                 path=truth.source, field=exc.field) from None
        runs.append(Run.from_scores({t: scores[t] for t in task_ids if t in scores}, name))
        all_folds.append(fold_ids)
        all_fitted.append(fitted)
    if dropped and len(dropped) == len(task_ids):
        why = f": {last_failure}" if last_failure is not None else ""
        raise InputError(f"method {name!r}: no candidate could be scored for any task{why}", field="method")
    kept = [t for t in task_ids if t not in dropped]  # a task dropped in one repeat is dropped from all
    reports = [evaluate(r, truth, metrics, scheme, topics=kept if dropped else None) for r in runs]
    return CVResult(name, runs, reports, all_folds, all_fitted, list(metrics), dropped=list(dropped))


def _the_pool(pool: Pool | str | Path | None, folder: ResolvedFolder | None) -> Pool:
    """``pool`` (a pool, a file or a name), else the folder's (its ``models.csv``, else ntcir19), else ntcir19."""
    if isinstance(pool, Pool):
        return pool
    if folder is not None:
        return folder.pool(pool)
    return load_pool(pool if pool is not None else "ntcir19")


def _factory(method: str | Ranker | Callable[[], Ranker], method_params: dict | None) -> Callable[[], Ranker]:
    """What makes a new unfitted ranker for each fold: ``method`` built by name or artifact, a fresh copy of a
    ranker's parameters, or ``method`` itself when it is a factory."""
    if isinstance(method, (str, Ranker)):
        if isinstance(method, Ranker):
            check_params(method, method_params or {})
            proto = method
            return lambda: type(proto)(**proto.get_params())  # a fresh, unfitted copy per fold
        return lambda: build(method, method_params)
    return method


def _cv_tasks(truth: GroundTruth, pool: Pool, tasks: TaskSet | None, needs_text: bool, name: str) -> TaskSet:
    """The ground truth's tasks (their data from ``tasks``, or ids alone for a method that needs no text);
    missing task data and pool candidates the ground truth does not know are :class:`InputError`."""
    task_ids = truth.task_ids
    if tasks is None:
        if needs_text:
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
    return tasks


def _fit_and_rank(ranker: Ranker, tasks: TaskSet, truth: GroundTruth, pool: Pool, train_ids: list[str],
                  held: list[str], name: str, allow_failures: bool) -> tuple[Run, Exception | None]:
    """One fold: ``ranker`` fitted on ``train_ids`` (when it learns) and run on the held-out tasks; with
    ``allow_failures``, a fold no candidate could score gives an empty run and the failure."""
    if ranker.needs_fit:
        ranker.fit(tasks.subset(train_ids), truth.subset(train_ids), pool=pool)
    # the fold's held-out tasks in one call: a frozen-feature ranker loads each candidate once per fold, not
    # once per task
    try:
        return ranker.rank_tasks([tasks.get(t) for t in held], pool, run_id=name), None
    except CandidateFailures as exc:
        if not allow_failures:
            raise
        return Run({}, name), exc  # no candidate could score any task of this fold


def compare(a: CVResult, b: CVResult, metric: str = "ndcg@5", n_resamples: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Paired bootstrap of a - b per tier on ``metric`` (same topics)."""
    common = set(a.per_topic.index) & set(b.per_topic.index)  # tasks either method dropped are left out of both
    order = sorted(common, key=lambda t: natural_key(str(t)))  # resamples follow the topics' names
    pa, pb = a.per_topic.loc[order], b.per_topic.loc[order]
    rows = []
    for tier in ["low", "medium", "high", "all"]:
        mask = np.ones(len(pa), bool) if tier == "all" else (pa["tier"] == tier).to_numpy()
        if not mask.any():
            continue
        c = paired_bootstrap(pa[metric].to_numpy()[mask], pb[metric].to_numpy()[mask], n_resamples, seed=seed)
        rows.append({"tier": tier, "metric": metric, "mean_diff": c.mean_diff, "low": c.low, "high": c.high,
                     "p_better": c.p_better, "n": int(mask.sum())})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------------------ bench
@dataclass
class BenchResult:
    """What :func:`bench` measured: per method its :class:`CVResult` (``results``; the baseline's too), its
    per-tier intervals (``summaries``) and, against ``baseline``, the paired nDCG@5 difference per tier
    (``comparisons``). :meth:`to_json` is what ``modelseek bench --json`` prints."""

    path: str
    methods: list[str]
    truth: GroundTruth
    pool: Pool
    results: dict[str, CVResult]
    summaries: dict[str, pd.DataFrame]
    comparisons: dict[str, pd.DataFrame]
    folds: int
    seed: int
    repeats: int
    scheme: str
    baseline: str | None = None

    def to_json(self) -> dict[str, Any]:
        """``{"path", "scheme", "methods": {METHOD: {"tiers": {TIER: {"n", METRIC: {"mean", "low", "high"}}},
        "folds", "seed", "repeats", "dropped_tasks", "vs_baseline"?}}}``."""
        out: dict[str, Any] = {}
        for m in self.methods:
            entry: dict[str, Any] = {"tiers": {}, "folds": self.folds, "seed": self.seed, "repeats": self.repeats,
                                     "dropped_tasks": list(self.results[m].dropped)}
            for _, row in self.summaries[m].iterrows():
                entry["tiers"].setdefault(row["tier"], {"n": int(row["n"])})[row["metric"]] = {
                    "mean": float(row["mean"]), "low": float(row["low"]), "high": float(row["high"])}
            if m in self.comparisons:
                entry["vs_baseline"] = {r["tier"]: {k: float(r[k]) for k in ("mean_diff", "low", "high", "p_better")}
                                        for _, r in self.comparisons[m].iterrows()}
            out[m] = entry
        return {"path": self.path, "scheme": self.scheme, "methods": out}


def bench(path: str | Path | ResolvedFolder, methods: str | Sequence[str] = ("avgrank",), *,
          ground_truth: str | Path | None = None, pool: Pool | str | Path | None = None, folds: int = 5,
          seed: int = 0, repeats: int = 1, baseline: str | None = None, n_resamples: int = 1000,
          scheme: GradingScheme | str = GradingScheme.NTCIR, params: Mapping[str, Any] | None = None,
          allow_failures: bool = False, progress: bool = False) -> BenchResult:
    """``modelseek bench PATH``: :func:`cross_validate` of each of ``methods`` (and ``baseline``) on the data at
    ``path``, read by :func:`~modelseek.retrieval.data.folder.resolve_folder` (the organisers' root or its ``data/``, a
    generated layout, a ground-truth CSV; ``ground_truth`` overrides the one found there, ``pool`` the
    ``models.csv`` beside it), with ``n_resamples`` bootstrap intervals per tier and, against ``baseline``, the
    paired nDCG@5 difference. ``params`` go to every method that declares them (with ``seed`` where a method
    declares one, as :func:`~modelseek.retrieval.rankers.resolve.split_params` gives them)."""
    if isinstance(path, ResolvedFolder):
        folder = path if ground_truth is None else resolve_folder(path.given, ground_truth)
    else:
        folder = resolve_folder(path, ground_truth)
    truth, the_pool = folder.truth(), _the_pool(pool, folder)
    shown = list(dict.fromkeys([methods] if isinstance(methods, str) else methods))
    if not shown:
        raise InputError("no method to cross-validate", field="methods")
    every = list(dict.fromkeys(shown + ([baseline] if baseline else [])))
    # every method sees the same tasks: their text is read once when one of them reads it
    tasks = folder.training_tasks(truth.task_ids) if any(ranker_class(m).needs_text for m in every) else None
    per = split_params(every, dict(params or {}), seed)
    scheme = GradingScheme.parse(scheme)
    results = {m: cross_validate(m, truth, the_pool, tasks=tasks, folds=folds, seed=seed, repeats=repeats,
                                 scheme=scheme, progress=progress, method_params=per[m],
                                 allow_failures=allow_failures)
               for m in every}
    summaries = {m: results[m].summary(n_resamples=n_resamples, seed=seed) for m in shown}
    comparisons = {m: compare(results[m], results[baseline], "ndcg@5", n_resamples, seed)
                   for m in shown if baseline and m != baseline}
    return BenchResult(str(folder.given), shown, truth, the_pool, results, summaries, comparisons, int(folds),
                       int(seed), int(repeats), scheme.value, baseline)


# ------------------------------------------------------------------------------------------ refit check
@dataclass(frozen=True)
class RefitCheck:
    """A refit of ``method`` measured against avgrank by a task-level CV on the same folds (what the refit can be
    expected to do on tasks it never saw). ``diffs``: the paired nDCG@5 difference method − avgrank per tier (None
    when the method is avgrank itself). The policy of installing a refit lives here, not in a command."""

    method: str
    folds: int
    repeats: int
    results: dict[str, CVResult]
    diffs: pd.DataFrame | None

    @property
    def diff(self) -> float | None:
        """nDCG@5 of the refit − avgrank's, over all tasks (None for avgrank itself)."""
        if self.diffs is None or "all" not in self.diffs.index:
            return None
        return float(self.diffs.loc["all", "mean_diff"])

    @property
    def helps(self) -> bool:
        """Whether the refit is measured to help: its whole 95% interval of the difference is above zero."""
        return self.diffs is not None and "all" in self.diffs.index and float(self.diffs.loc["all", "low"]) > 0

    def verdict(self) -> str:
        """One line: whether installing the refit is recommended, and why."""
        if self.diffs is None or "all" not in self.diffs.index:
            return "avgrank is the baseline itself: nothing to compare it with"
        row = self.diffs.loc["all"]
        cell = f"nDCG@5 − avgrank {row['mean_diff']:+.3f} [{row['low']:+.3f}, {row['high']:+.3f}]"
        if self.helps:
            return f"the refit is measured to help ({cell}): install it with `install_default`"
        if self.diff is not None and self.diff < 0:
            return f"the refit is below avgrank ({cell}): keep the current default"
        return f"the refit is not measured to help ({cell}; the interval holds 0): keep the current default"

    def check_install(self, force: bool = False) -> None:
        """Refuse to install a refit whose CV puts it below avgrank (``force`` installs it anyway)."""
        d = self.diff
        if d is not None and d < 0 and not force:
            raise InputError(f"not installed: in the CV above the refit is below avgrank (nDCG@5 − avgrank "
                             f"{d:+.3f}), so it would rank worse than the plain prior; rerun with `force` to "
                             f"install it anyway", field="install_default")


def check_refit(method: str, truth: GroundTruth, pool: Pool, tasks: TaskSet | None = None, folds: int = 5,
                seed: int = 0, repeats: int = 1, method_params: dict | None = None,
                progress: bool = False) -> RefitCheck:
    """``method`` and avgrank cross-validated on the same folds of ``truth``'s tasks (see :class:`RefitCheck`)."""
    res = {m: cross_validate(m, truth, pool, tasks=tasks, folds=folds, seed=seed, repeats=repeats,
                             method_params=method_params if m == method else None, progress=progress)
           for m in dict.fromkeys([method, "avgrank"])}
    diffs = compare(res[method], res["avgrank"], "ndcg@5", 1000, 0).set_index("tier") if method != "avgrank" else None
    return RefitCheck(method, folds, repeats, res, diffs)
