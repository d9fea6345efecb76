"""The job store: an embedded SQLite database of fine-tuning jobs and their results.

One row per job (primary key = the job's key, a hash of task data, model, recipe and seed). A job's
result or error is written in one transaction as soon as the job finishes (WAL journal, synchronous=FULL),
so a crashed or killed grid loses at most the jobs in flight. Every dispatch is also logged in
``attempts`` (the audit trail that shows each job ran to completion exactly once).

Several processes may drive one grid on one store: a job is *claimed* before it runs (:meth:`JobStore.claim`,
one ``BEGIN IMMEDIATE`` transaction: SQLite's write lock makes check-and-claim atomic across processes), so
each job runs once and extra workers share the grid instead of repeating it. A claim names its owner (host,
pid and a per-store token) and carries a heartbeat that the owner refreshes while it runs
(:meth:`JobStore.heartbeat`); a claim whose owner is a dead process on this host, or whose heartbeat is older
than the lease, is stale and may be taken over (a worker killed mid-job does not block the grid). Any number
of readers may watch the store.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import logging
import os
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from ...core.errors import InputError, ModelseekError, OutputError
from ...core.io import file_kind

log = logging.getLogger(__name__)

SCHEMA_VERSION = 2
"""2: every job row carries ``checksum`` (sha256 over its key and every stored value); a version-1 store is
migrated once on opening (its rows summed as they are)."""

#: the columns a job row's checksum covers, in order (everything that is read back as the job's outcome)
_SUMMED = ("key", "task_id", "model_id", "model_source", "recipe", "seed", "task_fingerprint", "status", "f1",
           "accuracy", "val_f1", "best_val_loss", "epochs", "best_epoch", "wall_s", "error", "result")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS recipes (digest TEXT PRIMARY KEY, recipe TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS jobs (
    key TEXT PRIMARY KEY,
    task_id TEXT NOT NULL,
    model_id TEXT NOT NULL,
    model_source TEXT NOT NULL,
    recipe TEXT NOT NULL,
    seed INTEGER NOT NULL,
    task_fingerprint TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('done', 'failed')),
    f1 REAL, accuracy REAL, val_f1 REAL, best_val_loss REAL,
    epochs INTEGER, best_epoch INTEGER, wall_s REAL,
    error TEXT, result TEXT,
    attempts INTEGER NOT NULL DEFAULT 1,
    finished_at REAL NOT NULL,
    host TEXT,
    checksum TEXT
);
CREATE INDEX IF NOT EXISTS jobs_task_model ON jobs (task_id, model_id, recipe, seed);
CREATE TABLE IF NOT EXISTS claims (
    key TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    attempt INTEGER,
    claimed_at REAL NOT NULL,
    heartbeat REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS attempts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL,
    pid INTEGER NOT NULL,
    started_at REAL NOT NULL,
    finished_at REAL,
    status TEXT
);
"""


@dataclass(frozen=True)
class JobRecord:
    """One finished (or failed) job as stored."""

    key: str
    task_id: str
    model_id: str
    recipe: str
    seed: int
    status: str
    f1: float | None
    accuracy: float | None
    epochs: int | None
    best_epoch: int | None
    wall_s: float | None
    error: str | None
    attempts: int
    result: dict[str, Any] | None


#: JobRecord's fields in the order `records` selects them (the stored result is decoded apart)
_STORED = tuple(f.name for f in fields(JobRecord) if f.name != "result")


def _rowid(cur: sqlite3.Cursor) -> int:
    """The rowid an INSERT just made (sqlite3 types ``lastrowid`` optional: None before any INSERT)."""
    if cur.lastrowid is None:
        raise RuntimeError("INSERT did not report a rowid")
    return cur.lastrowid


#: Seconds without a heartbeat after which another worker may take a claim over (the owner refreshes its claims
#: every ``lease_s / 4`` while it runs, so only a dead, frozen or unreachable worker misses it).
LEASE_S = 300.0


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists on this host."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


class _Damaged(InputError):
    """A file that is not a readable modelseek job store (a cache rebuilds it, a grid's store is an error)."""


def _checksum(values: Iterable[Any]) -> str:
    """sha256 over a job row's :data:`_SUMMED` values as SQLite returns them (``repr`` is exact for floats)."""
    return hashlib.sha256(repr(tuple(values)).encode("utf-8", "backslashreplace")).hexdigest()


