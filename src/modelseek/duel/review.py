"""Review before publication (a board created with ``modelseek duel db init --review``).

Confirming a submission on such a board queues it (``pending.queued_at``; queued rows do not expire). The
operator looks at the queue (``modelseek duel review list``: each queued model with its plausibility
flags) and decides: ``approve NAME`` publishes it exactly as a confirmation does elsewhere (its duels
against every model published meanwhile are computed then) and records who approved it and when in
``reviews``, a row the hash chain covers with the submission; ``reject NAME --why TEXT`` records the
decision and drops the submission. Only approved submissions enter the board and the duels.

Plausibility flags (what a reviewer should look at; none of them refuses anything):

* **above every published model on every task**: the new model's metric beats the best published value on
  every task (a fabricated upload tends to);
* **at the metric's bound**: a task's metric at its best possible value (accuracy, exact match, AUROC,
  ROUGE or nDCG 1; perplexity 1);
* **far from the others**: on a task with at least three published models, a metric more than
  :data:`FAR_MADS` median absolute deviations (scaled to a standard deviation, at least
  :data:`MIN_SPREAD`) from their median.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InputError
from .config import Metric
from .text import name_key

if TYPE_CHECKING:
    from .config import LeaderboardConfig

FAR_MADS = 5.0
MIN_SPREAD = 0.01
DECISIONS = ("approved", "rejected")


def plausibility_flags(raw: dict[str, float], published: dict[str, dict[str, float]],
                       config: LeaderboardConfig) -> list[str]:
    """The flags of a submission whose metrics are ``raw`` (task -> value) against the published models'
    ``published`` (model -> task -> value)."""
    flags = []
    tasks = config.task_ids
    better = {t: (lambda a, b: a > b) if config.spec(t).metric.higher_is_better else (lambda a, b: a < b)
              for t in tasks}
    if published and all(all(better[t](raw[t], v[t]) for v in published.values()) for t in tasks):
        flags.append("above every published model on every task")
    bound = [t for t in tasks if (raw[t] <= 1.0 if config.spec(t).metric is Metric.WORD_PERPLEXITY else raw[t] >= 1.0)]
    if bound:
        flags.append(f"at the metric's bound on {len(bound)} task(s): {', '.join(bound[:5])}")
    far = []
    for t in tasks:
        others = np.array([v[t] for v in published.values()], dtype=float)
        if others.size < 3:
            continue
        med = float(np.median(others))
        spread = max(1.4826 * float(np.median(np.abs(others - med))), MIN_SPREAD)
        if abs(raw[t] - med) > FAR_MADS * spread:
            far.append(t)
    if far:
        flags.append(f"far from the published models on {len(far)} task(s): {', '.join(far[:5])}")
    return flags


class ReviewWorkflow:
    """The review queue of :class:`~.storage.Store` (see the module docstring)."""

    _sa: Any
    t: dict[str, Any]
    engine: Any
    config: LeaderboardConfig
    review: bool
    _write: Callable[..., Any]
    _board: Callable[[Any], tuple]
    _publish_row: Callable[..., str]
    _drop_pending: Callable[[Any, int], None]
    _check_name: Callable[..., None]

    def _queued(self, c, model: str) -> dict:
        pend = self.t["pending"]
        row = c.execute(self._sa.select(pend).where(pend.c.model == model, pend.c.queued_at.is_not(None))
                        ).mappings().first()
        if row is None:
            raise InputError(f"no submission {model!r} awaits review (modelseek duel review list shows the queue)",
                             field="model")
        return dict(row)

    def review_queue(self) -> list[dict]:
        """The queued submissions, oldest first: model, when uploaded and confirmed, the uploader's identity,
        the task metrics and the plausibility flags."""
        sa, pend, pprof = self._sa, self.t["pending"], self.t["pending_profiles"]
        with self.engine.connect() as c:
            rows = [dict(r) for r in c.execute(sa.select(pend.c.id, pend.c.model, pend.c.created_at,
                                                         pend.c.queued_at, pend.c.identity, pend.c.metadata_json)
                                               .where(pend.c.queued_at.is_not(None))
                                               .order_by(pend.c.queued_at, pend.c.id)).mappings()]
            raw: dict[int, dict[str, float]] = {r["id"]: {} for r in rows}
            if rows:
                for pid, task, value in c.execute(sa.select(pprof.c.pending_id, pprof.c.task, pprof.c.raw)
                                                  .where(pprof.c.pending_id.in_(list(raw)))):
                    raw[int(pid)][task] = float(value)
            published = self._board(c)[3]
        out = []
        for r in rows:
            meta = json.loads(r["metadata_json"])
            out.append({"model": r["model"], "team": meta.get("team"), "identity": r["identity"],
                        "uploaded": _when(r["created_at"]), "confirmed": _when(r["queued_at"]),
                        "metrics": raw[r["id"]],
                        "flags": plausibility_flags(raw[r["id"]], published, self.config)})
        return out

    def _decide(self, decision: str, reviewer: str, why: str) -> dict:
        if not self.review:
            raise InputError("this board publishes without review (it was not created with --review)", field="db")
        reviewer = str(reviewer).strip()
        if not reviewer:
            raise InputError("the reviewer's name is required", field="reviewer")
        return {"decision": decision, "reviewer": reviewer[:300], "decided_at": time.time(), "why": str(why)[:5000]}

    def approve(self, model: str, reviewer: str, why: str = "") -> str:
        """Publish the queued ``model`` (its duels against models published meanwhile computed now), with the
        approval (who, when) written to ``reviews`` and chained with it."""
        review = self._decide("approved", reviewer, why)

        def publish(c):
            row = self._queued(c, model)
            self._check_name(c, row["model"], row["name_key"] or name_key(row["model"]))
            return self._publish_row(c, row, True, review)

        return self._write(publish)

    def reject(self, model: str, reviewer: str, why: str) -> None:
        """Drop the queued ``model``, recording who rejected it, when and why (``why`` is required)."""
        if not str(why).strip():
            raise InputError("say why (--why TEXT): the uploader is told", field="why")
        review = self._decide("rejected", reviewer, why)

        def drop(c):
            row = self._queued(c, model)
            c.execute(self.t["reviews"].insert().values(submission_id=int(row["id"]), model=row["model"], **review))
            self._drop_pending(c, int(row["id"]))

        self._write(drop)


def _when(t: float | None) -> str | None:
    return None if t is None else time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(float(t)))
