"""kiln on several processes sharing one database: what one process (or another node)
changes is honoured by every other on its very next request, and concurrent writes from
several processes on SQLite neither fail nor wait into an error.

Two `kiln serve` on one data dir and database are two nodes whose requests go exactly where
a test sends them; `--processes 2` is one node with two HTTP processes behind one port."""

from __future__ import annotations

import os
import re
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import update

from kiln.auth.tokens import digest
from kiln.config import Settings
from kiln.db import make_engine, make_sessionmaker
from kiln.models import PersonalAccessToken
from kiln.services import instance_settings
from tests.e2e.conftest import ROOT_TOKEN, Server, start_server

pytestmark = pytest.mark.e2e

ROOT = {"Private-Token": ROOT_TOKEN}
ROUNDS = 6  # per writer: a status update and a new project each


@pytest.fixture(scope="module")
def nodes(
    tmp_path_factory: pytest.TempPathFactory, new_database_url: Callable[[], str | None]
) -> Iterator[tuple[Server, Server]]:
    base = tmp_path_factory.mktemp("nodes")
    url = new_database_url()
    first = start_server(base / "data", url, base / "logs", KILN_PROCESSES="1")
    try:
        second = start_server(base / "data", url, base / "logs", KILN_PROCESSES="1")
    except BaseException:
        first.stop()
        raise
    yield first, second
    second.stop()
    first.stop()


def new_user(url: str) -> tuple[int, str]:
    """A user with a personal access token of its own."""
    name = f"u-{uuid.uuid4().hex[:8]}"
    user = httpx.post(
        f"{url}/api/v4/users",
        headers=ROOT,
        json={"username": name, "email": f"{name}@example.com", "name": name, "password": "x" * 12},
    )
    assert user.status_code == 201, user.text
    token = httpx.post(
        f"{url}/api/v4/users/{user.json()['id']}/personal_access_tokens",
        headers=ROOT,
        json={"name": "t", "scopes": ["api"]},
    )
    assert token.status_code == 201, token.text
    return user.json()["id"], token.json()["token"]


def private_project(url: str, *, member: int, added_through: str | None = None, **fields: Any) -> int:
    """A private project of root's, made through `url`, with `member` a Developer (added
    through `added_through`, another node, when given)."""
    project = httpx.post(
        f"{url}/api/v4/projects",
        headers=ROOT,
        json={"name": f"p-{uuid.uuid4().hex[:8]}", "visibility": "private", **fields},
    )
    assert project.status_code == 201, project.text
    added = httpx.post(
        f"{added_through or url}/api/v4/projects/{project.json()['id']}/members",
        headers=ROOT,
        json={"user_id": member, "access_level": 30},
    )
    assert added.status_code == 201, added.text
    return int(project.json()["id"])


def test_a_revoked_token_is_refused_by_every_node_on_the_next_request(nodes):
    a, b = nodes
    _user, token = new_user(a.url)
    me = {"Private-Token": token}
    assert [httpx.get(f"{n.url}/api/v4/user", headers=me).status_code for n in (a, b, a, b)] == [200] * 4
    token_id = httpx.get(f"{a.url}/api/v4/personal_access_tokens/self", headers=me).json()["id"]

    revoked = httpx.delete(f"{b.url}/api/v4/personal_access_tokens/{token_id}", headers=ROOT)

    assert revoked.status_code == 204
    assert [httpx.get(f"{n.url}/api/v4/user", headers=me).status_code for n in (a, b)] == [401, 401]


def test_a_token_revoked_in_the_database_itself_is_refused_by_every_node_on_the_next_request(nodes):
    """Rows a node reuses while nothing changed are read again after a write no node made
    (an operator's SQL): SQLite's data_version, PostgreSQL's notifications."""
    a, b = nodes
    _user, token = new_user(a.url)
    me = {"Private-Token": token}
    for _ in range(3):  # read, then reused by each node
        assert [httpx.get(f"{n.url}/api/v4/user", headers=me).status_code for n in (a, b)] == [200, 200]
    engine = make_engine(Settings(data_dir=a.data_dir, database_url=a.env.get("KILN_DATABASE_URL")))
    try:
        with engine.begin() as conn:
            conn.execute(
                update(PersonalAccessToken)
                .where(PersonalAccessToken.digest == digest(token))
                .values(revoked=True)
            )
    finally:
        engine.dispose()

    assert [httpx.get(f"{n.url}/api/v4/user", headers=me).status_code for n in (b, a)] == [401, 401]


def test_a_file_read_again_and_again_is_refused_on_every_node_once_the_member_is_removed(nodes):
    a, b = nodes
    user, token = new_user(a.url)
    me = {"Private-Token": token}
    project = private_project(a.url, member=user, initialize_with_readme=True)
    path = f"/api/v4/projects/{project}/repository/files/README.md?ref=main"
    for _ in range(3):
        assert [httpx.get(f"{n.url}{path}", headers=me).status_code for n in (a, b)] == [200, 200]

    removed = httpx.delete(f"{b.url}/api/v4/projects/{project}/members/{user}", headers=ROOT)

    assert removed.status_code == 204
    assert [httpx.get(f"{n.url}{path}", headers=me).status_code for n in (a, b)] == [404, 404]


