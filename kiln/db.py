"""Engine, sessions and the one way to run a write: `with transaction(db): ...`."""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import pq
from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.exc import InvalidRequestError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import NullPool

from kiln import changes
from kiln.config import Settings


class SQLiteWriter:
    """The one writer of a SQLite database: taken fairly inside the process (a lock around
    write transactions keeps p99 low, DESIGN.md), then across processes with an flock on a
    file beside the database, so that `kiln serve` processes and `kiln worker`s queue for
    the write instead of failing with `database is locked` after busy_timeout."""

    def __init__(self, path: str | None) -> None:
        self._threads = threading.RLock()
        self._path = f"{path}-writer.lock" if path else None
        self._fd: int | None = None
        self._pid = 0
        self._depth = 0

    def acquire(self, timeout: float) -> None:
        """The writer within `timeout` seconds, or `database is locked` (a 503 with
        Retry-After): a writer held long elsewhere (a long job, a stuck `kiln worker`) must
        not hold request threads with it. A timeout of 0 never waits."""
        deadline = time.monotonic() + timeout
        if not self._threads.acquire(timeout=max(timeout, 0)):
            raise _locked()
        try:
            self._depth += 1
            if self._depth == 1 and self._path is not None:
                fd = self._file()
                while True:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        left = deadline - time.monotonic()
                        if left <= 0:
                            raise _locked() from None
                        time.sleep(min(_WRITER_POLL_S, left))
        except BaseException:
            self._depth -= 1
            self._threads.release()
            raise

    def release(self) -> None:
        try:
            self._depth -= 1
            if self._depth == 0 and self._fd is not None:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            self._threads.release()

    def _file(self) -> int:
        # A forked child shares its parent's open file and with it the parent's flock: it
        # opens its own.
        if self._fd is None or self._pid != os.getpid():
            assert self._path is not None
            self._fd = os.open(self._path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            self._pid = os.getpid()
        return self._fd


# How often a write waiting for another process's writer looks again.
_WRITER_POLL_S = 0.005


def _locked() -> OperationalError:
    return OperationalError("acquire the SQLite writer", {}, Exception("database is locked"))


_sqlite_writers: dict[str, SQLiteWriter] = {}
_sqlite_writers_lock = threading.Lock()


def _sqlite_writer(db: Session) -> SQLiteWriter:
    """The writer of the database file the session is bound to (one per file and process)."""
    path = db.get_bind().engine.url.database or ""
    writer = _sqlite_writers.get(path)
    if writer is None:
        with _sqlite_writers_lock:
            in_memory = path in ("", ":memory:") or path.startswith("file:")
            writer = _sqlite_writers.setdefault(path, SQLiteWriter(None if in_memory else path))
    return writer


# The engine's option that bounds a write's wait for the SQLite writer (seconds).
WRITER_TIMEOUT = "kiln_sqlite_writer_timeout"
SQLITE_BUSY_TIMEOUT_S = 30.0


# A statement's second run on a connection prepares it: parsing and planning a hot statement
# cost ten times its execution (a project with the caller's access level: 0.4 + 1 ms vs 0.1).
PG_PREPARE_THRESHOLD = 1
PG_RECYCLE_S = 1800


def make_engine(settings: Settings) -> Engine:
    url = settings.sqlalchemy_url
    if url.startswith("sqlite"):
        engine = create_engine(
            url,
            echo=settings.sql_echo,
            # A failed statement's message would carry its parameters (session CSRF tokens,
            # runners tokens, upload secrets) into the logs.
            hide_parameters=not settings.sql_echo,
            connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_S},
            pool_size=settings.pool_limits[0],
            max_overflow=settings.pool_limits[1],
            pool_timeout=settings.db_pool_timeout,
            execution_options={WRITER_TIMEOUT: settings.sqlite_writer_timeout},
        )
        _configure_sqlite(engine)
        changes.watch(engine)
        return engine
    engine = create_engine(
        url,
        echo=settings.sql_echo,
        hide_parameters=not settings.sql_echo,
        pool_size=settings.pool_limits[0],
        max_overflow=settings.pool_limits[1],
        pool_timeout=settings.db_pool_timeout,
        # No ping per checkout (a round trip per request): a connection the server dropped
        # fails its first statement, which invalidates the whole pool (SQLAlchemy's
        # disconnect handling), so one request sees the error and the next gets a fresh one.
        # Recycling keeps connections younger than any idle timeout between here and there.
        pool_recycle=PG_RECYCLE_S,
        connect_args={"prepare_threshold": PG_PREPARE_THRESHOLD},
    )
    _keep_prepared_statements(engine)
    changes.watch(engine)
    return engine


