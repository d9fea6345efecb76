"""The leaderboard's database schema: tables, database-enforced immutability, migrations (Alembic).

Two kinds of tables:

* **published** (``meta``, ``submissions``, ``profiles``, ``duels``): append-only. The database itself
  refuses ``UPDATE``, ``DELETE`` and replacing inserts (SQLite ``INSERT OR REPLACE`` / ``REPLACE``, PostgreSQL
  ``INSERT ... ON CONFLICT DO UPDATE``) on every one of them, and ``TRUNCATE`` on PostgreSQL (a
  statement-level ``BEFORE TRUNCATE`` trigger; ``TRUNCATE ... CASCADE`` fires it on each table it reaches).
  The application only ever inserts into them.
* **pending** (``pending``, ``pending_profiles``, ``pending_duels``): pre-submissions awaiting confirmation;
  confirmation copies a pending submission into the published tables and deletes the pending rows.

The schema lives in Alembic migrations (``modelseek/duel/migrations``); :func:`upgrade` applies them once and
race-free: under ``pg_advisory_xact_lock`` on PostgreSQL (DDL is transactional there), inside a
``BEGIN IMMEDIATE`` transaction on SQLite (one writer at a time; the DDL commits or rolls back with it).
Every :class:`~modelseek.duel.storage.Store` opening checks the version first and takes the lock only when
the database is behind, so many processes may open one database at once.
"""

from __future__ import annotations

from pathlib import Path

from ..core.errors import InputError

#: the Alembic revision this code expects (the newest migration)
SCHEMA_VERSION = "0005"
#: pg_advisory lock keys (two int4 keys: 'mdls', purpose)
LOCK_NAMESPACE = 0x6D646C73
MIGRATION_LOCK, PUBLISH_LOCK = 1, 2

MIGRATIONS = Path(__file__).with_name("migrations")

#: append-only tables and their unique keys (a replacing insert is recognised by any of them)
IMMUTABLE: dict[str, list[tuple[str, ...]]] = {
    "meta": [("key",)],
    "submissions": [("id",), ("model",), ("token",)],
    "profiles": [("submission_id", "task")],
    "duels": [("task", "a_id", "b_id")],
    "chain": [("seq",), ("submission_id",), ("name_key",)],      # 0002: the hash chain over published rows
    "task_ids": [("task",)],                                     # 0002: each task's doc_ids (paired samples)
    "reviews": [("submission_id",)],                             # 0003: one decision per queued submission
    "withdrawals": [("seq",)],                                   # 0004: the operator's withdrawals (chained)
    "copies": [("submission_id", "of_id")],                      # 0004: near-copies published after review
}
#: the tables of each migration (a later migration adds tables and nullable columns only)
TABLES_0001 = ("meta", "pending", "submissions", "profiles", "pending_profiles", "duels", "pending_duels")
TABLES_0002 = ("chain", "task_ids")
TABLES_0003 = ("reviews",)
TABLES_0004 = ("withdrawals", "copies", "usage")
#: columns 0004 adds to existing tables: the keyed chain head, the verdict's link to the uploader's token
COLUMNS_0004 = (("chain", "mac"), ("reviews", "token_hash"))
#: columns 0002 adds to ``pending``
PENDING_0002 = ("name_key", "session", "identity", "uploader", "size", "board")
#: columns 0003 adds to ``pending``
PENDING_0003 = ("queued_at", "refreshes")
PENDING = ("pending", "pending_profiles", "pending_duels", "usage")
#: 0005: the pending (preview) tables carry a seal (:func:`.chain.pending_seal`) and refuse UPDATE (the rows of
#: pending_profiles and pending_duels entirely; of pending every column but the workflow's own three)
SEALED = ("pending", "pending_profiles", "pending_duels")
#: the columns of ``pending`` the workflow updates (a refresh, a confirmation on a board with review)
PENDING_MUTABLE = ("board", "refreshes", "queued_at")


