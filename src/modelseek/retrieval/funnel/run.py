"""``select``: plan and run the funnel within a budget, resuming what an earlier run left.

Stages: (1) the inference-free prior for the whole pool; then the plan (:mod:`.plan`) from measured costs
(:mod:`.costs`), printed before anything else is spent; (2) frozen-feature estimators for the top ``K1`` of the
prior, in chunks; (3) fine-tuning down the fused order (one candidate at a time: the plan's ``K2``, then more
while the budget lasts), or one successive-halving unit over the top ``K2``. Before each unit the funnel checks
that what has been spent plus the unit's estimated cost fits the budget, and stops otherwise (the time of an
interrupted unit counts as spent); every finished unit is written to ``OUT/state.json`` (:mod:`.state`) and
fine-tuning jobs to ``OUT/finetune.sqlite``, so a rerun continues. The answer (:mod:`.answer`) is a TREC run
(``OUT/run.trec``) and the fine-tuned results (``OUT/finetuned.csv``; selection uses validation F1, test F1 is
reported, never used to choose).
"""

from __future__ import annotations

import os

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from ...core.clash import FOLDER_READS, INPUT, OUTPUT_DIR, PathArg, refuse_clashes
from ..data.pool import Candidate, Pool
from ..data.run import Run, write_runs
from ..data.task import Task
from ...core.errors import InputError
from .budget import format_seconds, parse_budget
from .plan import Plan, Reliability, finetune_cost, plan_funnel
from .state import FunnelState
from ..data.loaders import load_table_task, load_tasks
from .answer import final_ranking, walk_order
from .replay import prior_scores
from .pools import load_any_pool
from ..data.truth import GroundTruth
from .costs import OfflineCosts, read_cost_table
from .curve import CURVE_NOISE, measure, shipped_history
from .policy import Policy, shipped_policy
from ...core.io import atomic_write_text
from ..data.run import read_runs
from .answer import ESTIMATOR
from .replay import PRIOR

RUN_ID = "funnel"
#: ``prior_method`` for the prior replay fits on the history (the form it chose there)
HISTORY_PRIOR = "history"
#: ``prior_method`` for the prior of the policy walked (the shipped policy's, or the one replay chose on
#: ``history``), where it covers the pool; the shipped default ranker otherwise (``select`` says so)
POLICY_PRIOR = "policy"


@dataclass
class FunnelResult:
    run: Run
    plan: Plan
    finetuned: list[dict[str, Any]]
    spent_s: dict[str, float]
    status: str                       # "done" | "planned" | "stopped: ..."
    out: Path
    ran_units: list[str] = field(default_factory=list)   # units run by this call (resumed ones are not)
    measured: Any = None                  # what replay on the history measured (:class:`.curve.Measured`), if used
    policy: Any = None                    # the policy walked (:class:`.policy.Policy`), where no history was given
    final: str = ""                       # how the final ranking was made (the merge, or fine-tuned first)
    warnings: list[str] = field(default_factory=list)   # e.g. the fine-tuned scores cannot tell the candidates apart
    costs: dict[str, dict[str, float]] = field(default_factory=dict)  # per fine-tuned id: estimated and spent seconds
    left_undone: list[str] = field(default_factory=list)  # candidates of the order whose fine-tuning did not fit

    @property
    def total_spent_s(self) -> float:
        return float(sum(self.spent_s.values()))

    @property
    def top(self) -> str:
        return self.run.ranking(next(iter(self.run)))[0]


def _load_task(data: Task | str | Path) -> Task:
    if isinstance(data, Task):
        return data

    p = Path(data)
    if not p.exists():
        raise InputError("no such file or folder", path=p)
    if p.is_file():
        return load_table_task(p)
    tasks = list(load_tasks(p))
    if len(tasks) != 1:
        raise InputError(f"select works on one task; this folder holds {len(tasks)} (give one task's folder or "
                         f"table)", path=p)
    return tasks[0]


def _order(pool: Pool, scores: dict[str, float]) -> list[Candidate]:
    """Candidates by descending score, pool order breaking ties (and last for any without a score)."""
    pos = {c.id: i for i, c in enumerate(pool)}
    return sorted(pool, key=lambda c: (-scores.get(c.id, float("-inf")), pos[c.id]))


