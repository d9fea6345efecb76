"""A participant's NTCIR-19 Subtask A submission in one call: up to five validated runs for the official test
topics, and ``METHODS.md`` declaring what each run is (the task asks every run to declare whether it is
inference-based and whether candidates were fine-tuned).

The input is the organisers' repository as their downloader leaves it (:mod:`modelseek.retrieval.data.organisers`): the
test
tasks in ``data/task-data/test-tasks/{id:04d}/``, ``data/tasks.csv``, ``data/models.csv`` and, where
``download_models`` ran, the candidates' snapshots in ``data/models/NN/``.

Runs (``--methods``; by default every one that can be computed here):

* ``default`` — the shipped (or the user's installed) inference-free ranker: the average-rank prior of the
  training tasks moved by card evidence; reads each test task's texts, labels and tasks.csv fields;
* ``avgrank`` — the organisers' baseline: each candidate's mean rank over the training tasks (inference-free);
* ``logme``, ``knn`` — frozen-feature estimators (inference-based): need every candidate's weights locally;
* ``rrf`` — reciprocal-rank fusion of ``logme`` and ``knn`` (inference-based);
* ``funnel`` — with a fine-tuning budget only (``budget=``): per test task, the budgeted funnel of
  :func:`modelseek.retrieval.funnel.select` (prior, LogME on the top of it, fine-tuning down the fused order within the
  task's share of the budget; the fine-tuned candidates first by validation F1). Declared as fine-tuned.

Before any model is loaded, every method's preconditions are checked on every test task (:func:`check_methods`:
the task's labels and class counts as each estimator needs them, the candidates' weights), in seconds. A run that
cannot be made on some task is made without its method there — that task ranked by the avgrank prior, said in
``METHODS.md`` — and a run that cannot be made at all (or fails while computing) is left out with its reason; the
other runs are still written. A test task of tasks.csv that is not downloaded is ranked by the avgrank prior in
every run (it has no data), said on the console and in ``METHODS.md``.

Nothing is written unless every run is complete and passes the official validation (every test topic of
tasks.csv ranks every model_id of models.csv once; distinct run ids; at most five).
"""

from __future__ import annotations

import datetime as _dt
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._version import __version__
from .api import rank_explained
from .data.organisers import (OrganisersLayout, absent_test_tasks, describe_absent, find_layout, load_split,
                              test_topics)
from ..core.clash import FOLDER_READS, INPUT, OUTPUT_DIR, PathArg, refuse_clashes
from .data.pool import Pool, load_pool
from .data.run import Run, write_runs, validate_run
from .data.folder import resolve_folder
from .data.task import Task, looks_numeric
from .data.truth import GroundTruth
from ..core.errors import InputError, ModelseekError, ValidationError
from .funnel import format_seconds, parse_budget, select
from ..core.progress import expected_duration
from . import submission_cost as cost
from .submission_cost import ModelThreads, cpu_parallel, parallel_workers
from ..core.io import atomic_write_text
from .rankers.default import default_spec
from .rankers.feature_jobs import preflight
from .rankers.resolve import ranker_class
from .rankers.resolve import resolve
from . import estimators
from .rankers.feature_jobs import estimator_score, prepare_tasks

MAX_RUNS = 5
#: the runs a submission can make, in the order it makes them (see :func:`_infos`)
METHODS = ("default", "avgrank", "logme", "knn", "rrf", "funnel")
FEATURE_METHODS = ("logme", "knn", "rrf", "funnel")


@dataclass(frozen=True)
class MethodInfo:
    """What a submission method is, for ``METHODS.md``."""

    method: str              # what rank() is given
    inference: str           # "inference-free" | "inference-based"
    data: str                # the data the run uses
    description: str


@dataclass(frozen=True)
class Prior:
    """Which average-rank prior the avgrank run (and a task its method cannot rank) uses: the ground truth on disk
    when it holds more training tasks than the one shipped with modelseek, else the shipped one."""

    tasks: int
    source: str
    truth: GroundTruth | None = None   # None: the shipped artifact

    @property
    def method(self) -> str:
        return "avgrank" if self.truth is not None else "avgrank-ntcir19"

    def describe(self) -> str:
        return f"the {self.tasks} training tasks of {self.source}"