def _keep_prepared_statements(engine: Engine) -> None:
    """Run statements a connection has seen before as server-side prepared statements.

    psycopg prepares a statement once it has run `prepare_threshold` times on a connection,
    but its `Connection.rollback()` forgets every prepared statement and every count, and
    every read request ends in a rollback (a session's close): nothing would ever run
    prepared, and each statement would be parsed and planned on every request. The same
    ROLLBACK sent through libpq ends the transaction alike and keeps them; schema changes
    (DROP, ALTER) still clear them, as psycopg does for the statements it runs itself."""

    def do_rollback(dbapi_connection: Any) -> None:
        pgconn = dbapi_connection.pgconn
        if pgconn.transaction_status == pq.TransactionStatus.IDLE:
            return
        result = pgconn.exec_(b"ROLLBACK")
        if pgconn.status == pq.ConnStatus.BAD:
            # As psycopg's own: a lost connection is an OperationalError (kiln answers 503).
            raise psycopg.OperationalError(pgconn.get_error_message(encoding="utf-8") or "connection lost")
        if result.status != pq.ExecStatus.COMMAND_OK:
            raise psycopg.errors.error_from_result(result, encoding=dbapi_connection.info.encoding)

    engine.dialect.do_rollback = do_rollback  # type: ignore[method-assign]


def make_engine_unpooled(url: str) -> Engine:
    """For one-off admin work (creating databases) where holding connections would hurt."""
    return create_engine(url, poolclass=NullPool, isolation_level="AUTOCOMMIT")


def _configure_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Let SQLAlchemy's "begin" event decide how transactions start (pysqlite recipe).
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute(f"PRAGMA busy_timeout={int(SQLITE_BUSY_TIMEOUT_S * 1000)}")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        # Straight to the driver: every request begins one, and SQLAlchemy's execute path
        # costs more than SQLite's BEGIN. What the database was as the snapshot began tells
        # reused rows (queries.reads) whether this transaction's reads may be kept.
        begin = "BEGIN IMMEDIATE" if conn.get_execution_options().get("kiln_write") else "BEGIN"
        clock = changes.clock_of(engine)
        if clock is not None:
            clock.began(conn)
        conn.connection.driver_connection.execute(begin)


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(read_bind(engine), expire_on_commit=False, autoflush=True)


def read_bind(engine: Engine) -> Engine:
    """How kiln reads: on PostgreSQL outside any transaction (autocommit): a transaction's
    BEGIN and the ROLLBACK that ends every read cost two round trips, each the price of a
    cheap statement, and bought nothing. At READ COMMITTED every statement takes its own
    snapshot, in a transaction or not, so reads see the same rows; each write still runs in
    one transaction (`transaction` below). SQLite keeps its read transactions: one snapshot
    for all of a request's statements, at no round trip."""
    return engine if engine.dialect.name == "sqlite" else engine.execution_options(isolation_level=AUTOCOMMIT)


AUTOCOMMIT = "AUTOCOMMIT"


def is_sqlite(db: Session) -> bool:
    return db.get_bind().dialect.name == "sqlite"


@contextmanager
def transaction(db: Session, *, heard: bool = True) -> Iterator[Session]:
    """Commit on success, roll back on any error. Nested calls join the outer unit of work.

    On PostgreSQL a write is answered once this process has heard its commit notified
    (kiln.changes): by then every node's listener has it, and reuses nothing it changed.
    `heard=False`: bookkeeping nobody waits on (a token's last use)."""
    depth = db.info.get("tx_depth", 0)
    if depth:
        db.info["tx_depth"] = depth + 1
        try:
            yield db
        finally:
            db.info["tx_depth"] = depth
        return
    sqlite = is_sqlite(db)
    if sqlite:
        bind = db.get_bind()
        _sqlite_writer(db).acquire(bind.get_execution_options().get(WRITER_TIMEOUT, SQLITE_BUSY_TIMEOUT_S))
    try:
        if db.in_transaction():
            # End the read transaction the request opened (authentication) so the write
            # starts from a fresh snapshot instead of failing to upgrade.
            db.commit()
        db.connection(execution_options=_write_options(db))
        db.info["tx_depth"] = 1
        try:
            yield db
            written = changes.writing(db.connection())
            # A session on a connection (the tests' rolled-back transaction) never commits.
            bind = db.get_bind()
            clock = changes.clock_of(bind)
            echo = clock.echo() if clock and written and heard and isinstance(bind, Engine) else None
            if echo is not None:
                db.execute(_NOTIFY, {"channel": changes.CHANNEL, "payload": echo})
            db.commit()
            if clock is not None and written:
                clock.wrote()
            if clock is not None and echo is not None:
                clock.heard(echo)
        except BaseException:
            db.rollback()
            raise
        finally:
            db.info["tx_depth"] = 0
    finally:
        if sqlite:
            _sqlite_writer(db).release()


