"""Overload answers: a database without a connection or a write for the request now is a
503 with Retry-After, never a 500; KilnASGI admits no more requests to the database than
it may, refuses the rest at once or after a short wait, and always answers the probes."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest
from litestar import Litestar, Request, get
from litestar.testing import TestClient
from sqlalchemy.exc import OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from kiln.api._asgi import Admission, KilnASGI
from kiln.api._errors import HANDLERS

UNAVAILABLE = {"message": "503 Service Unavailable"}


@pytest.fixture
def database_errors() -> Iterator[TestClient[Any]]:
    @get("/pool", sync_to_thread=False)
    def pool(request: Request[Any, Any, Any]) -> None:
        raise PoolTimeout("QueuePool limit of size 8 overflow 16 reached, connection timed out")

    @get("/locked", sync_to_thread=False)
    def locked(request: Request[Any, Any, Any]) -> None:
        raise OperationalError("UPDATE users SET x=1", {}, Exception("database is locked"))

    @get("/lock-timeout", sync_to_thread=False)
    def lock_timeout(request: Request[Any, Any, Any]) -> None:
        error = psycopg.errors.LockNotAvailable("canceling statement due to lock timeout")
        raise OperationalError("SELECT 1 FROM projects", {}, error)

    @get("/deadlock", sync_to_thread=False)
    def deadlock(request: Request[Any, Any, Any]) -> None:
        raise OperationalError(
            "UPDATE projects SET x=1", {}, psycopg.errors.DeadlockDetected("deadlock detected")
        )

    @get("/broken", sync_to_thread=False)
    def broken(request: Request[Any, Any, Any]) -> None:
        raise OperationalError("SELECT nope FROM users", {}, Exception("no such column: nope"))

    app = Litestar(
        route_handlers=[pool, locked, lock_timeout, deadlock, broken],
        exception_handlers=HANDLERS,
        logging_config=None,
    )
    with TestClient(app) as c:
        yield c


def test_a_pool_timeout_is_503_with_retry_after(database_errors):
    r = database_errors.get("/pool")

    assert (r.status_code, r.json(), r.headers["retry-after"]) == (503, UNAVAILABLE, "1")


def test_a_locked_database_is_503_with_retry_after(database_errors):
    r = database_errors.get("/locked")

    assert (r.status_code, r.json(), r.headers["retry-after"]) == (503, UNAVAILABLE, "1")


@pytest.mark.parametrize("path", ["/lock-timeout", "/deadlock"])
def test_a_lock_not_had_in_time_or_a_deadlock_is_503_with_retry_after(database_errors, path):
    r = database_errors.get(path)

    assert (r.status_code, r.json(), r.headers["retry-after"]) == (503, UNAVAILABLE, "1")


def test_any_other_database_error_stays_a_bare_500(database_errors):
    r = database_errors.get("/broken")

    assert (r.status_code, r.json()) == (500, {"message": "500 Internal Server Error"})
    assert "retry-after" not in r.headers


class Gate:
    """Requests to /held wait here until released: they hold their admission slot."""

    def __init__(self) -> None:
        self.open = asyncio.Event()
        self.entered = 0


def admitted_app(gate: Gate, queue: int, timeout: float) -> KilnASGI:
    @get("/held")
    async def held() -> dict[str, int]:
        gate.entered += 1
        await gate.open.wait()
        return {"ok": 1}

    @get("/-/liveness")
    async def liveness() -> dict[str, str]:
        return {"status": "ok"}

    @get("/api/v4/version")
    async def version() -> dict[str, str]:
        return {"version": "x"}

    app = Litestar(route_handlers=[held, liveness, version], exception_handlers=HANDLERS, logging_config=None)
    return KilnASGI(app, 1024, Admission(limit=2, queue=queue, timeout=timeout, max_lag=0, retry_after=1))


async def in_flight(client: httpx.AsyncClient, gate: Gate, n: int) -> list[asyncio.Task[httpx.Response]]:
    tasks = [asyncio.create_task(client.get("/held")) for _ in range(n)]
    while gate.entered < n:
        await asyncio.sleep(0.001)
    return tasks


def test_beyond_the_limit_and_a_full_queue_a_request_is_refused_at_once():
    async def scenario() -> tuple[int, dict[str, Any], str, list[int]]:
        gate = Gate()
        transport = httpx.ASGITransport(app=admitted_app(gate, queue=0, timeout=5.0))
        async with httpx.AsyncClient(transport=transport, base_url="http://kiln.test") as client:
            held = await in_flight(client, gate, 2)
            refused = await client.get("/held")
            gate.open.set()
            done = [r.status_code for r in await asyncio.gather(*held)]
        return refused.status_code, refused.json(), refused.headers["retry-after"], done

    assert asyncio.run(scenario()) == (503, UNAVAILABLE, "1", [200, 200])


def test_a_queued_request_is_served_when_a_slot_frees():
    async def scenario() -> list[int]:
        gate = Gate()
        transport = httpx.ASGITransport(app=admitted_app(gate, queue=1, timeout=5.0))
        async with httpx.AsyncClient(transport=transport, base_url="http://kiln.test") as client:
            held = await in_flight(client, gate, 2)
            queued = asyncio.create_task(client.get("/held"))
            await asyncio.sleep(0.05)
            gate.open.set()
            return [r.status_code for r in await asyncio.gather(*held, queued)]

    assert asyncio.run(scenario()) == [200, 200, 200]


def test_a_queued_request_that_waits_too_long_is_refused():
    async def scenario() -> tuple[int, list[int]]:
        gate = Gate()
        transport = httpx.ASGITransport(app=admitted_app(gate, queue=4, timeout=0.02))
        async with httpx.AsyncClient(transport=transport, base_url="http://kiln.test") as client:
            held = await in_flight(client, gate, 2)
            late = await client.get("/held")
            gate.open.set()
            return late.status_code, [r.status_code for r in await asyncio.gather(*held)]

    assert asyncio.run(scenario()) == (503, [200, 200])


def test_probes_are_answered_while_every_slot_is_taken():
    async def scenario() -> list[int]:
        gate = Gate()
        transport = httpx.ASGITransport(app=admitted_app(gate, queue=0, timeout=0.0))
        async with httpx.AsyncClient(transport=transport, base_url="http://kiln.test") as client:
            held = await in_flight(client, gate, 2)
            probes = [
                await client.get("/-/liveness"),
                await client.get("/api/v4/version"),
                await client.get("/api/v4/version", headers={"Private-Token": "x"}),
            ]
            gate.open.set()
            await asyncio.gather(*held)
        return [r.status_code for r in probes]

    # With a token, /version authenticates it: that needs the database like any request.
    assert asyncio.run(scenario()) == [200, 200, 503]