def _final_run(task: Task, pool: Pool, st: FunnelState, measured: Any = None, policy: Any = None
               ) -> tuple[Run, str]:
    """The final ranking (:func:`.answer.final_ranking`) as a run, and how it was made (one line)."""
    order = walk_order(pool.ids, st["prior"] or {}, st["features"], *_walk(st))
    ft = {r["model_id"]: (float(r.get("rung") or 0), float(r["val_f1"])) for r in st["finetune"].values()
          if r.get("status") == "done" and r.get("val_f1") is not None}
    k = len(ft)
    tables = None
    if policy is not None and k and not st["settings"]["halving"] and policy.merge_at(k):
        tables = policy.gain_tables(k)
    elif measured is not None and k and not st["settings"]["halving"] and measured.merge_at(k):
        tables = measured.gain_tables(k, model_ids=list(pool.ids))
    where = "the policy's history" if policy is not None else "the history"
    how = (f"by expected official gain (the merge replay chose on {where} at this k)" if tables is not None
           else "fine-tuned first, then the order walked")
    ranking = final_ranking(order, ft, tables)
    n = len(ranking)
    return Run.from_scores({task.id: {c: float(n - i) for i, c in enumerate(ranking)}}, run_id=RUN_ID), how


def _check_options(epochs: int, chunk: int, executor: str, address: str | None) -> None:
    """What is refused before any work: counts below 1, an unknown executor or an address it takes none of."""
    from ..executors import make_executor  # lazy: start-up

    if int(epochs) < 1:
        raise InputError(f"must be >= 1, got {epochs}", field="epochs")
    if int(chunk) < 1:
        raise InputError(f"must be >= 1, got {chunk}", field="chunk")
    make_executor(executor, address)


def _real_backend(out: Path, feature_method: str, prior_method: str, recipe, seed: int, trainer, executor: str,
                  address: str | None):
    """The real models' backend (frozen features, fine-tuning in ``out/finetune.sqlite``) and the recipe it uses."""
    from ..finetune.recipe import PROTOCOL  # lazy: pandas
    from .backend import RealBackend  # lazy: start-up

    recipe = recipe or PROTOCOL
    if prior_method in (POLICY_PRIOR, HISTORY_PRIOR):  # asked of the backend only where the policy does not cover
        prior_method = "default"
    return RealBackend(out / "finetune.sqlite", feature_method=feature_method, prior_method=prior_method,
                       recipe=recipe, seed=seed, trainer=trainer, executor=executor, address=address), recipe


def _settings(task: Task, pool: Pool, budget_s: float, feature_method: str, prior_method: str, recipe, epochs: int,
              halving: bool, seed: int, rel: Reliability, measured: Any, policy: Any = None) -> dict[str, Any]:
    """What a resumed run must share with the first (the state refuses another), and the order it walks."""
    settings: dict[str, Any] = {
        "task": task.id, "task_fingerprint": _fingerprint(task), "pool": _ids_digest(pool.ids),
        "pool_size": len(pool), "budget_s": budget_s, "feature_method": feature_method, "prior_method": prior_method,
        "recipe": getattr(recipe, "digest", None), "epochs": int(epochs), "halving": bool(halving),
        "seed": int(seed), "reliability": [rel.prior, rel.features]}
    if policy is not None:
        settings["policy"] = policy.digest
    if measured is not None and measured.signals and measured.choices is not None:
        ch = measured.choices
        settings["walk"] = [ch.order, list(ch.reliability) if ch.reliability is not None else None]
    return settings


#: what ``select`` writes into its ``out`` folder (the state, the run, the fine-tuned results and their job store)
WRITES = ("run.trec", "finetuned.csv", "state.json", "finetune.sqlite")


def _refuse_clashes(data, pool, out, **inputs) -> None:
    """The one rule of every writing call (:mod:`modelseek.core.clash`): ``out`` holds none of the files this call
    reads,
    checked before any work, as ``modelseek select`` checks its options."""
    paths = [PathArg("out", out, OUTPUT_DIR, WRITES)]
    if isinstance(data, (str, os.PathLike)):
        paths.append(PathArg("data", data, INPUT, FOLDER_READS))
    paths += [PathArg(name, value, INPUT) for name, value in (("pool", pool), *inputs.items())
              if isinstance(value, (str, os.PathLike))]
    refuse_clashes(paths)


