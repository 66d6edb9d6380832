"""Test set-up: one database per xdist worker (SQLite file, or a PostgreSQL server the tests
start themselves), built by the migrations, holding root (id 1) and nothing else; each test
has its own data dir.

Isolation costs a rollback: a test runs inside one connection's transaction that is rolled
back at its end, and every session (the `db` fixture's, each request's, the job runner's)
joins it through a savepoint, so their commits are savepoint releases. A test that needs real
commits (other connections seeing its writes, threads racing, SKIP LOCKED between
connections) is marked `committing`: it runs against the engine itself, and the database is
wiped back to root afterwards. One app and one test client serve a whole worker."""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from litestar.testing import TestClient
from sqlalchemy import Connection, RootTransaction, text
from sqlalchemy.orm import Session, sessionmaker

from kiln import changes, migrate
from kiln.app import create_app
from kiln.config import Settings
from kiln.db import make_engine, make_engine_unpooled, make_sessionmaker
from kiln.models import Base
from kiln.runtime import Runtime
from kiln.services.users import bootstrap_root
from tests.factories import Factory, MadeUser
from tests.pg import PostgresServer
from tests.repositories import unsound_repositories
from tests.scheduling import FewAhead

ROOT_TOKEN = "kiln-test-root-token"
ROOT_PASSWORD = "root-password-123"
EXTERNAL_URL = "http://kiln.test"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--db", choices=["sqlite", "postgres"], default=os.environ.get("KILN_TEST_DB", "sqlite"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test that reaches no database (none of its fixtures leads to `db_kind`: the YAML
    reader, the runner, outbound HTTP, the layer rules) answers the same on both passes of
    `make test`: it runs once, on the SQLite pass."""
    if config.getoption("--db") != "postgres":
        return
    skip = pytest.mark.skip(reason="reaches no database: run once, on the SQLite pass")
    for item in items:
        if "db_kind" not in getattr(item, "fixturenames", ()):
            item.add_marker(skip)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """xdist's `load` (the default of `-n`), handing out a few tests at a time
    (tests.scheduling)."""
    if config.getvalue("dist") != "load":
        return None
    return FewAhead(config, log)


@pytest.fixture(scope="session")
def db_kind(request: pytest.FixtureRequest) -> str:
    return str(request.config.getoption("--db"))


@pytest.fixture(scope="session")
def postgres(db_kind: str) -> Iterator[PostgresServer | None]:
    if db_kind != "postgres":
        yield None
        return
    server = PostgresServer()
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def database_url(
    db_kind: str, postgres: PostgresServer | None, tmp_path_factory: pytest.TempPathFactory
) -> str:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    if postgres is None:
        return f"sqlite:///{tmp_path_factory.mktemp('db') / f'kiln-{worker}.db'}"
    admin = make_engine_unpooled(postgres.url("postgres"))
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "kiln_{worker}"'))
    admin.dispose()
    return postgres.url(f"kiln_{worker}")


def test_settings(database_url: str, data_dir: Path, **extra: Any) -> Settings:
    return Settings(
        data_dir=data_dir,
        database_url=database_url,
        external_url=EXTERNAL_URL,
        root_password=ROOT_PASSWORD,
        root_token=ROOT_TOKEN,
        password_time_cost=1,
        password_memory_cost=8192,
        # Tests run queued jobs themselves (the `drain` fixture), never in the background.
        workers=0,
        **extra,
    )


def sequence_positions(conn: Connection) -> str | None:
    """PostgreSQL: one statement that puts every sequence back where it stands now (None
    without sequences)."""
    rows = conn.execute(text("SELECT schemaname, sequencename, last_value FROM pg_sequences")).all()
    calls = [
        f"setval('{schema}.{name}', {last}, true)"
        if last is not None
        else f"setval('{schema}.{name}', 1, false)"
        for schema, name, last in rows
    ]
    return f"SELECT {', '.join(calls)}" if calls else None


class Baseline:
    """The committed state every test starts from (root only), and how to get back to it."""

    def __init__(self, rt: Runtime, defaults: Settings) -> None:
        self.rt = rt
        self.defaults = defaults
        self.sessions = rt.sessions
        # The app's own session options, bound per test to that test's connection.
        self.joined = sessionmaker(**{**rt.sessions.kw, "join_transaction_mode": "create_savepoint"})
        self.restart_sequences: str | None = None

    def restore(self) -> None:
        """Empty every table, then root (id 1) with its token, committed."""
        rt = self.rt
        tables = [t.name for t in reversed(Base.metadata.sorted_tables)]
        with rt.engine.begin() as conn:
            if conn.dialect.name == "postgresql":
                conn.execute(text(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE"))
            else:
                for name in tables:
                    conn.execute(text(f"DELETE FROM {name}"))
        with self.sessions() as session:
            bootstrap_root(session, self.defaults)
        if rt.engine.dialect.name == "postgresql":
            self.restart_sequences = self._sequence_reset()

    def _sequence_reset(self) -> str | None:
        """One statement putting every sequence back where the baseline left it."""
        with self.rt.engine.connect() as conn:
            return sequence_positions(conn)

    def isolated(self, conn: Connection) -> sessionmaker[Session]:
        """Sessions that commit into savepoints of `conn`'s transaction."""
        self.joined.configure(bind=conn)
        return self.joined

    def rewind(self, conn: Connection, outer: RootTransaction) -> None:
        """Roll the test back; on PostgreSQL, where the ids it took stay taken, also put the
        sequences back (setval is never rolled back), so each test's ids start where they
        always have. The setval rides in the test's transaction unless that has failed."""
        if not self.restart_sequences:
            outer.rollback()
            return
        status = conn.connection.dbapi_connection.info.transaction_status  # type: ignore[union-attr]
        if status == psycopg.pq.TransactionStatus.INERROR:
            outer.rollback()
            conn.exec_driver_sql(self.restart_sequences)
            conn.commit()
            return
        conn.exec_driver_sql(self.restart_sequences)
        outer.rollback()


