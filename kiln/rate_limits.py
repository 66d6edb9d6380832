"""Rate limits per user and per IP address, as GitLab's throttles (its Rack::Attack set-up).

Which throttles a request meets, in GitLab's order, and each one's limit, period and switch
from the instance settings (`throttle_*`). A throttle counts requests in fixed windows of its
period (aligned to the epoch, as Rack::Attack), per user for the authenticated ones and per
IP address for the others; the request that takes the count past the limit, and every one
after it in that window, is answered 429 by the first throttle it passes.

The counts live in a store every process and node shares, apart from kiln's own tables: a
counter written per request must not look like a change of the database (kiln.changes),
which would make every read that kiln reuses stale. On SQLite that is a database file of
its own beside kiln's (WAL: every process on the machine shares it); on PostgreSQL an
UNLOGGED table in kiln's database, written over connections of its own that kiln.changes
does not watch, and without the change trigger. A store that fails lets the request through
(and says so in the log once per outage): a rate limit never makes kiln answer 500.

While every throttle is off a request costs nothing here beyond looking at the settings,
which are read again only once they may have changed (Limiter)."""

from __future__ import annotations

import contextlib
import email.utils
import itertools
import logging
import math
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from sqlalchemy import Engine, event
from sqlalchemy.engine import make_url

from kiln import changes
from kiln.models import ApplicationSetting

log = logging.getLogger("kiln.rate_limits")

# GitLab's body for a throttled request, when `rate_limiting_response_text` is empty.
DEFAULT_RESPONSE_TEXT = "Retry later"
# The store's table (SQLite: in a file of its own; PostgreSQL: in kiln's database, where the
# migrations' model comparison leaves it alone).
TABLE = "kiln_rate_limits"
SQLITE_FILE = "rate_limits.db"
# Expired windows are swept about this often (seconds) by each process.
SWEEP_EVERY_S = 60.0
# How long a count waits for SQLite's one writer before the request goes through uncounted.
SQLITE_BUSY_S = 0.5
# After the store failed, requests go through uncounted for this long before it is tried again.
RETRY_S = 5.0

_FILES_PATH = re.compile(r"^/api/v\d+/projects/[^/]+/repository/files/.+")
_GROUP_PATH = re.compile(r"^/api/v\d+/groups/[^/]+/?$")
_PACKAGES_PATH = re.compile(r"^/api/v\d+/(projects/[^/]+/|groups?/[^/]+/-/)?packages/[A-Za-z]+")
_GIT_LFS_PATH = re.compile(r"^/.+\.git/(info/lfs/|gitlab-lfs/)")
_INTERNAL_PATH = re.compile(r"^/api/v\d+/internal/")
_CONTAINER_REGISTRY_EVENT = re.compile(r"^/api/v\d+/container_registry_event/")
_HEALTH_PATH = re.compile(r"^/-/(health|liveness|readiness|metrics)")
_FALSE = frozenset({"false", "0", "no", "f", "n", "off"})
_SETTINGS_TABLE = ApplicationSetting.__tablename__
# In a connection's info: how many writes of the settings' table its transaction made.
_SETTINGS_WRITTEN = "kiln_settings_written"
# ... and how many it had made when each of its open savepoints began.
_SETTINGS_SAVEPOINTS = "kiln_settings_savepoints"


@dataclass(slots=True)
class Request:
    """What the throttles look at: method, path, query, and who sent it (filled in only when
    a throttle that depends on it is on)."""

    method: str
    path: str
    query: bytes
    ip: str
    # The user the caller's credentials name (None: counted by address), and whether they
    # are a browser's session with its CSRF header (on an API path: the frontend, whose
    # requests count as web traffic).
    user_id: int | None = None
    frontend: bool = False

    @property
    def api(self) -> bool:
        return self.path.startswith("/api")

    @property
    def health(self) -> bool:
        return _HEALTH_PATH.match(self.path) is not None

    @property
    def web(self) -> bool:
        return not self.api and not self.health

    @property
    def skipped(self) -> bool:
        """Never counted by the unauthenticated throttles: internal API, probes, registry events."""
        return bool(
            _INTERNAL_PATH.match(self.path) or self.health or _CONTAINER_REGISTRY_EVENT.match(self.path)
        )

    @property
    def post(self) -> bool:
        return self.method == "POST"

    @property
    def files(self) -> bool:
        return _FILES_PATH.match(self.path) is not None

    @property
    def packages(self) -> bool:
        return _PACKAGES_PATH.match(self.path) is not None

    @property
    def git_lfs(self) -> bool:
        return _GIT_LFS_PATH.match(self.path) is not None

    @property
    def deprecated(self) -> bool:
        """A group fetched with its projects (`with_projects` defaults to true)."""
        if _GROUP_PATH.match(self.path) is None:
            return False
        value = ""
        for part in self.query.split(b"&"):
            name, _, raw = part.partition(b"=")
            if name == b"with_projects":
                value = raw.decode("latin-1").strip().lower()
        return value not in _FALSE