def select(data: Task | str | Path, pool: Pool | str | Path, budget: str | float, out: str | Path,
           feature_method: str = "logme", prior_method: str = POLICY_PRIOR, recipe=None, epochs: int = 10,
           halving: bool = False, plan_only: bool = False, seed: int = 0, chunk: int = 8, backend=None,
           reliability: Reliability | None = None, progress: bool = False,
           echo: Callable[[str], None] | None = None, trainer=None, executor: str = "local",
           address: str | None = None, history=None, noise: float | None = None, history_signals=None,
           policy=None, costs=None) -> FunnelResult:
    """Plan and run the funnel for one task (see the module docstring). ``budget`` is a duration (``"4h"``,
    ``"90m"``, ``"3600s"``) or seconds; ``out`` the folder that holds the state, the run and the results;
    ``epochs`` caps each fine-tuning (the plan assumes all of them run); ``backend`` replaces the real models
    (the benchmark's simulated pool). ``executor`` (a name of :data:`modelseek.retrieval.executors.EXECUTORS`, at
    ``address``) runs the frozen-feature candidate jobs and the fine-tuning jobs.

    **What it walks.** By default the policy (:class:`.policy.Policy`) that replay chose on the 70 NTCIR-19
    training tasks, shipped with the package (:func:`.policy.shipped_policy`), or ``policy`` (one, or its file:
    ``modelseek replay --policy-out``): its prior (``prior_method="policy"``, where it covers the pool's
    candidates; else the shipped default ranker, and ``select`` says so), its order, its final ranking per budget
    (the merge where its held-out gain was positive with its interval) and its noise assumption. With ``history``
    (a ground truth or its path) replay chooses all that on it instead, as ``modelseek replay`` does, with the seed
    noise ``noise`` (default 0, replay's default); ``noise`` given with no history re-chooses on the shipped
    history with it. ``prior_method="history"`` is the prior replay fits on the history; another name is a
    ranker of :func:`modelseek.rank`. ``history_signals`` (runs, or a TREC run file): the estimator's scores on
    the history's tasks (one run; a run named ``prior`` may add the prior's scores there): replay then chooses on
    the history the order fine-tuning walks — the prior, the estimator, ``rrf`` or ``weighted`` — and ``select``
    walks it; without them the order with estimators is ``rrf``. ``reliability``: the signals' correlations with
    fine-tuned F1 to plan with (default: measured). ``costs`` (a :class:`.costs.CostTable`, or a CSV of
    ``model_id, load_s, feature_s_per_1k, finetune_s_per_epoch_1k``): stated costs instead of the backend's
    probes; with ``plan_only`` and no stated costs the plan is made from cached or parameter-count costs
    (:class:`.costs.OfflineCosts`), loading no weights."""
    say = echo or (lambda s: None)
    _refuse_clashes(data, pool, out, history=history, policy=policy, costs=costs, history_signals=history_signals)
    budget_s = parse_budget(budget)
    _check_options(epochs, chunk, executor, address)
    task = _load_task(data)
    pool = pool if isinstance(pool, Pool) else load_any_pool(pool)
    pol, history = _policy(policy, history, history_signals, reliability, noise)
    noise = pol.noise if pol is not None else (0.0 if noise is None else float(noise))
    if history is not None and (reliability is None or history_signals is not None
                                or prior_method == HISTORY_PRIOR):
        history = history if isinstance(history, GroundTruth) else GroundTruth.from_csv(history)
    hsig = _history_signals(history_signals, history)
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise InputError("the output must be a folder", path=out)
    out.mkdir(parents=True, exist_ok=True)
    if backend is None:
        backend, recipe = _real_backend(out, feature_method, prior_method, recipe, seed, trainer, executor, address)
    if pol is not None:
        rel, measured, measure_s = _policy_reliability(pol, reliability, say), None, 0.0
    else:
        rel, measured, measure_s = _reliability(reliability, history, say, backend.clock, noise,
                                                need_history=prior_method == HISTORY_PRIOR, signals=hsig,
                                                own_prior=prior_method == HISTORY_PRIOR)
    settings = _settings(task, pool, budget_s, feature_method, prior_method, recipe, epochs, halving, seed, rel,
                         measured, pol)
    st = FunnelState.open(out / "state.json", settings)
    st["runs"] += 1
    st.add_spent("replay", measure_s)
    ran: list[str] = []
    n_feat = len(task.train.texts) + len(task.val.texts)

    # ---- stage 1: the prior
    if st["prior"] is None:
        prior = _timed(st, "prior", backend.clock, lambda: _stage_prior(prior_method, pol, measured, pool, task,
                                                                         backend, say))
        st["prior"] = {k: float(v) for k, v in prior.items()}
        st.save()
        ran.append("prior")
    order = _order(pool, st["prior"])
    cost_model = _costs(costs, backend, task, progress, plan_only)
    plan = _plan_stage(st, order, cost_model, budget_s, n_feat, n_feat, int(epochs), halving, rel, say)
    if plan_only:
        st.save()
        return _finish(task, pool, st, plan, out, "planned", ran, measured, pol)
    status = _spend(task, st, plan, backend, cost_model, pool, n_feat, chunk, halving, ran, progress, say)
    return _finish(task, pool, st, plan, out, status, ran, measured, pol)


