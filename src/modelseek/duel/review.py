"""Review before publication (a board created with ``modelseek duel db init --review``).

Confirming a submission on such a board queues it (``pending.queued_at``; queued rows do not expire). The
operator looks at the queue (``modelseek duel review list``: each queued submission's id, model, team, uploader,
metrics and plausibility flags) and decides by id (or by name when only one queued submission has it):
``approve ID`` publishes it exactly as a confirmation does elsewhere (its duels against every model published
meanwhile are computed then; the uploader's identity must own the team: the first identity that published under
it, or a look-alike of it) and records who approved it and when in ``reviews``, a row the hash chain covers with
the submission; ``reject ID --why TEXT`` records the decision and drops the submission. Only approved submissions
enter the board and the duels. The uploader reads the verdict and its reason by the upload's token
(:meth:`ReviewWorkflow.verdict`, ``modelseek duel review status TOKEN``, the app's status box).

A near-copy (:mod:`.copies`) is held for review instead of refused on such a board; approved anyway, it is
recorded in ``copies`` (chained with it) and joins the family of the entry it copies (:mod:`.scoring`: families
count once).

**Withdrawal** (``modelseek duel review withdraw ID --by NAME --why TEXT``, any board): an append-only
``withdrawals`` row chained at its own chain row; the entry stays in ``submissions`` for audit (and its name stays
taken), the board and every score are recomputed without it.

Plausibility flags (what a reviewer should look at; none of them refuses anything):

* **above every published model on every task**: the new model's metric beats the best published value on
  every task (a fabricated upload tends to);
* **at the metric's bound**: a task's metric at its best possible value (accuracy, exact match, AUROC,
  ROUGE or nDCG 1; perplexity 1);
* **far from the others**: on a task with at least three published models, a metric more than
  :data:`FAR_MADS` median absolute deviations (scaled to a standard deviation, at least
  :data:`MIN_SPREAD`) from their median;
* **far beyond the best**: on a task with at least three published models, a metric beyond the best published
  one by more than the published range (best - worst, at least :data:`MIN_SPREAD`).

Both distances are measured in the metric's own terms, where its bound is infinitely far: the log-odds of a
metric in [0, 1] (accuracy, AUROC, ROUGE, nDCG) and ``-log(perplexity - 1)``. On a board of 7 models whose best
AUROC is 0.8 an upload of 0.999 is 5.5 log-odds beyond the best where the range is about 1: flagged, where a
linear "5 deviations" limit would have been AUROC 1.6, outside the metric.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.errors import InputError
from .config import Metric
from .text import name_key
from .text import look_alike
from . import chain
from .chain import BoardAltered

if TYPE_CHECKING:
    from .config import LeaderboardConfig

FAR_MADS = 5.0
MIN_SPREAD = 0.01
DECISIONS = ("approved", "rejected")


def _scale(metric: Metric, v) -> np.ndarray:
    """A metric on a scale where its bound is infinitely far and higher is better."""
    v = np.asarray(v, dtype=float)
    if metric is Metric.WORD_PERPLEXITY:
        return -np.log(np.maximum(v - 1.0, 1e-12))
    p = np.clip(v, 1e-9, 1 - 1e-9)
    return np.log(p / (1 - p))


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
    far, beyond = [], []
    for t in tasks:
        metric = config.spec(t).metric
        others = _scale(metric, [v[t] for v in published.values() if t in v])
        if others.size < 3:
            continue
        mine = float(_scale(metric, raw[t]))
        med = float(np.median(others))
        spread = max(1.4826 * float(np.median(np.abs(others - med))), MIN_SPREAD)
        if abs(mine - med) > FAR_MADS * spread:
            far.append(t)
        best, worst = float(others.max()), float(others.min())
        if mine - best > max(best - worst, MIN_SPREAD):
            beyond.append(t)
    if far:
        flags.append(f"far from the published models on {len(far)} task(s): {', '.join(far[:5])}")
    if beyond:
        flags.append(f"far beyond the best published model on {len(beyond)} task(s): {', '.join(beyond[:5])}")
    return flags


class ReviewWorkflow:
    """The review queue, the verdicts and withdrawals of :class:`~.storage.Store` (see the module docstring)."""

    _sa: Any
    t: dict[str, Any]
    engine: Any
    config: LeaderboardConfig
    review: bool
    key: bytes | None
    _write: Callable[..., Any]
    _board: Callable[[Any], tuple]
    _publish_row: Callable[..., str]
    _drop_pending: Callable[[Any, int], None]
    _check_name: Callable[..., None]
    _check_team: Callable[..., None]
    _published: Callable[[Any], list[tuple[int, str]]]
    _refuse_tampered: Callable[[Any], None]
    _copies_of: Callable[..., list]
    _stored_answers: Callable[..., dict]
    require_intact: Callable[..., None]

    def _queued(self, c, ref: int | str) -> dict:
        """The queued submission ``ref``: its id (an int, or digits naming a queued id), else its model name
        when exactly one queued submission has it."""
        sa, pend = self._sa, self.t["pending"]
        queued = pend.c.queued_at.is_not(None)
        if isinstance(ref, int) or (isinstance(ref, str) and ref.isdigit()):
            row = c.execute(sa.select(pend).where(pend.c.id == int(ref), queued)).mappings().first()
            if row is not None:
                return dict(row)
            if isinstance(ref, int):
                raise InputError(f"no submission with id {ref} awaits review (modelseek duel review list shows the "
                                 "queue)", field="id")
        rows = c.execute(sa.select(pend).where(pend.c.model == str(ref), queued).order_by(pend.c.id)).mappings().all()
        if not rows:
            raise InputError(f"no submission {ref!r} awaits review (modelseek duel review list shows the queue)",
                             field="model")
        if len(rows) > 1:
            raise InputError(f"{len(rows)} queued submissions are named {ref!r} (ids "
                             f"{', '.join(str(r['id']) for r in rows)}): decide by id", field="model")
        return dict(rows[0])

    def review_queue(self) -> list[dict]:
        """The queued submissions, oldest first: id, model, team, the uploader's identity, when uploaded and
        confirmed, the task metrics and the flags (plausibility, near-copies, a team claimed by several
        identities)."""
        self.require_intact()
        sa, pend, pprof = self._sa, self.t["pending"], self.t["pending_profiles"]
        with self.engine.connect() as c:
            altered = [p for i, in c.execute(sa.select(pend.c.id).where(pend.c.queued_at.is_not(None))).all()
                       for p in chain.verify_pending(c, self.t, sa, self.key, only=int(i))]
            if altered:                     # the queue's metrics are read from the sealed previews
                raise BoardAltered(f"the leaderboard was altered: {altered[0]}; not using it (modelseek duel db "
                                   "verify lists them)", field="db")
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
            answers = self._stored_answers(c, "pending", [int(r["id"]) for r in rows])
            copies = {int(r["id"]): self._copies_of(c, answers[int(r["id"])], exclude=int(r["id"]))
                      for r in rows if int(r["id"]) in answers}
        teams: dict[str, set] = {}
        for r in rows:
            r["meta"] = json.loads(r["metadata_json"])
            team = r["meta"].get("team")
            if isinstance(team, str):
                teams.setdefault(name_key(team), set()).add(r["identity"])
        out = []
        for r in rows:
            team = r["meta"].get("team")
            flags = plausibility_flags(raw[r["id"]], published, self.config)
            for table, _, other, ag in copies.get(int(r["id"]), []):
                flags.append(f"near-copy of the {'published' if table == 'submissions' else 'queued'} {other!r}: "
                             f"{ag.describe()}")
            if isinstance(team, str) and len(teams.get(name_key(team), ())) > 1:
                flags.append(f"team {team!r} is claimed by {len(teams[name_key(team)])} identities in the queue "
                             "(it belongs to the first one published)")
            out.append({"id": int(r["id"]), "model": r["model"], "team": team, "identity": r["identity"],
                        "uploaded": _when(r["created_at"]), "confirmed": _when(r["queued_at"]),
                        "metrics": raw[r["id"]], "flags": flags})
        return out

    def _decide(self, decision: str, reviewer: str, why: str) -> dict:
        if not self.review:
            raise InputError("this board publishes without review (it was not created with --review)", field="db")
        reviewer = str(reviewer).strip()
        if not reviewer:
            raise InputError("the reviewer's name is required", field="reviewer")
        return {"decision": decision, "reviewer": reviewer[:300], "decided_at": time.time(), "why": str(why)[:5000]}

    def approve(self, ref: int | str, reviewer: str, why: str = "") -> str:
        """Publish the queued submission ``ref`` (id, or a name only one queued submission has; its duels against
        models published meanwhile computed now), with the approval (who, when) written to ``reviews`` and chained
        with it. The uploading identity must own the team (:meth:`_check_team`)."""
        review = self._decide("approved", reviewer, why)

        def publish(c):
            row = self._queued(c, ref)
            self._check_name(c, row["model"], row["name_key"] or name_key(row["model"]))
            team = json.loads(row["metadata_json"]).get("team")
            if team and row["identity"] is None and self._team_owner(c, team) is not None:
                raise InputError(f"team {team!r} belongs to a signed-in user; this upload has no identity",
                                 field="metadata.team")
            self._check_team(c, team, row["identity"])
            return self._publish_row(c, row, True, review)

        return self._write(publish)

    def _team_owner(self, c, team: str) -> str | None:
        """The uploader hash of the first published entry under ``team`` (or a look-alike), else ``None``."""

        sa, ch, subs = self._sa, self.t["chain"], self.t["submissions"]
        for meta, who in c.execute(sa.select(subs.c.metadata_json, ch.c.uploader)
                                   .select_from(ch.join(subs, ch.c.submission_id == subs.c.id)).order_by(ch.c.seq)):
            try:
                other = json.loads(meta).get("team")
            except (ValueError, AttributeError):
                continue
            if isinstance(other, str) and look_alike(other, team) and who is not None:
                return str(who)
        return None

    def reject(self, ref: int | str, reviewer: str, why: str) -> str:
        """Drop the queued submission ``ref``, recording who rejected it, when and why (``why`` is required: the
        uploader reads it with :meth:`verdict`); returns the model name."""
        if not str(why).strip():
            raise InputError("say why: the uploader is told", field="why")
        review = self._decide("rejected", reviewer, why)

        def drop(c):
            row = self._queued(c, ref)
            c.execute(self.t["reviews"].insert().values(submission_id=int(row["id"]), model=row["model"],
                                                        token_hash=_sha(row["token"]), **review))
            self._drop_pending(c, int(row["id"]))
            return row["model"]

        return self._write(drop)

    def verdict(self, token: str) -> dict:
        """What became of the upload whose token is ``token``: ``{"model", "status": "pending" | "awaiting review" |
        "published" | "approved" | "rejected" | "withdrawn", "why", "by", "at"}`` (the uploader's view)."""
        sa, pend, rv, subs, wd = self._sa, self.t["pending"], self.t["reviews"], self.t["submissions"], \
            self.t["withdrawals"]
        with self.engine.connect() as c:
            row = c.execute(sa.select(pend.c.model, pend.c.queued_at).where(pend.c.token == str(token))).first()
            if row is not None:
                return {"model": row[0], "status": "pending" if row[1] is None else "awaiting review", "why": "",
                        "by": None, "at": None}
            dec = c.execute(sa.select(rv.c.model, rv.c.decision, rv.c.why, rv.c.reviewer, rv.c.decided_at)
                            .where(rv.c.token_hash == _sha(str(token)))).first()
            pub = c.execute(sa.select(subs.c.id, subs.c.model).where(subs.c.token == str(token))).first()
            gone = None if pub is None else c.execute(sa.select(wd.c.operator, wd.c.why, wd.c.at).where(
                wd.c.submission_id == int(pub[0]))).first()
        if gone is not None:
            return {"model": pub[1], "status": "withdrawn", "why": gone[1], "by": gone[0], "at": _when(gone[2])}
        if dec is not None:
            return {"model": dec[0], "status": dec[1], "why": dec[2], "by": dec[3], "at": _when(dec[4])}
        if pub is not None:
            return {"model": pub[1], "status": "published", "why": "", "by": None, "at": None}
        raise InputError("unknown token: no upload, decision or published entry has it (a pre-submission that was "
                         "never confirmed expires)", field="token")

    def withdraw(self, ref: int | str, operator: str, why: str) -> str:
        """Withdraw the published entry ``ref`` (its submission id, or its model name): an append-only
        ``withdrawals`` row chained at its own row; the entry stays in ``submissions`` for audit, the board is
        recomputed without it. Returns the model name."""
        operator = str(operator).strip()
        if not operator:
            raise InputError("the operator's name is required", field="operator")
        if not str(why).strip():
            raise InputError("say why: the withdrawal is public", field="why")

        def write(c):
            self._refuse_tampered(c)
            pub = self._published(c)
            hit = [(i, m) for i, m in pub if (isinstance(ref, int) or str(ref).isdigit()) and i == int(ref)] or \
                  [(i, m) for i, m in pub if m == str(ref)]
            if not hit:
                raise InputError(f"no published entry {ref!r} on the board (withdrawn already, or never published)",
                                 field="model")
            sid, model = hit[0]
            record = {"submission_id": sid, "model": model, "operator": operator[:300], "why": str(why)[:5000],
                      "at": time.time()}
            chain.append_withdrawal(c, self.t, self._sa, record, self.key)
            return model

        return self._write(write)

    def withdrawn(self) -> list[dict]:
        """The withdrawals, oldest first: model, who, when, why (kept for audit)."""
        wd = self.t["withdrawals"]
        with self.engine.connect() as c:
            rows = c.execute(self._sa.select(wd.c.submission_id, wd.c.model, wd.c.operator, wd.c.at, wd.c.why)
                             .order_by(wd.c.seq)).all()
        return [{"id": int(i), "model": m, "by": o, "at": _when(a), "why": w} for i, m, o, a, w in rows]


def _sha(text: str) -> str:
    import hashlib

    return hashlib.sha256(str(text).encode("utf-8", "backslashreplace")).hexdigest()


def _when(t: float | None) -> str | None:
    return None if t is None else time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(float(t)))
