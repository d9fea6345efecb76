"""The publication workflow of a leaderboard (see :mod:`.storage`): pre-submission (validate, compute the new
model's duels, store them as pending, return a :class:`Preview`), confirmation (publish and chain), refresh of a
stale preview, discard, the expiry of pending submissions and the per-uploader daily quota. A mixin of
:class:`~.storage.Store`, which holds the tables, the engine and the serialised writes it relies on."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..core.errors import InputError
from . import chain
from .copies import Agreement, TaskView, answer_vectors, find_copies
from .engine import duels_against, profile, profiles
from .leaderboard import leaderboard_frame
from .scoring import win_scores
from .submission import (Submission, _records_to_data, check_sample_counts, id_difference, submission_from_bytes,
                         validate_submission)
from .text import clean_name, name_key, skeletons
from .copies import copy_groups

#: bytes after an upload's ``"metadata":`` decoded for its model name before the full parse
MAX_PEEK = 512 * 1024
_META_KEY = re.compile(rb'"metadata"\s*:\s*\{')


def peek_model_name(data: bytes) -> str | None:
    """The model name of an upload without parsing it (``None`` when no ``"metadata"`` object is found whole): the
    upload is searched for ``"metadata": {`` wherever it stands (first, last or between the predictions: the key
    order of a JSON object is the uploader's choice) and the object there is decoded alone (within
    :data:`MAX_PEEK` bytes), its ``model`` (else ``model_name``) taken as validation takes it. Used only to refuse
    a taken name early; the full parse decides everything else."""
    for m in _META_KEY.finditer(data):
        text = bytes(data[m.end() - 1:m.end() - 1 + MAX_PEEK]).decode("utf-8", "replace")
        try:
            meta, _ = json.JSONDecoder().raw_decode(text)
        except ValueError:
            continue
        name = meta.get("model") if isinstance(meta.get("model"), str) else meta.get("model_name")
        if isinstance(name, str) and name.strip():
            return name
    return None

if TYPE_CHECKING:
    from .config import LeaderboardConfig
    from .engine import Profile, Settings
    from .reference import Reference


#: pending pre-submissions are deleted after this many seconds (``--pending-hours``)
PENDING_TTL = 24 * 3600.0
#: bytes of canonical submissions one uploader may store per 24 hours
MAX_DAILY_BYTES = 256 * 1024 * 1024
DAY = 24 * 3600.0


class StalePreview(InputError):
    """The board changed since the preview was computed: recompute it (:meth:`Store.refresh`) first."""


def _sha_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "backslashreplace")).hexdigest()


def _payload(sub: Submission) -> tuple[bytes, str, int]:
    """What is stored of a submission: its canonical JSON (what scoring reads; nothing else of the upload),
    gzip'ed, the SHA-256 and the size of the uncompressed bytes."""
    data = sub.payload()[0]
    return gzip.compress(data, compresslevel=1, mtime=0), hashlib.sha256(data).hexdigest(), len(data)


@dataclass
class Preview:
    token: str
    model: str
    rank: int
    scores: dict                 # the new model's scores (tasks, categories, overall)
    table: pd.DataFrame          # the leaderboard as it would be with the new model
    seconds: float
    warnings: tuple = ()         # tolerated oddities of the upload (unknown fields...)
    board: int = 0               # the chain head (number of published models) the preview was computed on


class PublishWorkflow:
    """Pre-submit, confirm, refresh, discard, publish: the writes of :class:`~.storage.Store`."""

    # What the workflow uses of Store, declared for the type checker only (annotations, no values: Store's
    # __init__ sets the attributes and Store defines the methods).
    _sa: Any                             # the sqlalchemy module (imported on first use: extra ``web``)
    t: dict[str, Any]                    # the sqlalchemy Table objects, by name (schema.tables)
    engine: Any                          # the sqlalchemy Engine
    config: LeaderboardConfig
    settings: Settings
    alpha: float
    fdr: bool
    max_competitors: int
    max_bytes: int
    max_stored_bytes: int
    max_daily_bytes: int
    pending_ttl: float
    reference: Reference | None
    review: bool
    key: bytes | None
    _answers: dict[tuple[str, int], dict[str, TaskView]]
    _write: Callable[..., Any]           # (fn(conn), serialised=True) -> fn's result, in one write transaction
    _published: Callable[[Any], list[tuple[int, str]]]
    _profiles: Callable[..., dict[int, dict[str, Profile]]]   # (conn, ids, table="profiles")
    _board: Callable[[Any], tuple[list[tuple[int, str]], dict[str, np.ndarray], dict, dict[str, dict[str, float]]]]
    _groups_of: Callable[[list[int]], list[int]]
    _refuse_tampered: Callable[[Any], None]

    def _check_samples(self, conn, sub: Submission) -> None:
        """The upload's samples must be the task's (paired by doc_id): the ids fixed by the first published
        submission, else (a database older than task_ids) the published sample counts."""
        sa, p = self._sa, self.t["profiles"]
        fixed = dict(conn.execute(sa.select(self.t["task_ids"].c.task, self.t["task_ids"].c.ids)).all())
        for task in self.config.task_ids:
            if task in fixed:
                diff = id_difference(tuple(json.loads(fixed[task])), sub.data[task].doc_ids)
                if diff is not None:
                    raise InputError(f"task {task!r}: {diff} (the published models have {len(json.loads(fixed[task]))} "
                                     f"samples, this one {sub.data[task].n}; paired tests pair samples by doc_id)",
                                     field=f"predictions.{task}")
        rows = conn.execute(sa.select(p.c.task, sa.func.min(p.c.n), sa.func.max(p.c.n)).group_by(p.c.task)).all()
        for task, lo, hi in rows:
            if task in sub.data and not (lo == hi == sub.data[task].n):
                raise InputError(f"task {task!r} has {sub.data[task].n} samples; published models have {lo}",
                                 field=f"predictions.{task}")

    def _check_name(self, conn, model: str, key: str) -> None:
        ch, subs = self.t["chain"], self.t["submissions"]
        row = conn.execute(self._sa.select(subs.c.model).select_from(ch.join(subs, ch.c.submission_id == subs.c.id))
                           .where(ch.c.name_key == key)).first()
        if row is None:
            row = conn.execute(self._sa.select(subs.c.model).where(subs.c.model == model)).first()
        if row is not None:
            same = "" if row[0] == model else (f" as {row[0]!r} (names that differ only in case, width or invisible "
                                               "characters are one model)")
            raise InputError(f"model {model!r} is already published{same} (published submissions are immutable)",
                             field="metadata.model")
        mine = skeletons(model)
        for (other,) in conn.execute(self._sa.select(subs.c.model)).all():
            if not mine.isdisjoint(skeletons(other)):
                raise InputError(f"model {model!r} looks like the published {other!r} (names whose characters from "
                                 "different scripts look alike are one model: Unicode TR39 confusables)",
                                 field="metadata.model")

    # -------------------------------------------------------------------------------------- copies
    def _stored_answers(self, conn, table: str, ids: list[int]) -> dict[int, dict[str, TaskView]]:
        """Per-sample answers (:func:`.copies.answers`) of stored submissions, decoded once per store (published
        and pending payloads never change under their id)."""
        todo = [i for i in ids if (table, i) not in self._answers]
        if todo:
            tbl = self.t[table]
            for i, payload in conn.execute(self._sa.select(tbl.c.id, tbl.c.payload).where(tbl.c.id.in_(todo))):
                try:
                    preds = json.loads(gzip.decompress(payload))["predictions"]
                    data = {t: _records_to_data(t, self.config.spec(t).metric, preds[t], "<stored>")
                            for t in self.config.task_ids}
                except (OSError, ValueError, KeyError, TypeError, InputError):
                    continue                    # an unreadable row is found by verify, not here
                self._answers[(table, int(i))] = answer_vectors(data)
        return {i: self._answers[(table, i)] for i in ids if (table, i) in self._answers}

    def _copies_of(self, conn, answers: dict[str, TaskView], exclude: int | None = None
                   ) -> list[tuple[str, int, str, Agreement]]:
        """The published (not withdrawn) and queued submissions that ``answers`` is a near-copy of:
        ``(table, id, model, agreement)``, the closest first."""
        sa, pend = self._sa, self.t["pending"]
        pub = [(i, m) for i, m in self._published(conn) if i != exclude]
        queued = [(int(i), m) for i, m in conn.execute(sa.select(pend.c.id, pend.c.model).where(
            pend.c.queued_at.is_not(None))).all() if int(i) != exclude]
        others = []
        for table, rows in (("submissions", pub), ("pending", queued)):
            vecs = self._stored_answers(conn, table, [i for i, _ in rows])
            others += [((table, i, m), vecs[i]) for i, m in rows if i in vecs]
        hits = find_copies(answers, [(str(k), v) for k, v in others])
        by_key = {str(k): k for k, _ in others}
        return [(*by_key[name], ag) for name, ag in hits]

    @staticmethod
    def _copy_message(model: str, hits) -> str:
        """One line naming every entry copied (a task-by-task mix names each, with its tasks)."""
        parts = []
        for table, _, other, ag in hits:
            what = "the published" if table == "submissions" else "the queued"
            parts.append(f"{what} {other!r}: {ag.describe()}")
        return f"model {model!r} is a near-copy of " + "; and of ".join(parts)

    def _check_team(self, conn, team: str | None, identity: str | None) -> None:
        """With signed-in uploaders, a team belongs to the identity that first published under it (or under a
        look-alike of it): another identity (or the operator's CLI, which has none) owns it."""
        if identity is None or not team:
            return
        sa, ch, subs = self._sa, self.t["chain"], self.t["submissions"]
        mine, me = skeletons(team), _sha_text(identity)
        rows = conn.execute(sa.select(subs.c.metadata_json, ch.c.uploader)
                            .select_from(ch.join(subs, ch.c.submission_id == subs.c.id))).all()
        for meta, who in rows:
            try:
                other = json.loads(meta).get("team")
            except (ValueError, AttributeError):
                continue
            if isinstance(other, str) and not mine.isdisjoint(skeletons(other)) and who != me:
                raise InputError(f"team {team!r} belongs to the signed-in user who first published under it"
                                 + (f" (as {other!r})" if other != team else ""), field="metadata.team")

    # -------------------------------------------------------------------------------------- writing
    def _load(self, upload, source: str) -> Submission:
        if isinstance(upload, Submission):
            return validate_submission(upload.to_dict(), self.config, source)   # the same checks as an upload
        if isinstance(upload, (str, Path)):     # a local file named by the operator (CLI, scripts)
            p = Path(upload)
            if not p.is_file():
                raise InputError("no such submission file", path=p)
            if p.stat().st_size > self.max_bytes:
                raise InputError(f"submission too large: {p.stat().st_size:,} bytes > limit {self.max_bytes:,}",
                                 path=p)
            return submission_from_bytes(p.read_bytes(), self.config, str(p), self.max_bytes)
        return submission_from_bytes(bytes(upload), self.config, source, self.max_bytes)

    def charge_received(self, who: str, size: int) -> int:
        """Charge ``size`` bytes received from ``who`` (whatever endpoint received them, finished or dropped:
        the server's middleware) to the daily quota, unconditionally; returns the bytes charged to ``who`` in the
        last 24 hours, these included."""
        sa, usage, who_hash = self._sa, self.t["usage"], _sha_text(who)

        def charge(c):
            now = time.time()
            if size > 0:
                c.execute(usage.insert().values(uploader=who_hash, at=now, bytes=int(size)))
            return int(c.execute(sa.select(sa.func.coalesce(sa.func.sum(usage.c.bytes), 0)).where(
                usage.c.uploader == who_hash, usage.c.at >= now - DAY)).scalar_one())

        return self._write(charge, serialised=False)

    def received_today(self, who: str) -> int:
        """The bytes charged to ``who`` in the last 24 hours (:meth:`charge_received`)."""
        sa, usage = self._sa, self.t["usage"]
        with self.engine.connect() as c:
            return int(c.execute(sa.select(sa.func.coalesce(sa.func.sum(usage.c.bytes), 0)).where(
                usage.c.uploader == _sha_text(who), usage.c.at >= time.time() - DAY)).scalar_one())

    def _charge(self, who_hash: str, size: int, source: str) -> None:
        """Charge ``size`` raw bytes received to ``who_hash`` (refused uploads count too: parsing them is work);
        refuse when the day's bytes would pass ``max_daily_bytes`` (``size`` 0: when they already do)."""
        if self.max_daily_bytes is None:
            return
        sa, usage = self._sa, self.t["usage"]

        def charge(c):
            now = time.time()
            used = int(c.execute(sa.select(sa.func.coalesce(sa.func.sum(usage.c.bytes), 0)).where(
                usage.c.uploader == who_hash, usage.c.at >= now - DAY)).scalar_one())
            if used + size > self.max_daily_bytes:
                return used
            if size:
                c.execute(usage.insert().values(uploader=who_hash, at=now, bytes=int(size)))
            return None

        used = self._write(charge, serialised=False)
        if used is not None:
            raise InputError(f"daily storage limit reached: {used:,} bytes received in the last 24 hours + {size:,} > "
                             f"{self.max_daily_bytes:,}; try again later", path=source)

    def _purge(self, c, now: float | None = None) -> int:
        """Delete pre-submissions older than ``pending_ttl`` (and quota records older than a day); returns how
        many pre-submissions."""
        pend = self.t["pending"]
        c.execute(self.t["usage"].delete().where(self.t["usage"].c.at < (now or time.time()) - DAY))
        cutoff = (now or time.time()) - self.pending_ttl
        old = [int(i) for i, in c.execute(self._sa.select(pend.c.id).where(pend.c.created_at < cutoff,
                                                                          pend.c.queued_at.is_(None))).all()]
        for pid in old:
            self._drop_pending(c, pid)
        return len(old)

    def purge_expired(self) -> int:
        """Delete expired pre-submissions now (every write does it too); returns how many."""
        return self._write(self._purge, serialised=False)

    def _daily_bytes(self, c, uploader: str, now: float) -> int:
        sa, pend, ch, subs = self._sa, self.t["pending"], self.t["chain"], self.t["submissions"]
        pending = c.execute(sa.select(sa.func.coalesce(sa.func.sum(pend.c.size), 0))
                            .where(pend.c.uploader == uploader, pend.c.created_at >= now - DAY)).scalar_one()
        published = c.execute(sa.select(sa.func.coalesce(sa.func.sum(ch.c.size), 0))
                              .select_from(ch.join(subs, ch.c.submission_id == subs.c.id))
                              .where(ch.c.uploader == uploader, subs.c.published_at >= now - DAY)).scalar_one()
        return int(pending) + int(published)

    def presubmit(self, upload: bytes | str | Path | Submission, source: str = "<upload>", *,
                  session: str | None = None, identity: str | None = None, uploader: str | None = None,
                  charged: bool = False) -> Preview:
        """Validate, compute the new model's duels, store it as pending and return the preview.

        ``session``: the browser session the pre-submission belongs to (confirm must present it again);
        ``identity``: the signed-in user (likewise); ``uploader``: who is charged for the stored bytes
        (default: the identity, else the session); ``charged``: the bytes were charged as they were received (the
        server's middleware, :meth:`charge_received`), so only the quota is checked here."""
        t0 = time.perf_counter()
        if isinstance(upload, (str, Path)) and source == "<upload>":
            source = str(upload)                # errors name the operator's file
        # quotas count the signed-in identity when there is one, else who the caller names (the app: the client's
        # address), else the browser session
        who = identity if identity is not None else (uploader if uploader is not None else session)
        who_hash = _sha_text(who) if who is not None else None
        if isinstance(upload, (bytes, bytearray, memoryview)):
            if who_hash is not None:                            # raw bytes received, before anything else
                self._charge(who_hash, 0 if charged else len(upload), source)
            named = peek_model_name(upload)
            if named is not None:                               # a taken name stops before the full parse
                with self.engine.connect() as c:
                    self._check_name(c, named, name_key(named))
        sub = self._load(upload, source)
        if self.reference is not None:
            self.reference.check(sub, source)
        key = name_key(sub.model)
        payload, digest, size = _payload(sub)
        if size > self.max_stored_bytes:
            raise InputError(f"submission too large to store: {size:,} bytes of predictions and metadata > limit "
                             f"{self.max_stored_bytes:,}", path=source)
        tasks = self.config.task_ids
        with self.engine.connect() as c, c.begin():   # one snapshot on SQLite; append-only tables elsewhere
            self._refuse_tampered(c)          # a preview is never computed on an altered or damaged board
            top = chain.head(c, self.t, self._sa)
            pub, P, _, raw_by_model = self._board(c)
            self._check_name(c, sub.model, key)
            self._check_team(c, sub.metadata.get("team"), identity)
            self._check_samples(c, sub)
            hits = self._copies_of(c, answer_vectors(sub.data))
            old = self._profiles(c, [i for i, _ in pub])
        notes = tuple(sub.warnings)
        if hits:
            if not self.review:
                raise InputError(self._copy_message(sub.model, hits) + " (copies and near-copies are refused)",
                                 path=source, field="predictions")
            notes += (self._copy_message(sub.model, hits) + ": held for the reviewer",)
        board = top[0] if top else 0
        ids = [i for i, _ in pub]
        prof = {t: profile(self.config.spec(t), sub.data[t], sub.model, self.settings) for t in tasks}
        duels = duels_against(self.config, [prof], [old[i] for i in ids])
        token = secrets.token_hex(32)
        pend, pprof, pduel = self.t["pending"], self.t["pending_profiles"], self.t["pending_duels"]

        def write(c):
            now = time.time()
            self._purge(c, now)
            if who_hash is not None and self.max_daily_bytes is not None:
                used = self._daily_bytes(c, who_hash, now)
                if used + size > self.max_daily_bytes:
                    raise InputError(f"daily storage limit reached: {used:,} bytes stored in the last 24 hours + "
                                     f"{size:,} > {self.max_daily_bytes:,}; try again later", path=source)
            row = {"model": sub.model, "token": token, "sha256": digest, "created_at": now,
                   "metadata_json": json.dumps(sub.metadata, sort_keys=True), "payload": payload, "name_key": key,
                   "session": _sha_text(session) if session is not None else None, "identity": identity,
                   "uploader": who_hash, "size": size}
            seal = chain.pending_seal(self.key, row)            # the preview is sealed (schema 0005)
            new_id = c.execute(pend.insert().values(**row, board=board, seal=seal)).inserted_primary_key[0]
            profs = [{"pending_id": new_id, "task": t, "n": prof[t].n, "raw": sub.raw(t),
                      "blob": prof[t].to_bytes()} for t in tasks]
            c.execute(pprof.insert(), [{**r, "seal": chain.profile_seal(self.key, seal, r)} for r in profs])
            rows = [{"pending_id": new_id, "task": t, "opponent_id": sid, "p_win": float(duels[t][1][0, k]),
                     "p_loss": float(duels[t][2][k, 0])} for t in tasks for k, sid in enumerate(ids)]
            if rows:
                c.execute(pduel.insert(), [{**r, "seal": chain.duel_seal(self.key, seal, r)} for r in rows])

        self._write(write, serialised=False)
        return self._preview(sub, pub, P, ids, duels, raw_by_model, token, t0, notes, board)

    def _preview(self, sub, pub, P, ids, duels, raw_by_model, token: str, t0: float, notes: tuple,
                 board: int) -> Preview:
        """The preview: the published matrices grown by the new model's row and column, and its rank."""
        tasks = self.config.task_ids
        names = [m for _, m in pub] + [sub.model]
        n = len(names)
        Pn = {}
        for t in tasks:
            M = np.full((n, n), np.nan)
            M[:-1, :-1] = P[t]
            M[-1, :-1], M[:-1, -1] = duels[t][1][0], duels[t][2][:, 0]
            Pn[t] = M
        groups = [*self._groups_of(ids), -1]
        scores = win_scores(Pn, names, self.config, self.alpha, self.max_competitors, self.fdr, groups)
        raw_by_model[sub.model] = {t: sub.raw(t) for t in tasks}
        table = leaderboard_frame(scores, raw_by_model, self.config, "overall")
        table.attrs["new_model"] = sub.model            # the page highlights its row
        rank = int(table.loc[table["model"] == sub.model, "rank"].iloc[0])
        return Preview(token, sub.model, rank, scores[sub.model], table, time.perf_counter() - t0, notes, board)

    def _insert_published(self, c, rows_sub: list[dict], rows_prof: list[dict], rows_duel: list[dict]) -> None:
        c.execute(self.t["submissions"].insert(), rows_sub)
        c.execute(self.t["profiles"].insert(), rows_prof)
        if rows_duel:
            c.execute(self.t["duels"].insert(), rows_duel)

    def _pending(self, c, token: str, session: str | None, identity: str | None) -> dict:
        """The pending row of ``token``, checked: not expired, same session and identity."""
        sa, pend, subs = self._sa, self.t["pending"], self.t["submissions"]
        row = c.execute(sa.select(pend).where(pend.c.token == str(token))).mappings().first()
        if row is None:
            done = c.execute(sa.select(subs.c.model).where(subs.c.token == str(token))).first()
            if done is not None:
                raise InputError(f"model {done[0]!r} is already published", field="token")
            raise InputError("unknown, expired or discarded pre-submission: pre-submit again", field="token")
        if row["session"] is not None and (session is None or _sha_text(session) != row["session"]):
            raise InputError("this pre-submission belongs to another browser session", field="token")
        if row["identity"] is not None and identity != row["identity"]:
            raise InputError("this pre-submission was made by another signed-in user", field="token")
        if row["created_at"] < time.time() - self.pending_ttl:
            raise InputError(f"this pre-submission expired ({self.pending_ttl / 3600:g} h): pre-submit again",
                             field="token")
        return dict(row)

    def _missing_duels(self, c, sid: int, have: set[int], pub: list[int]):
        """Duels of pending ``sid`` against the models published since its preview: ``(task, opp, p_win,
        p_loss)`` rows. Their samples are checked first (the first publication fixes a task's doc_ids)."""
        missing = [i for i in pub if i not in have]
        if not missing:
            return []
        mine = self._profiles(c, [sid], "pending_profiles")[sid]
        theirs = self._profiles(c, missing)
        for t in self.config.task_ids:
            if any(theirs[o][t].n != mine[t].n for o in missing):
                raise InputError(f"task {t!r} has {mine[t].n} samples; a model published since has "
                                 f"{next(theirs[o][t].n for o in missing)}", field=f"predictions.{t}")
        duels = duels_against(self.config, [mine], [theirs[i] for i in missing])
        return [(t, o, float(win[0, k]), float(loss[k, 0])) for t, (_, win, loss) in duels.items()
                for k, o in enumerate(missing)]

    def _recheck_ids(self, c, row: dict) -> None:
        """A stale pre-submission's doc_ids against the task_ids fixed since (decodes its payload)."""
        fixed = dict(c.execute(self._sa.select(self.t["task_ids"].c.task, self.t["task_ids"].c.ids)).all())
        if not fixed:
            return
        preds = json.loads(gzip.decompress(row["payload"]))["predictions"]
        for task, ids in fixed.items():
            mine = tuple(r["doc_id"] for r in preds.get(task, []))
            diff = id_difference(tuple(json.loads(ids)), mine)
            if diff is not None:
                raise InputError(f"task {task!r}: {diff} (a model published since fixed this task's samples)",
                                 field=f"predictions.{task}")

    def confirm(self, token: str, *, session: str | None = None, identity: str | None = None,
                recompute: bool = False) -> str:
        """Publish the pending submission ``token`` (given with the session and identity it was made with);
        returns the model name. A preview older than the board raises :class:`StalePreview` unless
        ``recompute`` or the preview was recomputed once already (:meth:`refresh`; then the missing duels are
        computed here, so a confirm recomputes its preview at most once). On a board with review the submission is
        queued instead (:meth:`awaits_review` tells which), until :meth:`approve` publishes it."""
        sa = self._sa
        self.purge_expired()                      # its own transaction: a refused confirm does not undo it

        def publish(c):
            row = self._pending(c, token, session, identity)
            model = row["model"]
            self._check_name(c, model, row["name_key"] or name_key(model))
            self._check_team(c, json.loads(row["metadata_json"]).get("team"), row["identity"])
            if self.review:
                if row.get("queued_at") is not None:
                    raise InputError(f"model {model!r} already awaits review", field="token")
                c.execute(sa.update(self.t["pending"]).where(self.t["pending"].c.id == int(row["id"]))
                          .values(queued_at=time.time()))
                return model
            # a preview recomputed once is not refused again: under load the board may change between every
            # recomputation and the next confirm, and a confirm must not starve (its duels against models
            # published meanwhile are computed here, inside the serialised write)
            return self._publish_row(c, row, recompute or bool(row.get("refreshes")))

        return self._write(publish)

    def awaits_review(self, model: str) -> bool:
        """Whether ``model`` was confirmed and waits in the review queue."""
        pend = self.t["pending"]
        with self.engine.connect() as c:
            return c.execute(self._sa.select(pend.c.id).where(pend.c.model == model,
                                                                pend.c.queued_at.is_not(None))).first() is not None

    def _publish_row(self, c, row: dict, recompute: bool, review: dict | None = None) -> str:
        """Publish the pending ``row`` (checked by the caller) inside the serialised write: its duels against
        the models published since its preview are computed when ``recompute`` (else a stale preview raises
        :class:`StalePreview`); ``review``: the approval, written to ``reviews`` and chained with it."""
        sa, pduel = self._sa, self.t["pending_duels"]
        sid, model = int(row["id"]), row["model"]
        key = row["name_key"] or name_key(model)
        top = chain.head(c, self.t, sa)
        now_board = top[0] if top else 0
        stale = row["board"] is None or int(row["board"]) != now_board
        if stale and not recompute:
            raise StalePreview(f"the leaderboard changed since this preview ({now_board - int(row['board'] or 0)} "
                               "model(s) published since): recompute the preview before confirming", field="token")
        altered = chain.verify_pending(c, self.t, sa, self.key, only=sid)
        if altered:                     # its stored duels or profiles are not what was computed for it
            raise InputError(f"this preview was altered after it was computed ({altered[0]}): it is not published; "
                             "run modelseek duel db verify", field="token")
        if stale:
            self._recheck_ids(c, row)
        self._refuse_tampered(c)
        mine = self._stored_answers(c, "pending", [sid]).get(sid)
        hits = [h for h in self._copies_of(c, mine, exclude=sid) if h[0] == "submissions"] if mine else []
        if hits and review is None:
            raise InputError(self._copy_message(model, hits) + " (copies and near-copies are refused)",
                             field="predictions")
        copy_rows = [{"submission_id": sid, "of_id": int(i), "ratio": float(0.0 if ag.identical else ag.ratio)}
                     for _, i, _, ag in hits]
        pub = [i for i, _ in self._published(c)]
        stored = c.execute(sa.select(pduel.c.task, pduel.c.opponent_id, pduel.c.p_win, pduel.c.p_loss)
                           .where(pduel.c.pending_id == sid)).all()
        stored += self._missing_duels(c, sid, {int(o) for _, o, _, _ in stored}, pub)
        duel_rows = []
        for task, opp, p_win, p_loss in stored:
            duel_rows += [{"task": task, "a_id": sid, "b_id": int(opp), "p_value": p_win},
                          {"task": task, "a_id": int(opp), "b_id": sid, "p_value": p_loss}]
        prof_rows = [{"submission_id": sid, "task": r["task"], "n": r["n"], "raw": r["raw"], "blob": r["blob"]}
                     for r in c.execute(sa.select(self.t["pending_profiles"]).where(
                         self.t["pending_profiles"].c.pending_id == sid)).mappings()]
        sub_row = {"id": sid, "model": model, "token": row["token"], "sha256": row["sha256"],
                   "created_at": row["created_at"], "published_at": time.time(),
                   "metadata_json": row["metadata_json"], "payload": row["payload"]}
        tid_rows = self._new_task_ids(c, [(sid, row["payload"])])
        self._insert_published(c, [sub_row], prof_rows, duel_rows)
        if tid_rows:
            c.execute(self.t["task_ids"].insert(), tid_rows)
        if review is not None:
            c.execute(self.t["reviews"].insert().values(submission_id=sid, model=model,
                                                        token_hash=_sha_text(row["token"]), **review))
        if copy_rows:
            c.execute(self.t["copies"].insert(), copy_rows)
        chain.append(c, self.t, sa, [sub_row], prof_rows, duel_rows, tid_rows,
                     [{"name_key": key, "uploader": row["uploader"], "size": row["size"]}],
                     {sid: review} if review is not None else None, key=self.key,
                     copies={sid: copy_rows} if copy_rows else None)
        self._drop_pending(c, sid)
        return model

    def _new_task_ids(self, c, payloads: list[tuple[int, bytes]]) -> list[dict]:
        """task_ids rows for the tasks that have none yet, from the first of ``payloads``."""
        have = {t for t, in c.execute(self._sa.select(self.t["task_ids"].c.task)).all()}
        todo = [t for t in self.config.task_ids if t not in have]
        if not todo or not payloads:
            return []
        sid, payload = payloads[0]
        preds = json.loads(gzip.decompress(payload))["predictions"]
        return [{"task": t, "submission_id": sid, "ids": json.dumps([r["doc_id"] for r in preds[t]],
                                                                     ensure_ascii=False)} for t in todo]

    def refresh(self, token: str, *, session: str | None = None, identity: str | None = None) -> Preview:
        """Recompute a pending preview on the board as it is now (its duels against models published since)."""
        t0 = time.perf_counter()
        sa, pend, pduel = self._sa, self.t["pending"], self.t["pending_duels"]

        def update(c):
            row = self._pending(c, token, session, identity)
            sid = int(row["id"])
            # a model published under this name meanwhile (the same upload twice at once) is refused here, as its
            # confirm would be, before any duel against its own twin is computed
            self._check_name(c, row["model"], row["name_key"] or name_key(row["model"]))
            self._recheck_ids(c, row)
            pub = [i for i, _ in self._published(c)]
            have = {int(o) for o, in c.execute(sa.select(pduel.c.opponent_id).where(pduel.c.pending_id == sid)
                                                .distinct()).all()}
            new = self._missing_duels(c, sid, have, pub)
            if new:
                rows = [{"pending_id": sid, "task": t, "opponent_id": o, "p_win": w, "p_loss": lo}
                        for t, o, w, lo in new]
                c.execute(pduel.insert(), [{**r, "seal": chain.duel_seal(self.key, row["seal"], r)} for r in rows])
            top = chain.head(c, self.t, sa)
            board = top[0] if top else 0
            # pending rows are not append-only: the board the preview now stands on
            c.execute(sa.update(pend).where(pend.c.id == sid).values(board=board,
                                                                     refreshes=int(row.get("refreshes") or 0) + 1))
            return sid, row["model"], board, have | {o for _, o, _, _ in new}

        sid, model, board, opponents = self._write(update)
        # the preview is computed outside the serialised write (others publish meanwhile): the board of its seq
        with self.engine.connect() as c, c.begin():
            pubs, P, _, raw_by_model = self._board(c)
            stored = c.execute(sa.select(pduel.c.task, pduel.c.opponent_id, pduel.c.p_win, pduel.c.p_loss)
                               .where(pduel.c.pending_id == sid)).all()
            raw = {t: float(r) for t, r in c.execute(sa.select(self.t["pending_profiles"].c.task,
                                                                self.t["pending_profiles"].c.raw)
                                                      .where(self.t["pending_profiles"].c.pending_id == sid)).all()}
        keep = [k for k, (i, _) in enumerate(pubs) if i in opponents]
        pubs = [pubs[k] for k in keep]
        P = {t: M[np.ix_(keep, keep)] for t, M in P.items()}
        raw_by_model = {m: raw_by_model[m] for _, m in pubs}
        pos = {i: k for k, (i, _) in enumerate(pubs)}
        names = [m for _, m in pubs] + [model]
        n = len(names)
        Pn = {}
        for t in self.config.task_ids:
            M = np.full((n, n), np.nan)
            M[:-1, :-1] = P[t]
            Pn[t] = M
        for t, o, w, lo in stored:
            if int(o) in pos:
                Pn[t][-1, pos[int(o)]], Pn[t][pos[int(o)], -1] = w, lo
        scores = win_scores(Pn, names, self.config, self.alpha, self.max_competitors, self.fdr,
                            [*self._groups_of([i for i, _ in pubs]), -1])
        raw_by_model[model] = raw
        table = leaderboard_frame(scores, raw_by_model, self.config, "overall")
        rank = int(table.loc[table["model"] == model, "rank"].iloc[0])
        return Preview(token, model, rank, scores[model], table, time.perf_counter() - t0, (), board)

    def _drop_pending(self, c, pid: int) -> None:
        c.execute(self.t["pending_duels"].delete().where(self.t["pending_duels"].c.pending_id == pid))
        c.execute(self.t["pending_profiles"].delete().where(self.t["pending_profiles"].c.pending_id == pid))
        c.execute(self.t["pending"].delete().where(self.t["pending"].c.id == pid))

    def discard(self, token: str, *, session: str | None = None, identity: str | None = None) -> None:
        """Drop a pending pre-submission and its duels (published ones cannot be dropped)."""

        def drop(c):
            row = self._pending(c, token, session, identity)
            self._drop_pending(c, int(row["id"]))

        self._write(drop, serialised=False)

    def submit(self, upload, source: str = "<upload>") -> Preview:
        """Pre-submit and confirm in one step (scripts and the CLI); duels against models published in
        between are computed at confirmation."""
        preview = self.presubmit(upload, source)
        self.confirm(preview.token, recompute=True)
        return preview

    def publish_many(self, subs: list[Submission]) -> list[str]:
        """Publish several validated submissions at once (an import, or rebuilding a leaderboard): their
        profiles, one vectorised tournament among them, and their duels against the models already published."""
        names = [s.model for s in subs]
        if self.reference is not None:
            for k, s in enumerate(subs):
                self.reference.check(s, f"<submission {k}>")
        for k, name in enumerate(names):        # an operator's import: the names meet the upload's rules
            if clean_name(name, "metadata.model", f"<submission {k}>") != name:
                raise InputError("the model name is not NFC-normalised", path=f"<submission {k}>",
                                 field="metadata.model")
        keys = [name_key(m) for m in names]
        if len(set(keys)) != len(keys):
            raise InputError(f"model names must be new and distinct: {names}", field="metadata.model")
        check_sample_counts(subs, self.config)
        tasks = self.config.task_ids
        by_task = {t: profiles(self.config.spec(t), [s.data[t] for s in subs], names, self.settings) for t in tasks}
        prof = [{t: by_task[t][k] for t in tasks} for k in range(len(subs))]
        payloads = [_payload(s) for s in subs]


        vectors = [answer_vectors(s.data) for s in subs]
        groups = copy_groups(vectors)
        if len(set(groups)) < len(groups):
            a = next(k for k, g in enumerate(groups) if groups.count(g) > 1)
            b = next(k for k, g in enumerate(groups) if g == groups[a] and k != a)
            raise InputError(f"model {names[b]!r} is a near-copy of {names[a]!r} in this import: "
                             "copies and near-copies are refused", field="predictions")

        def publish(c):
            self._refuse_tampered(c)
            pub = self._published(c)
            for s, k, vec in zip(subs, keys, vectors):
                self._check_name(c, s.model, k)
                self._check_samples(c, s)
                hits = self._copies_of(c, vec)
                if hits:
                    raise InputError(self._copy_message(s.model, hits) + " (copies and near-copies are refused)",
                                     field="predictions")
            old = [i for i, _ in pub]
            old_prof = self._profiles(c, old)
            now, ids, tokens = time.time(), [], []
            for s, (_, digest, _) in zip(subs, payloads):   # the pending table allocates the ids
                tokens.append(secrets.token_hex(32))
                ids.append(int(c.execute(self.t["pending"].insert().values(
                    model=s.model, token=tokens[-1], sha256=digest, created_at=now, metadata_json="{}",
                    payload=b"")).inserted_primary_key[0]))
            c.execute(self.t["pending"].delete().where(self.t["pending"].c.id.in_(ids)))
            duels = duels_against(self.config, prof, [old_prof[o] for o in old])
            rows = []
            for t, (among, win, loss) in duels.items():
                rows += [{"task": t, "a_id": ids[a], "b_id": ids[b], "p_value": float(among[a, b])}
                         for a in range(len(ids)) for b in range(len(ids)) if a != b]
                for a in range(len(ids)):
                    for j, o in enumerate(old):
                        rows += [{"task": t, "a_id": ids[a], "b_id": o, "p_value": float(win[a, j])},
                                 {"task": t, "a_id": o, "b_id": ids[a], "p_value": float(loss[j, a])}]
            sub_rows = [{"id": i, "model": s.model, "token": tok, "sha256": digest, "created_at": now,
                         "published_at": now, "metadata_json": json.dumps(s.metadata, sort_keys=True),
                         "payload": payload}
                        for s, i, tok, (payload, digest, _) in zip(subs, ids, tokens, payloads)]
            prof_rows = [{"submission_id": i, "task": t, "n": p[t].n, "raw": s.raw(t), "blob": p[t].to_bytes()}
                         for s, i, p in zip(subs, ids, prof) for t in tasks]
            tid_rows = self._new_task_ids(c, [(ids[0], payloads[0][0])])
            self._insert_published(c, sub_rows, prof_rows, rows)
            if tid_rows:
                c.execute(self.t["task_ids"].insert(), tid_rows)
            chain.append(c, self.t, self._sa, sub_rows, prof_rows, rows, tid_rows,
                         [{"name_key": k, "uploader": None, "size": size} for k, (_, _, size) in zip(keys, payloads)],
                         key=self.key)
            return names

        return self._write(publish)