def _spend(task, st, plan, backend, costs, pool, n_feat, chunk, halving, ran, progress, say) -> str:
    """Stages 2 and 3 (estimators, then fine-tuning) within what is left of the budget; the status."""
    budget_s = st["settings"]["budget_s"]

    def fits(estimate: float) -> bool:
        return st.spent_s + estimate <= budget_s + 1e-9

    by_id = {c.id: c for c in pool}
    status = _features_stage(task, st, plan, backend, costs, by_id, n_feat, chunk, fits, ran, progress)
    # ---- stage 3: fine-tuning, down the estimators' (or the prior's) order
    if status == "done" and (plan.finetune_k or not halving):
        if len(st["features"]) + len(st["feature_failures"]) < plan.k1:
            status = "stopped: estimators unfinished"
        elif halving:
            status = _halving_stage(task, st, plan, backend, costs, by_id, pool, n_feat, fits, ran)
        else:
            status = _finetune_stage(task, st, plan, backend, costs, by_id, pool, n_feat, fits, ran, progress, say)
    return status


def _policy(policy: Any, history: Any, history_signals: Any, reliability: Reliability | None,
            noise: float | None) -> tuple[Any, Any]:
    """The policy ``select`` walks (``None`` where replay chooses on ``history`` instead) and the history: the
    given policy (or file), else the shipped one where no history, history signals or reliabilities are given and
    ``noise`` is its own; a ``noise`` of another value re-chooses on the shipped history."""
    if policy is not None:
        return (policy if isinstance(policy, Policy) else Policy.load(policy)), history
    if history is not None or history_signals is not None or reliability is not None:
        return None, history
    pol = shipped_policy()
    if noise is not None and float(noise) != pol.noise:
        return None, shipped_history()
    return pol, None


def _policy_reliability(pol: Any, given: Reliability | None, say: Callable[[str], None]) -> Reliability:
    """What the plan uses with a policy: ``given``, else the prior's reliability the policy measured (the
    estimators' assumed: its history records no estimator scores)."""
    for line in pol.describe():
        say(line)
    if given is not None:
        return given
    rel = Reliability(prior=round(min(max(pol.reliability, 0.0), 0.95), 4))
    say(f"  planning with reliabilities: prior {rel.prior:.2f} (measured there), estimators {rel.features:.2f} "
        f"(assumed: the policy's history records no estimator scores); with estimators the order is rrf")
    return rel


def _stage_prior(prior_method: str, pol: Any, measured: Any, pool: Pool, task: Task, backend: Any,
                 say: Callable[[str], None]) -> dict[str, float]:
    """Stage 1: the policy's prior where it covers the pool, the prior fitted on the history (``history``), else
    the backend's ranker (with a history, ``policy`` is the backend's: replay measured the history for it)."""
    if prior_method == POLICY_PRIOR and pol is not None:
        got = pol.prior_for(list(pool.ids), [c.source for c in pool])
        if got is not None:
            return got
        say(f"  the policy's prior knows {len(pol.prior)} models, not all of this pool's {len(pool)}: the prior "
            f"is the shipped default ranker (the merge and the order are still the policy's)")
    elif measured is not None and prior_method == HISTORY_PRIOR:
        return _history_prior(measured, pool)
    return backend.prior(task, pool)


def _costs(stated: Any, backend: Any, task: Task, progress: bool, plan_only: bool) -> Any:
    """The cost model the plan uses: ``stated`` costs (a table or its CSV), else with ``plan_only`` and the real
    backend the offline one (no weights loaded), else the backend's (its probes)."""
    if stated is not None:
        return stated if hasattr(stated, "cost") else read_cost_table(stated)
    if plan_only and hasattr(backend, "recipe") and hasattr(backend, "feature_method"):  # the real models' backend
        return OfflineCosts(task, backend.feature_method, backend.recipe)
    return backend.costs(task, progress)


