"""`python -m bench.observe`: what the access log, request id and HTTP metrics cost per
request. The same ASGI app is called in-process (no sockets, no HTTP parsing) with and without
the observing layer, on a probe that touches no database and on GET /user (authentication:
statements, counted by the engine events either way, as they are installed once per engine)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from kiln import migrate
from kiln.app import create_app
from kiln.config import Settings
from kiln.db import make_engine, make_sessionmaker
from kiln.runtime import Runtime
from kiln.services.users import bootstrap_root

TOKEN = "bench-observe-root-token"


def scope(path: str, headers: list[tuple[bytes, bytes]]) -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"kiln.bench"), *headers],
        "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 8080),
    }


async def request(app: Any, path: str, headers: list[tuple[bytes, bytes]]) -> int:
    status = 0

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]

    await app(scope(path, headers), receive, send)
    return status


async def per_request_us(app: Any, path: str, headers: list[tuple[bytes, bytes]], n: int) -> float:
    status = await request(app, path, headers)
    assert status == 200, (path, status)
    start = time.perf_counter()
    for _ in range(n):
        await request(app, path, headers)
        await asyncio.sleep(0)  # the loop's own timers run, as between requests of a server
    return (time.perf_counter() - start) / n * 1e6


async def lifespan(app: Any) -> None:
    messages = [{"type": "lifespan.startup"}]

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop()
        await asyncio.Event().wait()
        return {}

    started = asyncio.Event()

    async def send(message: dict[str, Any]) -> None:
        if message["type"].startswith("lifespan.startup"):
            started.set()

    asyncio.get_running_loop().create_task(app({"type": "lifespan"}, receive, send))
    await started.wait()


async def main(n: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(
            data_dir=Path(tmp),
            database_url=f"sqlite:///{tmp}/kiln.db",
            external_url="http://kiln.bench",
            root_password="bench-root-password",
            root_token=TOKEN,
            password_time_cost=1,
            password_memory_cost=8192,
            workers=0,
            # One request at a time in a tight loop: nothing to admit or refuse.
            request_queue_timeout=3600.0,
            max_loop_lag=0.0,
        )
        settings.ensure_dirs()
        engine = make_engine(settings)
        migrate.upgrade(engine)
        rt = Runtime(settings=settings, engine=engine, sessions=make_sessionmaker(engine))
        with rt.sessions() as db:
            bootstrap_root(db, settings)
        observed = create_app(runtime=rt)
        await lifespan(observed)
        tap = observed.inner.app
        access = logging.getLogger("kiln.access")
        access.propagate = False
        sink = logging.StreamHandler(open(os.devnull, "w"))  # noqa: SIM115 — lives as long as the run
        access.addHandler(sink)
        auth = [(b"private-token", TOKEN.encode())]
        results: dict[tuple[str, str], list[float]] = {}
        for _ in range(rounds):
            for path, headers in (("/-/liveness", []), ("/api/v4/user", auth)):
                observed.inner.app = tap.app  # the layer's tap out too: the app as it was
                results.setdefault((path, "without"), []).append(
                    await per_request_us(observed.inner, path, headers, n)
                )
                observed.inner.app = tap
                access.setLevel(logging.WARNING)
                results.setdefault((path, "metrics only"), []).append(
                    await per_request_us(observed, path, headers, n)
                )
                access.setLevel(logging.INFO)
                results.setdefault((path, "metrics + access line"), []).append(
                    await per_request_us(observed, path, headers, n)
                )
        for (path, kind), samples in results.items():
            print(f"{path:16} {kind:24} {statistics.median(samples):8.1f} µs/request")
        engine.dispose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("-n", type=int, default=2000, help="requests per measurement")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(main(args.n, args.rounds))