def shipped_prior() -> Prior:
    fitted = getattr(resolve("avgrank-ntcir19", {}), "fitted_task_ids_", None) or []
    return Prior(len(fitted), "the ground truth shipped with modelseek (avgrank-ntcir19)")


def choose_prior(root: str | Path, train_truth: str | Path | None = None) -> Prior:
    """The avgrank prior for a submission from ``root``: ``train_truth`` (ROOT, ROOT/data or the CSV) when given;
    else the ground truth in ``root`` when it has more tasks than the shipped one; else the shipped one."""
    shipped = shipped_prior()
    if train_truth is not None:
        folder = resolve_folder(train_truth)
    else:
        folder = resolve_folder(root)
        if folder.ground_truth is None:
            return shipped
    truth = folder.truth()
    if train_truth is None and len(truth.task_ids) <= shipped.tasks:
        return shipped
    gt = folder.ground_truth
    assert gt is not None  # truth() read it
    try:  # named as the participant's repository names it (no local path in METHODS.md)
        source = gt.relative_to(Path(root)).as_posix()
    except ValueError:
        source = gt.name
    return Prior(len(truth.task_ids), source, truth)


def _infos(prior: Prior | None = None) -> dict[str, MethodInfo]:
    spec = default_spec()
    on = prior.describe() if prior is not None else "the NTCIR-19 training tasks"
    return {
        "default": MethodInfo("default", "inference-free",
                              "each test task's train/val texts and labels and its tasks.csv fields (instruction, "
                              "criticality); the ground truth of the NTCIR-19 training tasks the ranker was fitted on; "
                              "the candidates' model cards (profiles shipped with modelseek)",
                              f"modelseek's default ranker, {spec.describe()}: the average-rank prior moved by "
                              f"card and task evidence, weights learned on the training tasks"),
        "avgrank": MethodInfo(prior.method if prior is not None else "avgrank-ntcir19", "inference-free",
                              f"the ground truth of {on} only (no test-task data)",
                              f"average rank of each candidate over {on} (the organisers' baseline)"),
        "logme": MethodInfo("logme", "inference-based",
                            "each test task's train split (texts and labels); every candidate's frozen weights",
                            "LogME (You et al., ICML 2021) on mean-pooled frozen features"),
        "knn": MethodInfo("knn", "inference-based",
                          "each test task's train split (texts and labels); every candidate's frozen weights",
                          "k-nearest-neighbour accuracy on frozen features (cross-validated)"),
        "rrf": MethodInfo("rrf", "inference-based",
                          "each test task's train split (texts and labels); every candidate's frozen weights",
                          "reciprocal-rank fusion (k=60) of LogME and kNN"),
        "funnel": MethodInfo("funnel", "inference-based",
                             "each test task's train split (fine-tuning, features) and val split (choosing by "
                             "validation F1; test labels are never used); every candidate's weights",
                             "the budgeted funnel (modelseek select) per test task: the default's prior, LogME on "
                             "its top candidates, then fine-tuning down the fused order within the task's share of "
                             "the budget; fine-tuned candidates ranked first by validation F1"),
    }


@dataclass(frozen=True)
class SubmittedRun:
    run_id: str
    method: str
    path: Path
    info: MethodInfo
    topics: int
    finetuned: int = 0       # candidates fine-tuned for this run, over all topics
    #: task id -> why this run ranks it by the avgrank prior instead of its method
    fallback: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Submission:
    runs: list[SubmittedRun]
    skipped: dict[str, str]          # method -> why it was not made
    methods_file: Path
    layout: OrganisersLayout
    absent: list[str] = field(default_factory=list)  # test tasks of tasks.csv not downloaded
    estimates: dict[str, float] = field(default_factory=dict)  # method -> the up-front estimate (seconds)
    timings: dict[str, float] = field(default_factory=dict)    # method -> what it took (seconds)


