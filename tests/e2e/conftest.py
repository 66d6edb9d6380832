"""A real `kiln serve` process per xdist worker, on a free port, with a database of its own.

The tests here talk to it over sockets only; nothing of the in-process app is shared."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import gitlab
import httpx
import pytest
from sqlalchemy import text

from bench import processes
from kiln.db import make_engine_unpooled
from tests.pg import PostgresServer
from tests.repositories import unsound_repositories


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """python-gitlab's and git's end-to-end tests check what a client sees of kiln's API and
    of git over HTTP, which the database does not change (every rule is tested on both
    databases in tests/api, pushes' also in tests/hostile/test_pushes.py): they run in the
    SQLite pass of `make test` only."""
    if config.getoption("--db") != "postgres":
        return
    skip = pytest.mark.skip(reason="client compatibility: run once, on the SQLite pass")
    for item in items:
        path = str(item.fspath)
        if "/tests/e2e/test_python_gitlab" in path or path.endswith("/tests/e2e/test_git_http.py"):
            item.add_marker(skip)


ROOT_TOKEN = "kiln-e2e-root-token"
ROOT_PASSWORD = "e2e-root-password-123"
CI_LONG_POLL_SECONDS = "2"
CI_STUCK_GRACE_SECONDS = "2"
START_TIMEOUT = 60.0  # serve starts one HTTP process per CPU, each importing kiln: slow on a busy box


def kiln_command() -> list[str]:
    """The installed `kiln` script beside this interpreter, else the module."""
    script = Path(sys.executable).with_name("kiln")
    return [str(script)] if script.exists() else [sys.executable, "-m", "kiln"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    """One running `kiln serve`; its stderr goes to `log`, its stdout to `stdout`."""

    url: str
    port: int
    data_dir: Path
    log: Path
    stdout: Path
    process: subprocess.Popen[bytes]
    env: dict[str, str] = field(default_factory=dict)

    def output(self) -> str:
        """What serve wrote on stderr (its messages to the operator, and its logs)."""
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)


def server_env(data_dir: Path, database_url: str | None, port: int, **extra: str | None) -> dict[str, str]:
    """The environment of a serve process (bench.processes.server_env: none of the caller's
    KILN_* settings leak in), with these tests' root credentials."""
    own: dict[str, str | None] = {
        "KILN_ROOT_TOKEN": ROOT_TOKEN,
        "KILN_ROOT_PASSWORD": ROOT_PASSWORD,
        "KILN_DATABASE_URL": database_url or None,
    }
    return processes.server_env(data_dir, port, **{**own, **extra})


def start_server(data_dir: Path, database_url: str | None, log_dir: Path, **extra: str | None) -> Server:
    """Start `kiln serve` and wait until GET /api/v4/version answers. `extra` sets (or, with
    None, removes) environment variables. A port taken between choosing and binding is
    retried with another. One HTTP process unless `extra` says otherwise (KILN_PROCESSES;
    None: one per CPU, serve's default): each process imports kiln anew, ~2 s of CPU."""
    extra = {"KILN_PROCESSES": "1", **extra}
    data_dir.mkdir(parents=True, exist_ok=True)
    log_dir.mkdir(parents=True, exist_ok=True)
    for _attempt in range(3):
        port = free_port()
        env = server_env(data_dir, database_url, port, **extra)
        log = log_dir / f"serve-{port}.stderr"
        stdout = log_dir / f"serve-{port}.stdout"
        with log.open("wb") as err, stdout.open("wb") as out:
            process = subprocess.Popen(
                [*kiln_command(), "serve", "--host", "127.0.0.1", "--port", str(port)],
                env=env,
                stdout=out,
                stderr=err,
            )
        server = Server(f"http://127.0.0.1:{port}", port, data_dir, log, stdout, process, env)
        if _wait_ready(server):
            return server
        server.stop()
        if "address already in use" not in server.output().lower():
            break
    raise RuntimeError(f"kiln serve did not become ready:\n{server.output()}{server.stdout.read_text()}")


def _wait_ready(server: Server) -> bool:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            return False
        try:
            if httpx.get(f"{server.url}/api/v4/version", timeout=2).status_code == 200:
                return True
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    return False


@pytest.fixture(scope="session")
def new_database_url(postgres: PostgresServer | None) -> Callable[[], str | None]:
    """A fresh, empty database: None on SQLite (serve's default file in its data dir), a
    new database on the session's PostgreSQL server otherwise."""

    def create() -> str | None:
        if postgres is None:
            return None
        name = f"kiln_e2e_{uuid.uuid4().hex[:12]}"
        admin = make_engine_unpooled(postgres.url("postgres"))
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        admin.dispose()
        return postgres.url(name)

    return create


@pytest.fixture(scope="session")
def kiln_server(
    new_database_url: Callable[[], str | None], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    """The shared server of this worker: tests on it create uniquely named data. Every
    repository its pushes, clones and API calls leave behind must pass `git fsck`."""
    base = tmp_path_factory.mktemp("e2e")
    data_dir = base / "data"
    # CI: runners' job requests held 2 s (not GitLab's 50), a silent job failed 2 s past its
    # timeout (not 5 minutes), so that the CI tests see both within their time. As many
    # HTTP processes as serve starts by default.
    server = start_server(
        data_dir,
        new_database_url(),
        base,
        KILN_CI_LONG_POLL_SECONDS=CI_LONG_POLL_SECONDS,
        KILN_CI_STUCK_GRACE_SECONDS=CI_STUCK_GRACE_SECONDS,
        KILN_PROCESSES=None,
    )
    yield server
    server.stop()
    assert unsound_repositories(data_dir / "repositories") == {}


@pytest.fixture(scope="session")
def base_url(kiln_server: Server) -> str:
    return kiln_server.url


@pytest.fixture
def root(base_url: str) -> gitlab.Gitlab:
    """python-gitlab signed in as root."""
    return gitlab.Gitlab(base_url, private_token=ROOT_TOKEN)


@pytest.fixture
def unique() -> Callable[[str], str]:
    """Names no other test (or worker) will use: unique("ann") -> "ann-3f9a1c0b"."""

    def make(prefix: str) -> str:
        return f"{prefix}-{uuid.uuid4().hex[:8]}"

    return make
