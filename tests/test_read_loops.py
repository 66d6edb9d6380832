"""Reads on PostgreSQL run on event loops of their own threads (kiln/api/_read_loops.py):
a read that blocks its thread on the database leaves the serving loop, and the other reads,
free; the answer still goes out through the serving loop's connection."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from kiln.api._asgi import _is_api_read
from kiln.api._deps import in_thread
from kiln.api._read_loops import ReadLoops
from kiln.config import Settings
from tests.threads import Blocked, cancel_while_blocked

POOL = "the-request-pool"


@pytest.fixture
def loops():
    pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix=POOL)
    running = ReadLoops(2)
    running.start(pool)
    yield running
    running.stop(5)
    pool.shutdown()


def answering(body: bytes, ran_on: list[str], wait: threading.Barrier | None = None) -> Any:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        ran_on.append(threading.current_thread().name)
        request = await receive()
        if wait is not None:
            wait.wait(timeout=5)  # blocks its thread, as a driver waiting on the database does
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": body + request["body"]})

    return app


async def call(loops: ReadLoops, app: Any, body: bytes = b"") -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []
    serving = threading.current_thread()

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        assert threading.current_thread() is serving  # the connection's own loop
        sent.append(message)

    await loops.run(app, {"type": "http"}, receive, send)
    return sent


def test_a_read_runs_on_a_read_loop_and_answers_through_the_serving_loop(loops):
    ran_on: list[str] = []
    sent = asyncio.run(call(loops, answering(b"answer:", ran_on), b"asked"))
    assert ran_on[0].startswith("kiln-read-")
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.body"]
    assert sent[1]["body"] == b"answer:asked"


def test_work_a_read_runs_on_a_thread_uses_the_serving_loops_bounded_pool(loops):
    """Not the read loop's own default pool, which would grow threads past the bound."""

    async def threaded(scope: Any, receive: Any, send: Any) -> None:
        name = await in_thread(lambda: threading.current_thread().name)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": name.encode()})

    sent = asyncio.run(call(loops, threaded))
    assert sent[1]["body"].decode().startswith(f"{POOL}_")


def test_reads_that_block_their_thread_go_on_side_by_side(loops):
    """Each waits for the other at a barrier: on one thread they could never both arrive."""
    ran_on: list[str] = []
    both = threading.Barrier(2)

    async def two() -> list[list[dict[str, Any]]]:
        return list(
            await asyncio.gather(
                call(loops, answering(b"a", ran_on, both)), call(loops, answering(b"b", ran_on, both))
            )
        )

    answers = asyncio.run(two())
    assert [a[1]["body"] for a in answers] == [b"a", b"b"]
    assert len(set(ran_on)) == 2


def test_an_error_of_the_read_reaches_the_serving_loop(loops):
    async def failing(scope: Any, receive: Any, send: Any) -> None:
        raise LookupError("from the read loop")

    with pytest.raises(LookupError, match="from the read loop"):
        asyncio.run(call(loops, failing))


def test_read_loops_are_postgresqls_only_by_default():
    assert Settings(database_url="sqlite:///kiln.db").read_loop_count == 0
    assert Settings(database_url="postgresql+psycopg://kiln@db/kiln").read_loop_count == 8
    assert Settings(database_url="postgresql+psycopg://kiln@db/kiln", read_threads=0).read_loop_count == 0


def test_an_answer_whose_body_never_comes_still_starts(loops):
    async def start_only(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 204, "headers": []})

    sent = asyncio.run(call(loops, start_only))
    assert [(m["type"], m.get("status")) for m in sent] == [("http.response.start", 204)]


def test_a_cancelled_read_goes_on_only_once_its_thread_is_done_with_it(loops):
    """At shutdown the request is cancelled; a read blocked in the driver cannot be: the
    request's cleanup (closing its session) must wait until the read has really ended."""
    blocked = Blocked()

    async def reading(scope: Any, receive: Any, send: Any) -> None:
        blocked.block()  # blocks the read loop's thread

    asyncio.run(cancel_while_blocked(call(loops, reading), blocked))


@pytest.mark.parametrize(
    ("method", "path", "headers", "crosses"),
    [
        ("GET", "/api/v4/projects", [], True),
        ("GET", "/api/v4/version", [(b"private-token", b"x")], True),
        ("GET", "/api/v4/version", [], False),  # tooling's probe: no database to wait on
        ("POST", "/api/v4/projects", [], False),  # writes wait on the writer through in_thread
        ("GET", "/-/health", [], False),
    ],
)
def test_only_api_reads_that_wait_on_the_database_cross_to_a_read_loop(method, path, headers, crosses):
    scope = {"type": "http", "method": method, "path": path, "headers": headers, "query_string": b""}
    assert _is_api_read(scope) is crosses