def _write_options(db: Session) -> dict[str, Any]:
    """A write's connection options: on PostgreSQL, a transaction again where the session reads
    in autocommit (make_sessionmaker), at READ COMMITTED, which kiln's writes are built for
    (row locks, compare-and-swap). A session bound to a connection (the tests' rolled-back
    transaction) keeps that connection's."""
    bind = db.get_bind()
    if isinstance(bind, Engine) and bind.get_execution_options().get("isolation_level") == AUTOCOMMIT:
        return {"kiln_write": True, "isolation_level": "READ COMMITTED"}
    return {"kiln_write": True}


@contextmanager
def try_transaction(db: Session) -> Iterator[bool]:
    """`transaction`, for a write that would rather not happen than wait for the writer:
    yields False, and nothing is written, when the writer is busy right now (SQLite: another
    thread or process holds the writer lock; PostgreSQL: a row the write changes is locked by
    another transaction, which ends the write and rolls it back). For bookkeeping the next
    request does as well (a token's last use), on paths that must never wait."""
    if db.info.get("tx_depth", 0):
        with transaction(db):
            yield True
        return
    if is_sqlite(db):
        writer = _sqlite_writer(db)
        try:
            writer.acquire(0)
            free = True
        except OperationalError:  # another thread or process holds it right now
            free = False
        if not free:  # outside the handler: an error in the caller's block is not chained to it
            yield False
            return
        try:
            # Re-entered by `transaction` (the lock is this thread's already): no wait there.
            with transaction(db, heard=False):
                yield True
        finally:
            writer.release()
        return
    try:
        with transaction(db, heard=False):
            db.execute(_NO_LOCK_WAIT)
            yield True
            # SET LOCAL lasts until the outermost transaction ends: where this write is a
            # savepoint of a longer one, later statements of that one wait for locks again.
            db.execute(_LOCK_WAIT)
    except OperationalError as exc:
        if not isinstance(exc.orig, psycopg.errors.LockNotAvailable):
            raise


# A writer's own notification beside its triggers', to hear its commit (kiln.changes).
_NOTIFY = text("SELECT pg_notify(:channel, :payload)")
# PostgreSQL's shortest wait for a lock (0 would mean forever), for this transaction only.
_NO_LOCK_WAIT = text("SET LOCAL lock_timeout = 1")
_LOCK_WAIT = text("SET LOCAL lock_timeout = DEFAULT")


# What a database says when it has no connection or no write for us right now (SQLite's
# busy and locked, PostgreSQL's connection limits and restarts): retry later, not a bug.
_BUSY = (
    "database is locked",
    "database table is locked",
    "database is busy",
    "too many clients",
    "remaining connection slots",
    "the database system is starting up",
    "the database system is shutting down",
    "terminating connection due to administrator command",
    "connection refused",
    "could not connect",
)


# PostgreSQL's answers to contention that passes: a lock not had within the wait allowed,
# a deadlock broken by ending this transaction.
_CONTENDED = (psycopg.errors.LockNotAvailable, psycopg.errors.DeadlockDetected)


def database_unavailable(exc: Exception) -> bool:
    """The pool had no connection in time, or the database could not take the statement now."""
    if isinstance(exc, PoolTimeout):
        return True
    if isinstance(exc, OperationalError):
        if exc.connection_invalidated or isinstance(exc.orig, _CONTENDED):
            return True
        message = str(exc.orig).lower()
        return any(marker in message for marker in _BUSY)
    return False


def fresh(db: Session, row: Any, missing: Exception) -> None:
    """The row as it is now, locked until the transaction ends (PostgreSQL; on SQLite the
    writer is the lock); `missing` when it is gone."""
    try:
        db.refresh(row, with_for_update=True)
    except InvalidRequestError:
        raise missing from None
