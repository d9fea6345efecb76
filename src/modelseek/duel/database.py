"""The leaderboard database's connection layer: URLs (a SQLite file path or a SQLAlchemy URL), opening an engine
(SQLite pragmas: WAL, busy timeout, synchronous commits, ``BEGIN IMMEDIATE`` for writes), migrations and the
integrity check, and retries of transactions that failed on a busy database, a serialization failure or a
deadlock (randomised back-off)."""

from __future__ import annotations

import random
import re
import time
from pathlib import Path

from ..core.errors import InputError
from . import chain, schema

RETRIES = 30
_RETRY_SQLSTATES = {"40001", "40P01", "55P03"}   # serialization failure, deadlock, lock not available


def _sqlalchemy():
    try:
        import sqlalchemy as sa  # lazy: sqlalchemy
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
        full = "postgresql+psycopg://" + text.split("://", 1)[1]
        try:                                    # a malformed URL (a port that is no number) is one line
            _sqlalchemy().engine.make_url(full)
        except (ValueError, TypeError, _sqlalchemy().exc.ArgumentError) as exc:
            # the parser's own words may quote a piece of an unescaped password: not shown
            what = "its port is not a number" if "int()" in str(exc) else "not postgresql://USER:PASSWORD@HOST:PORT/DB"
            raise InputError(f"malformed database URL ({what}; escape '@', ':' and '/' in a password as %40, %3A, "
                             "%2F)", path=mask_secrets(text), field="db") from None
        return full
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


#: a password in a URL's userinfo (``scheme://user:PASSWORD@host``)
_USERINFO = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://[^/\s@:]*:)\S*(@)")   # (to the last @ of the word)
#: secret parameters of a URL's query or a libpq connection string (``?user=u&password=PASSWORD``, ``sslpassword=``)
_SECRET_PARAM = re.compile(r"((?:^|[?&;\s])[A-Za-z_]*(?:password|passwd|pwd|secret|token|passfile|api_?key)=)"
                           r"(?:(?!:\s)[^&;\s#])*", re.IGNORECASE)


def mask_secrets(text: str) -> str:
    """``text`` with every password in it masked (``***``), in all the forms a database URL carries one: the
    userinfo (``postgresql://lb_app:***@db/lb``) and query or connection-string parameters (``?password=***``,
    ``sslpassword=***``). Works on any text (a URL, a message quoting one, a malformed URL)."""
    return _SECRET_PARAM.sub(r"\1***", _USERINFO.sub(r"\1***\2", str(text)))


def shown_url(url: str) -> str:
    """``url`` without its secrets (for messages): :func:`mask_secrets`."""
    return mask_secrets(url)


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
            cur.execute("PRAGMA synchronous=FULL")          # a commit is on disk when it returns
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


def verify_database(url: str | Path, key: bytes | None = None) -> tuple[list[str], tuple[int, str] | None, list[str]]:
    """``(problems, (models on the board, head hash), every chain hash)`` of the database at ``url``
    (``modelseek duel db verify``), without reading its configuration (altered meta rows are one of the things
    found). The engine's own check (:func:`storage_check`) runs first: a damaged file is reported as such. A SQLite
    file that does not exist is refused (nothing is created)."""
    sa = _sqlalchemy()
    full = database_url(url)
    path = sqlite_path(full)
    if path is not None and not Path(path).is_file():     # verifying must not create a board
        raise InputError("no such database file (db verify checks an existing board)", path=path, field="db")
    engine = open_engine(full)
    try:
        damaged = storage_check(engine)
        if damaged:
            return damaged, None, []
        if schema.schema_version(engine) != schema.SCHEMA_VERSION:
            _retry_locked(lambda: schema.upgrade(engine, prepare_write))
        _, t = schema.tables(sa)
        with engine.connect() as c, c.begin():
            top = chain.head(c, t, sa)
            if top is not None:             # (models on the board: chained submissions less withdrawals, head hash)
                ch, wd = t["chain"], t["withdrawals"]
                n = c.execute(sa.select(sa.func.count()).select_from(ch).where(ch.c.submission_id.is_not(None))
                              ).scalar_one() - c.execute(sa.select(sa.func.count()).select_from(wd)).scalar_one()
                top = (int(n), top[1])
            return (chain.verify(c, t, sa, key if key is not None else chain.operator_key()), top,
                    [h for h, in c.execute(sa.select(t["chain"].c.hash)).all()])
    except sa.exc.DBAPIError as exc:
        raise InputError(f"cannot use the database: {_reason(exc)}", path=shown_url(full), field="db") from None
    finally:
        engine.dispose()


def sqlite_path(url: str) -> str | None:
    """The file of a SQLite URL from :func:`database_url` (``None``: in memory, a ``file:`` URI or another
    dialect)."""
    if not url.startswith("sqlite"):
        return None
    path = url.split("://", 1)[1][1:].split("?", 1)[0]
    return None if not path or path == ":memory:" or path.startswith("file:") else path


#: PostgreSQL's amcheck functions (contrib) verify each B-tree index of the board's tables when installed
_PG_INDEXES = ("SELECT c.oid::regclass::text FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
               "JOIN pg_am a ON a.oid = c.relam JOIN pg_class r ON r.oid = i.indrelid "
               "JOIN pg_namespace n ON n.oid = r.relnamespace WHERE a.amname = 'btree' AND n.nspname = 'public'")


def storage_check(engine) -> list[str]:
    """The database engine's own integrity check: SQLite's ``PRAGMA integrity_check`` (every line it reports), and
    on PostgreSQL amcheck's ``bt_index_check`` of every index when the extension is installed (``CREATE EXTENSION
    amcheck``, as the owner); empty when intact."""
    sa = _sqlalchemy()
    with engine.connect() as c:
        if engine.dialect.name == "sqlite":
            try:
                lines = [str(r[0]) for r in c.exec_driver_sql("PRAGMA integrity_check").all()]
            except sa.exc.DBAPIError as exc:
                return [f"SQLite's integrity check failed: {_reason(exc)}"]
            return [] if lines == ["ok"] else [f"SQLite's integrity check: {line}" for line in lines[:20]]
        if engine.dialect.name == "postgresql":
            if c.execute(sa.text("SELECT 1 FROM pg_extension WHERE extname = 'amcheck'")).first() is None:
                return []
            out = []
            for (index,) in c.execute(sa.text(_PG_INDEXES)).all():
                try:
                    with c.begin_nested():
                        c.execute(sa.text("SELECT bt_index_check(CAST(:i AS regclass))"), {"i": index})
                except sa.exc.DBAPIError as exc:
                    out.append(f"PostgreSQL's amcheck: index {index}: {_reason(exc)}")
            return out
    return []


def _retryable(exc: Exception) -> bool:
    orig = getattr(exc, "orig", exc)
    if getattr(orig, "sqlstate", None) in _RETRY_SQLSTATES:
        return True
    msg = str(orig).lower()
    return "database is locked" in msg or "database table is locked" in msg or "database is busy" in msg
