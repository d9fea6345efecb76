"""The work behind each stage, through the public entry points: the prior and the frozen-feature estimators
are ``modelseek.rank(...)``, fine-tuning is :func:`modelseek.retrieval.finetune.verify.verify_top` /
:func:`~modelseek.retrieval.finetune.verify.successive_halving` on a job store (finished jobs are kept and never rerun).
The frozen-feature candidate jobs and the fine-tuning jobs both run on the backend's executor (a name of
:data:`modelseek.retrieval.executors.EXECUTORS`, at ``address``). :class:`modelseek.testing.funnel.SimulatedBackend` is
the
same interface over a generated pool, for the benchmark."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from ..data.pool import Candidate, Pool
from ..data.task import Task
from ..ranking import rank, ranked
from ..rankers.features import CandidateFailures
from .costs import MeasuredCosts


class Backend(Protocol):
    def clock(self) -> float: ...
    def prior(self, task: Task, pool: Pool) -> dict[str, float]: ...
    def features(self, task: Task, cands: Sequence[Candidate]) -> tuple[dict[str, float], dict[str, str]]: ...
    def finetune(self, task: Task, cands: Sequence[Candidate], epochs: int) -> list[dict[str, Any]]: ...
    def halving(self, task: Task, cands: Sequence[Candidate], epochs: int) -> list[dict[str, Any]]: ...
    def costs(self, task: Task, progress: bool): ...


def _clean(row: dict[str, Any]) -> dict[str, Any]:
    """A fine-tuning row as JSON can hold it (NaN -> None)."""
    return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}


class RealBackend:
    """Real models: ``prior_method`` (default: the shipped ranker) and ``feature_method`` through
    :func:`modelseek.rank`, fine-tuning under ``recipe`` into the job store ``store``. ``trainer`` replaces the
    fine-tuning function (tests pass :class:`modelseek.testing.finetune.FakeTrainer`)."""

    def __init__(self, store: str | Path, feature_method: str = "logme", prior_method: str = "default",
                 recipe=None, seed: int = 0, trainer=None, executor: str = "local", address: str | None = None,
                 probe_top: int = 3) -> None:
        from ..finetune.recipe import PROTOCOL  # lazy: pandas

        self.store, self.feature_method, self.prior_method = store, feature_method, prior_method
        self.recipe, self.seed, self.trainer = recipe or PROTOCOL, seed, trainer
        self.executor, self.address, self.probe_top = executor, address, probe_top

    def clock(self) -> float:
        return time.perf_counter()

    def prior(self, task: Task, pool: Pool) -> dict[str, float]:
        return rank(task, pool, method=self.prior_method).scores(task.id)

    def features(self, task: Task, cands: Sequence[Candidate]) -> tuple[dict[str, float], dict[str, str]]:
        try:  # a feature method that runs no candidate model ignores the executor (fine-tuning still uses it)
            run = ranked(task, Pool(cands, name="funnel"), method=self.feature_method, allow_failures=True,
                         executor=self.executor, address=self.address, strict_execution=False).run
        except CandidateFailures as exc:  # none of them could be scored
            return {}, {cid: str(f[1]).splitlines()[0] if str(f[1]) else "failed" for cid, f in exc.failures.items()}
        scores = run.scores(task.id) if task.id in run else {}
        failed = {c.id: "could not be featurised or scored (see the log)" for c in cands if c.id not in scores}
        return scores, failed

    def _grid_kw(self) -> dict[str, Any]:
        return {"executor": self.executor, "address": self.address, "trainer": self.trainer}

    def finetune(self, task: Task, cands: Sequence[Candidate], epochs: int) -> list[dict[str, Any]]:
        from ..finetune.verify import verify_top  # lazy: pandas

        table = verify_top(task, list(cands), self.store, recipe=self.recipe.replace(max_epochs=epochs),
                           seed=self.seed, **self._grid_kw())
        return [_clean({k: row[k] for k in ("model_id", "val_f1", "f1", "epochs", "status", "error")})
                for row in table.to_dict("records")]

    def halving(self, task: Task, cands: Sequence[Candidate], epochs: int) -> list[dict[str, Any]]:
        from ..finetune.verify import successive_halving  # lazy: pandas

        res = successive_halving(task, list(cands), self.store, recipe=self.recipe.replace(max_epochs=epochs),
                                 seed=self.seed, **self._grid_kw())
        last: dict[str, dict] = {}
        for i, rung in enumerate(res.rungs, start=1):
            for row in rung.rows:
                last[row["model_id"]] = {**{k: row.get(k) for k in ("model_id", "val_f1", "f1", "epochs", "status",
                                                                       "error")}, "rung": i}
        return [_clean(r) for r in last.values()]

    def costs(self, task: Task, progress: bool):
        return MeasuredCosts(task, self.feature_method, self.recipe, seed=self.seed, probe_top=self.probe_top,
                             clock=self.clock, progress=progress)