def _store_error(path: Path, exc: sqlite3.Error) -> ModelseekError | None:
    """A full disk or a read-only store as an :class:`OutputError` naming the store (None: another problem)."""
    code = getattr(exc, "sqlite_errorcode", None)
    text = str(exc)
    if code == getattr(sqlite3, "SQLITE_FULL", 13) or "disk is full" in text:
        return OutputError("cannot write the job store: no space left on device (the disk is full)", path=path,
                           errno=errno.ENOSPC)
    if code == getattr(sqlite3, "SQLITE_READONLY", 8) or "readonly database" in text:
        return OutputError("cannot write the job store: read-only (file system or permissions)", path=path,
                           errno=errno.EROFS)
    return None


class JobStore:
    """A SQLite job store at ``path`` (created on first use). ``lease_s``: see :data:`LEASE_S`.

    Every job row carries a checksum over its key and values, checked when the store is opened: a row that fails
    it (a store edited by hand, a damaged page) is reported once (a logged warning), copied aside with the whole
    store (``NAME.damaged-TIME-PID``) and dropped, so its job runs again. ``rebuild`` (caches such as the scores
    beside the feature cache): a file that is not a readable store at all is moved aside the same way and a new
    store started; without it (a fine-tuning grid's store, hours of work) that is a located error. A full disk is
    an :class:`~modelseek.core.errors.OutputError` saying so. ``recomputed`` lists the keys dropped on opening and
    ``set_aside`` where the damaged store was kept (None when nothing was)."""

    def __init__(self, path: str | os.PathLike, lease_s: float = LEASE_S, rebuild: bool = False) -> None:
        if not lease_s > 0:
            raise InputError(f"the lease must be > 0 seconds, got {lease_s}", field="lease_s")
        self.lease_s = float(lease_s)
        self.host, self.pid = socket.gethostname(), os.getpid()
        self.owner = f"{self.host}:{self.pid}:{uuid.uuid4().hex[:12]}"
        self.path = Path(path)
        self.recomputed: list[str] = []
        self.set_aside: Path | None = None
        if self.path.is_dir():
            raise InputError("is a directory, expected a job store file", path=self.path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"cannot make the job store's folder: {exc.strerror or exc}", path=self.path) from None
        self._refuse_special()
        try:
            try:
                self._open_checked()
            except _Damaged as exc:
                if not rebuild:
                    raise
                self._close_quietly()
                self._move_aside(exc.message)
                self._open_checked()
        except BaseException:
            self._close_quietly()  # a store that failed to open holds no file (a full disk can be unmounted)
            raise

    def _refuse_special(self) -> None:
        """A FIFO, device or socket where the store goes: SQLite would block reading it (a FIFO) or write into a
        device. Refused by its kind, opening nothing."""
        import stat


        try:
            mode = os.stat(self.path).st_mode
        except FileNotFoundError:
            return
        except OSError as exc:
            raise InputError(f"cannot open the job store: {exc.strerror or exc}", path=self.path) from None
        if not stat.S_ISREG(mode):
            raise InputError(f"is {file_kind(mode)}, expected a job store file", path=self.path)

    def _close_quietly(self) -> None:
        db = getattr(self, "_db", None)
        if db is not None:
            with contextlib.suppress(Exception):
                db.close()

    def _open_checked(self) -> None:
        """Open (retrying a fresh store that another process is creating), migrate, verify every row."""
        deadline = time.monotonic() + 30.0
        while True:
            try:
                row = self._open()
                break
            except sqlite3.OperationalError as exc:
                # Two processes opening a new store at once: the switch of a fresh file to WAL (and the first
                # schema write) can answer "database is locked" at once, without SQLite's busy handler. The
                # store is fine; wait and try again, as the busy timeout would.
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise _Damaged(f"not a modelseek job store ({exc})", path=self.path) from None
                with contextlib.suppress(Exception):
                    self._db.close()
                time.sleep(0.05)
        try:
            if row is None:
                self._db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
            elif str(row[0]) == "1":
                self._migrate_v1()
            elif str(row[0]) != str(SCHEMA_VERSION):
                raise _Damaged(f"job store schema {row[0]!r}, this modelseek reads {SCHEMA_VERSION}", path=self.path)
            self._verify()
        except sqlite3.Error as exc:
            raise self._error(exc) from None
        except UnicodeDecodeError:
            raise _Damaged("damaged job store (text that is not UTF-8); restore it or start a new store file",
                           path=self.path) from None

    def _error(self, exc: sqlite3.Error) -> ModelseekError:
        return _store_error(self.path, exc) or _Damaged(f"not a modelseek job store ({exc})", path=self.path)

    def _migrate_v1(self) -> None:
        """Schema 1 -> 2 (once, under the write lock): add the checksum column and sum every row as it is."""
        with self._tx() as db:
            version = db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
            if version is not None and str(version[0]) == "1":
                cols = {r[1] for r in db.execute("PRAGMA table_info(jobs)")}
                if "checksum" not in cols:
                    db.execute("ALTER TABLE jobs ADD COLUMN checksum TEXT")
                for row in db.execute(f"SELECT {', '.join(_SUMMED)} FROM jobs").fetchall():
                    db.execute("UPDATE jobs SET checksum=? WHERE key=?", (_checksum(row), row[0]))
                db.execute("UPDATE meta SET value=? WHERE key='schema'", (str(SCHEMA_VERSION),))

    def _verify(self) -> None:
        """Drop the rows whose checksum fails (after keeping a copy of the store), reporting them once."""
        rows = self._db.execute(f"SELECT {', '.join(_SUMMED)}, checksum FROM jobs").fetchall()
        bad = [(r[0], r[-1]) for r in rows if _checksum(r[:-1]) != r[-1]]
        if not bad:
            return
        aside = self._copy_aside()
        with self._tx() as db:  # only rows still as read (another process may have recomputed one since)
            db.executemany("DELETE FROM jobs WHERE key=? AND checksum IS ?", bad)
        self.recomputed = sorted(k for k, _ in bad)
        log.warning("%s: %d stored result(s) fail their checksum (edited or damaged: %s); they will be recomputed "
                    "(the store as it was is kept in %s)", self.path, len(bad),
                    ", ".join(self.recomputed[:3]) + (" ..." if len(bad) > 3 else ""), aside)

    def _aside_path(self) -> Path:
        return self.path.with_name(f"{self.path.name}.damaged-{time.strftime('%Y%m%dT%H%M%S')}-{self.pid}")

    def _copy_aside(self) -> Path:
        """A consistent copy of the open store beside it (SQLite's backup API: the WAL included)."""
        aside = self._aside_path()
        dst = sqlite3.connect(str(aside))
        try:
            self._db.backup(dst)
        except sqlite3.Error as exc:
            raise self._error(exc) from None
        finally:
            dst.close()
        self.set_aside = aside
        return aside

    def _move_aside(self, why: str) -> None:
        """Move a file that is not a readable store (and its WAL files) aside, so a new store starts there."""
        aside = self._aside_path()
        try:
            for suffix in ("-wal", "-shm", ""):
                src = Path(str(self.path) + suffix)
                if src.exists():
                    os.replace(src, str(aside) + suffix)
        except OSError as exc:
            raise InputError(f"{why}; cannot move it aside: {exc.strerror or exc}", path=self.path) from None
        self.set_aside = aside
        log.warning("%s: %s; moved aside to %s and started again (its results will be recomputed)", self.path,
                    why, aside)

    def _open(self):
        """Connect, switch to WAL, check the file and create the schema; the stored schema version's row. A
        locked database is raised as it is (the caller retries); other problems are located errors."""
        try:
            self._db = sqlite3.connect(str(self.path), timeout=30.0, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            # A damaged page or index makes lookups by key disagree with each other (a job both "not done"
            # and "done"), so a grid would wait forever for it: check the file's structure once on opening
            # (integrity_check, unlike quick_check, also compares indexes with their tables; milliseconds for a
            # store of thousands of jobs).
            bad = [ln.strip() for r in self._db.execute("PRAGMA integrity_check(3)") for ln in str(r[0]).splitlines()
                   if ln.strip() and not ln.startswith("***")][:3]
            if bad != ["ok"]:
                raise _Damaged(f"damaged job store (SQLite integrity_check: {'; '.join(bad)}); restore it or start "
                                 f"a new store file", path=self.path)
            self._db.executescript(_SCHEMA)
            return self._db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc):
                raise
            raise self._error(exc) from None
        except sqlite3.DatabaseError as exc:
            raise self._error(exc) from None
        except UnicodeDecodeError:  # damaged text in the schema or a row (sqlite3 decodes it as UTF-8)
            raise _Damaged("damaged job store (text that is not UTF-8); restore it or start a new store "
                             "file", path=self.path) from None
        except OSError as exc:  # a folder above the file is a file, or not writable
            raise InputError(f"cannot open the job store: {exc.strerror or exc}", path=self.path) from None

    # ------------------------------------------------------------------------------------------ writes
    @contextlib.contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (BEGIN IMMEDIATE ... COMMIT, rolled back on error); a full disk or a read-only
        store is an :class:`~modelseek.core.errors.OutputError` saying so."""
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            err = _store_error(self.path, exc)
            if err is None:
                raise
            raise err from None

    def add_recipe(self, digest: str, recipe: dict[str, Any]) -> None:
        with self._tx() as db:
            db.execute("INSERT OR IGNORE INTO recipes VALUES (?, ?)", (digest, json.dumps(recipe, sort_keys=True)))

    def claim(self, key: str, retry_attempts: int | None = None) -> int | None:
        """Claim job ``key`` for this store's owner and log the dispatch, atomically; returns the attempt id
        given back to :meth:`finish`, or None when the job is not to be run here: already done, failed (unless
        ``retry_attempts`` is its stored number of attempts: a retry asked for, and not yet made by another
        worker), or claimed by a live worker. A stale claim (see the module doc) is taken over."""
        now = time.time()
        with self._tx() as db:
            row = db.execute("SELECT status, attempts FROM jobs WHERE key=?", (key,)).fetchone()
            if row is not None and (row[0] == "done" or retry_attempts is None or row[1] != retry_attempts):
                return None
            held = db.execute("SELECT owner, host, pid, heartbeat FROM claims WHERE key=?", (key,)).fetchone()
            if held is not None and held[0] != self.owner and not self._stale(held[1], held[2], held[3], now=now):
                return None
            cur = db.execute("INSERT INTO attempts (key, pid, started_at) VALUES (?, ?, ?)", (key, self.pid, now))
            attempt = _rowid(cur)
            db.execute("INSERT OR REPLACE INTO claims VALUES (?, ?, ?, ?, ?, ?, ?)",
                       (key, self.owner, self.host, self.pid, attempt, now, now))
        return attempt

    def _stale(self, host: str, pid: int, heartbeat: float, now: float) -> bool:
        return now - heartbeat > self.lease_s or (host == self.host and not pid_alive(int(pid)))

    def release(self) -> None:
        """Drop every claim this store's owner still holds (jobs it claimed but did not finish)."""
        with self._tx() as db:
            db.execute("DELETE FROM claims WHERE owner=?", (self.owner,))

    @contextlib.contextmanager
    def heartbeat(self, interval: float | None = None) -> Iterator[None]:
        """Refresh this owner's claims every ``interval`` seconds (default a quarter of the lease) from a
        background thread with its own connection, for as long as the block runs; release them after."""
        stop = threading.Event()
        every = self.lease_s / 4 if interval is None else interval

        def beat() -> None:
            db = sqlite3.connect(str(self.path), timeout=30.0, isolation_level=None)
            try:
                while not stop.wait(every):
                    with contextlib.suppress(sqlite3.OperationalError):  # locked past the timeout: next beat
                        db.execute("UPDATE claims SET heartbeat=? WHERE owner=?", (time.time(), self.owner))
            finally:
                db.close()

        thread = threading.Thread(target=beat, name="jobstore-heartbeat", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
            self.release()

    def claims(self) -> list[dict[str, Any]]:
        """The claims held now: key, owner, host, pid, attempt, claimed_at, heartbeat."""
        cols = ("key", "owner", "host", "pid", "attempt", "claimed_at", "heartbeat")
        return [dict(zip(cols, r)) for r in self._db.execute(f"SELECT {', '.join(cols)} FROM claims ORDER BY key")]

    def start(self, key: str) -> int:
        """Log that a job was dispatched, without claiming it; returns the attempt id given back to
        :meth:`finish` (:meth:`claim` is the way for grids)."""
        with self._tx() as db:
            cur = db.execute("INSERT INTO attempts (key, pid, started_at) VALUES (?, ?, ?)",
                             (key, os.getpid(), time.time()))
            return _rowid(cur)

    def finish(self, *, key: str, task_id: str, model_id: str, model_source: str, recipe: str, seed: int,
               task_fingerprint: str, status: str, result: dict[str, Any] | None = None,
               error: str | None = None, attempt: int | None = None, host: str | None = None) -> bool:
        """Write a finished job in one transaction. A job already ``done`` is never overwritten (returns
        False); a ``failed`` row is replaced by a new outcome, counting the attempts."""
        if status not in ("done", "failed"):
            raise ValueError(f"status must be 'done' or 'failed', got {status!r}")
        r = result or {}
        with self._tx() as db:
            row = db.execute("SELECT status, attempts FROM jobs WHERE key=?", (key,)).fetchone()
            written = row is None or row[0] != "done"
            if written:
                db.execute(
                    "INSERT OR REPLACE INTO jobs (key, task_id, model_id, model_source, recipe, seed, "
                    "task_fingerprint, status, f1, accuracy, val_f1, best_val_loss, epochs, best_epoch, wall_s, "
                    "error, result, attempts, finished_at, host) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (key, task_id, model_id, model_source, recipe, int(seed), task_fingerprint, status,
                     r.get("f1"), r.get("accuracy"), r.get("val_f1"), _finite(r.get("best_val_loss")),
                     r.get("epochs"), r.get("best_epoch"), r.get("wall_s"), error,
                     json.dumps(r) if result is not None else None, (row[1] + 1) if row else 1, time.time(),
                     host or socket.gethostname()))
                stored = db.execute(f"SELECT {', '.join(_SUMMED)} FROM jobs WHERE key=?", (key,)).fetchone()
                db.execute("UPDATE jobs SET checksum=? WHERE key=?", (_checksum(stored), key))  # as SQLite keeps it
            if attempt is not None:
                db.execute("UPDATE attempts SET finished_at=?, status=? WHERE id=?",
                           (time.time(), status if written else "duplicate", attempt))
            db.execute("DELETE FROM claims WHERE key=? AND owner=?", (key, self.owner))
        return written

    # ------------------------------------------------------------------------------------------ reads
    def states(self, keys: Iterable[str] | None = None) -> dict[str, tuple[str, int]]:
        """``{key: (status, attempts)}`` for stored jobs (among ``keys`` if given)."""
        rows = self._db.execute("SELECT key, status, attempts FROM jobs").fetchall()
        wanted = None if keys is None else set(keys)
        return {k: (s, int(a)) for k, s, a in rows if wanted is None or k in wanted}

    def statuses(self, keys: Iterable[str] | None = None) -> dict[str, str]:
        """``{key: 'done' | 'failed'}`` for stored jobs (among ``keys`` if given)."""
        rows = self._db.execute("SELECT key, status FROM jobs").fetchall()
        if keys is None:
            return dict(rows)
        wanted = set(keys)
        return {k: s for k, s in rows if k in wanted}

    def get(self, key: str) -> JobRecord | None:
        recs = self.records([key])
        return recs[0] if recs else None

    def records(self, keys: Iterable[str] | None = None) -> list[JobRecord]:
        sql = f"SELECT {', '.join(_SUMMED)}, checksum, attempts FROM jobs ORDER BY finished_at, key"
        wanted = None if keys is None else set(keys)
        out = []
        for row in self._db.execute(sql).fetchall():
            if wanted is not None and row[0] not in wanted:
                continue
            if _checksum(row[:len(_SUMMED)]) != row[len(_SUMMED)]:  # changed since the store was opened
                raise InputError(f"job {row[0]!r}: the stored result fails its checksum (edited or damaged while in "
                                 f"use); run again to recompute it", path=self.path, field="result")
            values = {**dict(zip(_SUMMED, row)), "attempts": row[-1]}
            out.append(JobRecord(**{f: values[f] for f in _STORED}, result=self._result(row[0], values["result"])))
        return out

    def _result(self, key: str, text: Any) -> Any:
        """A job's stored result (JSON), or a located error when the store was damaged."""
        if not text:
            return None
        try:
            return json.loads(text)
        except (TypeError, ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError
            raise InputError(f"job {key!r}: the stored result is not valid JSON ({exc}); the store is damaged — "
                             f"rerun that job with a new store file", path=self.path,
                             field="result") from None

    def attempts(self) -> list[dict[str, Any]]:
        """The dispatch log: key, pid, started_at, finished_at, status (None = lost in flight)."""
        rows = self._db.execute("SELECT key, pid, started_at, finished_at, status FROM attempts ORDER BY id").fetchall()
        return [dict(zip(("key", "pid", "started_at", "finished_at", "status"), r)) for r in rows]

    def counts(self) -> dict[str, int]:
        return dict(self._db.execute("SELECT status, COUNT(*) FROM jobs GROUP BY status").fetchall())

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> JobStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _finite(x: Any) -> Any:
    import math

    return x if x is None or (isinstance(x, (int, float)) and math.isfinite(x)) else None