def tables(sa, md=None):
    """Table objects (reads and writes use these; migrations create the same tables)."""
    md = md if md is not None else sa.MetaData()
    t = {}
    t["meta"] = sa.Table("meta", md, sa.Column("key", sa.String(64), primary_key=True),
                         sa.Column("value", sa.Text, nullable=False))
    t["pending"] = sa.Table(
        "pending", md,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("model", sa.String(300), nullable=False),
        sa.Column("token", sa.String(64), nullable=False, unique=True),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("metadata_json", sa.Text, nullable=False),
        sa.Column("payload", sa.LargeBinary, nullable=False),
        sa.Column("name_key", sa.String(300), nullable=True),   # the confusable-safe name (text.name_key)
        sa.Column("session", sa.String(64), nullable=True),     # SHA-256 of the browser session it belongs to
        sa.Column("identity", sa.String(300), nullable=True),   # the signed-in identity (proxy header)
        sa.Column("uploader", sa.String(64), nullable=True),    # SHA-256 of who uploaded (daily limit)
        sa.Column("size", sa.Integer, nullable=True),           # bytes of the canonical submission
        sa.Column("board", sa.Integer, nullable=True),          # the chain's head when the preview was computed
        sa.Column("queued_at", sa.Float, nullable=True),        # confirmed, awaiting review (0003)
        sa.Column("refreshes", sa.Integer, nullable=True),      # times its preview was recomputed (0003)
        sa.Column("seal", sa.String(64), nullable=True),        # 0005: .chain.pending_seal of the row
        sqlite_autoincrement=True,   # ids are never reused: a published submission keeps its pending id
    )
    t["submissions"] = sa.Table(
        "submissions", md,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("model", sa.String(300), nullable=False, unique=True),
        sa.Column("token", sa.String(64), nullable=False, unique=True),   # the pre-submission's token
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("published_at", sa.Float, nullable=False),
        sa.Column("metadata_json", sa.Text, nullable=False),
        sa.Column("payload", sa.LargeBinary, nullable=False),
    )
    for name, owner, fk in (("profiles", "submission_id", "submissions.id"),
                            ("pending_profiles", "pending_id", "pending.id")):
        t[name] = sa.Table(
            name, md,
            sa.Column(owner, sa.Integer, sa.ForeignKey(fk), primary_key=True),
            sa.Column("task", sa.String(300), primary_key=True),
            sa.Column("n", sa.Integer, nullable=False),
            sa.Column("raw", sa.Float, nullable=False),
            sa.Column("blob", sa.LargeBinary, nullable=False),
            *([sa.Column("seal", sa.String(64), nullable=True)] if name == "pending_profiles" else []),   # 0005
        )
    t["duels"] = sa.Table(
        "duels", md,
        sa.Column("task", sa.String(300), primary_key=True),
        sa.Column("a_id", sa.Integer, sa.ForeignKey("submissions.id"), primary_key=True),
        sa.Column("b_id", sa.Integer, sa.ForeignKey("submissions.id"), primary_key=True),
        sa.Column("p_value", sa.Float, nullable=False),    # p that a beats b
    )
    _ledger_tables(sa, md, t)
    t["pending_duels"] = sa.Table(
        "pending_duels", md,
        sa.Column("pending_id", sa.Integer, sa.ForeignKey("pending.id"), primary_key=True),
        sa.Column("task", sa.String(300), primary_key=True),
        sa.Column("opponent_id", sa.Integer, sa.ForeignKey("submissions.id"), primary_key=True),
        sa.Column("p_win", sa.Float, nullable=False),      # p that the pending model beats the opponent
        sa.Column("p_loss", sa.Float, nullable=False),     # p that the opponent beats it
        sa.Column("seal", sa.String(64), nullable=True),   # 0005: .chain.pending_seal of the row
    )
    return md, t


