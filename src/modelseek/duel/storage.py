"""Leaderboard storage (the repository): submissions, their profiles and every stored duel.

SQLite by default (``sqlite:///leaderboard.db`` or a file path), or PostgreSQL (``postgresql://...``, driven
by psycopg, extra ``web``). The schema and its database-enforced immutability live in :mod:`.schema`; the
duels themselves are computed by :func:`.engine.duels_against`. Life of a submission:

1. :meth:`Store.presubmit` validates the upload, computes the new model's profiles and only its own
   2 x N duels per task against the published models, stores them as *pending* (its canonical form only,
   bound to the uploader's browser session and signed-in identity when given), and returns a
   :class:`Preview`: the leaderboard as it would be with the new model. Nothing is published.
2. :meth:`Store.confirm` publishes a pending submission, given its token (and the same session and
   identity): it inserts the submission, its profiles and duels into the append-only published tables,
   chains them (:mod:`.chain`) and deletes the pending rows. A preview computed on an older board is
   refused (:class:`StalePreview`) until :meth:`Store.refresh` recomputed it (``recompute=True``
   computes the missing duels in the same transaction: scripts). A model name can be published once;
   names are compared by :func:`.text.name_key` (case, width and invisible characters do not count).
3. :meth:`Store.discard` drops a pending submission; pending submissions older than ``pending_ttl``
   (default 24 h) are deleted by every write.

The connection layer (URLs, engines, migrations, retries) is :mod:`.database`; the workflow above is
:mod:`.publish` (a mixin of :class:`Store`); this module holds the tables and the reads.

Limits: the canonical (stored) size of one submission (``max_stored_bytes``) and the bytes one uploader
may store per 24 hours (``max_daily_bytes``). On SQLite a write checks, before it commits, that the file
it opened is still the file at its path (a folder removed or a file replaced under a running server would
otherwise take the write with it); commits are synchronous (``PRAGMA synchronous=FULL``).

Many :class:`Store` objects and processes on one database are normal use. Every write is one serialised
transaction: ``BEGIN IMMEDIATE`` on SQLite (one writer at a time, readers continue under WAL) and a
transaction-scoped advisory lock on PostgreSQL; a transaction that still fails with a serialization failure,
a deadlock or a busy database is retried with a randomised back-off. A bad upload (malformed JSON, missing
task, wrong sample count, oversized, results that disagree with the predictions) raises :class:`InputError`
before anything is written.
"""

from __future__ import annotations

import gzip
import json
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.errors import InputError
from . import chain, schema
from .chain import BoardAltered
from .config import LeaderboardConfig
from .engine import Profile, Settings
from .leaderboard import leaderboard_frame
from .scoring import ALPHA, MAX_COMPETITORS, adjusted, check_alpha, win_scores
from .review import ReviewWorkflow
from .reference import META_DEMO, META_REFERENCE, META_REVIEW, Reference
from .submission import MAX_BYTES, Submission, validate_submission
from .database import _reason, _retry_locked, _sqlalchemy, database_url, open_engine, prepare_write, shown_url
from .publish import MAX_DAILY_BYTES, PENDING_TTL, Preview, PublishWorkflow, StalePreview  # noqa: F401 (re-exported)
from .copies import groups_from_pairs


#: seconds a verdict of :meth:`Store.problems` is reused by the reads (a page view reads the board several times)
CHECK_EVERY = 5.0