@dataclass(frozen=True, slots=True)
class Throttle:
    name: str
    # The settings' prefix: <prefix>_requests_per_period and <prefix>_period_in_seconds.
    prefix: str
    # The switch, when it is not <prefix>_enabled.
    switch: str
    # Counted per user (else per IP address, for callers no credential names).
    per_user: bool
    # Whether the request is of the throttle's kind, its switches as `on` tells them.
    meets: Callable[[Request, Callable[[str], bool]], bool]


def _unauthenticated_api(r: Request, on: Callable[[str], bool]) -> bool:
    return (
        r.api
        and not r.skipped
        and not r.frontend
        and not (r.packages and on("throttle_unauthenticated_packages_api_enabled"))
        and not (r.files and on("throttle_unauthenticated_files_api_enabled"))
        and not (r.deprecated and on("throttle_unauthenticated_deprecated_api_enabled"))
    )


def _authenticated_api(r: Request, on: Callable[[str], bool]) -> bool:
    return (
        r.api
        and not r.frontend
        and not (r.packages and on("throttle_authenticated_packages_api_enabled"))
        and not (r.files and on("throttle_authenticated_files_api_enabled"))
        and not (r.deprecated and on("throttle_authenticated_deprecated_api_enabled"))
    )


def _of(kind: str) -> Callable[[Request, Callable[[str], bool]], bool]:
    return lambda r, on: bool(getattr(r, kind))


# GitLab's order: the first throttle past its limit answers, and those after it are not counted.
THROTTLES: tuple[Throttle, ...] = (
    Throttle(
        "throttle_unauthenticated_api",
        "throttle_unauthenticated_api",
        "throttle_unauthenticated_api_enabled",
        False,
        _unauthenticated_api,
    ),
    Throttle(
        "throttle_authenticated_api",
        "throttle_authenticated_api",
        "throttle_authenticated_api_enabled",
        True,
        _authenticated_api,
    ),
    *(
        Throttle(
            f"throttle_{who}_{kind}_api",
            f"throttle_{who}_{kind}_api",
            f"throttle_{who}_{kind}_api_enabled",
            who == "authenticated",
            _of(kind),
        )
        for kind in ("packages", "files", "deprecated")
        for who in ("unauthenticated", "authenticated")
    ),
    Throttle(
        "throttle_unauthenticated_web",
        "throttle_unauthenticated",
        "throttle_unauthenticated_enabled",
        False,
        lambda r, on: (r.web or r.frontend) and not r.skipped,
    ),
    Throttle(
        "throttle_authenticated_web",
        "throttle_authenticated_web",
        "throttle_authenticated_web_enabled",
        True,
        lambda r, on: (
            (r.web or r.frontend) and not (r.git_lfs and on("throttle_authenticated_git_lfs_enabled"))
        ),
    ),
    Throttle(
        "throttle_unauthenticated_protected_paths",
        "throttle_protected_paths",
        "throttle_protected_paths_enabled",
        False,
        lambda r, on: r.post and not r.skipped,
    ),
    Throttle(
        "throttle_authenticated_protected_paths_api",
        "throttle_protected_paths",
        "throttle_protected_paths_enabled",
        True,
        lambda r, on: r.post and r.api,
    ),
    Throttle(
        "throttle_authenticated_protected_paths_web",
        "throttle_protected_paths",
        "throttle_protected_paths_enabled",
        True,
        lambda r, on: r.post and r.web,
    ),
    Throttle(
        "throttle_authenticated_git_lfs",
        "throttle_authenticated_git_lfs",
        "throttle_authenticated_git_lfs_enabled",
        True,
        _of("git_lfs"),
    ),
)
_PROTECTED = frozenset(t.name for t in THROTTLES if t.prefix == "throttle_protected_paths")