def _history_prior(measured: Any, pool: Pool) -> dict[str, float]:
    """The prior replay fits on the history, in the form the history chose, for the pool's candidates."""
    return dict(zip(pool.ids, prior_scores(measured.truth, pool.ids, measured.prior_form).tolist()))


def _history_signals(given: Any, history: GroundTruth | None) -> tuple[Run, Run | None] | None:
    """The estimator's run and the prior's (or ``None``) on the history's tasks, from ``given`` (runs, or a TREC run
    file): the run named ``prior`` is the prior's, the one other run the estimator's (renamed
    :data:`.answer.ESTIMATOR`, as replay names it)."""
    if given is None:
        return None
    key = (id(given), id(history))
    hit = _PARSED.get(key)
    if hit is not None and hit[0] is given and hit[1] is history:  # the same runs again (a benchmark's many tasks)
        return hit[2]
    parsed = _parse_history_signals(given, history)
    if len(_PARSED) >= 4:
        _PARSED.clear()
    _PARSED[key] = (given, history, parsed)
    return parsed


_PARSED: dict[tuple, tuple[Any, Any, Any]] = {}


def _parse_history_signals(given: Any, history: GroundTruth | None) -> tuple[Run, Run | None]:
    path = None
    if isinstance(given, (str, Path)):
        path = Path(given)
        given = list(read_runs(path).values())
    if history is None:
        raise InputError("history signals need a history (`history`): they score its tasks", path=path)
    runs = list(given)
    prior = [r for r in runs if r.run_id == PRIOR]
    est = [r for r in runs if r.run_id != PRIOR]
    if len(est) != 1:
        raise InputError(f"history signals must hold one estimator run (and optionally one named 'prior'), got "
                         f"{len(est)}: {', '.join(r.run_id for r in est) or 'none'}", path=path, field="RunID")
    for r in (*est, *prior):
        missing = [t for t in history.task_ids if t not in r]
        if missing:
            raise InputError(f"history signal run {r.run_id!r} has no topic {missing[0]!r} ({len(missing)} of "
                             f"{len(history.task_ids)} history tasks missing)", path=path, field="topic")
    return est[0].with_id(ESTIMATOR), (prior[0] if prior else None)


_MEASURED: dict[tuple, tuple[Any, Any]] = {}  # replay's measurement per (history, signals, noise); a handful


def _measure(history: Any, noise: float, signals: tuple[Run, Run | None] | None) -> Any:
    """:func:`.curve.measure` with the choices, with the history's estimator signals where given; the same
    objects measured again (a benchmark's many tasks on one history) are not replayed twice."""
    key = (id(history), noise, *((id(signals[0]), id(signals[1])) if signals else ()))
    hit = _MEASURED.get(key)
    if hit is not None and hit[0][0] is history:
        return hit[1]
    if signals is None:
        m = measure(history, sequential=False, noise=noise, choices=True)
    else:
        m = measure(history, signals=(signals[0],), sequential=False, noise=noise, choices=True,
                    prior_run=signals[1])
    if len(_MEASURED) >= 4:
        _MEASURED.clear()
    _MEASURED[key] = ((history, signals), m)
    return m


def _reliability(given: Reliability | None, history, say: Callable[[str], None], clock: Callable[[], float],
                 noise: float = CURVE_NOISE, need_history: bool = False,
                 signals: tuple[Run, Run | None] | None = None, own_prior: bool = False
                 ) -> tuple[Reliability, Any, float]:
    """The reliabilities to plan with: ``given``, else the prior's measured by replay on ``history`` (printed with
    the expected gain per fine-tune), with what replay chose there (the prior's form, the order with the history's
    estimator ``signals``, the final ranking per k) — the estimator's measured there too where ``signals`` score
    the history's tasks, else assumed; and the seconds the measurement took on the backend's ``clock`` (spent,
    and reported as such)."""
    t0 = clock()
    if given is not None and not need_history and signals is None:
        return given, None, 0.0
    if signals is not None and signals[1] is not None and own_prior:
        signals = (signals[0], None)  # the prior fitted on the history is select's own: its scores there are known
    measured = _measure(history, noise, signals)
    for line in measured.describe():
        say(line)
    if signals is not None and signals[1] is None and not own_prior:
        say("  note: the order was chosen with the prior fitted on the history, not select's own (give the "
            "prior's scores on the history's tasks as a run named 'prior' in the history signals)")
    if given is not None:
        return given, measured, clock() - t0
    default = Reliability()
    crel = measured.choices.reliability if measured.choices is not None else None
    if crel:
        rel = Reliability(prior=round(min(max(crel[0], 0.0), 0.95), 4),
                          features=round(min(max(crel[1], 0.0), 0.95), 4))
        say(f"  planning with reliabilities measured on the history: prior {rel.prior:.2f}, estimators "
            f"{rel.features:.2f}")
        return rel, measured, clock() - t0
    prior = measured.reliability.get("prior", default.prior)
    rel = Reliability(prior=round(min(max(prior, 0.0), 0.95), 4), features=default.features)
    say(f"  planning with reliabilities: prior {rel.prior:.2f} (measured), estimators {rel.features:.2f} "
        f"(assumed: the history records no estimator scores); fine-tuning order rrf, replay's default with "
        f"estimator signals (give --history-signals to choose it there)")
    return rel, measured, clock() - t0


