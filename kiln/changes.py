"""Whether the database may have changed since a moment, asked without a round trip: what lets
a read reuse the rows an earlier request read (queries.reads.run) while nothing has changed.

A clock's stamp is equal at two moments only if no write was committed anywhere in between:
by this process, another process or another node. It says nothing about which rows changed,
so any write makes every reused row be read again: a revoked token, a removed member or a
changed setting is seen by the next request on every node, as if nothing were reused.

- SQLite: `PRAGMA data_version` on a connection of the clock's own, which never writes,
  changes whenever any other connection commits (2 us, no I/O: SQLite's shared memory).
- PostgreSQL: every table's trigger notifies `kiln_changes` (migration 2026-11-26-0400),
  which PostgreSQL delivers to each listening connection when the writing transaction
  commits; one connection per process listens. While it is not listening, or has a
  notification it has not counted yet, there is no stamp and nothing is reused.
- Both: this process's own writes count as they run and as they end (engine events), so a
  process sees its own writes at once, and so do sessions that share one connection (the
  tests' rolled-back transaction), whose writes are never committed.

None means "unknown": the caller reads from the database."""

from __future__ import annotations

import contextlib
import logging
import os
import select
import sqlite3
import threading
import time
import uuid
from collections.abc import Hashable
from typing import Any

import psycopg
from sqlalchemy import Engine, event
from sqlalchemy.engine import make_url

log = logging.getLogger(__name__)

CHANNEL = "kiln_changes"

# What a statement that only reads starts with, or one that ends a transaction or a savepoint
# (counted by the events below): anything else counts as a write.
_READS = (
    "SELECT",
    "select",
    "PRAGMA",
    "pragma",
    "BEGIN",
    "SAVEPOINT",
    "RELEASE",
    "ROLLBACK",
    "COMMIT",
    "SHOW",
    "SET",
    "LISTEN",
)


class Clock:
    """The stamp of a database as one process sees it."""

    def __init__(self) -> None:
        self._local = 0

    def wrote(self) -> None:
        """This process wrote (or ended a write): every stamp from before is stale."""
        self._local += 1

    @property
    def writes(self) -> int:
        return self._local

    def stamp(self) -> Hashable | None:
        return self._local

    def began(self, conn: Any) -> None:
        """A read transaction begins on `conn` (engine event): note what it will read."""
        return None

    def read_at(self, conn: Any, stamp: Hashable) -> bool:
        """Whether what `conn`'s transaction read is the database as of `stamp`: true where
        each statement reads a snapshot of its own (taken after the stamp)."""
        return True

    def echo(self) -> str | None:
        """A payload for a writer to notify in its transaction, to hear its own commit
        (`heard`); None where there is nothing to hear."""
        return None

    def heard(self, echo: str) -> None:
        return None

    def close(self) -> None:
        return None


class SQLiteClock(Clock):
    def __init__(self, path: str) -> None:
        super().__init__()
        self._path = path
        # One connection per process (a forked child opens its own): data_version numbers of
        # two connections are not comparable. Its calls take microseconds; a lock shares it.
        self._conn: sqlite3.Connection | None = None
        self._pid = 0
        self._opened = 0
        self._lock = threading.Lock()

    def external(self) -> tuple[int, int] | None:
        """The commits of every other connection, as a value that changes with each: the
        connection's number (counts start again on a new connection) and its data_version."""
        with self._lock:
            try:
                if self._conn is None or self._pid != os.getpid():
                    self._conn = sqlite3.connect(
                        f"file:{self._path}?mode=ro", uri=True, isolation_level=None, check_same_thread=False
                    )
                    self._pid = os.getpid()
                    self._opened += 1
                return (self._opened, int(self._conn.execute("PRAGMA data_version").fetchone()[0]))
            except sqlite3.Error:
                self._conn = None
                return None

    def stamp(self) -> Hashable | None:
        local = self._local
        external = self.external()
        return None if external is None else (local, external)

    def began(self, conn: Any) -> None:
        conn.info[_BEGUN] = self.external()

    def read_at(self, conn: Any, stamp: Hashable) -> bool:
        """SQLite reads a whole transaction in one snapshot, perhaps taken before a commit the
        stamp counts: only one begun at the stamp's commits read what it says."""
        return isinstance(stamp, tuple) and conn.info.get(_BEGUN) == stamp[1]