@dataclass(frozen=True, slots=True)
class Rule:
    throttle: Throttle
    limit: int
    period: int


class Rules:
    """The throttles switched on, with their limits: what one version of the settings says."""

    def __init__(self, settings: Mapping[str, Any]) -> None:
        switches = {t.switch: _truthy(settings.get(t.switch)) for t in THROTTLES}
        self.switches = switches
        rules = []
        for throttle in THROTTLES:
            if not switches[throttle.switch]:
                continue
            limit = _number(settings.get(f"{throttle.prefix}_requests_per_period"))
            period = _number(settings.get(f"{throttle.prefix}_period_in_seconds"))
            if limit is None or period is None or period <= 0:
                continue
            rules.append(Rule(throttle, limit, period))
        self.rules = tuple(rules)
        self.protected_paths = tuple(
            str(p) for p in (settings.get("protected_paths") or ()) if isinstance(p, str) and p
        )
        text = settings.get("rate_limiting_response_text")
        self.body = (text if isinstance(text, str) and text.strip() else DEFAULT_RESPONSE_TEXT) + "\n"

    def on(self, switch: str) -> bool:
        return self.switches.get(switch, False)

    def candidates(self, request: Request) -> list[Rule]:
        """The rules whose kind the request is, whoever sent it: none means nothing to count."""
        if not self.rules:
            return []
        found = []
        for rule in self.rules:
            name = rule.throttle.name
            if name in _PROTECTED and not self.protected(request.path):
                continue
            if rule.throttle.meets(request, self.on):
                found.append(rule)
        return found

    def protected(self, path: str) -> bool:
        return any(path.startswith(prefix) for prefix in self.protected_paths)


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() not in _FALSE and value.strip() != ""
    return bool(value)


