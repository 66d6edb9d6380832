"""`python -m bench.overload`: kiln offered more than it can serve, and kiln with several
processes writing to one SQLite file.

1. Overload. One `kiln serve --processes 1` pinned to CPU 0 on a fresh SQLite data dir, with
   one project whose repository has a README; the load comes from this process on CPU 1.
   First the route's sustainable rate is measured closed-loop (N keep-alive connections,
   200s only). Then an open-loop generator offers 3x that rate for a while: each request
   leaves at its scheduled time on an idle keep-alive connection, or a new one, however
   late the earlier answers are, and its latency counts from that scheduled time (no
   coordinated omission). Meanwhile an anonymous GET /api/v4/version goes out every 100 ms,
   and a job is put in the queue. Reported: p50/p90/p99 of what was served, the share of
   503s and how fast they came, every other status (500s must be 0), the probes, whether
   the job ran during the flood, and a normal request afterwards.
2. Writers across processes. `kiln serve --processes 2` on a fresh SQLite data dir; 16
   connections write closed-loop (PUT /user/status, each a write transaction), spread
   over both processes by the kernel. Reported: p50/p90/p99 of the writes, statuses, and
   whether any process logged `database is locked`.

Results go to bench/results/overload-<time>.json and a summary to stdout."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import uvloop
from sqlalchemy import select

from bench.cli import bin_path, git_revision
from bench.loadgen import IO_ERRORS, Pool, percentile, raw_request
from bench.processes import ROOT_TOKEN, Managed, cpu_count, free_port, kiln_server, server_env
from kiln.config import Settings
from kiln.db import make_engine, make_sessionmaker, transaction
from kiln.jobs import enqueue
from kiln.models import Job

RESULTS = Path(__file__).resolve().parent / "results"
ROUTES = {
    # Waits on git in a thread while it holds its database connection: the pool's worst case.
    "languages": "/api/v4/projects/{id}/languages",
    # All on the event loop: the CPU's worst case.
    "project": "/api/v4/projects/{id}",
}
PROBE = "/api/v4/version"
PROBE_EVERY = 0.1
IO_TIMEOUT = 30.0


@dataclass
class Tally:
    """(status, seconds from scheduled departure to the full answer) per request."""

    results: list[tuple[int | str, float]] = field(default_factory=list)
    # The same, counted from when the request was actually sent: the server's part alone.
    answered: list[tuple[int | str, float]] = field(default_factory=list)
    # How late each request left: the server's slowness (its connection was busy) or the
    # generator's.
    late: list[float] = field(default_factory=list)

    def statuses(self) -> dict[str, int]:
        return {str(k): v for k, v in sorted(Counter(str(s) for s, _ in self.results).items())}

    def latencies(self, status: int, *, from_send: bool = False) -> dict[str, float]:
        ordered = sorted(t for s, t in (self.answered if from_send else self.results) if s == status)
        if not ordered:
            return {"count": 0}
        return {
            "count": len(ordered),
            "p50_ms": round(percentile(ordered, 50) * 1000, 1),
            "p90_ms": round(percentile(ordered, 90) * 1000, 1),
            "p99_ms": round(percentile(ordered, 99) * 1000, 1),
            "max_ms": round(ordered[-1] * 1000, 1),
        }


async def timed(conns: Pool, raw: bytes, departs: float, tally: Tally) -> None:
    sent = time.perf_counter()
    status: int | str
    try:
        status, _size = await conns.request(raw, IO_TIMEOUT)
    except IO_ERRORS as exc:
        status = type(exc).__name__
    now = time.perf_counter()
    tally.results.append((status, now - departs))
    tally.answered.append((status, now - sent))


async def closed_loop(conns: Pool, raw: bytes, connections: int, duration: float) -> Tally:
    """`connections` clients, each sending its next request when the last is answered."""
    tally = Tally()
    end = time.perf_counter() + duration

    async def client() -> None:
        own = Pool(conns.host, conns.port)
        while time.perf_counter() < end:
            await timed(own, raw, time.perf_counter(), tally)
        own.close()

    await asyncio.gather(*(client() for _ in range(connections)))
    return tally


async def open_loop(
    host: str, port: int, raw: bytes, rate: float, duration: float, connections: int, probe: bytes
) -> tuple[Tally, Tally]:
    """`rate` requests per second over `connections` keep-alive connections, as wrk2 does:
    connection k sends its n-th request at start + (n * connections + k) / rate, or as soon
    as its previous answer is in if that comes later, and the latency counts from the
    scheduled time. A slow server thus shows as latency, never as a lower offered rate. A
    probe leaves every PROBE_EVERY seconds on a connection of its own."""
    tally, probes = Tally(), Tally()
    start = time.perf_counter()
    end = start + duration

    async def client(k: int) -> None:
        own = Pool(host, port)
        n = 0
        while (due := start + (n * connections + k) / rate) < end:
            now = time.perf_counter()
            if due > now:
                await asyncio.sleep(due - now)
            tally.late.append(max(0.0, time.perf_counter() - due))
            await timed(own, raw, due, tally)
            n += 1
        own.close()

    async def prober() -> None:
        own = Pool(host, port)
        n = 0
        while (due := start + n * PROBE_EVERY) < end:
            now = time.perf_counter()
            if due > now:
                await asyncio.sleep(due - now)
            await timed(own, probe, due, probes)
            n += 1
        own.close()

    await asyncio.wait_for(
        asyncio.gather(prober(), *(client(k) for k in range(connections))), duration + IO_TIMEOUT * 2
    )
    return tally, probes


def start(
    argv_processes: int, data_dir: Path, log: Path, cpu: int | None, **extra: str
) -> tuple[Managed, str]:
    port = free_port()
    env = server_env(data_dir, port, **extra)
    if argv_processes == 1:
        server = kiln_server(bin_path("kiln"), port, env, log, cpu)
    else:
        argv = [str(bin_path("kiln")), "serve", "--port", str(port), "--processes", str(argv_processes)]
        server = Managed("kiln serve", argv, env, log, cpu)
    url = f"http://127.0.0.1:{port}"
    server.wait_ready(f"{url}{PROBE}", {})
    return server, url


def overload(args: argparse.Namespace, work: Path, server_cpu: int | None) -> dict[str, Any]:
    data_dir = work / "overload"
    server, url = start(1, data_dir, work / "overload.log", server_cpu, **settings_of(args))
    root = {"Private-Token": ROOT_TOKEN}
    try:
        created = httpx.post(
            f"{url}/api/v4/projects",
            headers=root,
            json={"name": "overload", "initialize_with_readme": True},
            timeout=30,
        )
        created.raise_for_status()
        path = ROUTES[args.route].format(id=created.json()["id"])
        check = httpx.get(f"{url}{path}", headers=root, timeout=30)
        if check.status_code != 200:
            raise RuntimeError(f"{path}: {check.status_code} {check.text[:200]}")
        raw = raw_request(f"{url}{path}", [f"Private-Token: {ROOT_TOKEN}"])
        host_port = url.removeprefix("http://").split(":")
        conns = Pool(host_port[0], int(host_port[1]))

        uvloop.run(closed_loop(conns, raw, args.connections, 1.0))  # warm-up
        sustained = uvloop.run(closed_loop(conns, raw, args.connections, args.measure))
        served = sum(1 for s, _ in sustained.results if s == 200)
        capacity = served / args.measure
        rate = capacity * args.factor
        server.wait_idle()

        sessions = make_sessionmaker(make_engine(Settings(data_dir=data_dir)))
        with sessions() as db, transaction(db):
            job_id = enqueue(db, "jobs.purge", {"older_than_seconds": 86400}).id
        flood_started = datetime.now(UTC)
        flood, probes = uvloop.run(
            open_loop(
                conns.host,
                conns.port,
                raw,
                rate,
                args.duration,
                args.flood_connections,
                raw_request(f"{url}{PROBE}"),
            )
        )
        flood_ended = datetime.now(UTC)
        with sessions() as db:
            job = db.scalars(select(Job).where(Job.id == job_id)).one()
            job_state, job_finished = job.state, job.finished_at
        after = httpx.get(f"{url}{path}", headers=root, timeout=30).status_code
        finished = job_finished
        if finished is not None and finished.tzinfo is None:
            finished = finished.replace(tzinfo=UTC)
        return {
            "route": path,
            "connections": args.connections,
            "sustained_rps": round(capacity, 1),
            "sustained": sustained.latencies(200),
            "sustained_statuses": sustained.statuses(),
            "offered_rps": round(rate, 1),
            "duration_s": args.duration,
            "offered": len(flood.results),
            "statuses": flood.statuses(),
            "share_503": round(sum(1 for s, _ in flood.results if s == 503) / max(1, len(flood.results)), 3),
            "served_rps": round(sum(1 for s, _ in flood.results if s == 200) / args.duration, 1),
            "served": flood.latencies(200),
            "refused": flood.latencies(503),
            "served_from_send": flood.latencies(200, from_send=True),
            "refused_from_send": flood.latencies(503, from_send=True),
            "errors_500": sum(1 for s, _ in flood.results if s == 500),
            "flood_connections": args.flood_connections,
            # Past the server's own refusal time, this is the generator (or a connection still
            # waiting for its previous answer): large values mean the generator saturated.
            "departure_late_p99_ms": round(percentile(sorted(flood.late), 99) * 1000, 1),
            "probe_statuses": probes.statuses(),
            "probe": probes.latencies(200),
            "job": {
                "state": job_state,
                "finished_during_flood": bool(finished and flood_started <= finished <= flood_ended),
            },
            "after_flood_status": after,
        }
    finally:
        server.stop()


def writers(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """Concurrent writes to one SQLite file from two HTTP processes."""
    log = work / "writers.log"
    server, url = start(2, work / "writers", log, None, **settings_of(args))
    try:
        host, port = url.removeprefix("http://").split(":")
        raw = raw_request(
            f"{url}/api/v4/user/status",
            [f"Private-Token: {ROOT_TOKEN}", "Content-Type: application/json"],
            method="PUT",
            body=json.dumps({"message": "writing"}).encode(),
        )
        conns = Pool(host, int(port))
        uvloop.run(closed_loop(conns, raw, args.writers, 1.0))
        tally = uvloop.run(closed_loop(conns, raw, args.writers, args.measure))
        text = log.read_text(errors="replace")
        return {
            "processes": 2,
            "connections": args.writers,
            "duration_s": args.measure,
            "statuses": tally.statuses(),
            "writes_per_s": round(sum(1 for s, _ in tally.results if s == 200) / args.measure, 1),
            "writes": tally.latencies(200),
            "database_is_locked_logged": "database is locked" in text,
        }
    finally:
        server.stop()


def settings_of(args: argparse.Namespace) -> dict[str, str]:
    return dict(item.split("=", 1) for item in args.env)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.overload", description=__doc__)
    parser.add_argument("--route", choices=sorted(ROUTES), default="languages")
    parser.add_argument("--factor", type=float, default=3.0, help="offered rate over the sustained one (3)")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds of overload (10)")
    parser.add_argument("--measure", type=float, default=5.0, help="seconds of each closed-loop run (5)")
    parser.add_argument("--connections", type=int, default=16, help="closed-loop connections (16)")
    parser.add_argument(
        "--flood-connections", type=int, default=256, help="connections of the open-loop flood (256)"
    )
    parser.add_argument("--writers", type=int, default=16, help="concurrent writers (16)")
    parser.add_argument("--no-writers", action="store_true", help="skip the writers across processes")
    parser.add_argument("--no-pin", action="store_true", help="do not pin server and generator to CPUs")
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="KILN_X=V",
        help="a setting for the servers (repeatable)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the data directories and logs")
    parser.add_argument("--results-dir", type=Path, default=RESULTS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    server_cpu = None if args.no_pin or cpu_count() < 2 else 0
    if server_cpu is not None:
        os.sched_setaffinity(0, {1})  # the generator: this process
    work = Path(tempfile.mkdtemp(prefix="kiln-overload-"))
    try:
        report: dict[str, Any] = {
            "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "git": git_revision(),
            "overload": overload(args, work, server_cpu),
        }
        if not args.no_writers:
            report["writers"] = writers(args, work)
    finally:
        if args.keep:
            print(f"overload: data and logs kept in {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    args.results_dir.mkdir(parents=True, exist_ok=True)
    out = args.results_dir / f"overload-{datetime.now(UTC):%Y%m%dT%H%M%SZ}.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    print(f"overload: written to {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