def _plan_stage(st: FunnelState, order: list[Candidate], costs: Any, budget_s: float, n_feat: int, n_ft: int,
                epochs: int, halving: bool, rel: Reliability, say: Callable[[str], None]) -> Plan:
    """The plan: made once (after the cost probe, when the costs have one) and kept by a rerun."""
    if st["plan"] is None:
        if hasattr(costs, "prepare"):
            st.add_spent("probe", costs.prepare(order))
        plan = plan_funnel(order, costs, budget_s, st.spent_s, n_feat, n_ft, epochs, halving, rel)
        st["plan"] = plan.to_dict()
        st.save()
        say(plan.describe())
    else:
        plan = Plan.from_dict(st["plan"])
        if hasattr(costs, "prepare") and not getattr(costs, "measured", True):  # planned offline: probe now
            st.add_spent("probe", costs.prepare(order))
        say(plan.describe())
        say(f"resuming (run {st['runs']}): {format_seconds(st.spent_s)} spent so far")
    return plan


def _features_stage(task: Task, st: FunnelState, plan: Plan, backend: Any, costs: Any, by_id: dict[str, Candidate],
                    n_feat: int, chunk: int, fits: Callable[[float], bool], ran: list[str], progress: bool) -> str:
    """Stage 2, estimators on the plan's top ``K1`` in chunks, each saved when done; stops before a chunk whose
    cost does not fit what is left. Returns the status (``done`` or why it stopped)."""
    from ...core.progress import progress_bar  # lazy: start-up

    status = "done"
    todo = [cid for cid in plan.feature_ids if cid not in st["features"] and cid not in st["feature_failures"]]
    chunks = [todo[i:i + chunk] for i in range(0, len(todo), chunk)]
    for part in progress_bar(chunks, desc="estimators", disable=not progress or not chunks):
        planned = sum(costs.cost(by_id[c]).features(n_feat) for c in part)
        est = planned * max(1.0, float(st.body.get("features_scale") or 1.0))  # re-planned with what chunks took
        if not fits(est):
            status = f"stopped: the budget does not fit the next estimators ({format_seconds(est)})"
            break
        before = st.spent_s
        scores, failed = _timed(st, "features", backend.clock,
                                partial(backend.features, task, [by_id[c] for c in part]))
        if planned > 0:
            st["features_scale"] = max(float(st.body.get("features_scale") or 0.0), (st.spent_s - before) / planned)
        st["features"].update({k: float(v) for k, v in scores.items()})
        st["feature_failures"].update(failed)
        st.save()
        ran.append("features:" + ",".join(part))
    return status


def _walk(st: FunnelState) -> tuple[str | None, list[float] | None]:
    """The order replay chose on the history's estimator scores and the reliabilities that weight it (``None``,
    ``None`` without them: ``rrf``)."""
    w = st["settings"].get("walk")
    return (w[0], w[1]) if w else (None, None)


def _finetune_order(pool: Pool, st: FunnelState, plan: Plan) -> list[str]:
    """The order fine-tuning walks (:func:`.answer.walk_order`): over the candidates the estimators scored, the
    order replay chose on the history's estimator scores (``rrf``, the reciprocal-rank fusion of the prior and the
    estimator, where the history has none), else the prior's — the order replay measured."""
    if plan.finetune_from == "features":  # the estimator-scored top K1, in the order chosen
        feats = {c: st["features"][c] for c in plan.feature_ids if c in st["features"]}
        return [c for c in walk_order(pool.ids, st["prior"], feats, *_walk(st)) if c in feats]
    return walk_order(pool.ids, st["prior"], {})


