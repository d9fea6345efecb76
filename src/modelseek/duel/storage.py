"""Leaderboard storage (SQLAlchemy): submissions, their profiles and every stored duel.

SQLite by default (``sqlite:///leaderboard.db``), any SQLAlchemy URL for a server (PostgreSQL). Life of a
submission:

1. :meth:`Store.presubmit` validates the upload, computes the new model's profiles and only its own
   2 x N duels per task against the published models, stores them as *pending*, and returns a
   :class:`Preview`: the leaderboard as it would be with the new model. Nothing is published.
2. :meth:`Store.confirm` publishes a pending submission (computing first any duel against a model published
   since its preview). Published submissions are immutable: the store has no way to change or delete them
   and the database refuses it (triggers), a model name can be published once.
3. :meth:`Store.discard` drops a pending submission.

Concurrent pre-submissions are independent rows; confirmations are serialised by a row lock (the first
statement of a confirmation updates the ``publish_lock`` row), so two models confirmed at once still duel.
A bad upload (malformed JSON, missing task, wrong sample count, oversized) raises :class:`InputError`
before anything is written.
"""

from __future__ import annotations

import gzip
import json
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import InputError
from .config import LeaderboardConfig
from .engine import Profile, Settings, profile, profiles, pvalues
from .leaderboard import leaderboard_frame
from .scoring import ALPHA, MAX_COMPETITORS, adjusted, win_scores
from .submission import MAX_BYTES, Submission, submission_from_bytes, validate_submission


def _sqlalchemy():
    try:
        import sqlalchemy as sa
    except ImportError:  # pragma: no cover - depends on the environment
        raise InputError("the leaderboard storage needs SQLAlchemy: pip install 'modelseek[web]'") from None
    return sa


def _tables(sa):
    md = sa.MetaData()
    meta = sa.Table("meta", md, sa.Column("key", sa.String(64), primary_key=True), sa.Column("value", sa.Text))
    lock = sa.Table("publish_lock", md, sa.Column("id", sa.Integer, primary_key=True),
                    sa.Column("counter", sa.Integer, nullable=False))
    subs = sa.Table(
        "submissions", md,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("model", sa.String(300), nullable=False, index=True),
        sa.Column("status", sa.String(16), nullable=False, index=True),
        sa.Column("token", sa.String(64), nullable=False, unique=True),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("published_at", sa.Float),
        sa.Column("metadata_json", sa.Text, nullable=False),
        sa.Column("payload", sa.LargeBinary, nullable=False),
    )
    published = sa.Table("published_models", md, sa.Column("model", sa.String(300), primary_key=True),
                         sa.Column("submission_id", sa.Integer, sa.ForeignKey("submissions.id"), nullable=False))
    profiles = sa.Table(
        "profiles", md,
        sa.Column("submission_id", sa.Integer, sa.ForeignKey("submissions.id"), primary_key=True),
        sa.Column("task", sa.String(300), primary_key=True),
        sa.Column("n", sa.Integer, nullable=False),
        sa.Column("raw", sa.Float, nullable=False),
        sa.Column("blob", sa.LargeBinary, nullable=False),
    )
    duels = sa.Table(
        "duels", md,
        sa.Column("task", sa.String(300), primary_key=True),
        sa.Column("a_id", sa.Integer, sa.ForeignKey("submissions.id"), primary_key=True),
        sa.Column("b_id", sa.Integer, sa.ForeignKey("submissions.id"), primary_key=True),
        sa.Column("p_value", sa.Float, nullable=False),
    )
    # immutability of published submissions, enforced by the database itself
    sqlite = [
        "CREATE TRIGGER IF NOT EXISTS submissions_immutable BEFORE UPDATE ON submissions "
        "WHEN OLD.status = 'published' BEGIN SELECT RAISE(ABORT, 'published submissions are immutable'); END",
        "CREATE TRIGGER IF NOT EXISTS submissions_nodelete BEFORE DELETE ON submissions "
        "WHEN OLD.status = 'published' BEGIN SELECT RAISE(ABORT, 'published submissions are immutable'); END",
        "CREATE TRIGGER IF NOT EXISTS profiles_immutable BEFORE UPDATE ON profiles "
        "BEGIN SELECT RAISE(ABORT, 'profiles are immutable'); END",
        "CREATE TRIGGER IF NOT EXISTS duels_immutable BEFORE UPDATE ON duels "
        "BEGIN SELECT RAISE(ABORT, 'duels are immutable'); END",
        "CREATE TRIGGER IF NOT EXISTS profiles_nodelete BEFORE DELETE ON profiles "
        "WHEN (SELECT status FROM submissions WHERE id = OLD.submission_id) = 'published' "
        "BEGIN SELECT RAISE(ABORT, 'published submissions are immutable'); END",
        "CREATE TRIGGER IF NOT EXISTS duels_nodelete BEFORE DELETE ON duels "
        "WHEN (SELECT count(*) FROM submissions WHERE id IN (OLD.a_id, OLD.b_id) AND status = 'pending') = 0 "
        "BEGIN SELECT RAISE(ABORT, 'published submissions are immutable'); END",
    ]
    postgres = [
        "CREATE OR REPLACE FUNCTION modelseek_immutable() RETURNS trigger AS $$ BEGIN "
        "IF OLD.status = 'published' THEN RAISE EXCEPTION 'published submissions are immutable'; END IF; "
        "IF TG_OP = 'DELETE' THEN RETURN OLD; END IF; RETURN NEW; END; $$ LANGUAGE plpgsql",
        "DROP TRIGGER IF EXISTS submissions_immutable ON submissions",
        "CREATE TRIGGER submissions_immutable BEFORE UPDATE OR DELETE ON submissions "
        "FOR EACH ROW EXECUTE FUNCTION modelseek_immutable()",
    ]
    for stmt in sqlite:
        sa.event.listen(md, "after_create", sa.DDL(stmt).execute_if(dialect="sqlite"))
    for stmt in postgres:
        sa.event.listen(md, "after_create", sa.DDL(stmt).execute_if(dialect="postgresql"))
    return md, meta, lock, subs, published, profiles, duels