class Store(PublishWorkflow, ReviewWorkflow):
    """A leaderboard database. ``url``: a SQLAlchemy URL (SQLite or PostgreSQL) or a SQLite file path."""

    def __init__(self, url: str | Path = "sqlite:///leaderboard.db", config: LeaderboardConfig | None = None,
                 settings: Settings | None = None, alpha: float = ALPHA, fdr: bool = False,
                 max_competitors: int = MAX_COMPETITORS, max_bytes: int = MAX_BYTES,
                 pending_ttl: float = PENDING_TTL, max_stored_bytes: int | None = None,
                 max_daily_bytes: int = MAX_DAILY_BYTES, reference: Reference | None = None,
                 review: bool = False, demo: bool = False, key: bytes | str | None = None) -> None:
        sa = self._sa = _sqlalchemy()
        #: the operator's chain key (default: from the environment, :func:`.chain.operator_key`)
        self.key: bytes | None = (key.encode("utf-8") if isinstance(key, str) else key) if key is not None \
            else chain.operator_key()
        self._answers: dict = {}
        #: the reads re-verify the board at most this often (seconds; 0: at every read) and refuse an altered one
        self.check_every = CHECK_EVERY
        self._checked: tuple[float, list[str]] | None = None
        self.url = database_url(url)
        self.alpha, self.fdr, self.max_competitors, self.max_bytes = check_alpha(alpha), fdr, max_competitors, max_bytes
        if not pending_ttl > 0:
            raise InputError(f"the pending lifetime must be positive, got {pending_ttl!r}", field="pending_ttl")
        self.pending_ttl = float(pending_ttl)
        self.max_stored_bytes = max_stored_bytes if max_stored_bytes is not None else max_bytes
        self.max_daily_bytes = max_daily_bytes
        self._file = None
        self.reference: Reference | None = None
        self.review, self.demo = bool(review), bool(demo)
        self.engine = open_engine(self.url)
        self.dialect = self.engine.dialect.name
        _, self.t = schema.tables(sa)
        try:
            self.schema_before, self.schema_version = _retry_locked(lambda: schema.upgrade(self.engine, prepare_write))
            self._file = self._sqlite_file()
            self.config, self.settings = self._write(lambda c: self._bind(c, config, settings, reference))
        except sa.exc.DBAPIError as exc:
            self.engine.dispose()
            raise InputError(f"cannot use the database: {_reason(exc)}", path=shown_url(self.url), field="db") from None
        except InputError as exc:
            self.engine.dispose()
            if exc.path is None:
                raise InputError(exc.message, path=shown_url(self.url), field=exc.field) from None
            raise

    # -------------------------------------------------------------------------------------- set-up
    def _sqlite_file(self):
        """``(path, device, inode)`` of the SQLite file this store opened (``None`` elsewhere)."""
        if self.dialect != "sqlite":
            return None
        path = self.url.split("://", 1)[1][1:].split("?", 1)[0]
        if not path or path == ":memory:" or path.startswith("file:"):
            return None
        st = os.stat(path)
        return path, st.st_dev, st.st_ino

    def _check_file(self) -> None:
        """Refuse a write that could not reach the database file this store opened."""
        if self._file is None:
            return
        path, dev, ino = self._file
        try:
            st = os.stat(path)
        except OSError:
            raise InputError("the database file was removed (or its folder) since the server opened it: nothing "
                             "can be stored; restart the server on a database that exists", path=path,
                             field="db") from None
        if (st.st_dev, st.st_ino) != (dev, ino):
            raise InputError("the database file was replaced since the server opened it: nothing was stored; "
                             "restart the server", path=path, field="db")

    def _write(self, fn, serialised: bool = True):
        """Run ``fn(conn)`` in one write transaction, serialised with every other writer of the database
        (``serialised``: PostgreSQL's advisory lock; SQLite writes are always serialised), retried on
        serialization failures, deadlocks and busy databases. A write the database refuses (read-only,
        disk full, a removed or replaced SQLite file) is an :class:`InputError`: nothing was stored."""
        sa = self._sa

        def once():
            with self.engine.connect() as conn:
                prepare_write(conn)
                with conn.begin():
                    if serialised and self.dialect == "postgresql":
                        conn.execute(sa.text("SELECT pg_advisory_xact_lock(:a, :b)"),
                                     {"a": schema.LOCK_NAMESPACE, "b": schema.PUBLISH_LOCK})
                    out = fn(conn)
                    self._check_file()            # before the commit: a vanished file rolls it back
                self._check_file()                # after it: the commit reached the file that is there
                return out

        try:
            return _retry_locked(once)
        except sa.exc.DBAPIError as exc:
            raise InputError(f"the database refused the write ({_reason(exc)}): nothing was stored",
                             path=shown_url(self.url), field="db") from None

    def _bind(self, conn, config, settings, reference=None):
        """The first opening records the configuration, settings and the board's trust (reference, review,
        demo: covered by the chain's row 0, so fixed for the board's life); later openings must agree."""
        sa, meta = self._sa, self.t["meta"]
        stored = dict(conn.execute(sa.select(meta.c.key, meta.c.value)).all())
        if not stored:
            config = config or LeaderboardConfig.load()
            settings = settings or Settings()
            rows = [{"key": "config", "value": json.dumps(config.to_dict())},   # task order matters
                    {"key": "settings", "value": json.dumps(settings.to_dict(), sort_keys=True)}]
            if reference is not None:
                missing = [t for t in config.task_ids if t not in reference.tasks]
                if missing:
                    raise InputError(f"the reference has no task {missing[0]!r}", field="reference")
                rows.append({"key": META_REFERENCE, "value": reference.to_json()})
                self.reference = reference
            if self.review:
                rows.append({"key": META_REVIEW, "value": "1"})
            if self.demo:
                rows.append({"key": META_DEMO, "value": "1"})
            conn.execute(meta.insert(), rows)
            chain.genesis(conn, self.t, sa, self.key)
            return config, settings
        if reference is not None and stored.get(META_REFERENCE) != reference.to_json():
            raise InputError("a reference is fixed when the board is created (modelseek duel db init --reference); "
                             + ("this board has another one" if META_REFERENCE in stored else "this board has none"),
                             field="reference")
        self.review, self.demo = stored.get(META_REVIEW) == "1", stored.get(META_DEMO) == "1"
        chain.genesis(conn, self.t, sa, self.key)  # a database created before the chain (0002) has none
        self._purge(conn)
        try:
            s_config = LeaderboardConfig.from_dict(json.loads(stored["config"]))
            s_settings = Settings.from_mapping(json.loads(stored["settings"]), source="stored settings")
        except (KeyError, ValueError, TypeError) as exc:
            raise InputError(f"the stored configuration is unreadable ({type(exc).__name__}): the meta rows were "
                             "altered; run modelseek duel db verify") from None
        if config is not None and config.to_dict() != s_config.to_dict():
            raise InputError("this leaderboard database was created with another task configuration")
        if settings is not None and settings != s_settings:
            raise InputError(f"this leaderboard database uses settings {s_settings.to_dict()}")
        if META_REFERENCE in stored:
            try:
                self.reference = Reference.from_json(stored[META_REFERENCE], s_config)
            except (ValueError, InputError):
                raise InputError("the stored reference is unreadable: the meta rows were altered; run modelseek "
                                 "duel db verify") from None
        return s_config, s_settings

    # -------------------------------------------------------------------------------------- reading
    def _published(self, conn) -> list[tuple[int, str]]:
        """``[(id, model)]`` on the board: published and not withdrawn."""
        sub, wd = self.t["submissions"], self.t["withdrawals"]
        rows = conn.execute(self._sa.select(sub.c.id, sub.c.model).where(
            sub.c.id.not_in(self._sa.select(wd.c.submission_id))).order_by(sub.c.id)).all()
        return [(int(i), m) for i, m in rows]

    def _groups_of(self, ids: list[int]) -> list[int]:
        """Family labels of the published ``ids`` (:mod:`.scoring`: families count once), from the copies a
        reviewer published (``copies``): a copy joins the family of the entry it is closest to (lowest ratio, the
        earliest on a tie) among those still on the board."""
        cp, on = self.t["copies"], set(ids)
        with self.engine.connect() as c:
            rows = c.execute(self._sa.select(cp.c.submission_id, cp.c.of_id, cp.c.ratio)).all()
        source: dict[int, int] = {}
        for a, b, _ in sorted(rows, key=lambda r: (float(r[2]), int(r[1]))):
            if int(b) in on:
                source.setdefault(int(a), int(b))
        return groups_from_pairs(ids, list(source.items()))

    def near_copies(self) -> dict[str, list[str]]:
        """Published model -> the published models it copies or that copy it (recorded by approvals; families:
        :mod:`.scoring`)."""
        cp = self.t["copies"]
        with self.engine.connect() as c:
            names = dict(self._published(c))
            pairs = c.execute(self._sa.select(cp.c.submission_id, cp.c.of_id)).all()
        out: dict[str, list[str]] = {}
        for a, b in pairs:
            if int(a) in names and int(b) in names:
                out.setdefault(names[int(a)], []).append(names[int(b)])
                out.setdefault(names[int(b)], []).append(names[int(a)])
        return out

    def _refuse_tampered(self, conn) -> None:
        """Before publishing on top of the board: its chain and triggers must be intact (an owner-edited score
        is not built upon)."""
        problems = chain.verify(conn, self.t, self._sa, self.key, pending=False)
        if problems:
            raise InputError(f"the leaderboard was altered ({problems[0]}): nothing is published on top of it; "
                             "run modelseek duel db verify", field="db")

    def published(self) -> list[tuple[int, str]]:
        """``[(submission id, model)]`` of published submissions, in publication order."""
        with self.engine.connect() as c:
            return self._published(c)

    def _profiles(self, conn, ids: list[int], table: str = "profiles") -> dict[int, dict[str, Profile]]:
        t = self.t[table]
        owner = t.c.submission_id if table == "profiles" else t.c.pending_id
        out: dict[int, dict[str, Profile]] = {i: {} for i in ids}
        if ids:
            for sid, task, blob in conn.execute(self._sa.select(owner, t.c.task, t.c.blob).where(owner.in_(ids))):
                out[int(sid)][task] = Profile.from_bytes(blob)
        return out

    def _raw(self, conn, ids: list[int]) -> dict[int, dict[str, float]]:
        t = self.t["profiles"]
        out: dict[int, dict[str, float]] = {i: {} for i in ids}
        if ids:
            for sid, task, raw in conn.execute(self._sa.select(t.c.submission_id, t.c.task, t.c.raw)
                                               .where(t.c.submission_id.in_(ids))):
                out[int(sid)][task] = float(raw)
        return out

    def _pvalue_matrices(self, conn, ids: list[int]) -> dict[str, np.ndarray]:
        """``P[task][i, j]`` among the published ``ids`` (published data are append-only, so every duel
        between two models in ``ids`` is there)."""
        d = self.t["duels"]
        pos = {sid: k for k, sid in enumerate(ids)}
        task_index = {t: k for k, t in enumerate(self.config.task_ids)}
        stack = np.full((len(task_index), len(ids), len(ids)), np.nan)
        if len(ids) >= 2:
            rows = conn.execute(self._sa.select(d.c.task, d.c.a_id, d.c.b_id, d.c.p_value)).all()
            if rows:
                arr = np.array([(task_index.get(t, -1), pos.get(a, -1), pos.get(b, -1), p) for t, a, b, p in rows])
                arr = arr[(arr[:, 0] >= 0) & (arr[:, 1] >= 0) & (arr[:, 2] >= 0)]
                stack[arr[:, 0].astype(int), arr[:, 1].astype(int), arr[:, 2].astype(int)] = arr[:, 3]
        return {t: stack[k] for t, k in task_index.items()}

    def _board(self, conn):
        pub = self._published(conn)
        ids, names = [i for i, _ in pub], [m for _, m in pub]
        P = self._pvalue_matrices(conn, ids)
        scores = win_scores(P, names, self.config, self.alpha, self.max_competitors, self.fdr,
                            self._groups_of(ids)) if ids else {}
        raw_by_id = self._raw(conn, ids)
        return pub, P, scores, {names[k]: raw_by_id[sid] for k, sid in enumerate(ids)}

    def problems(self, fresh: bool = False) -> list[str]:
        """The problems of what a reader sees (the published rows, their chain and the triggers; :meth:`verify` also
        checks every preview's seals), the verdict reused for :attr:`check_every` seconds unless ``fresh``."""
        now = time.monotonic()
        if fresh or self._checked is None or now - self._checked[0] >= self.check_every:
            with self.engine.connect() as c, c.begin():
                self._checked = (now, chain.verify(c, self.t, self._sa, self.key, pending=False))
        return list(self._checked[1])

    def require_intact(self, fresh: bool = False) -> None:
        """Raise :class:`BoardAltered` (one line naming the first problem) when the board was altered: every read
        of the board (:meth:`leaderboard`, :meth:`scores`, :meth:`duel_details`, the review queue) calls it, so the
        page, its downloads, the API and the CLI never show an altered board."""
        problems = self.problems(fresh)
        if problems:
            raise BoardAltered(f"the leaderboard was altered: {problems[0]}"
                               + (f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else "")
                               + "; not using it (modelseek duel db verify lists them)", path=shown_url(self.url),
                               field="db")

    def leaderboard(self, level: str = "overall") -> pd.DataFrame:
        """The published leaderboard (see :func:`leaderboard_frame` for ``level``); :class:`BoardAltered` when the
        board was altered."""
        self.require_intact()
        with self.engine.connect() as c:
            _, _, scores, raw = self._board(c)
        return leaderboard_frame(scores, raw, self.config, level)

    def scores(self) -> dict[str, dict[str, float]]:
        self.require_intact()
        with self.engine.connect() as c:
            return self._board(c)[2]

    def duel_details(self, model: str) -> pd.DataFrame:
        """Every duel of a published ``model``: task, opponent, p-values both ways, won / lost."""
        self.require_intact()
        with self.engine.connect() as c:
            pub, P, _, _ = self._board(c)
        names = [m for _, m in pub]
        if model not in names:
            raise InputError(f"no published model {model!r}", field="model")
        P = adjusted(P, self.config.task_ids, self.fdr)
        i = names.index(model)
        rows = []
        for t in self.config.task_ids:
            for j, other in enumerate(names):
                if j == i:
                    continue
                p_win, p_loss = float(P[t][i, j]), float(P[t][j, i])
                rows.append({"task": t, "category": self.config.spec(t).category, "opponent": other,
                             "result": "won" if p_win < self.alpha else ("lost" if p_loss < self.alpha else "—"),
                             "p_value (beats opponent)": round(p_win, 6), "p_value (opponent beats)": round(p_loss, 6)})
        return pd.DataFrame(rows, columns=["task", "category", "opponent", "result", "p_value (beats opponent)",
                                           "p_value (opponent beats)"])

    def metadata(self, model: str) -> dict:
        """The published ``model``'s metadata as uploaded (its provenance included)."""
        sub = self.t["submissions"]
        with self.engine.connect() as c:
            row = c.execute(self._sa.select(sub.c.metadata_json, sub.c.sha256, sub.c.published_at)
                            .where(sub.c.model == model)).first()
        if row is None:
            raise InputError(f"no published model {model!r}", field="model")
        try:
            meta = json.loads(row[0])
        except ValueError:                      # a row written behind the app's back: shown, not trusted
            meta = {"unreadable metadata": str(row[0])[:1000]}
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(float(row[2])))
        return {**(meta if isinstance(meta, dict) else {"metadata": meta}), "_sha256": row[1], "_published": when}

    def model_info(self) -> dict[str, dict]:
        """Per published model what leaderboards show beside the scores: ``type``, ``n_params``, ``precision``
        and ``source`` (its metadata), and ``reviewed`` (who approved it and when; ``None`` without review)."""
        sa, sub, rv = self._sa, self.t["submissions"], self.t["reviews"]
        with self.engine.connect() as c:
            rows = c.execute(sa.select(sub.c.model, sub.c.metadata_json)).all()
            approved = {m: (who, at) for m, who, at in c.execute(
                sa.select(rv.c.model, rv.c.reviewer, rv.c.decided_at).where(rv.c.decision == "approved"))}
        out = {}
        for model, meta_json in rows:
            try:
                meta = json.loads(meta_json)
            except ValueError:
                meta = {}
            meta = meta if isinstance(meta, dict) else {}
            who = approved.get(model)
            out[model] = {k: meta.get(k) for k in ("type", "n_params", "precision", "source")}
            out[model]["reviewed"] = (None if who is None else
                                      f"{who[0]}, {time.strftime('%Y-%m-%d', time.gmtime(float(who[1])))}")
        return out

    def queued(self) -> int:
        """How many confirmed submissions await review."""
        sa, pend = self._sa, self.t["pending"]
        with self.engine.connect() as c:
            return int(c.execute(sa.select(sa.func.count()).select_from(pend)
                                 .where(pend.c.queued_at.is_not(None))).scalar_one())

    def submission(self, model: str) -> Submission:
        """The stored (published) submission of ``model``, exactly as uploaded."""
        sub = self.t["submissions"]
        with self.engine.connect() as c:
            row = c.execute(self._sa.select(sub.c.payload).where(sub.c.model == model)).first()
        if row is None:
            raise InputError(f"no published model {model!r}", field="model")
        return validate_submission(json.loads(gzip.decompress(row[0])), self.config)

    def head(self) -> tuple[int, str] | None:
        """``(number of published models, hash)`` at the head of the chain."""
        with self.engine.connect() as c:
            return chain.head(c, self.t, self._sa)

    def verify(self) -> list[str]:
        """Every sign of tampering (:func:`.chain.verify`): empty when the board is intact."""
        with self.engine.connect() as c, c.begin():
            return chain.verify(c, self.t, self._sa, self.key)

    def counts(self) -> dict[str, int]:
        sa = self._sa
        with self.engine.connect() as c:
            n = {k: c.execute(sa.select(sa.func.count()).select_from(self.t[k])).scalar_one()
                 for k in ("submissions", "profiles", "duels", "pending", "pending_duels")}
        n["published"] = n["submissions"]
        return n

    def check_servable(self) -> None:
        """A board facing uploads needs the operator's reference (boards made by ``duel example`` are demos)."""
        if self.reference is None and not self.demo:
            raise InputError("this board has no reference (the benchmark's sample ids and gold labels), so the first "
                             "uploader would fix them: create the board with its `reference` (Store(url, "
                             "reference=...), or the CLI's modelseek duel db init --db DB --metadata M --reference "
                             "GOLD_OR_TRUSTED_SUBMISSION.json)", path=shown_url(self.url),
                             field="db")

    def close(self) -> None:
        self.engine.dispose()


def create_board(url: str | Path, config: LeaderboardConfig, reference: str | Path | Reference, *,
                 review: bool = False) -> Store:
    """A new board with the operator's ``reference`` (a file or a :class:`Reference`); an existing board is
    refused (its reference, like its tasks, was fixed when it was created)."""
    sa = _sqlalchemy()
    ref = reference if isinstance(reference, Reference) else Reference.load(reference, config)
    engine = open_engine(database_url(url))
    try:
        with engine.connect() as c:
            exists = sa.inspect(c).has_table("meta") and c.execute(sa.text("SELECT count(*) FROM meta")).scalar()
    except sa.exc.DBAPIError as exc:
        raise InputError(f"cannot use the database: {_reason(exc)}", path=shown_url(database_url(url)),
                         field="db") from None
    finally:
        engine.dispose()
    if exists:
        raise InputError("a board already exists here (its tasks and reference are fixed): give a new database",
                         path=shown_url(database_url(url)), field="db")
    return Store(url, config=config, reference=ref, review=review)
