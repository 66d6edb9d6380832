"""Load on asyncio, run as its own process (`python -m bench.loadgen --url ...`) so it never
shares an interpreter with the harness; prints one `BENCH_JSON {...}` line like the wrk script.

Closed loop (the fallback when wrk is missing): N keep-alive HTTP/1.1 connections, each
sending its next request when the last is answered.

Open loop (`--rate R`): a request leaves every 1/R seconds on schedule, however late the
earlier answers are, on an idle keep-alive connection or a new one; its latency counts from
its scheduled time, so a stalled server shows as latency instead of fewer requests (no
coordinated omission)."""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

MARKER = "BENCH_JSON "
TIMEOUT_S = 5  # as wrk --timeout in bench.load
# What a request may end with short of an answer: a connection refused, reset or closed
# mid-answer, an answer that does not parse, or none in time.
IO_ERRORS = (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ValueError)
# A keep-alive connection idle this long is closed rather than reused, as HTTP clients do
# (httpx's keepalive_expiry is 5 s): the servers close theirs after 5 s idle (uvicorn's
# timeout_keep_alive), and a request sent on one they have just closed fails as no client's
# would.
KEEPALIVE_EXPIRY_S = 4.0


@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)
    bytes: int = 0
    errors: int = 0
    timeouts: int = 0
    non_2xx: int = 0

    def record(self, status: int, size: int, latency: float) -> None:
        self.latencies.append(latency)
        self.bytes += size
        if not 200 <= status < 400:
            self.non_2xx += 1

    def failed(self, exc: BaseException) -> None:
        if isinstance(exc, TimeoutError):
            self.timeouts += 1
        else:
            self.errors += 1