def test_a_removed_member_loses_access_on_every_node_on_the_next_request(nodes):
    a, b = nodes
    user, token = new_user(a.url)
    me = {"Private-Token": token}
    project = private_project(a.url, member=user, added_through=b.url)
    seen = [httpx.get(f"{n.url}/api/v4/projects/{project}", headers=me).status_code for n in (a, b, a, b)]
    assert seen == [200] * 4

    removed = httpx.delete(f"{a.url}/api/v4/projects/{project}/members/{user}", headers=ROOT)

    assert removed.status_code == 204
    after = [httpx.get(f"{n.url}/api/v4/projects/{project}", headers=me) for n in (b, a)]
    assert [(r.status_code, r.json()) for r in after] == [(404, {"message": "404 Project Not Found"})] * 2


def test_a_change_shows_in_every_node_s_kept_lists_on_the_next_request(nodes):
    """Project and user lists keep records by row version in each process: a change made
    through another node is seen on the next request, as is a removed membership."""
    a, b = nodes
    user, token = new_user(a.url)
    me = {"Private-Token": token}
    project = private_project(a.url, member=user, description="before")

    def listed(server: Server) -> dict[str, object] | None:
        page = httpx.get(f"{server.url}/api/v4/projects?per_page=100&membership=true", headers=me).json()
        return next((p for p in page if p["id"] == project), None)

    def user_name(server: Server) -> str:
        page = httpx.get(f"{server.url}/api/v4/users?per_page=100", headers=ROOT).json()
        return next(str(u["name"]) for u in page if u["id"] == user)

    assert [listed(n)["description"] for n in (a, b, a, b)] == ["before"] * 4  # type: ignore[index]
    assert [user_name(n) for n in (a, b)] == [user_name(a)] * 2

    changed = httpx.put(f"{b.url}/api/v4/projects/{project}", headers=ROOT, json={"description": "changed"})
    renamed = httpx.put(f"{b.url}/api/v4/users/{user}", headers=ROOT, json={"name": "Renamed"})
    assert (changed.status_code, renamed.status_code) == (200, 200)
    assert [listed(n)["description"] for n in (a, b)] == ["changed"] * 2  # type: ignore[index]
    assert [user_name(n) for n in (a, b)] == ["Renamed"] * 2

    removed = httpx.delete(f"{b.url}/api/v4/projects/{project}/members/{user}", headers=ROOT)
    assert removed.status_code == 204
    assert [listed(n) for n in (a, b)] == [None, None]


def test_a_changed_instance_setting_applies_on_every_node_on_the_next_request(nodes):
    """No route changes application settings yet: the change is written as an admin tool on
    a third node would, through the instance settings service."""
    a, b = nodes

    def new_project_visibility(server: Server) -> str:
        r = httpx.post(
            f"{server.url}/api/v4/projects", headers=ROOT, json={"name": f"p-{uuid.uuid4().hex[:8]}"}
        )
        assert r.status_code == 201, r.text
        return str(r.json()["visibility"])

    assert [new_project_visibility(n) for n in (a, b)] == ["private", "private"]
    engine = make_engine(Settings(data_dir=a.data_dir, database_url=a.env.get("KILN_DATABASE_URL")))
    try:
        with make_sessionmaker(engine)() as db:
            instance_settings.update(db, {"default_project_visibility": "internal"})

        assert [new_project_visibility(n) for n in (a, b)] == ["internal", "internal"]
    finally:
        with make_sessionmaker(engine)() as db:
            instance_settings.update(db, {"default_project_visibility": "private"})
        engine.dispose()


@pytest.fixture
def two_processes(tmp_path: Path, new_database_url: Callable[[], str | None]) -> Iterator[Server]:
    server = start_server(tmp_path / "data", new_database_url(), tmp_path / "logs", KILN_PROCESSES="2")
    yield server
    server.stop()


def http_children(server: Server) -> list[int]:
    """The serving processes under `kiln serve` (multiprocessing's helpers aside)."""
    found = []
    for children in Path(f"/proc/{server.process.pid}/task").glob("*/children"):
        for pid in children.read_text().split():
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            if b"spawn_main" in cmdline:
                found.append(int(pid))
    return found


def test_serve_starts_one_http_process_per_usable_cpu_by_default(kiln_server):
    cpus = len(os.sched_getaffinity(0))

    assert f"with {cpus} process(es)" in kiln_server.output()
    # One process serves in-process; several are children of the one that runs the jobs.
    assert len(http_children(kiln_server)) == (cpus if cpus > 1 else 0)


def test_concurrent_writes_from_two_processes_all_succeed(two_processes):
    server = two_processes
    users = [new_user(server.url) for _ in range(4)]
    answers: list[int] = []

    def write(token: str, n: int) -> None:
        # A new connection per request, so the kernel spreads them over both processes.
        for i in range(ROUNDS):
            with httpx.Client(headers={"Private-Token": token}) as c:
                answers.append(
                    c.put(f"{server.url}/api/v4/user/status", json={"message": f"{n}-{i}"}).status_code
                )
                answers.append(
                    c.post(
                        f"{server.url}/api/v4/projects", json={"name": f"w-{n}-{i}-{uuid.uuid4().hex[:6]}"}
                    ).status_code
                )

    threads = [threading.Thread(target=write, args=(token, n)) for n, (_, token) in enumerate(users * 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)

    assert len(http_children(server)) == 2
    assert sorted(set(answers)) == [200, 201]
    assert len(answers) == 8 * ROUNDS * 2
    assert not re.search(r"database is locked|Traceback", server.output())