def missing_weights(pool: Pool) -> dict[str, str]:
    """Candidates whose weights are neither in a local folder nor in the Hugging Face cache (id -> why)."""
    return preflight(pool, cache_dir=False)[0]


def _job_config(method: str, seed: int):
    """The feature job a submission method computes (its estimators and options), or None for a method that runs
    no estimator."""

    name = "logme" if method == "funnel" else _infos()[method].method  # the funnel scores its top by LogME
    ranker = resolve(name, {})
    config = getattr(ranker, "job_config", None)
    return None if config is None else config()


def check_methods(tasks: Sequence[Task], methods: Sequence[str], seed: int = 0) -> dict[str, dict[str, str]]:
    """Each method's preconditions on each task, checked in seconds and before any model is loaded -> {method:
    {task id: why it cannot run there}} (methods that can run everywhere are absent).

    For a frozen-feature method every estimator it runs is called on the task's labels as the job will give them
    (the same subsample, the task's declared label kind) with stand-in features of the right shape: whatever an
    estimator refuses for the labels — a regression task for a classification estimator, too few examples of a
    class, a single class — is refused here, not after the candidates' features were computed."""

    out: dict[str, dict[str, str]] = {}
    for m in methods:
        config = _job_config(m, seed)
        if config is None:
            continue
        for task in tasks:
            try:
                (inp,) = prepare_tasks([task], config)
                rng = np.random.default_rng(seed)
                for name in config.estimators:
                    kind = estimators.info(name).input.value
                    x = rng.standard_normal((len(inp.texts), 8 if kind == "features" else 3))
                    if kind != "features":  # a head's class probabilities
                        x = np.exp(x) / np.exp(x).sum(axis=1, keepdims=True)
                    try:
                        estimator_score(config, name, x, inp.train_labels, inp.val_labels, inp.regression)
                    except InputError as exc:
                        raise InputError(f"{name}: {exc.message}") from None
            except InputError as exc:
                out.setdefault(m, {})[task.id] = exc.message.removeprefix(f"task {task.id}: ")
    return out


def plan(layout: OrganisersLayout, pool: Pool, methods: Sequence[str] | None,
         budget: str | float | None = None) -> tuple[list[str], dict[str, str]]:
    """(the methods to run, {method: why it is skipped}); an asked-for method that cannot run is an error. With a
    ``budget`` the default adds the fine-tuning ``funnel`` run (and the five-run limit keeps the first five)."""
    known = _infos()
    asked = list(dict.fromkeys(methods)) if methods else None
    for m in asked or ():
        if m not in known:
            raise InputError(f"unknown submission method {m!r}; valid: {', '.join(known)}", field="methods")
    if asked is not None and len(asked) > MAX_RUNS:
        raise InputError(f"{len(asked)} methods; a participant submits at most {MAX_RUNS} runs", field="methods")
    wanted = asked or [m for m in known if m != "funnel" or budget is not None]
    if "funnel" in wanted and budget is None:
        raise InputError("the funnel run fine-tunes candidates: give `budget` (e.g. 48h for all test tasks)",
                         field="methods")
    dead = missing_weights(pool) if any(m in FEATURE_METHODS for m in wanted) else {}
    skipped: dict[str, str] = {}
    if dead:
        where = f"in {pool.model_dir}" if pool.model_dir is not None else "in a local folder"
        why = (f"needs every candidate's weights; {len(dead)} of {len(pool)} are neither {where} nor in the "
               f"Hugging Face cache (e.g. candidate {next(iter(dead))}: {next(iter(dead.values()))}); run the "
               f"organisers' 'python main.py download_models --all' first")
        feature = [m for m in wanted if m in FEATURE_METHODS]
        if (asked is not None or budget is not None) and feature:
            raise InputError(f"{' '.join(feature)}: {why}",
                             field="methods" if asked else "budget")
        skipped = {m: why for m in feature}
    todo = [m for m in wanted if m not in skipped]
    if len(todo) > MAX_RUNS:  # the budgeted default: the funnel replaces the last estimator run
        todo = [*[m for m in todo if m != "funnel"][:MAX_RUNS - 1], "funnel"]
    return todo, skipped