def _finetune_stage(task, st, plan, backend, costs, by_id, pool, n_ft, fits, ran, progress, say=None) -> str:
    """Fine-tune down the order — the order replay measured: its first ``k`` wherever their costs fit — the plan's
    ``K2`` when they fit, then more while the budget lasts (early stopping leaves some); a job that would not fit
    what is left is not started (a dear candidate is passed over for the next that fits, and named as left
    undone). Each job's cost is the plan's estimate times the largest ratio of measured to estimated seconds per
    epoch of the jobs done so far (never below 1): the first job is measured and the rest re-planned with it, so
    a job that would not fit is not started. Deterministic given the state, so a resumed run walks the same way.
    Progress (each job's start, time and score, what is spent) goes to ``say``.
    """
    say = say or (lambda _: None)
    status = "done"
    order = _finetune_order(pool, st, plan)
    done = [c for c in order if c in st["finetune"]]
    passed: list[tuple[str, float]] = []
    budget_s = st["settings"]["budget_s"]
    todo = [c for c in order if c not in st["finetune"]]
    for cid in todo:
        scale = max(1.0, float(st.body.get("finetune_scale") or 1.0))
        planned = costs.cost(by_id[cid]).finetune(n_ft, plan.epochs)
        est = planned * scale
        if not fits(est):
            passed.append((cid, est))
            continue
        say(f"fine-tuning {len(done) + 1}: {cid} (estimated ~{format_seconds(est)}; "
            f"{format_seconds(st.spent_s)} of {format_seconds(budget_s)} spent)")
        before = st.spent_s
        rows = _timed(st, "finetune", backend.clock, partial(backend.finetune, task, [by_id[cid]], plan.epochs))
        took = st.spent_s - before
        ran_epochs = max((int(r.get("epochs") or 0) for r in rows), default=0) or plan.epochs
        per_epoch_est = costs.cost(by_id[cid]).finetune(n_ft, ran_epochs)
        ratio = took / per_epoch_est if per_epoch_est > 0 else 1.0
        st["finetune_scale"] = max(float(st.body.get("finetune_scale") or 0.0), ratio)
        st["finetune_costs"] = {**(st.body.get("finetune_costs") or {}),
                                cid: {"planned_s": planned, "estimated_s": est, "spent_s": took,
                                      "epochs": ran_epochs}}
        st["finetune"].update({r["model_id"]: r for r in rows})
        st["finetune_order"] = (st.body.get("finetune_order") or []) + [cid]
        st.save()
        ran.append("finetune:" + cid)
        done.append(cid)
        row: dict[str, Any] = next((r for r in rows if r["model_id"] == cid), {})
        score = "" if row.get("val_f1") is None else f", validation F1 {row['val_f1']:.4f}"
        say(f"  {cid}: {row.get('status', '?')} in {format_seconds(took)} ({ran_epochs} epoch(s){score}); "
            f"{format_seconds(st.spent_s)} of {format_seconds(budget_s)} spent")
    if passed and len(done) < len(order):
        left = max(budget_s - st.spent_s, 0.0)
        first = [c for c, _ in passed if c in order[: max(len(done), plan.finetune_k) + 1]] or [passed[0][0]]
        st["left_undone"] = first
        st.save()
        est = dict(passed)
        status = (f"done: {len(done)} fine-tuned ({plan.finetune_k} planned); not started, as it would not fit the "
                  f"{format_seconds(left)} left: " + ", ".join(f"{c} (~{format_seconds(est[c])})" for c in first[:5])
                  + (f" and {len(first) - 5} more" if len(first) > 5 else ""))
    return status


def _halving_stage(task, st, plan, backend, costs, by_id, pool, n_ft, fits, ran) -> str:
    """One successive-halving unit over the top ``K2`` that fit; its jobs resume from the job store."""
    if st.body.get("finetune_order") is None:
        ids: list[str] = []
        left = st.body["settings"]["budget_s"] - st.spent_s
        for cid in _finetune_order(pool, st, plan):
            if len(ids) == plan.finetune_k:
                break
            trial = [*ids, cid]
            if finetune_cost([costs.cost(by_id[c]) for c in trial], len(trial), n_ft, plan.epochs, True,
                             exact=True) <= left:
                ids = trial
        st["finetune_order"] = ids
        st.save()
    ids = st["finetune_order"]
    if not ids or all(c in st["finetune"] for c in ids):
        return "done"
    est = finetune_cost([costs.cost(by_id[c]) for c in ids], len(ids), n_ft, plan.epochs, True, exact=True)
    if not fits(est) and st["spent"]["finetune"] == 0:
        return f"stopped: the budget does not fit the halving ({format_seconds(est)})"
    rows = _timed(st, "finetune", backend.clock, lambda: backend.halving(task, [by_id[c] for c in ids], plan.epochs))
    st["finetune"].update({r["model_id"]: r for r in rows})
    st.save()
    ran.append("halving:" + ",".join(ids))
    return "done"