def _payload(sub: Submission, raw: bytes | None) -> tuple[bytes, str]:
    """What is stored of a submission: the uploaded bytes exactly (else its canonical JSON), gzip'ed, and the
    SHA-256 of the uncompressed bytes."""
    import hashlib

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


class Store:
    """A leaderboard database. ``url``: a SQLAlchemy URL or a file path (SQLite)."""

    def __init__(self, url: str | Path = "sqlite:///leaderboard.db", config: LeaderboardConfig | None = None,
                 settings: Settings | None = None, alpha: float = ALPHA, fdr: bool = False,
                 max_competitors: int = MAX_COMPETITORS, max_bytes: int = MAX_BYTES) -> None:
        sa = self._sa = _sqlalchemy()
        url = str(url)
        if "://" not in url:
            url = f"sqlite:///{Path(url)}"
        self.url = url
        kwargs = {}
        if url.startswith("sqlite"):
            kwargs["connect_args"] = {"timeout": 60, "check_same_thread": False}
        self.engine = sa.create_engine(url, **kwargs)
        if url.startswith("sqlite"):
            @sa.event.listens_for(self.engine, "connect")
            def _pragmas(dbapi_conn, _record):  # WAL: readers do not block the writer
                cur = dbapi_conn.cursor()
                cur.execute("PRAGMA journal_mode=WAL")
                cur.execute("PRAGMA foreign_keys=ON")
                cur.close()
        (self._md, self.t_meta, self.t_lock, self.t_subs, self.t_published, self.t_profiles,
         self.t_duels) = _tables(sa)
        self._md.create_all(self.engine)
        self.alpha, self.fdr, self.max_competitors, self.max_bytes = alpha, fdr, max_competitors, max_bytes
        self.config, self.settings = self._bind(config, settings)

    # -------------------------------------------------------------------------------------- set-up
    def _bind(self, config, settings):
        """The first opening records the configuration and settings; later openings must agree."""
        sa = self._sa
        with self.engine.begin() as c:
            stored = dict(c.execute(sa.select(self.t_meta.c.key, self.t_meta.c.value)).all())
            if not stored:
                config = config or LeaderboardConfig.load()
                settings = settings or Settings()
                try:
                    c.execute(self.t_meta.insert(), [
                        {"key": "config", "value": json.dumps(config.to_dict(), sort_keys=True)},
                        {"key": "settings", "value": json.dumps(settings.to_dict(), sort_keys=True)}])
                    c.execute(self.t_lock.insert(), [{"id": 1, "counter": 0}])
                except sa.exc.IntegrityError:  # another process initialised it first
                    pass
                else:
                    return config, settings
        with self.engine.connect() as c:
            stored = dict(c.execute(sa.select(self.t_meta.c.key, self.t_meta.c.value)).all())
        s_config = LeaderboardConfig.from_dict(json.loads(stored["config"]))
        s_settings = Settings(**json.loads(stored["settings"]))
        if config is not None and config.to_dict() != s_config.to_dict():
            raise InputError("this leaderboard database was created with another task configuration", path=self.url)
        if settings is not None and settings != s_settings:
            raise InputError(f"this leaderboard database uses settings {s_settings.to_dict()}", path=self.url)
        return s_config, s_settings

    # -------------------------------------------------------------------------------------- reading
    def published(self) -> list[tuple[int, str]]:
        """``[(submission id, model)]`` of published submissions, in publication order."""
        sa = self._sa
        with self.engine.connect() as c:
            rows = c.execute(sa.select(self.t_subs.c.id, self.t_subs.c.model)
                             .where(self.t_subs.c.status == "published").order_by(self.t_subs.c.id)).all()
        return [(int(i), m) for i, m in rows]

    def _profiles(self, conn, ids: list[int]) -> dict[int, dict[str, Profile]]:
        sa = self._sa
        out: dict[int, dict[str, Profile]] = {i: {} for i in ids}
        if not ids:
            return out
        rows = conn.execute(sa.select(self.t_profiles.c.submission_id, self.t_profiles.c.task, self.t_profiles.c.blob)
                            .where(self.t_profiles.c.submission_id.in_(ids))).all()
        for sid, task, blob in rows:
            out[int(sid)][task] = Profile.from_bytes(blob)
        return out

    def _raw(self, conn, ids: list[int]) -> dict[int, dict[str, float]]:
        sa = self._sa
        out: dict[int, dict[str, float]] = {i: {} for i in ids}
        if ids:
            for sid, task, raw in conn.execute(sa.select(self.t_profiles.c.submission_id, self.t_profiles.c.task,
                                                         self.t_profiles.c.raw)
                                               .where(self.t_profiles.c.submission_id.in_(ids))).all():
                out[int(sid)][task] = float(raw)
        return out

    def _pvalue_matrices(self, conn, ids: list[int]) -> dict[str, np.ndarray]:
        sa = self._sa
        pos = {sid: k for k, sid in enumerate(ids)}
        P = {t: np.full((len(ids), len(ids)), np.nan) for t in self.config.task_ids}
        if len(ids) < 2:
            return P
        task_index = {t: k for k, t in enumerate(self.config.task_ids)}
        rows = conn.execute(sa.select(self.t_duels.c.task, self.t_duels.c.a_id, self.t_duels.c.b_id,
                                      self.t_duels.c.p_value)).all()
        if rows:
            arr = np.array([(task_index.get(t, -1), pos.get(a, -1), pos.get(b, -1), p) for t, a, b, p in rows])
            ok = (arr[:, 0] >= 0) & (arr[:, 1] >= 0) & (arr[:, 2] >= 0)
            arr = arr[ok]
            stack = np.full((len(task_index), len(ids), len(ids)), np.nan)
            stack[arr[:, 0].astype(int), arr[:, 1].astype(int), arr[:, 2].astype(int)] = arr[:, 3]
            P = {t: stack[k] for t, k in task_index.items()}
        return P

    def _scores(self, conn, ids: list[int], names: list[str]):
        P = self._pvalue_matrices(conn, ids)
        scores = win_scores(P, names, self.config, self.alpha, self.max_competitors, self.fdr) if ids else {}
        raw_by_id = self._raw(conn, ids)
        raw = {names[k]: raw_by_id[sid] for k, sid in enumerate(ids)}
        return P, scores, raw

    def leaderboard(self, level: str = "overall") -> pd.DataFrame:
        """The published leaderboard (see :func:`leaderboard_frame` for ``level``)."""
        pub = self.published()
        ids, names = [i for i, _ in pub], [m for _, m in pub]
        with self.engine.connect() as c:
            _, scores, raw = self._scores(c, ids, names)
        return leaderboard_frame(scores, raw, self.config, level)

    def scores(self) -> dict[str, dict[str, float]]:
        pub = self.published()
        with self.engine.connect() as c:
            return self._scores(c, [i for i, _ in pub], [m for _, m in pub])[1]

    def duel_details(self, model: str) -> pd.DataFrame:
        """Every duel of a published ``model``: task, opponent, p-values both ways, won / lost."""
        pub = self.published()
        names = [m for _, m in pub]
        if model not in names:
            raise InputError(f"no published model {model!r}", field="model")
        ids = [i for i, _ in pub]
        with self.engine.connect() as c:
            P = adjusted(self._pvalue_matrices(c, ids), self.config.task_ids, self.fdr)
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

    def submission(self, model: str) -> Submission:
        """The stored (published) submission of ``model``, exactly as uploaded."""
        sa = self._sa
        with self.engine.connect() as c:
            row = c.execute(sa.select(self.t_subs.c.payload).where(self.t_subs.c.model == model)
                            .where(self.t_subs.c.status == "published")).first()
        if row is None:
            raise InputError(f"no published model {model!r}", field="model")
        return validate_submission(json.loads(gzip.decompress(row[0])), self.config)

    # ------------------------------------------------------------------------------------ computing
    def _duel_rows(self, conn, new_id: int, new_prof: dict[str, Profile], against: list[int]) -> list[dict]:
        """The new model's 2 x N duels per task against ``against`` (submission ids)."""
        if not against:
            return []
        profs = self._profiles(conn, against)
        rows = []
        for t in self.config.task_ids:
            spec = self.config.spec(t)
            cols = [profs[sid][t] for sid in against]
            win = pvalues(spec, [new_prof[t]], cols)[0]
            loss = pvalues(spec, cols, [new_prof[t]])[:, 0]
            for k, sid in enumerate(against):
                rows.append({"task": t, "a_id": new_id, "b_id": sid, "p_value": float(win[k])})
                rows.append({"task": t, "a_id": sid, "b_id": new_id, "p_value": float(loss[k])})
        return rows

    def _check_counts(self, conn, sub: Submission) -> None:
        sa = self._sa
        rows = conn.execute(sa.select(self.t_profiles.c.task, sa.func.min(self.t_profiles.c.n),
                                      sa.func.max(self.t_profiles.c.n))
                            .select_from(self.t_profiles.join(self.t_subs, self.t_subs.c.id == self.t_profiles.c.submission_id))
                            .where(self.t_subs.c.status == "published").group_by(self.t_profiles.c.task)).all()
        for task, lo, hi in rows:
            if task in sub.data and not (lo == hi == sub.data[task].n):
                raise InputError(f"task {task!r} has {sub.data[task].n} samples; published models have {lo}",
                                 field=f"predictions.{task}")

    def presubmit(self, upload: bytes | str | Path | Submission, source: str = "<upload>") -> Preview:
        """Validate, compute the new model's duels, store it as pending and return the preview."""
        t0 = time.perf_counter()
        raw = None
        if isinstance(upload, Submission):
            sub = upload
        elif isinstance(upload, (str, Path)):
            p = Path(upload)
            if not p.is_file():
                raise InputError("no such submission file", path=p)
            if p.stat().st_size > self.max_bytes:
                raise InputError(f"submission too large: {p.stat().st_size:,} bytes > limit {self.max_bytes:,}", path=p)
            raw = p.read_bytes()
            sub = submission_from_bytes(raw, self.config, str(p), self.max_bytes)
        else:
            raw = bytes(upload)
            sub = submission_from_bytes(raw, self.config, source, self.max_bytes)
        pub = self.published()
        if sub.model in {m for _, m in pub}:
            raise InputError(f"model {sub.model!r} is already published (published submissions are immutable)",
                             field="metadata.model")
        with self.engine.connect() as c:
            self._check_counts(c, sub)
        prof = {t: profile(self.config.spec(t), sub.data[t], sub.model, self.settings) for t in self.config.task_ids}
        token = secrets.token_hex(16)
        payload, digest = _payload(sub, raw)
        with self.engine.begin() as c:
            new_id = c.execute(self.t_subs.insert().values(
                model=sub.model, status="pending", token=token, sha256=digest, created_at=time.time(),
                metadata_json=json.dumps(sub.metadata, sort_keys=True), payload=payload)).inserted_primary_key[0]
            c.execute(self.t_profiles.insert(), [
                {"submission_id": new_id, "task": t, "n": prof[t].n,
                 "raw": sub.raw(t, self.config.spec(t).metric), "blob": prof[t].to_bytes()}
                for t in self.config.task_ids])
            rows = self._duel_rows(c, new_id, prof, [i for i, _ in pub])
            if rows:
                c.execute(self.t_duels.insert(), rows)
        ids = [i for i, _ in pub] + [new_id]
        names = [m for _, m in pub] + [sub.model]
        with self.engine.connect() as c:
            _, scores, raw = self._scores(c, ids, names)
        table = leaderboard_frame(scores, raw, self.config, "overall")
        rank = int(table.loc[table["model"] == sub.model, "rank"].iloc[0])
        return Preview(token, sub.model, rank, scores[sub.model], table, time.perf_counter() - t0)

    def publish_many(self, subs: list[Submission]) -> list[str]:
        """Publish several validated submissions at once (an import, or rebuilding a leaderboard): their
        profiles, one vectorised tournament among them, and their duels against the models already published."""
        sa = self._sa
        from .submission import check_sample_counts

        names = [s.model for s in subs]
        published = self.published()
        taken = {m for _, m in published} & set(names)
        if len(set(names)) != len(names) or taken:
            raise InputError(f"model names must be new and distinct: {sorted(taken) or names}", field="metadata.model")
        check_sample_counts(subs, self.config)
        with self.engine.connect() as c:
            for s in subs:
                self._check_counts(c, s)
        tasks = self.config.task_ids
        by_task = {t: profiles(self.config.spec(t), [s.data[t] for s in subs], names, self.settings) for t in tasks}
        prof = [{t: by_task[t][k] for t in tasks} for k in range(len(subs))]
        with self.engine.begin() as c:
            c.execute(self.t_lock.update().where(self.t_lock.c.id == 1).values(counter=self.t_lock.c.counter + 1))
            old = [int(i) for (i,) in c.execute(sa.select(self.t_subs.c.id)
                                                .where(self.t_subs.c.status == "published")).all()]
            now = time.time()
            ids = []
            for s in subs:
                payload, digest = _payload(s, None)
                ids.append(c.execute(self.t_subs.insert().values(
                    model=s.model, status="published", token=secrets.token_hex(16), sha256=digest, created_at=now,
                    published_at=now, metadata_json=json.dumps(s.metadata, sort_keys=True),
                    payload=payload)).inserted_primary_key[0])
            c.execute(self.t_published.insert(), [{"model": s.model, "submission_id": i} for s, i in zip(subs, ids)])
            c.execute(self.t_profiles.insert(), [
                {"submission_id": i, "task": t, "n": p[t].n, "raw": s.raw(t, self.config.spec(t).metric),
                 "blob": p[t].to_bytes()} for s, i, p in zip(subs, ids, prof) for t in tasks])
            old_prof = self._profiles(c, old)
            rows = []
            for t in tasks:
                spec = self.config.spec(t)
                new_t = [p[t] for p in prof]
                P = pvalues(spec, new_t)
                rows += [{"task": t, "a_id": ids[a], "b_id": ids[b], "p_value": float(P[a, b])}
                         for a in range(len(ids)) for b in range(len(ids)) if a != b]
                if old:
                    cols = [old_prof[o][t] for o in old]
                    W, L = pvalues(spec, new_t, cols), pvalues(spec, cols, new_t)
                    for a in range(len(ids)):
                        for k, o in enumerate(old):
                            rows.append({"task": t, "a_id": ids[a], "b_id": o, "p_value": float(W[a, k])})
                            rows.append({"task": t, "a_id": o, "b_id": ids[a], "p_value": float(L[k, a])})
            c.execute(self.t_duels.insert(), rows)
        return names

    def confirm(self, token: str) -> str:
        """Publish the pending submission ``token``; returns the model name."""
        sa = self._sa
        with self.engine.begin() as c:
            # first statement takes the publish lock: confirmations run one at a time
            c.execute(self.t_lock.update().where(self.t_lock.c.id == 1).values(counter=self.t_lock.c.counter + 1))
            row = c.execute(sa.select(self.t_subs.c.id, self.t_subs.c.model, self.t_subs.c.status)
                            .where(self.t_subs.c.token == token)).first()
            if row is None:
                raise InputError("unknown or discarded pre-submission", field="token")
            sid, model, status = int(row[0]), row[1], row[2]
            if status != "pending":
                raise InputError(f"model {model!r} is already published", field="token")
            if c.execute(sa.select(self.t_published.c.model).where(self.t_published.c.model == model)).first():
                raise InputError(f"model {model!r} is already published (published submissions are immutable)",
                                 field="metadata.model")
            pub = [int(i) for (i,) in c.execute(sa.select(self.t_subs.c.id)
                                                .where(self.t_subs.c.status == "published")).all()]
            have = {int(b) for (b,) in c.execute(sa.select(self.t_duels.c.b_id).distinct()
                                                 .where(self.t_duels.c.a_id == sid)).all()}
            missing = [i for i in pub if i not in have]
            if missing:
                prof = self._profiles(c, [sid])[sid]
                c.execute(self.t_duels.insert(), self._duel_rows(c, sid, prof, missing))
            c.execute(self.t_subs.update().where(self.t_subs.c.id == sid)
                      .values(status="published", published_at=time.time()))
            c.execute(self.t_published.insert().values(model=model, submission_id=sid))
        return model

    def discard(self, token: str) -> None:
        """Drop a pending pre-submission and its duels (published ones cannot be dropped)."""
        sa = self._sa
        with self.engine.begin() as c:
            row = c.execute(sa.select(self.t_subs.c.id, self.t_subs.c.status).where(self.t_subs.c.token == token)).first()
            if row is None or row[1] != "pending":
                raise InputError("no pending pre-submission with this token", field="token")
            sid = int(row[0])
            c.execute(self.t_duels.delete().where(sa.or_(self.t_duels.c.a_id == sid, self.t_duels.c.b_id == sid)))
            c.execute(self.t_profiles.delete().where(self.t_profiles.c.submission_id == sid))
            c.execute(self.t_subs.delete().where(self.t_subs.c.id == sid))

    def submit(self, upload, source: str = "<upload>") -> Preview:
        """Pre-submit and confirm in one step (scripts and the CLI)."""
        preview = self.presubmit(upload, source)
        self.confirm(preview.token)
        return preview

    def counts(self) -> dict[str, int]:
        sa = self._sa
        with self.engine.connect() as c:
            return {"submissions": c.execute(sa.select(sa.func.count()).select_from(self.t_subs)).scalar_one(),
                    "published": c.execute(sa.select(sa.func.count()).select_from(self.t_published)).scalar_one(),
                    "profiles": c.execute(sa.select(sa.func.count()).select_from(self.t_profiles)).scalar_one(),
                    "duels": c.execute(sa.select(sa.func.count()).select_from(self.t_duels)).scalar_one()}

    def close(self) -> None:
        self.engine.dispose()
