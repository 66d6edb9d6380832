"""Overload of a real `kiln serve`: more requests taken on for the database than its pool has
connections for. It keeps answering its probes, refuses what it cannot take on with a 503 and
Retry-After (never a 500, never a hang), keeps running jobs, recovers fully once the load
goes, and stops within its deadline on SIGTERM however loaded.

The slow requests are project creations whose clients send half their body, then nothing:
each holds its place among the requests using the database for as long as the client wants.
A slow download does not: once its answer starts it is done with the database."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pygit2
import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from kiln.config import Settings
from kiln.db import make_engine, make_sessionmaker, transaction
from kiln.git.layout import repository_path
from kiln.jobs import enqueue
from kiln.models import Job
from tests.e2e.conftest import ROOT_TOKEN, Server, start_server

pytestmark = pytest.mark.e2e

ROOT = {"Private-Token": ROOT_TOKEN}
# A pool of 5 connections, one job worker thread: two requests may use the database at once,
# two more may wait 50 ms for a slot.
SMALL = {
    "KILN_PROCESSES": "1",
    "KILN_DB_POOL_SIZE": "5",
    "KILN_DB_MAX_OVERFLOW": "0",
    "KILN_WORKERS": "1",
    "KILN_REQUEST_QUEUE": "2",
    "KILN_REQUEST_QUEUE_TIMEOUT": "0.05",
    "KILN_JOB_POLL_INTERVAL": "0.05",
    "KILN_SHUTDOWN_TIMEOUT": "2",
}
SLOW_REQUESTS = 8  # more than the pool's 5 connections
WAITING = "waiting for the rest of its body"
BIG_FILE = 8 * 1024 * 1024  # far more than the socket buffers between server and client
ANSWER_WITHIN = 10.0  # "answers at all", not a latency


def project_with_big_file(server: Server) -> int:
    """A project whose main branch holds a file of BIG_FILE bytes, committed straight into
    its repository."""
    created = httpx.post(
        f"{server.url}/api/v4/projects",
        headers=ROOT,
        json={"name": "heavy", "initialize_with_readme": True},
        timeout=30,
    )
    assert created.status_code == 201, created.text
    project = created.json()["id"]
    repo = pygit2.Repository(str(repository_path(server.data_dir / "repositories", project)))
    head = repo.revparse_single("refs/heads/main").peel(pygit2.Commit)
    tree = repo.TreeBuilder(head.tree)
    content = ("0123456789abcdef" * 64 + "\n").encode() * (BIG_FILE // 1025)
    tree.insert("big.txt", repo.create_blob(content), pygit2.enums.FileMode.BLOB)
    who = pygit2.Signature("Test", "test@example.com")
    repo.create_commit("refs/heads/main", who, who, "big", tree.write(), [head.id])
    return project


class SlowDownload:
    """A GET of the repository's tar archive whose client reads the status line, then
    nothing more: the server's answer stalls on a full socket and the request stays open."""

    def __init__(self, server: Server, project: int) -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.sock.settimeout(ANSWER_WITHIN)
        self.sock.connect(("127.0.0.1", server.port))
        self.sock.sendall(
            f"GET /api/v4/projects/{project}/repository/archive.tar HTTP/1.1\r\n"
            f"Host: 127.0.0.1\r\nPrivate-Token: {ROOT_TOKEN}\r\n\r\n".encode()
        )

    def status(self) -> int:
        head = self.sock.recv(1024)
        return int(head.split(b" ", 2)[1])

    def close(self) -> None:
        self.sock.close()


class SlowUpload:
    """A project creation whose client sends its headers and the start of its body, then
    nothing more: taken on, the request waits for the rest for as long as the client wants."""

    BODY = b'{"name": "never-finished"}'

    def __init__(self, server: Server) -> None:
        self.sock = socket.create_connection(("127.0.0.1", server.port), timeout=ANSWER_WITHIN)
        self.sock.sendall(
            f"POST /api/v4/projects HTTP/1.1\r\nHost: 127.0.0.1\r\nPrivate-Token: {ROOT_TOKEN}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(self.BODY)}\r\n\r\n".encode()
            + self.BODY[:5]
        )

    def status(self) -> int | str:
        """A refusal comes at once (the queue waits 50 ms); a request taken on answers nothing."""
        self.sock.settimeout(1.0)
        try:
            head = self.sock.recv(1024)
        except TimeoutError:
            return WAITING
        finally:
            self.sock.settimeout(ANSWER_WITHIN)
        return int(head.split(b" ", 2)[1])

    def close(self) -> None:
        self.sock.close()


@dataclass
class Flood:
    server: Server
    project: int
    uploads: list[SlowUpload]
    statuses: list[int | str]

    def end(self) -> None:
        for u in self.uploads:
            u.close()


def flood(base: Path, database_url: str | None) -> Flood:
    """A server whose pool the slow uploads exceed, with the statuses they got."""
    server = start_server(base / "data", database_url, base / "logs", **SMALL)
    try:
        project = project_with_big_file(server)
        uploads = [SlowUpload(server) for _ in range(SLOW_REQUESTS)]
        return Flood(server, project, uploads, [u.status() for u in uploads])
    except BaseException:
        server.stop()
        raise