def _test_tasks(layout: OrganisersLayout, topics: Sequence[str]) -> list[Task]:
    """The downloaded test tasks; one that tasks.csv does not list as a test task is refused."""
    tasks = load_split(layout, "test")
    extra = [t.id for t in tasks if t.id not in set(topics)]
    if extra:
        raise InputError(f"task(s) {', '.join(extra[:8])} are in test-tasks/ but not test tasks of tasks.csv",
                         path=layout.splits["test"], field="task_type")
    return list(tasks)


def _checked(tasks: list[Task], todo: list[str], seed: int, methods: Sequence[str] | None, skipped: dict[str, str],
             say: Callable[[str], None], prior: Prior) -> tuple[list[str], dict[str, dict[str, str]]]:
    """Every method's preconditions on every test task, before any model loads: a method that cannot run on any
    task is refused (asked for by name) or left out (``skipped``); the methods to run and, per method, the tasks it
    cannot rank (those go to the prior)."""
    started = time.monotonic()
    cannot = check_methods(list(tasks), todo, seed)
    for m, per in cannot.items():
        first_task, first_why = next(iter(per.items()))
        if len(per) == len(tasks):
            why = f"cannot run on any test task (e.g. task {first_task}: {first_why})"
            if methods:  # asked for by name: refused now, in seconds, naming task and method
                raise InputError(f"{m}: {why}", field="methods")
            skipped[m] = why
        else:
            say(f"{m}: cannot run on {len(per)} test task(s) ({', '.join(list(per)[:8])}; e.g. task {first_task}: "
                f"{first_why}); the run ranks them by the avgrank prior (said in METHODS.md)")
    todo = [m for m in todo if m not in skipped]
    say(f"checked {len(todo)} method(s) on {len(tasks)} test task(s) in {time.monotonic() - started:.1f}s; "
        f"the avgrank prior: {prior.describe()}")
    return todo, cannot


def _refuse_clashes(root, out, pool, train_truth) -> None:
    """The one rule of every writing call (:mod:`modelseek.core.clash`), as ``modelseek submission`` checks its
    options: ``out`` holds none of the files the call reads."""
    refuse_clashes([PathArg("out", out, OUTPUT_DIR, ("*.txt", "METHODS.md")),
                    PathArg("root", root, INPUT, FOLDER_READS),
                    *(PathArg(name, value, INPUT, FOLDER_READS if name == "train_truth" else ())
                      for name, value in (("pool", pool), ("train_truth", train_truth)) if value is not None)])


