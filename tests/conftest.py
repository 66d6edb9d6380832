"""Test set-up: one database per xdist worker (SQLite file, or a PostgreSQL server the tests
start themselves), built by the migrations; each test starts from an empty database with
root (id 1) and its own data dir."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient
from sqlalchemy import text
from sqlalchemy.orm import Session

from kiln import migrate
from kiln.app import create_app
from kiln.config import Settings
from kiln.db import make_engine, make_engine_unpooled, make_sessionmaker
from kiln.models import Base
from kiln.runtime import Runtime
from kiln.services.users import bootstrap_root
from tests.factories import Factory, MadeUser
from tests.pg import PostgresServer
from tests.repositories import unsound_repositories

ROOT_TOKEN = "kiln-test-root-token"
ROOT_PASSWORD = "root-password-123"
EXTERNAL_URL = "http://kiln.test"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--db", choices=["sqlite", "postgres"], default=os.environ.get("KILN_TEST_DB", "sqlite"))


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


@pytest.fixture(scope="session")
def runtime(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    settings = test_settings(database_url, tmp_path_factory.mktemp("data"))
    engine = make_engine(settings)
    migrate.upgrade(engine)
    rt = Runtime(settings=settings, engine=engine, sessions=make_sessionmaker(engine))
    yield rt
    engine.dispose()


@pytest.fixture(scope="session")
def app(runtime: Runtime) -> Any:
    return create_app(runtime=runtime)


def wipe(rt: Runtime) -> None:
    tables = [t.name for t in reversed(Base.metadata.sorted_tables)]
    with rt.engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE"))
        else:
            for name in tables:
                conn.execute(text(f"DELETE FROM {name}"))


@pytest.fixture
def settings(runtime: Runtime, tmp_path: Path) -> Iterator[Settings]:
    """Per-test settings (own data dir); tests may replace fields with `configure`. Every
    repository a test leaves behind must pass `git fsck` afterwards."""
    data_dir = tmp_path / "data"
    runtime.settings = test_settings(str(runtime.engine.url.render_as_string(hide_password=False)), data_dir)
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
def db(runtime: Runtime, settings: Settings) -> Iterator[Session]:
    wipe(runtime)
    with runtime.sessions() as session:
        bootstrap_root(session, settings)
        yield session


@pytest.fixture
def drain(runtime: Runtime, db: Session) -> Callable[[], int]:
    """Run every due queued job now, through the workers' own code path; returns how many ran."""
    from kiln import jobs

    def run() -> int:
        db.commit()
        return jobs.run_due(runtime.sessions, runtime.settings)

    return run


@pytest.fixture
def client(app: Any, db: Session) -> Iterator[TestClient[Any]]:
    with TestClient(app, base_url=EXTERNAL_URL) as c:
        yield c


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