class PostgresClock(Clock):
    """Listens on one connection of its own, started on first use in each process."""

    # How long the listener waits before looking at whether it should stop.
    TICK_S = 1.0
    RETRY_S = 1.0
    # How long a writer waits to hear its own commit (echo) before answering.
    ECHO_S = 1.0
    # The listener notifies itself every TICK_S: a connection whose beat is later than this
    # (a peer gone silent, a proxy that delivers no notifications) gives no stamp.
    BEAT_LATE_S = 3.0
    _ECHOES_LIMIT = 1024

    def __init__(self, url: str) -> None:
        super().__init__()
        self._url = url
        self._conn: psycopg.Connection[Any] | None = None
        self._fd = -1
        # Notifications counted; odd while the listener is counting (a seqlock: a stamp taken
        # across a change of it is none).
        self._heard = 0
        self._counting = 0
        self._pid = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        # Writers' echoes heard (their payloads), and a condition they wait on.
        self._echoes: dict[str, None] = {}
        self._heard_more = threading.Condition()
        self._polls = threading.local()
        self._beat = f"beat:{uuid.uuid4().hex}".encode("ascii")
        self._beat_at = 0.0

    def stamp(self) -> Hashable | None:
        if self._pid != os.getpid():
            self._start()
            return None
        counting = self._counting
        fd = self._fd
        if counting & 1 or fd < 0:
            return None
        local, heard = self._local, self._heard
        if time.monotonic() - self._beat_at > self.BEAT_LATE_S:
            return None
        # A notification PostgreSQL already sent and the listener has not counted yet.
        if self._readable(fd):
            return None
        if self._counting != counting or self._heard != heard:
            return None
        return (local, heard)

    def _readable(self, fd: int) -> bool:
        """Whether the socket holds something (or is gone); poll, not select: any fd number.
        A poll object per thread and socket (one may not be polled from two threads)."""
        found = getattr(self._polls, "poll", None)
        if found is None or found[0] != fd:
            poll = select.poll()
            poll.register(fd, select.POLLIN | select.POLLERR | select.POLLHUP)
            found = self._polls.poll = (fd, poll)
        try:
            return bool(found[1].poll(0))
        except (OSError, ValueError, RuntimeError):
            return True

    def echo(self) -> str | None:
        """A payload for a writer to notify in its transaction (None while not listening)."""
        if self._fd < 0 or self._pid != os.getpid():
            return None
        return f"echo:{os.getpid()}:{uuid.uuid4().hex}"

    def heard(self, echo: str) -> None:
        """Wait (at most ECHO_S) until the listener has counted the writer's echo: every
        listening node had it sent at the same moment, so the writer's answer reaches its
        client after the other nodes' listeners have their notification in hand."""
        deadline = time.monotonic() + self.ECHO_S
        with self._heard_more:
            while echo not in self._echoes:
                left = deadline - time.monotonic()
                if left <= 0 or self._fd < 0:
                    return
                self._heard_more.wait(left)
            self._echoes.pop(echo, None)

    def _start(self) -> None:
        with self._lock:
            if self._pid == os.getpid():
                return
            self._pid = os.getpid()
            self._fd = -1
            self._stop.clear()
            self._thread = threading.Thread(target=self._listen, name="kiln-changes", daemon=True)
            self._thread.start()

    def _listen(self) -> None:
        told = False  # one warning per outage, not one per retry
        while not self._stop.is_set():
            try:
                self._connect()
                if told:
                    log.warning("kiln: listening for database changes again")
                    told = False
                self._count_until_lost()
            except Exception as error:  # whatever it was: listen again
                if not told and not self._stop.is_set():
                    log.warning("kiln: not listening for database changes (%s); reading every time", error)
                    told = True
            finally:
                self._disconnect()
            self._stop.wait(self.RETRY_S)

    def _connect(self) -> None:
        conn = psycopg.connect(
            self._url,
            autocommit=True,
            application_name=listener_name(),
            # A peer gone without a word is noticed within seconds, not hours.
            keepalives=1,
            keepalives_idle=2,
            keepalives_interval=1,
            keepalives_count=2,
        )
        conn.execute(f"LISTEN {CHANNEL}")
        self._conn = conn
        # What was reused before this connection listened may have changed since.
        self._heard += 1
        self._beat_at = time.monotonic()
        self._fd = conn.pgconn.socket

    def _count_until_lost(self) -> None:
        conn = self._conn
        assert conn is not None
        pgconn = conn.pgconn
        poll = select.poll()
        poll.register(self._fd, select.POLLIN | select.POLLERR | select.POLLHUP)
        beat = b"NOTIFY " + CHANNEL.encode() + b", '" + self._beat + b"'"
        beating = False  # a beat sent, its result not read yet
        next_beat = 0.0
        while not self._stop.is_set():
            now = time.monotonic()
            if not beating and now >= next_beat:
                pgconn.send_query(beat)
                while pgconn.flush():
                    pass
                beating, next_beat = True, now + self.TICK_S
            if not poll.poll(max(0.0, next_beat - time.monotonic()) * 1000 + 1):
                continue
            echoes = []
            self._counting += 1
            try:
                pgconn.consume_input()  # raises once the connection is gone
                changed = False
                while (notice := pgconn.notifies()) is not None:
                    if notice.extra == self._beat:
                        self._beat_at = time.monotonic()
                    elif notice.extra.startswith(b"beat:"):
                        continue  # another process's
                    else:
                        changed = True
                        if notice.extra.startswith(b"echo:"):
                            echoes.append(notice.extra.decode("ascii", "replace"))
                while beating and not pgconn.is_busy():
                    result = pgconn.get_result()
                    if result is None:
                        beating = False
                    elif result.status != psycopg.pq.ExecStatus.COMMAND_OK:
                        raise psycopg.OperationalError(result.error_message.decode("utf-8", "replace"))
                if changed:
                    self._heard += 1
            finally:
                self._counting += 1
            if echoes:
                with self._heard_more:
                    if len(self._echoes) >= self._ECHOES_LIMIT:
                        self._echoes.clear()
                    self._echoes.update(dict.fromkeys(echoes))
                    self._heard_more.notify_all()
            if pgconn.status != psycopg.pq.ConnStatus.OK:
                return

    def _disconnect(self) -> None:
        self._fd = -1
        self._heard += 1
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()
        with self._heard_more:
            self._heard_more.notify_all()

    def close(self) -> None:
        self._stop.set()
        thread = self._thread
        if thread is not None and thread.is_alive() and thread is not threading.current_thread():
            thread.join(self.TICK_S + 1.0)
        self._pid = 0  # listened again on next use