def _timed(st: FunnelState, stage: str, clock: Callable[[], float], work: Callable[[], Any]) -> Any:
    """Run one unit and count its time against ``stage``; an interrupted unit's time was spent too, so it is
    counted (and saved) before the interruption goes on."""
    t0 = clock()
    try:
        out = work()
    except BaseException:
        st.add_spent(stage, clock() - t0)
        st.save()
        raise
    st.add_spent(stage, clock() - t0)
    return out


def _ids_digest(ids: list[str]) -> str:
    import hashlib

    return hashlib.sha256("\0".join(ids).encode()).hexdigest()[:16]


def _fingerprint(task: Task) -> str:
    from ..finetune.protocol import TaskData  # lazy: pandas

    return TaskData.from_task(task).fingerprint


def _finish(task: Task, pool: Pool, st: FunnelState, plan: Plan, out: Path, status: str,
            ran: list[str], measured: Any = None, policy: Any = None) -> FunnelResult:
    import csv
    import io

    st.save()
    run, how = _final_run(task, pool, st, measured, policy)
    rows = sorted(st["finetune"].values(), key=lambda r: (-(r.get("rung") or 0), -(r.get("val_f1") or -1.0)))
    if status != "planned":
        write_runs(out / "run.trec", [run])
        buf = io.StringIO()
        cols = ["model_id", "val_f1", "f1", "epochs", "status", "error"]
        w = csv.DictWriter(buf, fieldnames=cols, extrasaction="ignore", lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in cols})
        atomic_write_text(out / "finetuned.csv", buf.getvalue())
    warn = indistinguishable(task, rows, max(measured.noise if measured is not None else 0.0, CURVE_NOISE))
    return FunnelResult(run=run, plan=plan, finetuned=rows, spent_s=dict(st["spent"]), status=status, out=out,
                        ran_units=ran, measured=measured, policy=policy, final=how, warnings=[warn] if warn else [],
                        costs=dict(st.body.get("finetune_costs") or {}), left_undone=list(st.body.get("left_undone")
                                                                                          or []))


def chance_f1(labels) -> float:
    """The macro-F1 of the best constant prediction on ``labels`` (the level a fine-tune that learned nothing
    reaches): predicting class ``c`` of share ``p`` scores ``2p / (1 + p)`` on ``c`` and 0 on the others."""
    from collections import Counter

    counts = Counter(labels)
    n = sum(counts.values())
    if not n:
        return 0.0
    return max(2 * (c / n) / (1 + c / n) for c in counts.values()) / len(counts)


def indistinguishable(task: Task, rows: list[dict[str, Any]], noise: float) -> str:
    """A warning when the fine-tuned candidates' validation scores cannot tell them apart: every one at chance
    (within 0.02 of the best constant prediction's macro-F1, or of one over the class count), or all within two
    seed-noise sds (``noise``, the assumed sd of a fine-tuned score) of each other; ``""`` otherwise."""
    vals = [float(r["val_f1"]) for r in rows if r.get("status") == "done" and r.get("val_f1") is not None]
    if len(vals) < 2:
        return ""
    labels = list(task.val.labels) if task.val is not None and task.val.labels else list(task.train.labels)
    chance = max(chance_f1(labels), 1.0 / max(len(set(labels)), 1))
    if max(vals) <= chance + 0.02:
        return (f"warning: the {len(vals)} fine-tuned candidates cannot be told apart: every validation F1 "
                f"({min(vals):.3f}-{max(vals):.3f}) is at chance (about {chance:.3f} for these labels); the "
                f"ranking among them is not evidence (more epochs, another recipe, or more data)")
    if max(vals) - min(vals) <= 2 * noise:
        return (f"warning: the {len(vals)} fine-tuned candidates cannot be told apart: their validation F1 "
                f"({min(vals):.3f}-{max(vals):.3f}) lie within two seed-noise sds ({2 * noise:.3f}, assumed) of "
                f"each other")
    return ""