def _number(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


@dataclass(frozen=True, slots=True)
class Refusal:
    """A 429 as GitLab sends it: plain text, Retry-After and its RateLimit-* headers."""

    name: str
    limit: int
    period: int
    observed: int
    now: int
    body: str

    @property
    def retry_after(self) -> int:
        return self.period - (self.now % self.period)

    def headers(self) -> list[tuple[str, str]]:
        reset = self.now + self.retry_after
        return [
            ("Content-Type", "text/plain"),
            ("RateLimit-Name", self.name),
            # The limit per minute (rounded up), as GitLab reports it whatever the period.
            ("RateLimit-Limit", str(math.ceil(self.limit * 60 / self.period))),
            ("RateLimit-Observed", str(self.observed)),
            ("RateLimit-Remaining", str(max(self.limit - self.observed, 0))),
            ("RateLimit-Reset", str(reset)),
            ("RateLimit-ResetTime", email.utils.formatdate(reset, usegmt=True)),
            ("Retry-After", str(self.retry_after)),
        ]


class Store:
    """Counts per key and window, shared by every process: `hit` adds one and returns the
    count, or None when the store cannot answer (the request goes through)."""

    def hit(self, key: str, expires_at: int) -> int | None:
        raise NotImplementedError

    def clear(self) -> None:
        raise NotImplementedError

    def size(self) -> int:
        """Windows counted and not swept yet."""
        raise NotImplementedError

    def close(self) -> None:
        return None


class SQLiteStore(Store):
    """A database file of its own (WAL), one connection per thread and process."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()
        self._swept = 0.0

    def _conn(self) -> sqlite3.Connection:
        found = getattr(self._local, "conn", None)
        if found is not None and found[0] == os.getpid():
            return found[1]  # type: ignore[no-any-return]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(
            self.path, timeout=SQLITE_BUSY_S, isolation_level=None, check_same_thread=False
        )
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=OFF")  # counts need no durability: a crash loses a window at most
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {TABLE} "
            "(key TEXT PRIMARY KEY, count INTEGER NOT NULL, expires_at INTEGER NOT NULL)"
        )
        conn.execute(f"CREATE INDEX IF NOT EXISTS {TABLE}_expires_at ON {TABLE} (expires_at)")
        self._local.conn = (os.getpid(), conn)
        return conn

    def hit(self, key: str, expires_at: int) -> int | None:
        conn = self._conn()
        row = conn.execute(
            f"INSERT INTO {TABLE} (key, count, expires_at) VALUES (?, 1, ?) "
            "ON CONFLICT (key) DO UPDATE SET count = count + 1 RETURNING count",
            (key, expires_at),
        ).fetchone()
        self._sweep(conn)
        return int(row[0])

    def _sweep(self, conn: sqlite3.Connection) -> None:
        now = time.time()
        if now - self._swept >= SWEEP_EVERY_S:
            self._swept = now
            conn.execute(f"DELETE FROM {TABLE} WHERE expires_at <= ?", (int(now),))

    def clear(self) -> None:
        self._conn().execute(f"DELETE FROM {TABLE}")

    def size(self) -> int:
        return int(self._conn().execute(f"SELECT count(*) FROM {TABLE}").fetchone()[0])

    def close(self) -> None:
        found = getattr(self._local, "conn", None)
        if found is not None:
            self._local.conn = None
            found[1].close()


class PostgresStore(Store):
    """An UNLOGGED table in kiln's database (counts need no crash safety), created here when
    missing; written on connections of its own, one per thread and process, in autocommit."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._local = threading.local()
        self._swept = 0.0
        self._created = 0  # the pid that made sure the table exists

    def _conn(self) -> psycopg.Connection[Any]:
        found = getattr(self._local, "conn", None)
        if found is not None and found[0] == os.getpid() and not found[1].closed:
            return found[1]  # type: ignore[no-any-return]
        conn = psycopg.connect(
            self.url,
            autocommit=True,
            application_name="kiln rate limits",
            connect_timeout=5,
        )
        if self._created != os.getpid():
            self._create(conn)
            self._created = os.getpid()
        prepared = conn.pgconn.prepare(
            _HIT,
            f"INSERT INTO {TABLE} AS c (key, count, expires_at) VALUES ($1, 1, $2) "
            "ON CONFLICT (key) DO UPDATE SET count = c.count + 1 RETURNING count".encode(),
        )
        if prepared.status != psycopg.pq.ExecStatus.COMMAND_OK:
            message = prepared.error_message.decode("utf-8", "replace")
            conn.close()
            raise psycopg.OperationalError(message)
        self._local.conn = (os.getpid(), conn)
        return conn

    @staticmethod
    def _create(conn: psycopg.Connection[Any]) -> None:
        for statement in (
            f"CREATE UNLOGGED TABLE IF NOT EXISTS {TABLE} "
            "(key text PRIMARY KEY, count bigint NOT NULL, expires_at bigint NOT NULL)",
            f"CREATE INDEX IF NOT EXISTS {TABLE}_expires_at ON {TABLE} (expires_at)",
        ):
            # Two processes creating it at once: one of them is told it exists.
            with contextlib.suppress(psycopg.errors.UniqueViolation, psycopg.errors.DuplicateTable):
                conn.execute(statement)  # type: ignore[arg-type]

    def hit(self, key: str, expires_at: int) -> int | None:
        # Past psycopg's statement machinery, straight to libpq's prepared statement: a fifth
        # of the CPU per count.
        conn = self._conn()
        result = conn.pgconn.exec_prepared(_HIT, [key.encode(), str(expires_at).encode()])
        if result.status != psycopg.pq.ExecStatus.TUPLES_OK:
            message = result.error_message.decode("utf-8", "replace")
            code = result.error_field(psycopg.pq.DiagnosticField.SQLSTATE)
            error = _error_class(code)
            if busy(error(message)) and conn.pgconn.status == psycopg.pq.ConnStatus.OK:
                raise error(message)  # contention: the connection stays good
            conn.close()
            raise psycopg.OperationalError(message)
        value = result.get_value(0, 0)
        self._sweep(conn)
        return None if value is None else int(value)

    def _sweep(self, conn: psycopg.Connection[Any]) -> None:
        now = time.time()
        if now - self._swept >= SWEEP_EVERY_S:
            self._swept = now
            conn.execute(f"DELETE FROM {TABLE} WHERE expires_at <= %s", (int(now),))  # type: ignore[arg-type]

    def clear(self) -> None:
        self._conn().execute(f"DELETE FROM {TABLE}")  # type: ignore[arg-type]

    def size(self) -> int:
        row = self._conn().execute(f"SELECT count(*) FROM {TABLE}").fetchone()  # type: ignore[arg-type]
        return 0 if row is None else int(row[0])

    def close(self) -> None:
        found = getattr(self._local, "conn", None)
        if found is not None:
            self._local.conn = None
            found[1].close()


def _error_class(sqlstate: bytes | None) -> type[psycopg.Error]:
    """psycopg's error for a result's SQLSTATE (OperationalError when there is none)."""
    try:
        return psycopg.errors.lookup(sqlstate.decode()) if sqlstate else psycopg.OperationalError
    except KeyError:
        return psycopg.OperationalError


# The prepared count on each of the store's PostgreSQL connections.
_HIT = b"kiln_rate_limit_hit"


def store_for(database_url: str, data_dir: Path) -> Store:
    """The store beside kiln's database: its file's folder on SQLite (the data dir unless the
    database is elsewhere), its server on PostgreSQL."""
    url = make_url(database_url)
    if url.get_backend_name() == "sqlite":
        path = url.database or ""
        in_memory = path in ("", ":memory:") or path.startswith("file:")
        folder = data_dir if in_memory else Path(path).resolve().parent
        return SQLiteStore(folder / SQLITE_FILE)
    plain = url.set(drivername="postgresql")
    return PostgresStore(plain.render_as_string(hide_password=False))


class Limiter:
    """The throttles of one process: the settings as last read, and the shared store.

    The settings are read again once they may have changed: after any commit anywhere (the
    clock's stamp, less this process's count of its own writes as they run), and after this
    process wrote the settings' table (as the write runs, and again when its transaction
    ends either way). A write of anything else that is not committed yet (a request's
    transaction under way, the tests' rolled-back one) leaves them as read."""

    def __init__(self, store: Store, *, allowlist: frozenset[int] = frozenset()) -> None:
        self.store = store
        self.allowlist = allowlist
        self._memo: tuple[Hashable, object, Rules] | None = None
        self._failing = False
        self._retry_at = 0.0
        self._busy_logged_at = -RETRY_S
        self._settings_writes = 0
        # Counted with next(): one step per bump, from any thread.
        self._bumps = itertools.count(1)
        self._watched: dict[int, Engine] = {}

    def use(self, store: Store) -> Store:
        """Count in `store` from now on (tried at once); the store used until now."""
        before, self.store = self.store, store
        self._failing, self._retry_at = False, 0.0
        return before

    def watch(self, engine: Engine) -> None:
        """Count this process's writes of the settings' table through `engine`."""
        if id(engine) in self._watched:
            return
        self._watched[id(engine)] = engine

        def executed(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
            if _SETTINGS_TABLE in statement and not statement.lstrip().startswith(("SELECT", "select")):
                conn.info[_SETTINGS_WRITTEN] = conn.info.get(_SETTINGS_WRITTEN, 0) + 1
                self._settings_writes = next(self._bumps)

        def ended(conn: Any, *args: Any) -> None:
            # A connection the server dropped has no info to read (SQLAlchemy refuses until
            # the rollback ends), and whatever it wrote is gone: read the settings again.
            if conn.invalidated:
                self._settings_writes = next(self._bumps)
                return
            conn.info.pop(_SETTINGS_SAVEPOINTS, None)
            if conn.info.pop(_SETTINGS_WRITTEN, 0):
                self._settings_writes = next(self._bumps)

        # A savepoint rolled back undoes the settings' writes made since it began, if any.
        def savepoint(conn: Any, *args: Any) -> None:
            if not conn.invalidated:
                conn.info.setdefault(_SETTINGS_SAVEPOINTS, []).append(conn.info.get(_SETTINGS_WRITTEN, 0))

        def released(conn: Any, *args: Any) -> None:
            if not conn.invalidated and conn.info.get(_SETTINGS_SAVEPOINTS):
                conn.info[_SETTINGS_SAVEPOINTS].pop()

        def rolled_back(conn: Any, *args: Any) -> None:
            if conn.invalidated:
                self._settings_writes = next(self._bumps)
                return
            stack = conn.info.get(_SETTINGS_SAVEPOINTS)
            began = stack.pop() if stack else None
            if began != conn.info.get(_SETTINGS_WRITTEN, 0):
                self._settings_writes = next(self._bumps)

        event.listen(engine, "after_cursor_execute", executed)
        event.listen(engine, "commit", ended)
        event.listen(engine, "rollback", ended)
        event.listen(engine, "savepoint", savepoint)
        event.listen(engine, "release_savepoint", released)
        event.listen(engine, "rollback_savepoint", rolled_back)

    def version(self, clock: changes.Clock | None) -> Hashable | None:
        """What the settings as last read hold for; None: unknown (read them)."""
        stamp = None if clock is None else clock.stamp()
        if stamp is None:
            return None
        # (this process's writes, commits anywhere) on a database other processes share.
        committed = stamp[1] if isinstance(stamp, tuple) else None
        return (committed, self._settings_writes)

    def fresh(self, version: Hashable | None) -> Rules | None:
        """The rules last read, if the settings are as they were then."""
        memo = self._memo
        if version is None or memo is None or memo[0] != version:
            return None
        return memo[2]

    def rules(self, settings: Mapping[str, Any], version: Hashable | None) -> Rules:
        """The rules of `settings` (read at `version`), derived once per settings object."""
        memo = self._memo
        if memo is not None and memo[1] is settings:
            rules = memo[2]
        else:
            rules = Rules(settings)
        if version is not None:
            self._memo = (version, settings, rules)
        return rules

    def count(self, rules: list[Rule], request: Request, body: str) -> Refusal | None:
        """Count the request against each rule that applies to its caller, in order; the
        first past its limit refuses it."""
        now = int(time.time())
        for rule in rules:
            throttle = rule.throttle
            if throttle.per_user:
                if request.user_id is None or request.user_id in self.allowlist:
                    continue
                who = f"user:{request.user_id}"
            else:
                if request.user_id is not None:
                    continue
                who = request.ip
            window = now // rule.period
            key = f"{throttle.name}:{who}:{rule.period}:{window}"
            observed = self._hit(key, (window + 1) * rule.period)
            if observed is not None and observed > rule.limit:
                return Refusal(throttle.name, rule.limit, rule.period, observed, now, body)
        return None

    def _hit(self, key: str, expires_at: int) -> int | None:
        if self._failing and time.monotonic() < self._retry_at:
            return None
        try:
            observed = self.store.hit(key, expires_at)
        except Exception as error:  # whatever the store's trouble: serve the request
            if busy(error):
                # Contention (a writer holding the lock past the busy timeout, a lock or
                # statement timeout): this request goes through uncounted, the next is
                # counted as ever. Counting is never switched off for everyone by a flood.
                now = time.monotonic()
                if now >= self._busy_logged_at + RETRY_S:
                    self._busy_logged_at = now
                    log.warning(
                        "rate limits: the store is busy (%s); a request goes through uncounted", error
                    )
                return None
            if not self._failing:
                log.warning("rate limits: counting failed (%s); requests go through uncounted", error)
                self._failing = True
            # Not tried again for a while: a store that cannot be reached or opened does not
            # hold up every request by its timeout.
            self._retry_at = time.monotonic() + RETRY_S
            with contextlib.suppress(Exception):
                self.store.close()
            return None
        if self._failing:
            log.warning("rate limits: counting again")
            self._failing = False
        return observed


# SQLite's primary result codes for a lock another connection holds.
_SQLITE_BUSY, _SQLITE_LOCKED = 5, 6


def busy(error: BaseException) -> bool:
    """Whether the store's trouble is contention that passes (only the request that met it
    goes uncounted), not a store that cannot be reached or opened."""
    if isinstance(error, sqlite3.OperationalError):
        code = getattr(error, "sqlite_errorcode", None)
        if code is not None:
            return code & 0xFF in (_SQLITE_BUSY, _SQLITE_LOCKED)
        return "locked" in str(error) or "busy" in str(error)
    return isinstance(
        error,
        psycopg.errors.LockNotAvailable
        | psycopg.errors.QueryCanceled
        | psycopg.errors.DeadlockDetected
        | psycopg.errors.SerializationFailure,
    )


def allowlist(text: str) -> frozenset[int]:
    """User ids from a comma-separated list (GitLab's GITLAB_THROTTLE_USER_ALLOWLIST); other
    entries are ignored."""
    return frozenset(int(part) for part in (p.strip() for p in text.split(",")) if part.isdigit())