def _ledger_tables(sa, md, t: dict) -> None:
    """The tamper-evidence and review tables (0002, 0003) into ``t``."""
    # the hash chain: row 0 covers ``meta``; row k covers the k-th published submission with its profiles,
    # its duels against those published before it and the task_ids rows it fixed (see .chain)
    t["chain"] = sa.Table(
        "chain", md,
        sa.Column("seq", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("submission_id", sa.Integer, nullable=True, unique=True),   # no foreign key: a TRUNCATE
        sa.Column("name_key", sa.String(300), nullable=True, unique=True),    # ... CASCADE does not reach it
        sa.Column("uploader", sa.String(64), nullable=True),
        sa.Column("size", sa.Integer, nullable=True),
        sa.Column("prev_hash", sa.String(64), nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
        sa.Column("mac", sa.String(64), nullable=True),   # 0004: HMAC-SHA-256 of hash under the operator's key
    )
    t["task_ids"] = sa.Table(
        "task_ids", md,
        sa.Column("task", sa.String(300), primary_key=True),
        sa.Column("submission_id", sa.Integer, nullable=False),   # the submission that fixed them
        sa.Column("ids", sa.Text, nullable=False),                # JSON list, sample order
    )
    # 0003: the reviewers' decisions (an approval is chained with the submission it published)
    t["reviews"] = sa.Table(
        "reviews", md,
        sa.Column("submission_id", sa.Integer, primary_key=True, autoincrement=False),   # the pending id
        sa.Column("model", sa.String(300), nullable=False),
        sa.Column("decision", sa.String(16), nullable=False),    # approved | rejected
        sa.Column("reviewer", sa.String(300), nullable=False),
        sa.Column("decided_at", sa.Float, nullable=False),
        sa.Column("why", sa.Text, nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=True),   # 0004: SHA-256 of the uploader's token (verdict)
    )
    # 0004: the operator's withdrawals of published entries: a row per withdrawal, chained at its own seq (the
    # entry stays in submissions for audit; the board leaves it out)
    t["withdrawals"] = sa.Table(
        "withdrawals", md,
        sa.Column("seq", sa.Integer, primary_key=True, autoincrement=False),    # its chain row
        sa.Column("submission_id", sa.Integer, nullable=False),
        sa.Column("model", sa.String(300), nullable=False),
        sa.Column("operator", sa.String(300), nullable=False),
        sa.Column("why", sa.Text, nullable=False),
        sa.Column("at", sa.Float, nullable=False),
    )
    # 0004: the raw bytes each uploader sent (refused uploads included): the daily quota (rows older than a day go)
    t["usage"] = sa.Table(
        "usage", md,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("uploader", sa.String(64), nullable=False),     # SHA-256 of the identity / address / session
        sa.Column("at", sa.Float, nullable=False),
        sa.Column("bytes", sa.BigInteger, nullable=False),
    )
    # 0004: near-copies a reviewer published anyway (duels against one group count once; chained with the later)
    t["copies"] = sa.Table(
        "copies", md,
        sa.Column("submission_id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("of_id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("ratio", sa.Float, nullable=False),
    )


#: the body of PostgreSQL's trigger function (``db verify`` checks that it was not replaced)
PG_FUNCTION_BODY = " BEGIN RAISE EXCEPTION '%: published data are immutable', TG_TABLE_NAME; END; "


def immutability_ddl(dialect: str, tables: tuple[str, ...] | None = None, function: bool = True) -> list[str]:
    """The statements that make the published tables append-only on ``dialect`` (sqlite or postgresql)."""
    out = []
    chosen = {k: v for k, v in IMMUTABLE.items() if tables is None or k in tables}
    if dialect == "sqlite":
        for table, keys in chosen.items():
            msg = f"{table}: published data are immutable"
            out.append(f"CREATE TRIGGER {table}_no_update BEFORE UPDATE ON {table} "
                       f"BEGIN SELECT RAISE(ABORT, '{msg}'); END")
            out.append(f"CREATE TRIGGER {table}_no_delete BEFORE DELETE ON {table} "
                       f"BEGIN SELECT RAISE(ABORT, '{msg}'); END")
            # REPLACE deletes the old row without firing delete triggers (unless recursive_triggers is on in
            # the connection that runs it), so an insert that meets any existing key is refused up front.
            clash = " OR ".join(
                f"EXISTS (SELECT 1 FROM {table} WHERE " + " AND ".join(f"{c} = NEW.{c}" for c in key) + ")"
                for key in keys)
            out.append(f"CREATE TRIGGER {table}_no_replace BEFORE INSERT ON {table} WHEN {clash} "
                       f"BEGIN SELECT RAISE(ABORT, '{msg}'); END")
    elif dialect == "postgresql":
        if function:
            out.append(f"CREATE OR REPLACE FUNCTION modelseek_immutable() RETURNS trigger AS $${PG_FUNCTION_BODY}$$ "
                       "LANGUAGE plpgsql")
        for table in chosen:
            # ON CONFLICT DO UPDATE is an UPDATE: the row trigger refuses it as well
            out.append(f"CREATE TRIGGER {table}_immutable BEFORE UPDATE OR DELETE ON {table} "
                       "FOR EACH ROW EXECUTE FUNCTION modelseek_immutable()")
            out.append(f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} "
                       "FOR EACH STATEMENT EXECUTE FUNCTION modelseek_immutable()")
    else:
        raise InputError(f"unsupported database dialect {dialect!r}; use SQLite or PostgreSQL", field="db")
    return out


def sealed_ddl(dialect: str) -> list[str]:
    """0005: the statements that refuse UPDATE on the pending tables (every column of ``pending`` but
    :data:`PENDING_MUTABLE`); DELETE stays allowed (discard, expiry, publication). PostgreSQL reuses the function
    of :func:`immutability_ddl`."""
    pending_cols = ", ".join(c for c in ("id", "model", "token", "sha256", "created_at", "metadata_json", "payload",
                                         "name_key", "session", "identity", "uploader", "size", "seal"))
    out = []
    for table in SEALED:
        of = f" OF {pending_cols}" if table == "pending" else ""
        if dialect == "sqlite":
            out.append(f"CREATE TRIGGER {table}_sealed BEFORE UPDATE{of} ON {table} "
                       f"BEGIN SELECT RAISE(ABORT, '{table}: a preview is sealed'); END")
        elif dialect == "postgresql":
            out.append(f"CREATE TRIGGER {table}_sealed BEFORE UPDATE{of} ON {table} "
                       "FOR EACH ROW EXECUTE FUNCTION modelseek_immutable()")
        else:
            raise InputError(f"unsupported database dialect {dialect!r}; use SQLite or PostgreSQL", field="db")
    return out


def grants(role: str) -> list[str]:
    """PostgreSQL statements giving the app's role ``role`` what it needs and nothing more: SELECT and
    INSERT on the published tables (no UPDATE, DELETE, TRUNCATE, no ownership: it can neither drop nor
    disable a trigger nor replace the trigger function), SELECT, INSERT, DELETE on the pending tables and
    UPDATE only of the three columns of ``pending`` the workflow updates (a preview is sealed: 0005), and the
    sequences of their ids. Run them as the owner role, after ``modelseek duel db upgrade``."""
    import re

    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,62}", role):
        raise InputError(f"not a plain role name: {role!r}", field="role")
    published = ", ".join(IMMUTABLE)
    return [f"REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {role};",
            f"GRANT USAGE ON SCHEMA public TO {role};",
            f"GRANT SELECT ON alembic_version TO {role};",
            f"GRANT SELECT, INSERT ON {published} TO {role};",
            f"GRANT SELECT, INSERT, DELETE ON {', '.join(PENDING)} TO {role};",
            f"GRANT UPDATE ({', '.join(PENDING_MUTABLE)}) ON pending TO {role};",
            f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {role};"]


# ------------------------------------------------------------------------------------------ migrations
def _version(conn) -> str | None:
    import sqlalchemy as sa  # lazy: sqlalchemy

    insp = sa.inspect(conn)
    # 'submissions' first: the migration commits both tables at once, so once it is visible the version
    # table is too (the other order could see a half-finished race as a legacy database)
    has_data = insp.has_table("submissions")
    if not insp.has_table("alembic_version"):
        if has_data:
            raise InputError("this leaderboard database predates schema versioning (modelseek < 0.3); export its "
                             "submissions and publish them into a new database", field="db")
        return None
    return conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar()


def schema_version(engine) -> str | None:
    """The database's schema revision (``None`` for an empty database)."""
    with engine.connect() as conn:
        return _version(conn)


def _alembic_upgrade(conn) -> None:
    from alembic import command  # lazy: alembic
    from alembic.config import Config  # lazy: alembic

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.attributes["connection"] = conn
    command.upgrade(cfg, "head")


def upgrade(engine, write_connection) -> tuple[str | None, str]:
    """Bring the database to :data:`SCHEMA_VERSION` once: ``(version before, version after)``.

    ``write_connection(conn)`` prepares a connection for a serialised write transaction (see storage)."""
    with engine.connect() as conn:
        before = _version(conn)
    if before == SCHEMA_VERSION:
        return before, before
    if before is not None and before > SCHEMA_VERSION:
        raise InputError(f"this leaderboard database has schema {before}, newer than this modelseek "
                         f"({SCHEMA_VERSION}); upgrade modelseek", field="db")
    import sqlalchemy as sa  # lazy: sqlalchemy

    with engine.connect() as conn:
        write_connection(conn)
        with conn.begin():
            if conn.dialect.name == "postgresql":
                conn.execute(sa.text("SELECT pg_advisory_xact_lock(:a, :b)"),
                             {"a": LOCK_NAMESPACE, "b": MIGRATION_LOCK})
            now = _version(conn)                 # another process may have upgraded while we waited
            if now != SCHEMA_VERSION:
                _alembic_upgrade(conn)
    return before, SCHEMA_VERSION