def make_submission(root: str | Path, out: str | Path, methods: Sequence[str] | None = None, team: str = "modelseek",
                    pool: str | Path | None = None, device: str | None = None, command: str | None = None,
                    progress: bool = False, echo: Callable[[str], None] | None = None,
                    budget: str | float | None = None, seed: int = 0,
                    train_truth: str | Path | None = None) -> Submission:
    """Rank the official test tasks of the organisers' ``root`` with each method, validate every run against the
    official topics and docIDs, then write ``out/<run id>.txt`` and ``out/METHODS.md`` (nothing before all pass)."""
    say = echo or (lambda s: None)
    _refuse_clashes(root, out, pool, train_truth)
    root = Path(root)
    layout = find_layout(root)
    if layout is None or "test" not in layout.splits:
        raise InputError("no test tasks here: the organisers' 'python main.py download_test_tasks --all' writes "
                         "data/task-data/test-tasks/", path=root)
    _check_team(team)
    if budget is not None:
        parse_budget(budget)  # a bad budget is refused before anything runs
    the_pool = load_pool(pool) if pool else _layout_pool(layout)
    # the official docIDs are models.csv's (read once: it is the pool unless --pool names another)
    official = the_pool if not pool or layout.models_csv is None else load_pool(layout.models_csv)
    todo, skipped = plan(layout, the_pool, methods, budget)
    prior = choose_prior(root, train_truth)
    topics = test_topics(layout)
    absent = absent_test_tasks(layout)
    if absent:  # named before any work; those topics are ranked by the prior in every run (they have no data)
        say(f"warning: {describe_absent(layout, absent)}; every run ranks them by the avgrank prior (said in "
            f"METHODS.md)")
    tasks = _test_tasks(layout, topics)
    todo, cannot = _checked(list(tasks), todo, seed, methods, skipped, say, prior)
    say_task_kinds(tasks, say)
    infos = _infos(prior)
    fallback_run = (_prior_run([*tasks, *(Task.from_id(t) for t in absent)], the_pool, prior)
                    if (absent or cannot) else None)
    made: list[tuple[str, str, Run]] = []
    fallbacks: dict[str, dict[str, str]] = {}
    tuned: dict[str, int] = {}
    plans = {m: _tasks_of(m, tasks, absent, cannot, infos) for m in todo}
    estimates = _estimates(todo, plans, the_pool, device, seed, prior, infos, say)
    timings: dict[str, float] = {}
    for i, m in enumerate(todo, 1):
        run_id = f"{team}-{m}"
        fall, here = plans[m]
        guess = f" (estimated {format_seconds(estimates[m])})" if m in estimates else ""
        say(f"[{i}/{len(todo)}] {m}: ranking {len(here)} test tasks{guess} ...")
        t0 = time.monotonic()
        try:
            with expected_duration(estimates.get(m)):
                r, tuned = _one_run(m, here, the_pool, infos, run_id, progress, prior, device, budget, out, seed,
                                    say, tuned)
        except ModelseekError as exc:  # one run lost, not the submission: the others are still written
            if methods and len(todo) == 1:
                raise
            skipped[m] = (f"failed after {format_seconds(time.monotonic() - t0)}: "
                          f"{str(exc).splitlines()[0]}")
            say(f"[{i}/{len(todo)}] {m}: not made — {skipped[m]}")
            continue
        timings[m] = time.monotonic() - t0
        say(f"[{i}/{len(todo)}] {m}: done in {format_seconds(timings[m])}{guess}")
        if fall:  # the topics its method cannot rank: the prior's ranking, in the official topic order
            assert fallback_run is not None
            fallbacks[run_id] = fall
            r = Run({t: (r[t] if t in r else fallback_run[t]) for t in topics if t in r or t in fallback_run},
                    run_id)
        made.append((m, run_id, r.with_id(run_id)))
    if not made:
        raise InputError("no run could be made: " + "; ".join(f"{m}: {why}" for m, why in skipped.items()),
                         field="methods")
    docs = official.ids
    runs = _validated(made, topics, docs, Path(out))
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    done = []
    for (m, run_id, r), path in zip(made, runs):
        write_runs(path, [r])
        done.append(SubmittedRun(run_id, m, path, infos[m], len(r), sum(tuned.values()) if m == "funnel" else 0,
                                 fallbacks.get(run_id, {})))
    methods_file = out / "METHODS.md"
    atomic_write_text(methods_file, methods_md(done, skipped, layout, command, tuned, prior, tasks))
    return Submission(done, skipped, methods_file, layout, absent, estimates, timings)


def _tasks_of(m: str, tasks: Sequence[Task], absent: Sequence[str], cannot: dict[str, dict[str, str]],
              infos: dict[str, MethodInfo]) -> tuple[dict[str, str], list[Task]]:
    """({task id: why method ``m`` does not rank it (the prior does)}, the tasks ``m`` ranks)."""
    blind = m != "funnel" and not ranker_class(infos[m].method).needs_text  # reads no task data
    fall = {**({} if blind else {t: "not downloaded (no task data)" for t in absent}), **cannot.get(m, {})}
    here = [t for t in tasks if t.id not in fall] + ([Task.from_id(t) for t in absent] if blind else [])
    return fall, here