def listener_name() -> str:
    """The listening connection's application_name (pg_stat_activity), one per process."""
    return f"kiln changes {os.getpid()}"


# By database URL: engines on one database share its clock (a dispose gives an engine a new
# pool, and tests make engines of their own beside the application's).
_clocks: dict[Any, Clock] = {}


def watch(engine: Engine) -> Clock:
    """The clock of the engine's database, counting this process's writes through the engine
    from now on."""
    url = engine.url
    clock = _clocks.get(url)
    if clock is None:
        if url.get_backend_name() == "sqlite":
            path = url.database or ""
            in_memory = path in ("", ":memory:") or path.startswith("file:")
            clock = Clock() if in_memory else SQLiteClock(os.path.abspath(path))
        else:
            plain = make_url(url).set(drivername="postgresql")
            clock = PostgresClock(plain.render_as_string(hide_password=False))
        _clocks[url] = clock
    _count_writes(engine, clock)
    return clock


def clock_of(bind: Any) -> Clock | None:
    """The clock of a session's bind: an engine, or a connection (the tests')."""
    found = _by_bind.get(id(bind))
    if found is not None and found[0] is bind:
        return found[1]
    url = getattr(bind, "url", None)
    if url is None:
        url = bind.engine.url
    clock = _clocks.get(url)
    if clock is not None:
        if len(_by_bind) >= _BY_BIND_LIMIT:
            _by_bind.clear()
        _by_bind[id(bind)] = (bind, clock)
    return clock


# Engines and connections asked before, by id (held, so the id stays theirs): a URL's hash
# renders it as text each time.
_by_bind: dict[int, tuple[Any, Clock]] = {}
_BY_BIND_LIMIT = 1024


def forget(engine: Engine) -> None:
    """Stop watching the engine's database (an engine made for a while, as tests do)."""
    clock = _clocks.pop(engine.url, None)
    _by_bind.clear()
    if clock is not None:
        clock.close()


_WROTE = "kiln_wrote"
_SAVEPOINTS = "kiln_savepoints"
# What SQLite's read transaction began at (SQLiteClock.external), in its connection's info.
_BEGUN = "kiln_begun"


def _count_writes(engine: Engine, clock: Clock) -> None:
    """A write counts when it runs (sessions sharing its connection see it at once), and again
    when what it wrote may vanish or appear elsewhere: its transaction committing or rolling
    back, a savepoint around it rolled back. A transaction or savepoint that only read counts
    for nothing, so reads keep reusing rows around it."""

    @event.listens_for(engine, "after_cursor_execute")
    def _executed(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if not statement.lstrip().startswith(_READS):
            conn.info[_WROTE] = True
            clock.wrote()

    # Savepoints nest: each ends before the one around it (SQLAlchemy names them only after
    # this event), so what was written when each began is a stack.
    @event.listens_for(engine, "savepoint")
    def _savepoint(conn: Any, name: str | None) -> None:
        if not conn.invalidated:
            conn.info.setdefault(_SAVEPOINTS, []).append(clock.writes)

    @event.listens_for(engine, "release_savepoint")
    def _released(conn: Any, name: str, context: Any) -> None:
        if not conn.invalidated and conn.info.get(_SAVEPOINTS):
            conn.info[_SAVEPOINTS].pop()

    @event.listens_for(engine, "rollback_savepoint")
    def _rolled_back(conn: Any, name: str, context: Any) -> None:
        # Any write since the savepoint began (this process's, perhaps on another connection)
        # may have been inside it.
        began = None if conn.invalidated or not conn.info.get(_SAVEPOINTS) else conn.info[_SAVEPOINTS].pop()
        if began != clock.writes:
            clock.wrote()

    def _ended(conn: Any, *args: Any) -> None:
        # A connection lost on the way (its info gone with it) may have written.
        if conn.invalidated:
            clock.wrote()
            return
        conn.info.pop(_SAVEPOINTS, None)
        if conn.info.pop(_WROTE, False):
            clock.wrote()

    event.listen(engine, "commit", _ended)
    event.listen(engine, "rollback", _ended)


def writing(conn: Any) -> bool:
    """Whether the connection's transaction has written."""
    return not conn.invalidated and bool(conn.info.get(_WROTE))