@pytest.fixture(scope="session")
def defaults(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """The settings every test starts from; each test's own differ only in their data dir."""
    return test_settings(database_url, tmp_path_factory.mktemp("data"))


@pytest.fixture(scope="session")
def runtime(defaults: Settings) -> Iterator[Runtime]:
    engine = make_engine(defaults)
    migrate.upgrade(engine)
    rt = Runtime(settings=defaults, engine=engine, sessions=make_sessionmaker(engine))
    # PostgreSQL's listener (kiln.changes) starts on first use: until it listens, nothing is
    # reused, and tests of what is reused would see a cold process.
    clock = changes.clock_of(engine)
    deadline = time.monotonic() + 30
    while clock is not None and clock.stamp() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    yield rt
    changes.forget(engine)  # its listener ends before the tests' PostgreSQL server does
    engine.dispose()


@pytest.fixture(scope="session")
def baseline(runtime: Runtime, defaults: Settings) -> Baseline:
    state = Baseline(runtime, defaults)
    state.restore()
    return state


@pytest.fixture(scope="session")
def app(runtime: Runtime) -> Any:
    return create_app(runtime=runtime)


@pytest.fixture(scope="session")
def data_dirs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Where each test's data dir goes: numbered here, as pytest's tmp_path scans every
    sibling to number the next one (a cost that grows with the suite)."""
    root = tmp_path_factory.mktemp("tests")
    return (root / str(n) for n in itertools.count(1))


@pytest.fixture
def settings(runtime: Runtime, defaults: Settings, data_dirs: Iterator[Path]) -> Iterator[Settings]:
    """Per-test settings (own data dir); tests may replace fields with `configure`. Every
    repository a test leaves behind must pass `git fsck` afterwards."""
    data_dir = next(data_dirs)
    runtime.settings = defaults.model_copy(update={"data_dir": data_dir})
    runtime.settings.ensure_dirs()
    yield runtime.settings
    assert unsound_repositories(data_dir / "repositories") == {}


@pytest.fixture
def configure(runtime: Runtime) -> Callable[..., Settings]:
    def apply(**changes: Any) -> Settings:
        runtime.settings = runtime.settings.model_copy(update=changes)
        return runtime.settings

    return apply


@pytest.fixture
def db(
    request: pytest.FixtureRequest, runtime: Runtime, baseline: Baseline, settings: Settings
) -> Iterator[Session]:
    """The test's session, in a transaction rolled back at its end that every other session
    of the test joins; a `committing` test's commits are real, and wiped afterwards."""
    if request.node.get_closest_marker("committing"):
        try:
            with runtime.sessions() as session:
                yield session
        finally:
            baseline.restore()
        return
    conn = runtime.engine.connect()
    outer = conn.begin()
    runtime.sessions = baseline.isolated(conn)
    try:
        with runtime.sessions() as session:
            yield session
    finally:
        runtime.sessions = baseline.sessions
        try:
            baseline.rewind(conn, outer)
        finally:
            conn.close()


@pytest.fixture
def drain(runtime: Runtime, db: Session) -> Callable[[], int]:
    """Run every due queued job now, through the workers' own code path; returns how many ran."""
    from kiln import jobs

    def run() -> int:
        db.commit()
        return jobs.run_due(runtime.sessions, runtime.settings)

    return run


class FromLocalhost:
    """Requests as from 127.0.0.1, where a real client's address would be: Litestar's test
    client says "testclient", which no address allowlist (/-/metrics) can hold."""

    def __init__(self, app: Any) -> None:
        self.app = app

    def __getattr__(self, name: str) -> Any:
        return getattr(self.app, name)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            scope = {**scope, "client": ("127.0.0.1", 50000)}
        await self.app(scope, receive, send)


@pytest.fixture(scope="session")
def booted(app: Any) -> Iterator[TestClient[Any]]:
    """The app started once per worker (its startup freezes the heap: not a per-test cost)."""
    with TestClient(FromLocalhost(app), base_url=EXTERNAL_URL) as c:
        yield c


@pytest.fixture
def client(booted: TestClient[Any], db: Session) -> Iterator[TestClient[Any]]:
    booted.cookies.clear()
    yield booted
    booted.cookies.clear()


class Api:
    """Requests under /api/v4 as one caller (a made user, a raw token, or nobody)."""

    def __init__(
        self, client: TestClient[Any], token: str | None, headers: dict[str, str] | None = None
    ) -> None:
        self.client = client
        self.headers = {"Private-Token": token} if token else {}
        self.headers.update(headers or {})

    def _url(self, path: str) -> str:
        return (
            path
            if path.startswith(("/api/", "/oauth", "/users/sign", "/-/", "/uploads"))
            else "/api/v4" + path
        )

    def request(self, method: str, path: str, **kw: Any) -> Any:
        headers = {**self.headers, **kw.pop("headers", {})}
        kw.setdefault("follow_redirects", False)  # answers are checked as sent (sign-in is a 302)
        return self.client.request(method, self._url(path), headers=headers, **kw)

    def get(self, path: str, **kw: Any) -> Any:
        return self.request("GET", path, **kw)

    def head(self, path: str, **kw: Any) -> Any:
        return self.request("HEAD", path, **kw)

    def post(self, path: str, **kw: Any) -> Any:
        return self.request("POST", path, **kw)

    def put(self, path: str, **kw: Any) -> Any:
        return self.request("PUT", path, **kw)

    def patch(self, path: str, **kw: Any) -> Any:
        return self.request("PATCH", path, **kw)

    def delete(self, path: str, **kw: Any) -> Any:
        return self.request("DELETE", path, **kw)


@pytest.fixture
def make(db: Session, settings: Settings) -> Factory:
    return Factory(db, settings)


@pytest.fixture
def api(client: TestClient[Any]) -> Callable[..., Api]:
    """api(user) / api("raw-token") / api() for anonymous / api("root") for the administrator."""

    def for_caller(caller: MadeUser | str | None = None, **headers: str) -> Api:
        if caller == "root":
            return Api(client, ROOT_TOKEN, headers)
        if isinstance(caller, MadeUser):
            return Api(client, caller.token, headers)
        return Api(client, caller, headers)

    return for_caller
