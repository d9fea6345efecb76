"""Verification for users: fine-tune the top of a ranking, or run successive halving over it.

Both go through :func:`run_grid`, so their jobs are stored and resumable like any grid.

Successive halving (Jamieson & Talwalkar 2016, "Non-stochastic best arm identification and hyperparameter
optimization", AISTATS): rung ``r`` trains every survivor for ``min_epochs * eta**r`` epochs (capped at the
recipe's ``max_epochs``; early stopping still applies), keeps the best ``ceil(n / eta)`` by validation
macro-F1 (ties: lower validation loss, then the ranking's order) and repeats until one candidate is left or
the full budget has been spent. Selection never looks at the test split; test F1 is reported alongside.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..data.pool import Candidate
from ..data.task import Task
from ...core.errors import InputError
from .grid import run_grid
from .recipe import PROTOCOL, Recipe


def _row(rec, model_id: str) -> dict[str, Any]:
    if rec is None:
        return {"model_id": model_id, "status": "missing", "f1": float("nan"), "val_f1": float("nan"),
                "epochs": None, "best_epoch": None, "error": ""}
    r = rec.result or {}
    return {"model_id": model_id, "status": rec.status, "f1": r.get("f1", float("nan")),
            "val_f1": r.get("val_f1", float("nan")), "best_val_loss": r.get("best_val_loss", float("nan")),
            "epochs": r.get("epochs"), "best_epoch": r.get("best_epoch"),
            "error": (rec.error or "").strip().splitlines()[0] if rec.error else ""}


def verify_top(task: Task, candidates: Sequence[Candidate], store, recipe: Recipe = PROTOCOL, seed: int = 0,
               executor: str = "local", address: str | None = None, scores: Mapping[str, float] | None = None,
               **grid_kw: Any) -> pd.DataFrame:
    """Fine-tune ``candidates`` (a ranking's top K, in rank order) on ``task``; one row per candidate with
    its rank, ranker score, test F1, validation F1, epochs, and error if it failed."""
    if not candidates:
        raise InputError("no candidates to verify")
    grid = run_grid([task], candidates, store, recipe=recipe, seeds=[seed], need_test=False, executor=executor,
                    address=address, check_offline=False, **grid_kw)
    recs = {r.key: r for r in grid.store.records(j.key for j in grid.jobs)}
    rows = []
    for rank, job in enumerate(grid.jobs, start=1):
        row = {"rank": rank, **_row(recs.get(job.key), job.model.model_id)}
        if scores is not None:
            row["score"] = scores.get(job.model.model_id, float("nan"))
        rows.append(row)
    cols = ["rank", "model_id"] + (["score"] if scores is not None else []) + \
        ["f1", "val_f1", "epochs", "best_epoch", "status", "error"]
    return pd.DataFrame(rows)[cols]


@dataclass
class Rung:
    epochs: int
    rows: list[dict[str, Any]]
    survivors: list[str]


@dataclass
class HalvingResult:
    rungs: list[Rung] = field(default_factory=list)

    @property
    def winner(self) -> str | None:
        return self.rungs[-1].survivors[0] if self.rungs and self.rungs[-1].survivors else None

    @property
    def winner_f1(self) -> float:
        w = self.winner
        for row in self.rungs[-1].rows if self.rungs else []:
            if row["model_id"] == w:
                return float(row["f1"])
        return float("nan")

    @property
    def total_epochs(self) -> int:
        """Epochs actually trained over all rungs (the budget spent)."""
        return int(sum(row["epochs"] or 0 for rung in self.rungs for row in rung.rows))

    def table(self) -> pd.DataFrame:
        rows = [{"rung": i + 1, "budget_epochs": rung.epochs, **{k: row[k] for k in
                 ("model_id", "val_f1", "f1", "epochs", "status")}, "kept": row["model_id"] in rung.survivors}
                for i, rung in enumerate(self.rungs) for row in rung.rows]
        return pd.DataFrame(rows)


def successive_halving(task: Task, candidates: Sequence[Candidate], store, recipe: Recipe = PROTOCOL,
                       seed: int = 0, eta: int = 2, min_epochs: int = 1, executor: str = "local",
                       address: str | None = None, **grid_kw: Any) -> HalvingResult:
    """Successive halving over ``candidates`` (in ranking order) on ``task`` (see the module docstring)."""
    if eta < 2:
        raise InputError(f"eta must be >= 2, got {eta}", field="eta")
    if min_epochs < 1:
        raise InputError(f"min_epochs must be >= 1, got {min_epochs}", field="min_epochs")
    if not candidates:
        raise InputError("no candidates for successive halving")
    survivors = list(candidates)
    out = HalvingResult()
    r = 0
    while True:
        budget = min(min_epochs * eta ** r, recipe.max_epochs)
        rung_recipe = recipe.replace(max_epochs=budget)
        grid = run_grid([task], survivors, store, recipe=rung_recipe, seeds=[seed], need_test=False, executor=executor,
                        address=address, check_offline=False, **grid_kw)
        recs = {rec.key: rec for rec in grid.store.records(j.key for j in grid.jobs)}
        rows = [_row(recs.get(j.key), j.model.model_id) for j in grid.jobs]
        ok = [(i, row) for i, row in enumerate(rows) if row["status"] == "done"]
        ok.sort(key=lambda ir: (-ir[1]["val_f1"], ir[1].get("best_val_loss", math.inf), ir[0]))
        final = len(survivors) == 1 or budget >= recipe.max_epochs
        keep = 1 if final else max(1, math.ceil(len(survivors) / eta))
        kept_ids = [row["model_id"] for _, row in ok[:keep]]
        out.rungs.append(Rung(epochs=budget, rows=rows, survivors=kept_ids))
        if final or not kept_ids:
            return out
        survivors = [c for c in survivors if c.id in set(kept_ids)]
        r += 1
