"""Rate limits across processes: two `kiln serve` processes (each with its own HTTP processes)
on one database count one user's requests together, whichever process answers each."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text

from kiln.db import make_engine_unpooled
from tests.e2e.conftest import ROOT_TOKEN, Server, start_server

LIMIT = 10


@pytest.fixture(scope="module")
def two_servers(
    new_database_url: Callable[[], str | None], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Server, Server, str]]:
    """Two serve processes, each with a data dir of its own, on one database: the first's
    SQLite file, or one PostgreSQL database."""
    base = tmp_path_factory.mktemp("rate-limits")
    url = new_database_url() or f"sqlite:///{(base / 'first' / 'kiln.db').resolve()}"
    shared = {"KILN_SECRET_KEY_BASE": secrets.token_hex(64)}
    first = start_server(base / "first", url, base / "logs", **shared)
    try:
        second = start_server(base / "second", url, base / "logs", **shared)
    except BaseException:
        first.stop()
        raise
    yield first, second, url
    second.stop()
    first.stop()


def burst(servers: tuple[Server, ...], n: int, token: str) -> list[httpx.Response]:
    """`n` GET /user, taking turns between the servers."""
    answers = []
    clients = [httpx.Client(base_url=s.url, headers={"Private-Token": token}, timeout=10) for s in servers]
    try:
        for i in range(n):
            answers.append(clients[i % len(clients)].get("/api/v4/user"))
    finally:
        for client in clients:
            client.close()
    return answers


def a_user_token(server: Server) -> str:
    """A new user with a personal access token, made through the API as root."""
    root = {"Private-Token": ROOT_TOKEN}
    name = f"burst-{secrets.token_hex(4)}"
    user = httpx.post(
        f"{server.url}/api/v4/users",
        headers=root,
        json={
            "username": name,
            "email": f"{name}@example.com",
            "name": name,
            "password": secrets.token_hex(12),
        },
        timeout=10,
    )
    assert user.status_code == 201, user.text
    token = httpx.post(
        f"{server.url}/api/v4/users/{user.json()['id']}/personal_access_tokens",
        headers=root,
        json={"name": "burst", "scopes": ["api"]},
        timeout=10,
    )
    assert token.status_code == 201, token.text
    return str(token.json()["token"])


@pytest.fixture(scope="module")
def limited(two_servers: tuple[Server, Server, str]) -> tuple[Server, Server]:
    """The authenticated API throttle switched on through the first server's settings API:
    the second learns of it from the database."""
    first, second, _ = two_servers
    changed = httpx.put(
        f"{first.url}/api/v4/application/settings",
        headers={"Private-Token": ROOT_TOKEN},
        json={
            "throttle_authenticated_api_enabled": True,
            "throttle_authenticated_api_requests_per_period": LIMIT,
            "throttle_authenticated_api_period_in_seconds": 3600,
        },
        timeout=10,
    )
    assert changed.status_code == 200, changed.text
    return first, second


def test_a_burst_split_across_two_servers_is_refused_once_past_the_shared_limit(limited):
    answers = burst(limited, LIMIT + 4, a_user_token(limited[0]))
    assert [r.status_code for r in answers[:LIMIT]] == [200] * LIMIT
    refused = answers[LIMIT:]
    assert [r.status_code for r in refused] == [429] * 4
    for r in refused:
        assert 0 < int(r.headers["Retry-After"]) <= 3600
        assert r.headers["RateLimit-Name"] == "throttle_authenticated_api"
        assert r.text == "Retry later\n"
    assert [int(r.headers["RateLimit-Observed"]) for r in refused] == list(range(LIMIT + 1, LIMIT + 5))


def test_under_the_shared_limit_nothing_is_refused(limited):
    answers = burst(limited, LIMIT, a_user_token(limited[1]))
    assert [r.status_code for r in answers] == [200] * LIMIT


def test_the_counts_are_kept_apart_from_kilns_tables(two_servers, limited):
    """SQLite: a file of their own beside the database; PostgreSQL: an unlogged table that
    notifies no change (no trigger), so counting leaves every reused read valid."""
    first, _, url = two_servers
    if url.startswith("sqlite"):
        assert (Path(first.data_dir) / "rate_limits.db").exists()
        return
    engine = make_engine_unpooled(url)
    try:
        with engine.connect() as conn:
            persistence = conn.execute(
                text("SELECT relpersistence FROM pg_class WHERE relname = 'kiln_rate_limits'")
            ).scalar_one()
            triggers = conn.execute(
                text("SELECT count(*) FROM pg_trigger WHERE tgrelid = 'kiln_rate_limits'::regclass")
            ).scalar_one()
    finally:
        engine.dispose()
    assert (persistence, triggers) == ("u", 0)
