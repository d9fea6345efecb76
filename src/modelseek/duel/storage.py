"""Leaderboard storage (the repository): submissions, their profiles and every stored duel.

SQLite by default (``sqlite:///leaderboard.db`` or a file path), or PostgreSQL (``postgresql://...``, driven
by psycopg, extra ``web``). The schema and its database-enforced immutability live in :mod:`.schema`; the
duels themselves are computed by :func:`.engine.duels_against`. Life of a submission:

1. :meth:`Store.presubmit` validates the upload, computes the new model's profiles and only its own
   2 x N duels per task against the published models, stores them as *pending*, and returns a
   :class:`Preview`: the leaderboard as it would be with the new model. Nothing is published.
2. :meth:`Store.confirm` publishes a pending submission: it computes first any duel against a model
   published since the preview, then inserts the submission, its profiles and duels into the append-only
   published tables and deletes the pending rows. A model name can be published once.
3. :meth:`Store.discard` drops a pending submission.

Many :class:`Store` objects and processes on one database are normal use. Every write is one serialised
transaction: ``BEGIN IMMEDIATE`` on SQLite (one writer at a time, readers continue under WAL) and a
transaction-scoped advisory lock on PostgreSQL; a transaction that still fails with a serialization failure,
a deadlock or a busy database is retried with a randomised back-off. A bad upload (malformed JSON, missing
task, wrong sample count, oversized, results that disagree with the predictions) raises :class:`InputError`
before anything is written.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import random
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import InputError
from . import schema
from .config import LeaderboardConfig
from .engine import Profile, Settings, duels_against, profile, profiles
from .leaderboard import leaderboard_frame
from .scoring import ALPHA, MAX_COMPETITORS, adjusted, check_alpha, win_scores
from .submission import MAX_BYTES, Submission, check_sample_counts, submission_from_bytes

RETRIES = 30
_RETRY_SQLSTATES = {"40001", "40P01", "55P03"}   # serialization failure, deadlock, lock not available


def _sqlalchemy():
    try:
        import sqlalchemy as sa
    except ImportError:  # pragma: no cover - depends on the environment
        raise InputError("the leaderboard storage needs SQLAlchemy: pip install 'modelseek[web]'") from None
    return sa


def database_url(url: str | Path) -> str:
    """A SQLAlchemy URL for ``url`` (a file path means SQLite; ``postgresql://`` uses psycopg 3). Raises a
    one-line :class:`InputError` for an unknown scheme or a SQLite file in a folder that does not exist."""
    text = str(url)
    if "://" not in text:
        text = f"sqlite:///{Path(text)}"
    scheme = text.split("://", 1)[0]
    dialect, _, driver = scheme.partition("+")
    if dialect in ("postgres", "postgresql"):
        if driver not in ("", "psycopg"):
            raise InputError(f"unsupported PostgreSQL driver {driver!r}; use postgresql:// (psycopg 3)", field="db")
        return "postgresql+psycopg://" + text.split("://", 1)[1]
    if dialect != "sqlite" or driver not in ("", "pysqlite"):
        raise InputError(f"unknown database URL scheme {scheme!r}; use a file path, sqlite:///FILE or "
                         "postgresql://USER@HOST/DB", field="db")
    path = text.split("://", 1)[1][1:]          # sqlite:///relative or sqlite:////absolute
    if path and path != ":memory:" and not path.startswith("file:"):
        folder = Path(path).parent
        if not folder.is_dir():
            raise InputError(f"folder {str(folder)!r} does not exist", path=path, field="db")
        if Path(path).is_dir():
            raise InputError("is a folder, not a database file", path=path, field="db")
    return text


def shown_url(url: str) -> str:
    """``url`` without its password (for messages)."""
    try:
        return _sqlalchemy().engine.make_url(url).render_as_string(hide_password=True)
    except Exception:  # pragma: no cover - the URL was checked before
        return url


def _reason(exc) -> str:
    lines = str(getattr(exc, "orig", exc)).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def open_engine(url: str):
    """A SQLAlchemy engine for a URL from :func:`database_url`. On SQLite we take control of BEGIN (pysqlite
    starts transactions itself and never ``BEGIN IMMEDIATE``) so that writes take the write lock up front
    (no deadlocked lock upgrade, no 'database is locked' mid-transaction) and DDL is transactional
    (SQLAlchemy's documented recipe); WAL lets readers go on while one process writes."""
    sa = _sqlalchemy()
    sqlite = url.startswith("sqlite")
    kwargs = {"connect_args": {"timeout": 60, "check_same_thread": False}} if sqlite else {"pool_pre_ping": True}
    try:
        engine = sa.create_engine(url, **kwargs)
    except ImportError as exc:
        raise InputError(f"the database driver is missing ({exc.name}): pip install 'modelseek[web]'",
                         field="db") from None
    if sqlite:
        @sa.event.listens_for(engine, "connect")
        def _connect(dbapi_conn, _record):
            dbapi_conn.isolation_level = None
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA busy_timeout = 60000")
            # Switching a new file to WAL needs its exclusive lock, and SQLite answers 'database is locked' at
            # once (no busy handler) while another process is creating the same file: retry it here.
            _retry_locked(lambda: cur.execute("PRAGMA journal_mode=WAL"))
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        @sa.event.listens_for(engine, "begin")
        def _begin(conn):
            conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get("modelseek_write")
                                 else "BEGIN")
    return engine


def _backoff(attempt: int) -> None:
    time.sleep(min(1.0, 0.01 * 2 ** min(attempt, 6)) * (0.5 + random.random()))


def _retry_locked(fn):
    """``fn()``, retried with back-off while it fails because another process holds the database."""
    for attempt in range(RETRIES):
        try:
            return fn()
        except Exception as exc:  # sqlite3 or SQLAlchemy errors: the retry test reads the message
            if attempt == RETRIES - 1 or not _retryable(exc):
                raise
            _backoff(attempt)
    raise AssertionError("unreachable")  # pragma: no cover


def prepare_write(conn) -> None:
    """Mark ``conn``'s next transaction as a write (SQLite: ``BEGIN IMMEDIATE``)."""
    if conn.dialect.name == "sqlite":
        conn.execution_options(modelseek_write=True)


def upgrade_database(url: str | Path) -> tuple[str | None, str]:
    """Apply the schema migrations to the database at ``url`` (``modelseek duel db upgrade``):
    ``(version before, version after)``."""
    sa = _sqlalchemy()
    full = database_url(url)
    engine = open_engine(full)
    try:
        return _retry_locked(lambda: schema.upgrade(engine, prepare_write))
    except sa.exc.DBAPIError as exc:
        raise InputError(f"cannot use the database: {_reason(exc)}", path=shown_url(full), field="db") from None
    finally:
        engine.dispose()


def _retryable(exc: Exception) -> bool:
    orig = getattr(exc, "orig", exc)
    if getattr(orig, "sqlstate", None) in _RETRY_SQLSTATES:
        return True
    msg = str(orig).lower()
    return "database is locked" in msg or "database table is locked" in msg or "database is busy" in msg


def _payload(sub: Submission, raw: bytes | None) -> tuple[bytes, str]:
    """What is stored of a submission: the uploaded bytes exactly (else its canonical JSON), gzip'ed, and the
    SHA-256 of the uncompressed bytes."""
    data = raw if raw is not None else sub.payload()[0]
    return gzip.compress(data, compresslevel=1), hashlib.sha256(data).hexdigest()


@dataclass
class Preview:
    token: str
    model: str
    rank: int
    scores: dict                 # the new model's scores (tasks, categories, overall)
    table: pd.DataFrame          # the leaderboard as it would be with the new model
    seconds: float
    warnings: tuple = ()         # tolerated oddities of the upload (unknown fields...)


class Store:
    """A leaderboard database. ``url``: a SQLAlchemy URL (SQLite or PostgreSQL) or a SQLite file path."""

    def __init__(self, url: str | Path = "sqlite:///leaderboard.db", config: LeaderboardConfig | None = None,
                 settings: Settings | None = None, alpha: float = ALPHA, fdr: bool = False,
                 max_competitors: int = MAX_COMPETITORS, max_bytes: int = MAX_BYTES) -> None:
        sa = self._sa = _sqlalchemy()
        self.url = database_url(url)
        self.alpha, self.fdr, self.max_competitors, self.max_bytes = check_alpha(alpha), fdr, max_competitors, max_bytes
        self.engine = open_engine(self.url)
        self.dialect = self.engine.dialect.name
        _, self.t = schema.tables(sa)
        try:
            self.schema_before, self.schema_version = _retry_locked(lambda: schema.upgrade(self.engine, prepare_write))
            self.config, self.settings = self._write(lambda c: self._bind(c, config, settings))
        except sa.exc.DBAPIError as exc:
            self.engine.dispose()
            raise InputError(f"cannot use the database: {_reason(exc)}", path=shown_url(self.url), field="db") from None
        except InputError as exc:
            self.engine.dispose()
            if exc.path is None:
                raise InputError(exc.message, path=shown_url(self.url), field=exc.field) from None
            raise

    # -------------------------------------------------------------------------------------- set-up
    def _write(self, fn, serialised: bool = True):
        """Run ``fn(conn)`` in one write transaction, serialised with every other writer of the database
        (``serialised``: PostgreSQL's advisory lock; SQLite writes are always serialised), retried on
        serialization failures, deadlocks and busy databases."""
        sa = self._sa

        def once():
            with self.engine.connect() as conn:
                prepare_write(conn)
                with conn.begin():
                    if serialised and self.dialect == "postgresql":
                        conn.execute(sa.text("SELECT pg_advisory_xact_lock(:a, :b)"),
                                     {"a": schema.LOCK_NAMESPACE, "b": schema.PUBLISH_LOCK})
                    return fn(conn)

        return _retry_locked(once)

    def _bind(self, conn, config, settings):
        """The first opening records the configuration and settings; later openings must agree."""
        sa, meta = self._sa, self.t["meta"]
        stored = dict(conn.execute(sa.select(meta.c.key, meta.c.value)).all())
        if not stored:
            config = config or LeaderboardConfig.load()
            settings = settings or Settings()
            conn.execute(meta.insert(), [
                {"key": "config", "value": json.dumps(config.to_dict())},   # task order matters
                {"key": "settings", "value": json.dumps(settings.to_dict(), sort_keys=True)}])
            return config, settings
        s_config = LeaderboardConfig.from_dict(json.loads(stored["config"]))
        s_settings = Settings.from_mapping(json.loads(stored["settings"]), source="stored settings")
        if config is not None and config.to_dict() != s_config.to_dict():
            raise InputError("this leaderboard database was created with another task configuration")
        if settings is not None and settings != s_settings:
            raise InputError(f"this leaderboard database uses settings {s_settings.to_dict()}")
        return s_config, s_settings

    # -------------------------------------------------------------------------------------- reading
    def _published(self, conn) -> list[tuple[int, str]]:
        sub = self.t["submissions"]
        rows = conn.execute(self._sa.select(sub.c.id, sub.c.model).order_by(sub.c.id)).all()
        return [(int(i), m) for i, m in rows]

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
        scores = win_scores(P, names, self.config, self.alpha, self.max_competitors, self.fdr) if ids else {}
        raw_by_id = self._raw(conn, ids)
        return pub, P, scores, {names[k]: raw_by_id[sid] for k, sid in enumerate(ids)}

    def leaderboard(self, level: str = "overall") -> pd.DataFrame:
        """The published leaderboard (see :func:`leaderboard_frame` for ``level``)."""
        with self.engine.connect() as c:
            _, _, scores, raw = self._board(c)
        return leaderboard_frame(scores, raw, self.config, level)

    def scores(self) -> dict[str, dict[str, float]]:
        with self.engine.connect() as c:
            return self._board(c)[2]

    def duel_details(self, model: str) -> pd.DataFrame:
        """Every duel of a published ``model``: task, opponent, p-values both ways, won / lost."""
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
        return {**json.loads(row[0]), "_sha256": row[1], "_published_at": row[2]}

    def submission(self, model: str) -> Submission:
        """The stored (published) submission of ``model``, exactly as uploaded."""
        from .submission import validate_submission

        sub = self.t["submissions"]
        with self.engine.connect() as c:
            row = c.execute(self._sa.select(sub.c.payload).where(sub.c.model == model)).first()
        if row is None:
            raise InputError(f"no published model {model!r}", field="model")
        return validate_submission(json.loads(gzip.decompress(row[0])), self.config)

    def _check_counts(self, conn, sub: Submission) -> None:
        sa, p = self._sa, self.t["profiles"]
        rows = conn.execute(sa.select(p.c.task, sa.func.min(p.c.n), sa.func.max(p.c.n)).group_by(p.c.task)).all()
        for task, lo, hi in rows:
            if task in sub.data and not (lo == hi == sub.data[task].n):
                raise InputError(f"task {task!r} has {sub.data[task].n} samples; published models have {lo}",
                                 field=f"predictions.{task}")

    # -------------------------------------------------------------------------------------- writing
    def _load(self, upload, source: str) -> tuple[Submission, bytes | None]:
        if isinstance(upload, Submission):
            return upload, None
        if isinstance(upload, (str, Path)):     # a local file named by the operator (CLI, scripts)
            p = Path(upload)
            if not p.is_file():
                raise InputError("no such submission file", path=p)
            if p.stat().st_size > self.max_bytes:
                raise InputError(f"submission too large: {p.stat().st_size:,} bytes > limit {self.max_bytes:,}",
                                 path=p)
            raw = p.read_bytes()
            return submission_from_bytes(raw, self.config, str(p), self.max_bytes), raw
        raw = bytes(upload)
        return submission_from_bytes(raw, self.config, source, self.max_bytes), raw

    def presubmit(self, upload: bytes | str | Path | Submission, source: str = "<upload>") -> Preview:
        """Validate, compute the new model's duels, store it as pending and return the preview."""
        t0 = time.perf_counter()
        sub, raw = self._load(upload, source)
        tasks = self.config.task_ids
        with self.engine.connect() as c, c.begin():   # one snapshot on SQLite; append-only tables elsewhere
            pub, P, _, raw_by_model = self._board(c)
            if sub.model in {m for _, m in pub}:
                raise InputError(f"model {sub.model!r} is already published (published submissions are "
                                 "immutable)", field="metadata.model")
            self._check_counts(c, sub)
            old = self._profiles(c, [i for i, _ in pub])
        ids = [i for i, _ in pub]
        prof = {t: profile(self.config.spec(t), sub.data[t], sub.model, self.settings) for t in tasks}
        duels = duels_against(self.config, [prof], [old[i] for i in ids])
        token = secrets.token_hex(16)
        payload, digest = _payload(sub, raw)
        pend, pprof, pduel = self.t["pending"], self.t["pending_profiles"], self.t["pending_duels"]

        def write(c):
            new_id = c.execute(pend.insert().values(
                model=sub.model, token=token, sha256=digest, created_at=time.time(),
                metadata_json=json.dumps(sub.metadata, sort_keys=True), payload=payload)).inserted_primary_key[0]
            c.execute(pprof.insert(), [{"pending_id": new_id, "task": t, "n": prof[t].n, "raw": sub.raw(t),
                                        "blob": prof[t].to_bytes()} for t in tasks])
            rows = [{"pending_id": new_id, "task": t, "opponent_id": sid, "p_win": float(duels[t][1][0, k]),
                     "p_loss": float(duels[t][2][k, 0])} for t in tasks for k, sid in enumerate(ids)]
            if rows:
                c.execute(pduel.insert(), rows)

        self._write(write, serialised=False)
        # the preview: the published matrices grown by the new model's row and column
        names = [m for _, m in pub] + [sub.model]
        n = len(names)
        Pn = {}
        for t in tasks:
            M = np.full((n, n), np.nan)
            M[:-1, :-1] = P[t]
            M[-1, :-1], M[:-1, -1] = duels[t][1][0], duels[t][2][:, 0]
            Pn[t] = M
        scores = win_scores(Pn, names, self.config, self.alpha, self.max_competitors, self.fdr)
        raw_by_model[sub.model] = {t: sub.raw(t) for t in tasks}
        table = leaderboard_frame(scores, raw_by_model, self.config, "overall")
        rank = int(table.loc[table["model"] == sub.model, "rank"].iloc[0])
        return Preview(token, sub.model, rank, scores[sub.model], table, time.perf_counter() - t0, sub.warnings)

    def _insert_published(self, c, rows_sub: list[dict], rows_prof: list[dict], rows_duel: list[dict]) -> None:
        c.execute(self.t["submissions"].insert(), rows_sub)
        c.execute(self.t["profiles"].insert(), rows_prof)
        if rows_duel:
            c.execute(self.t["duels"].insert(), rows_duel)

    def confirm(self, token: str) -> str:
        """Publish the pending submission ``token``; returns the model name."""
        sa = self._sa
        pend, pprof, pduel, subs = self.t["pending"], self.t["pending_profiles"], self.t["pending_duels"], \
            self.t["submissions"]

        def publish(c):
            row = c.execute(sa.select(pend).where(pend.c.token == token)).mappings().first()
            if row is None:
                done = c.execute(sa.select(subs.c.model).where(subs.c.token == token)).first()
                if done is not None:
                    raise InputError(f"model {done[0]!r} is already published", field="token")
                raise InputError("unknown or discarded pre-submission", field="token")
            sid, model = int(row["id"]), row["model"]
            if c.execute(sa.select(subs.c.id).where(subs.c.model == model)).first():
                raise InputError(f"model {model!r} is already published (published submissions are immutable)",
                                 field="metadata.model")
            pub = [i for i, _ in self._published(c)]
            stored = c.execute(sa.select(pduel.c.task, pduel.c.opponent_id, pduel.c.p_win, pduel.c.p_loss)
                               .where(pduel.c.pending_id == sid)).all()
            duel_rows = []
            for task, opp, p_win, p_loss in stored:
                duel_rows += [{"task": task, "a_id": sid, "b_id": int(opp), "p_value": p_win},
                              {"task": task, "a_id": int(opp), "b_id": sid, "p_value": p_loss}]
            have = {int(o) for _, o, _, _ in stored}
            missing = [i for i in pub if i not in have]        # published since the preview
            prof_rows = [dict(r) for r in c.execute(sa.select(pprof).where(pprof.c.pending_id == sid)).mappings()]
            if missing:
                mine = self._profiles(c, [sid], "pending_profiles")[sid]
                theirs = self._profiles(c, missing)
                duels = duels_against(self.config, [mine], [theirs[i] for i in missing])
                for t, (_, win, loss) in duels.items():
                    for k, o in enumerate(missing):
                        duel_rows += [{"task": t, "a_id": sid, "b_id": o, "p_value": float(win[0, k])},
                                      {"task": t, "a_id": o, "b_id": sid, "p_value": float(loss[k, 0])}]
            self._insert_published(
                c, [{"id": sid, "model": model, "token": token, "sha256": row["sha256"],
                     "created_at": row["created_at"], "published_at": time.time(),
                     "metadata_json": row["metadata_json"], "payload": row["payload"]}],
                [{"submission_id": sid, "task": r["task"], "n": r["n"], "raw": r["raw"], "blob": r["blob"]}
                 for r in prof_rows], duel_rows)
            self._drop_pending(c, sid)
            return model

        return self._write(publish)

    def _drop_pending(self, c, pid: int) -> None:
        c.execute(self.t["pending_duels"].delete().where(self.t["pending_duels"].c.pending_id == pid))
        c.execute(self.t["pending_profiles"].delete().where(self.t["pending_profiles"].c.pending_id == pid))
        c.execute(self.t["pending"].delete().where(self.t["pending"].c.id == pid))

    def discard(self, token: str) -> None:
        """Drop a pending pre-submission and its duels (published ones cannot be dropped)."""
        pend = self.t["pending"]

        def drop(c):
            row = c.execute(self._sa.select(pend.c.id).where(pend.c.token == token)).first()
            if row is None:
                raise InputError("no pending pre-submission with this token", field="token")
            self._drop_pending(c, int(row[0]))

        self._write(drop, serialised=False)

    def submit(self, upload, source: str = "<upload>") -> Preview:
        """Pre-submit and confirm in one step (scripts and the CLI)."""
        preview = self.presubmit(upload, source)
        self.confirm(preview.token)
        return preview

    def publish_many(self, subs: list[Submission]) -> list[str]:
        """Publish several validated submissions at once (an import, or rebuilding a leaderboard): their
        profiles, one vectorised tournament among them, and their duels against the models already published."""
        names = [s.model for s in subs]
        if len(set(names)) != len(names):
            raise InputError(f"model names must be new and distinct: {names}", field="metadata.model")
        check_sample_counts(subs, self.config)
        tasks = self.config.task_ids
        by_task = {t: profiles(self.config.spec(t), [s.data[t] for s in subs], names, self.settings) for t in tasks}
        prof = [{t: by_task[t][k] for t in tasks} for k in range(len(subs))]
        payloads = [_payload(s, None) for s in subs]

        def publish(c):
            pub = self._published(c)
            taken = {m for _, m in pub} & set(names)
            if taken:
                raise InputError(f"model names must be new and distinct: {sorted(taken)}", field="metadata.model")
            for s in subs:
                self._check_counts(c, s)
            old = [i for i, _ in pub]
            old_prof = self._profiles(c, old)
            now, ids, tokens = time.time(), [], []
            for s, (payload, digest) in zip(subs, payloads):   # the pending table allocates the ids
                tokens.append(secrets.token_hex(16))
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
                    for k, o in enumerate(old):
                        rows += [{"task": t, "a_id": ids[a], "b_id": o, "p_value": float(win[a, k])},
                                 {"task": t, "a_id": o, "b_id": ids[a], "p_value": float(loss[k, a])}]
            self._insert_published(
                c, [{"id": i, "model": s.model, "token": tok, "sha256": digest, "created_at": now,
                     "published_at": now, "metadata_json": json.dumps(s.metadata, sort_keys=True), "payload": payload}
                    for s, i, tok, (payload, digest) in zip(subs, ids, tokens, payloads)],
                [{"submission_id": i, "task": t, "n": p[t].n, "raw": s.raw(t), "blob": p[t].to_bytes()}
                 for s, i, p in zip(subs, ids, prof) for t in tasks], rows)
            return names

        return self._write(publish)

    def counts(self) -> dict[str, int]:
        sa = self._sa
        with self.engine.connect() as c:
            n = {k: c.execute(sa.select(sa.func.count()).select_from(self.t[k])).scalar_one()
                 for k in ("submissions", "profiles", "duels", "pending", "pending_duels")}
        n["published"] = n["submissions"]
        return n

    def close(self) -> None:
        self.engine.dispose()