def _one_run(m: str, here: list[Task], pool: Pool, infos: dict[str, MethodInfo], run_id: str, progress: bool,
             prior: Prior, device: str | None, budget: str | float | None, out: str | Path, seed: int,
             say: Callable[[str], None], tuned: dict[str, int]) -> tuple[Run, dict[str, int]]:
    """Method ``m``'s run on ``here`` (and the funnel's fine-tunings per task)."""
    if m == "funnel":
        assert budget is not None  # plan() refuses the funnel without a budget
        return _funnel_run(here, pool, budget, Path(out) / "funnel-work", seed, progress, say)
    inference = infos[m].inference == "inference-based"
    workers = parallel_workers(pool, device) if inference else 1
    with cpu_parallel(workers):  # on a CPU: the candidates on parallel threads, one torch thread each
        r = rank_explained(here, pool, infos[m].method, run_id=run_id, progress=progress, explain=False,
                           train_truth=prior.truth if m == "avgrank" else None, device=device if inference else None,
                           executor=ModelThreads(workers) if workers > 1 else None).run
    return r, tuned


def _estimates(todo: Sequence[str], plans: dict[str, tuple[dict[str, str], list[Task]]], pool: Pool,
               device: str | None, seed: int, prior: Prior, infos: dict[str, MethodInfo],
               say: Callable[[str], None]) -> dict[str, float]:
    """Each run's up-front cost from a probe of one candidate on one test task (:mod:`.submission_cost`), said
    in one line, with the cheap alternative of a long one. The funnel's is its budget; none when the probe fails
    (the runs then say why)."""
    estimators_of = {m: tuple(cfg.estimators) if (cfg := _job_config(m, seed)) is not None else ()
                     for m in todo if m != "funnel"}
    tasks_of = {m: [t for t in plans[m][1] if t.has_data] for m in estimators_of}
    sized = sorted({t.id: t for ts in tasks_of.values() for t in ts}.values(), key=lambda t: len(t.train))
    if not sized:
        return {}
    first, second = sized[len(sized) // 2], sized[max(len(sized) // 2 - 1, 0)]

    def cost_of(m: str, task: Task) -> float:
        t0 = time.perf_counter()
        rank_explained([task], pool, infos[m].method, explain=False, train_truth=prior.truth if m == "avgrank"
                       else None)
        return time.perf_counter() - t0

    feature = sorted({n for m in estimators_of for n in estimators_of[m]})
    started = time.monotonic()
    try:
        p = cost.probe(first, pool, feature, list(estimators_of), device=device, cost_of=cost_of,
                       second=second if second is not first else None, seed=seed,
                       workers=parallel_workers(pool, device) if feature else 1)
    except ModelseekError as exc:
        say(f"no cost estimate (the probe of candidate {pool[0].id} on task {first.id} failed: "
            f"{str(exc).splitlines()[0]})")
        return {}
    out = cost.estimate(p, list(estimators_of), estimators_of, tasks_of, len(pool))
    say(f"estimated from candidate {p.candidate} on task {p.task} (probed in "
        f"{format_seconds(time.monotonic() - started)}): "
        + ", ".join(f"{m} {format_seconds(v)}" for m, v in out.items()))
    for m, v in out.items():
        line = cost.advice(m, v, len(pool), len(tasks_of[m]), [c for c in cost.INFERENCE_FREE if c in out])
        if line:
            say(f"note: {line}")
    return out


def _prior_run(tasks: Sequence[Task], pool: Pool, prior: Prior) -> Run:
    """The avgrank prior on every task (it reads no task data): what a run gives a task its method cannot rank."""
    return rank_explained(list(tasks), pool, prior.method, train_truth=prior.truth, run_id="prior",
                          explain=False).run


def _funnel_run(tasks: list, pool: Pool, budget: str | float, work: Path, seed: int, progress: bool,
                say: Callable[[str], None]) -> tuple[Run, dict[str, int]]:
    """The funnel on every task with an equal share of ``budget``; each task's state is kept in ``work/<task>``
    so an interrupted submission resumes. -> (the run, {task: candidates fine-tuned})."""
    share = parse_budget(budget) / len(tasks)
    scores: dict[str, dict[str, float]] = {}
    tuned: dict[str, int] = {}
    for i, t in enumerate(tasks, 1):
        res = select(t, pool, share, work / t.id, seed=seed, progress=progress)
        scores[t.id] = {e.doc: e.score for e in res.run[t.id]}
        tuned[t.id] = sum(1 for row in res.finetuned if row.get("status") == "done")
        say(f"  funnel {i}/{len(tasks)}: task {t.id}: {res.status}, {tuned[t.id]} fine-tuned, spent "
            f"{format_seconds(res.total_spent_s)} of {format_seconds(share)}")
    return Run.from_scores(scores, run_id="funnel"), tuned


def _layout_pool(layout: OrganisersLayout) -> Pool:
    if layout.models_csv is None:
        raise InputError("no models.csv in the organisers' data/ folder: the official docIDs are its model_ids",
                         path=layout.data / "models.csv")
    return load_pool(layout.models_csv)


def _check_team(team: str) -> None:
    if not team or any(c.isspace() or not c.isprintable() for c in team) or len(team) > 40:
        raise InputError(f"team {team!r} must be 1-40 printable characters without white space (it starts each run "
                         f"id)", field="team")


def _validated(made: list[tuple[str, str, Run]], topics: list[str], docs: list[str], out: Path) -> list[Path]:
    """Each run through the official checks (in a scratch file: the checks read files); -> the final paths."""
    import tempfile


    problems = []
    with tempfile.TemporaryDirectory(prefix="modelseek-submission-") as tmp:
        for _, run_id, r in made:
            scratch = Path(tmp) / f"{run_id}.txt"
            write_runs(scratch, [r])
            try:
                validate_run(scratch, topics=topics, docs=docs, subtask="A")
            except ValidationError as exc:
                problems += exc.problems
    if problems:
        raise ValidationError(f"{len(made)} run(s)", problems)
    return [out / f"{run_id}.txt" for _, run_id, _ in made]


def _portable(path: str) -> str:
    """A path as it may appear in a shared document: relative to the working folder when it lies below it, else
    its last two parts (``modelretrieval-1-subtask-a/data``) — never the writer's home or machine layout."""
    import os

    p = Path(os.path.expanduser(path))
    if not p.is_absolute():
        return path
    try:
        return str(p.resolve().relative_to(Path.cwd().resolve())) or "."
    except (ValueError, OSError):
        return str(Path(*p.parts[-2:])) if len(p.parts) > 2 else p.name


def _portable_command(command: str) -> str:
    """The command with every absolute path (or ``~`` path) made :func:`_portable`."""
    import shlex

    try:
        words = shlex.split(command)
    except ValueError:
        return command
    out = []
    for w in words:
        key, eq, value = w.partition("=")
        if eq and (value.startswith(("/", "~"))):
            out.append(f"{key}={_portable(value)}")
        else:
            out.append(_portable(w) if w.startswith(("/", "~")) else w)
    return shlex.join(out)


def task_kind(task: Task) -> tuple[str, str]:
    """(the kind of ``task`` as the runs treat it — ``N classes`` or ``regression`` —, how its labels were read).

    One rule everywhere (:attr:`Task.regression <modelseek.retrieval.data.task.Task.regression>`): the task's
    declaration
    decides — tasks.csv's ``label_kind`` column, else its ``task_class_count`` (2 or more: classes; 0 or 1:
    regression), a table's ``--label-kind``; a task that declares nothing is a classification task. How the labels
    look never decides: ``0.0`` ... ``1.0`` of a task declared with 11 classes are 11 class names."""
    labels = task.label_names
    sample = ", ".join(labels[:3]) + (" ..." if len(labels) > 3 else "")
    if task.regression:
        return "regression", f"numeric targets (declared label kind number; e.g. {sample})"
    declared = "declared by tasks.csv" if task.label_kind is not None else "no kind declared: classes"
    if looks_numeric(labels):
        how = f"labels look like numbers ({sample}) but are read as class names ({declared})"
    elif labels and all(str(v).lower() in ("true", "false") for v in labels):
        how = f"true/false labels read as class names ({declared})"
    else:
        how = f"class labels ({sample}; {declared})"
    return f"{len(labels)} classes", how


def say_task_kinds(tasks: Sequence[Task], say: Callable[[str], None]) -> None:
    """One line on the kinds of the test tasks, and one per task whose labels could be misread (numbers, true/false,
    a regression task)."""
    kinds = {t.id: task_kind(t) for t in tasks}
    n_reg = sum(1 for k, _ in kinds.values() if k == "regression")
    say(f"test tasks: {len(tasks) - n_reg} classification, {n_reg} regression (the tasks' declarations decide; "
        f"METHODS.md lists each)")
    for t in tasks:
        kind, how = kinds[t.id]
        if kind == "regression" or not how.startswith("class labels"):
            say(f"  task {t.id}: {kind}; {how}")


def methods_md(runs: Sequence[SubmittedRun], skipped: dict[str, str], layout: OrganisersLayout,
               command: str | None, tuned: dict[str, int] | None = None, prior: Prior | None = None,
               tasks: Sequence[Task] = ()) -> str:
    """``METHODS.md``: for each run, its kind, whether candidates were fine-tuned, the data used, the version and
    the exact command — ready for the working notes."""
    when = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = ["# NTCIR-19 Model Retrieval, Subtask A: runs", "",
             f"Made by modelseek {__version__} on {when} from the organisers' layout "
             f"(`{_portable(str(layout.data))}`).",
             f"Command: `{_portable_command(command)}`" if command
             else "Command: the Python API (modelseek.retrieval.submission.make_submission)",
             *([f"Prior (the avgrank run, and any topic a run's method cannot rank): the average rank over "
                f"{prior.describe()}."] if prior is not None else []),
             "", "| run id | file | method | kind | candidates fine-tuned | topics |", "|---|---|---|---|---|---|"]
    for r in runs:
        ft = f"yes ({r.finetuned})" if r.finetuned else "no"
        lines.append(f"| {r.run_id} | {r.path.name} | {r.method} | {r.info.inference} | {ft} | {r.topics} |")
    for r in runs:
        if r.finetuned:
            per = sorted((tuned or {}).values())
            kind = (f"- Kind: {r.info.inference}; candidates were fine-tuned for this run: {r.finetuned} fine-tunings "
                    f"over {r.topics} topics ({per[0]}-{per[-1]} per topic).")
        else:
            kind = f"- Kind: {r.info.inference}; no candidate was fine-tuned for this run."
        lines += ["", f"## {r.run_id}", "", f"- Method: {r.info.description}.", kind, f"- Data used: {r.info.data}."]
        if r.fallback:
            lines.append(f"- Ranked without this method ({len(r.fallback)} of {r.topics} topics; the avgrank prior "
                         f"instead): " + "; ".join(f"task {t}: {why}" for t, why in r.fallback.items()) + ".")
    if skipped:
        lines += ["", "## Not made", ""] + [f"- {m}: {why}" for m, why in skipped.items()]
    if tasks:
        lines += ["", "## Test tasks", "",
                  "How each run treated each test task's labels (the task's declaration decides: tasks.csv's "
                  "label_kind, else its task_class_count; never how the labels look).", "",
                  "| task | kind | labels |", "|---|---|---|"]
        lines += [f"| {t.id} | {k} | {how.replace('|', '/')} |" for t in tasks for k, how in [task_kind(t)]]
    return "\n".join(lines) + "\n"


__all__ = ["FEATURE_METHODS", "MAX_RUNS", "METHODS", "MethodInfo", "Prior", "Submission", "SubmittedRun",
           "check_methods", "choose_prior", "make_submission",
           "methods_md", "missing_weights", "plan", "say_task_kinds", "task_kind"]