@pytest.fixture(scope="module")
def flooded(
    tmp_path_factory: pytest.TempPathFactory, new_database_url: Callable[[], str | None]
) -> Iterator[Flood]:
    """One flood for the tests that only look at it."""
    f = flood(tmp_path_factory.mktemp("flooded"), new_database_url())
    yield f
    f.end()
    f.server.stop()


@pytest.fixture
def own_flood(tmp_path: Path, new_database_url: Callable[[], str | None]) -> Iterator[Flood]:
    """A flood of this test's own, for the tests that end it."""
    f = flood(tmp_path, new_database_url())
    yield f
    f.end()
    f.server.stop()


def job_sessions(server: Server) -> sessionmaker[Session]:
    settings = Settings(data_dir=server.data_dir, database_url=server.env.get("KILN_DATABASE_URL"))
    return make_sessionmaker(make_engine(settings))


def run_a_job(server: Server) -> str:
    """Queue a job the way the application does and wait for a worker to run it."""
    sessions = job_sessions(server)
    with sessions() as db, transaction(db):
        job_id = enqueue(db, "jobs.purge", {"older_than_seconds": 86400}).id
    deadline = time.monotonic() + 30
    while True:
        with sessions() as db:
            state = db.scalars(select(Job.state).where(Job.id == job_id)).one()
        if state == "done" or time.monotonic() > deadline:
            sessions.kw["bind"].dispose()
            return state
        time.sleep(0.05)


def test_past_the_pool_some_slow_requests_are_taken_on_and_the_rest_refused_with_503(flooded):
    assert set(flooded.statuses) == {WAITING, 503}, flooded.statuses


def test_under_overload_probes_answer(flooded):
    url = flooded.server.url

    version = httpx.get(f"{url}/api/v4/version", timeout=ANSWER_WITHIN)
    liveness = httpx.get(f"{url}/-/liveness", timeout=ANSWER_WITHIN)
    health = httpx.get(f"{url}/-/health", timeout=ANSWER_WITHIN)

    assert version.status_code == 200
    assert version.json()["revision"].startswith("kiln-")
    assert (liveness.status_code, health.status_code) == (200, 200)


def test_under_overload_what_needs_the_database_is_a_503_with_retry_after(flooded):
    url = f"{flooded.server.url}/api/v4/projects/{flooded.project}"

    answers = [httpx.get(url, headers=ROOT, timeout=ANSWER_WITHIN) for _ in range(10)]

    assert {r.status_code for r in answers} == {503}
    assert {r.text for r in answers} == {'{"message":"503 Service Unavailable"}'}
    assert {r.headers["retry-after"] for r in answers} == {"1"}
    assert {r.headers["content-type"] for r in answers} == {"application/json"}


def test_under_overload_queued_jobs_still_run(flooded):
    assert run_a_job(flooded.server) == "done"


def test_once_the_load_is_gone_everything_is_served_again(own_flood):
    url = own_flood.server.url

    own_flood.end()

    deadline = time.monotonic() + ANSWER_WITHIN
    while (first := httpx.get(f"{url}/api/v4/projects/{own_flood.project}", headers=ROOT)).status_code == 503:
        assert time.monotonic() < deadline, "still refusing after the load went"
        time.sleep(0.1)
    following = [
        httpx.get(f"{url}/api/v4/projects/{own_flood.project}", headers=ROOT).status_code for _ in range(20)
    ]
    archive = httpx.get(f"{url}/api/v4/projects/{own_flood.project}/repository/archive.tar", headers=ROOT)
    assert first.status_code == 200
    assert following == [200] * 20
    assert (archive.status_code, len(archive.content) > BIG_FILE) == (200, True)
    assert run_a_job(own_flood.server) == "done"
    assert "Traceback" not in own_flood.server.output()


def test_slow_downloads_hold_no_place_among_the_requests_using_the_database(
    tmp_path: Path, new_database_url: Callable[[], str | None]
):
    server = start_server(tmp_path / "data", new_database_url(), tmp_path / "logs", **SMALL)
    downloads: list[SlowDownload] = []
    try:
        project = project_with_big_file(server)
        statuses = []
        for _ in range(SLOW_REQUESTS):  # each stalled before the next starts
            downloads.append(SlowDownload(server, project))
            statuses.append(downloads[-1].status())
        answers = [
            httpx.get(
                f"{server.url}/api/v4/projects/{project}", headers=ROOT, timeout=ANSWER_WITHIN
            ).status_code
            for _ in range(10)
        ]
    finally:
        for d in downloads:
            d.close()
        server.stop()
    assert statuses == [200] * SLOW_REQUESTS
    assert answers == [200] * 10


def test_sigterm_stops_a_loaded_server_within_its_deadline(own_flood):
    process = own_flood.server.process

    process.terminate()

    # Shutdown gets 2 s (KILN_SHUTDOWN_TIMEOUT) for the stalled uploads, then ends them.
    assert process.wait(timeout=30) is not None
    assert "Traceback" not in own_flood.server.output()