async def read_response(reader: asyncio.StreamReader) -> tuple[int, int, bool]:
    """Status, body size and whether the server keeps the connection open."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split(b" ", 2)[1])
    length: int | None = None
    chunked = False
    keep_alive = True
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        value = value.strip().lower()
        if name == b"content-length":
            length = int(value)
        elif name == b"transfer-encoding" and b"chunked" in value:
            chunked = True
        elif name == b"connection" and value == b"close":
            keep_alive = False
    size = len(head)
    if chunked:
        while True:
            size_line = await reader.readuntil(b"\r\n")
            chunk = int(size_line.split(b";", 1)[0], 16)
            await reader.readexactly(chunk + 2)
            size += len(size_line) + chunk + 2
            if chunk == 0:
                break
    elif length is not None:
        await reader.readexactly(length)
        size += length
    return status, size, keep_alive


async def connection(
    host: str, port: int, request: Callable[[], bytes], deadline: float, tally: Tally
) -> None:
    writer: asyncio.StreamWriter | None = None
    while time.perf_counter() < deadline:
        try:
            if writer is None:
                reader, writer = await asyncio.open_connection(host, port)
            started = time.perf_counter()
            writer.write(request())
            status, size, keep_alive = await asyncio.wait_for(read_response(reader), timeout=TIMEOUT_S)
            tally.record(status, size, time.perf_counter() - started)
            if not keep_alive:
                writer.close()
                writer = None
        except IO_ERRORS as exc:
            tally.failed(exc)
            if writer is not None:
                writer.close()
                writer = None
            await asyncio.sleep(0.01)
    if writer is not None:
        writer.close()


def percentile(ordered: list[float], pct: float) -> float:
    if not ordered:
        return 0.0
    index = min(len(ordered) - 1, max(0, round(pct / 100 * len(ordered)) - 1))
    return ordered[index]


def requests_of(url: str, headers: list[str], fresh: bool) -> Callable[[], bytes]:
    """The request to send next: always the same, or with `fresh` a new query each time
    (bench.load.WRK_FRESH)."""
    if not fresh:
        same = raw_request(url, headers)
        return lambda: same
    counter = itertools.count(1)
    return lambda: raw_request(f"{url}&fresh={next(counter)}", headers)


async def drive(
    url: str, headers: list[str], connections: int, duration: float, fresh: bool = False
) -> dict[str, float | int]:
    parts = urlsplit(url)
    host = parts.hostname or "127.0.0.1"
    port = parts.port or 80
    request = requests_of(url, headers, fresh)
    tally = Tally()
    started = time.perf_counter()
    deadline = started + duration
    await asyncio.gather(*(connection(host, port, request, deadline, tally) for _ in range(connections)))
    return _summary(tally, time.perf_counter() - started)


class Pool:
    """Keep-alive connections to one server: the one idle last if it has not been idle too
    long (KEEPALIVE_EXPIRY_S), else a new one."""

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter, float]] = []
        self.opened = 0

    async def request(self, raw: bytes, timeout: float) -> tuple[int, int]:
        """Status and size of the answer to `raw`, which must be in within `timeout` seconds,
        connecting included; a connection that fails or runs out of time is closed."""
        return await asyncio.wait_for(self._exchange(raw), timeout)

    async def _exchange(self, raw: bytes) -> tuple[int, int]:
        reader, writer = await self._take()
        try:
            writer.write(raw)
            status, size, keep_alive = await read_response(reader)
        except BaseException:
            writer.close()
            raise
        if keep_alive:
            self.idle.append((reader, writer, time.monotonic()))
        else:
            writer.close()
        return status, size

    async def _take(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        now = time.monotonic()
        while self.idle:
            reader, writer, since = self.idle.pop()
            if now - since < KEEPALIVE_EXPIRY_S:
                return reader, writer
            writer.close()
        self.opened += 1
        return await asyncio.open_connection(self.host, self.port, limit=1 << 20)

    def close(self) -> None:
        while self.idle:
            self.idle.pop()[1].close()


async def scheduled(pool: Pool, request: bytes, due: float, tally: Tally, late: list[float]) -> None:
    delay = due - time.perf_counter()
    if delay > 0:
        await asyncio.sleep(delay)
    late.append(max(0.0, time.perf_counter() - due))
    try:
        status, size = await pool.request(request, max(0.001, due + TIMEOUT_S - time.perf_counter()))
    except IO_ERRORS as exc:
        tally.failed(exc)
    else:
        tally.record(status, size, time.perf_counter() - due)


async def drive_open(
    url: str, headers: list[str], rate: float, duration: float, fresh: bool = False
) -> dict[str, float | int]:
    parts = urlsplit(url)
    host = parts.hostname or "127.0.0.1"
    pool = Pool(host, parts.port or 80)
    request = requests_of(url, headers, fresh)
    tally = Tally()
    late: list[float] = []
    started = time.perf_counter() + 0.05
    count = int(rate * duration)
    tasks = [
        asyncio.ensure_future(scheduled(pool, request(), started + n / rate, tally, late))
        for n in range(count)
    ]
    await asyncio.gather(*tasks)
    elapsed = time.perf_counter() - started
    pool.close()
    result = _summary(tally, elapsed)
    ordered_late = sorted(late)
    # How far behind schedule the generator itself sent: its own overload shows here.
    result["send_late_p99_ms"] = round(percentile(ordered_late, 99) * 1000, 3)
    result["connections_opened"] = pool.opened
    result["rate"] = rate
    return result


def raw_request(url: str, headers: Iterable[str] = (), method: str = "GET", body: bytes = b"") -> bytes:
    """One HTTP/1.1 request, headers given as "Name: value"; a body gets its Content-Length."""
    parts = urlsplit(url)
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    lines = [f"{method} {target} HTTP/1.1", f"Host: {parts.netloc}", "Accept: */*", *headers]
    if body:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def _summary(tally: Tally, elapsed: float) -> dict[str, float | int]:
    ordered = sorted(tally.latencies)
    ms = 1000.0
    return {
        "requests": len(ordered),
        "duration_s": round(elapsed, 6),
        "bytes": tally.bytes,
        "errors": tally.errors,
        "timeouts": tally.timeouts,
        "non_2xx": tally.non_2xx,
        "mean_ms": round(sum(ordered) / len(ordered) * ms, 3) if ordered else 0.0,
        "p50_ms": round(percentile(ordered, 50) * ms, 3),
        "p90_ms": round(percentile(ordered, 90) * ms, 3),
        "p99_ms": round(percentile(ordered, 99) * ms, 3),
        "max_ms": round(ordered[-1] * ms, 3) if ordered else 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", required=True)
    parser.add_argument("--header", action="append", default=[], help="'Name: value', repeatable")
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=0.0, help="open loop: requests per second")
    parser.add_argument("--fresh", action="store_true", help="a new query on every request")
    args = parser.parse_args()
    try:
        import uvloop
    except ImportError:
        runner = asyncio.run
    else:
        runner = uvloop.run
    if args.rate > 0:
        result = runner(drive_open(args.url, args.header, args.rate, args.duration, args.fresh))
    else:
        result = runner(drive(args.url, args.header, args.connections, args.duration, args.fresh))
    print(MARKER + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
