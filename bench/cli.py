"""`python -m bench`: kiln's hot routes against a bare Litestar route, same data, same server.

For each database backend: a fresh data directory, `kiln migrate`, bulk users and projects, then
`kiln serve` and the bare app (bench.bare) as subprocesses on one CPU, and a load
generator on another, measuring one target at a time."""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any

import httpx

from bench import dataset
from bench.load import TIMEOUT_S, LoadGenerator, Measurement, Target, choose
from bench.processes import Managed, cpu_count, free_port, kiln_server
from kiln.pagination import TOTAL_LIMIT

REPO = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results"
ROOT_TOKEN = "kiln-bench-root-token"
ROOT_PASSWORD = "kiln-bench-root-password"
# A personal access token of an ordinary bench user (no admin), for the visibility-filtered list.
USER_TOKEN = "kiln-bench-user-token"
AIM = 0.40
KILN_TARGETS = (
    "kiln_user",
    "kiln_users",
    "kiln_project",
    "kiln_projects",
    "kiln_projects_keyset",
    "kiln_projects_user",
)
PER_PAGE = 20


@dataclass
class BackendResult:
    backend: str
    users: int
    projects: int
    targets: list[Target]
    rounds: dict[str, list[Measurement]] = field(default_factory=dict)

    def chosen(self, key: str) -> Measurement:
        """The median round by throughput, so one disturbed round does not decide."""
        runs = sorted(self.rounds[key], key=lambda m: m.rps)
        return runs[(len(runs) - 1) // 2]

    def ratio(self, key: str) -> float:
        bare = self.chosen("bare").rps
        return self.chosen(key).rps / bare if bare else 0.0

    def cpu_ratio(self, key: str) -> float:
        """Bare CPU per request over kiln's: the throughput ratio on a dedicated, saturated core."""
        kiln = self.chosen(key).cpu_ms_per_request
        return self.chosen("bare").cpu_ms_per_request / kiln if kiln else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "users": self.users,
            "projects": self.projects,
            "targets": [
                {
                    "key": t.key,
                    "label": t.label,
                    "url": t.url,
                    **self.chosen(t.key).as_dict(),
                    "rounds": [m.as_dict() for m in self.rounds[t.key]],
                }
                for t in self.targets
            ],
            "ratios": {key: round(self.ratio(key), 3) for key in KILN_TARGETS},
            "cpu_ratios": {key: round(self.cpu_ratio(key), 3) for key in KILN_TARGETS},
        }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--duration", type=float, default=10.0, help="measured seconds per target (10)")
    parser.add_argument("--warmup", type=float, default=2.0, help="unmeasured seconds before each (2)")
    parser.add_argument("--connections", type=int, default=32, help="keep-alive connections (32)")
    parser.add_argument("--users", type=int, default=10_000, help="users besides root (10000)")
    parser.add_argument("--projects", type=int, default=10_000, help="projects (10000)")
    parser.add_argument(
        "--rounds", type=int, default=1, help="measure every target N times; report the median"
    )
    parser.add_argument("--postgres", action="store_true", help="also run against a throwaway PostgreSQL")
    parser.add_argument("--loadgen", choices=("auto", "wrk", "python"), default="auto")
    parser.add_argument("--no-install", action="store_true", help="never apt-get install wrk")
    parser.add_argument("--no-pin", action="store_true", help="do not pin server and load generator to CPUs")
    parser.add_argument("--keep", action="store_true", help="keep the data directories and server logs")
    parser.add_argument("--results-dir", type=Path, default=RESULTS)
    return parser.parse_args(argv)


def _terminate(signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    server_cpu, load_cpu = (None, None) if args.no_pin or cpu_count() < 2 else (0, 1)
    started = datetime.now(UTC)
    load_before = os.getloadavg()
    generator = choose(args.loadgen, args.connections, load_cpu, install=not args.no_install)
    results: list[BackendResult] = []
    try:
        for backend in ("sqlite", "postgresql") if args.postgres else ("sqlite",):
            results.append(run_backend(backend, args, generator, server_cpu))
    except KeyboardInterrupt:
        print("\nbench: interrupted; servers stopped", file=sys.stderr)
        return 130
    finally:
        generator.close()
    document = {
        "started_at": started.isoformat(timespec="seconds"),
        "git": git_revision(),
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "loadavg_before": [round(x, 2) for x in load_before],
            "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        },
        "settings": {
            "loadgen": generator.describe(),
            "connections": args.connections,
            "duration_s": args.duration,
            "warmup_s": args.warmup,
            "rounds": args.rounds,
            "server_cpu": server_cpu,
            "loadgen_cpu": load_cpu,
            "aim": AIM,
        },
        "backends": [r.as_dict() for r in results],
    }
    print_report(document, results, generator, args)
    args.results_dir.mkdir(parents=True, exist_ok=True)
    path = args.results_dir / f"{started.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(document, indent=2) + "\n")
    (args.results_dir / "latest.json").write_text(json.dumps(document, indent=2) + "\n")
    print(f"\nresults: {path}")
    errors = sum(m.failures for r in results for runs in r.rounds.values() for m in runs)
    return 1 if errors else 0


def run_backend(
    backend: str, args: argparse.Namespace, generator: LoadGenerator, server_cpu: int | None
) -> BackendResult:
    with ExitStack() as stack:
        work = Path(tempfile.mkdtemp(prefix=f"kiln-bench-{backend}-"))
        if args.keep:
            print(f"bench: keeping {work}", file=sys.stderr)
        else:
            stack.callback(shutil.rmtree, work, ignore_errors=True)
        data_dir = work / "data"
        kiln_port, bare_port = free_port(), free_port()
        env = {
            **os.environ,
            "KILN_DATA_DIR": str(data_dir),
            "KILN_ROOT_TOKEN": ROOT_TOKEN,
            "KILN_ROOT_PASSWORD": ROOT_PASSWORD,
            "KILN_EXTERNAL_URL": f"http://127.0.0.1:{kiln_port}",
        }
        if backend == "postgresql":
            url = start_postgres(stack)
            env["KILN_DATABASE_URL"] = url
        else:
            data_dir.mkdir(parents=True)
            url = f"sqlite:///{(data_dir / 'kiln.db').resolve()}"

        step(f"[{backend}] kiln migrate")
        dataset.migrate(bin_path("kiln"), env, work / "migrate.log")
        step(f"[{backend}] inserting {args.users:,} users")
        users = dataset.populate(url, args.users + 1)
        user_id = dataset.middle_user_id(url)
        step(f"[{backend}] inserting {args.projects:,} projects")
        projects = dataset.populate_projects(url, args.projects)
        project_id = dataset.middle_public_project_id(url)
        # The bare route's user doubles as the ordinary viewer: a bench user, not an admin.
        dataset.user_token(url, user_id, USER_TOKEN)

        step(f"[{backend}] starting kiln and the bare app")
        kiln = kiln_server(bin_path("kiln"), kiln_port, env, work / "kiln.log", server_cpu)
        stack.callback(kiln.stop)
        bare = Managed(
            "bare app",
            [
                sys.executable,
                "-m",
                "uvicorn",
                "bench.bare:create_app",
                "--factory",
                "--app-dir",
                str(REPO),
                "--host",
                "127.0.0.1",
                "--port",
                str(bare_port),
                "--loop",
                "uvloop",
                "--http",
                "httptools",
                "--log-level",
                "warning",
                "--proxy-headers",
                "--workers",
                "1",
            ],
            {**env, "BENCH_DATABASE_URL": url},
            work / "bare.log",
            server_cpu,
        )
        stack.callback(bare.stop)

        token = {"Private-Token": ROOT_TOKEN}
        api = f"http://127.0.0.1:{kiln_port}/api/v4"
        listing = f"/projects?per_page={PER_PAGE}&order_by=id"
        targets = [
            Target("bare", f"bare GET /users/{user_id}", f"http://127.0.0.1:{bare_port}/users/{user_id}"),
            Target("kiln_user", "kiln GET /api/v4/user", f"{api}/user", token),
            Target(
                "kiln_users",
                f"kiln GET /api/v4/users?per_page={PER_PAGE}",
                f"{api}/users?per_page={PER_PAGE}",
                token,
            ),
            Target(
                "kiln_project",
                f"kiln GET /api/v4/projects/{project_id}",
                f"{api}/projects/{project_id}",
                token,
            ),
            Target("kiln_projects", f"kiln GET /api/v4{listing}", f"{api}{listing}", token),
            Target(
                "kiln_projects_keyset",
                f"kiln GET /api/v4{listing}&pagination=keyset",
                f"{api}{listing}&pagination=keyset",
                token,
            ),
            Target(
                "kiln_projects_user",
                f"kiln GET /api/v4{listing} (user)",
                f"{api}{listing}",
                {"Private-Token": USER_TOKEN},
            ),
        ]
        kiln.wait_ready(targets[1].url, token)
        bare.wait_ready(targets[0].url, {})
        check_answers(targets, user_id, project_id, projects)

        servers = {t.key: bare if t.key == "bare" else kiln for t in targets}
        result = BackendResult(backend, users, projects, targets, {t.key: [] for t in targets})
        for number in range(1, args.rounds + 1):
            for target in targets:
                round_note = f" (round {number}/{args.rounds})" if args.rounds > 1 else ""
                step(
                    f"[{backend}] {target.label}{round_note}: {args.warmup:g}s warm-up, {args.duration:g}s measured"
                )
                if args.warmup > 0:
                    generator.run(target, args.warmup)
                # Both servers share one CPU: neither may still be working off an earlier run.
                for busy in (kiln, bare):
                    busy.wait_idle()
                server = servers[target.key]
                cpu_before = server.cpu_seconds()
                measured = generator.run(target, args.duration)
                server.wait_idle()
                measured.server_cpu_s = round(server.cpu_seconds() - cpu_before, 3)
                measured.unfinished = args.connections
                result.rounds[target.key].append(measured)
        for server in (kiln, bare):
            if server.proc.poll() is not None:
                raise RuntimeError(f"{server.name} died during the run:\n{server.tail()}")
        return result


def start_postgres(stack: ExitStack) -> str:
    """A throwaway server (tests.pg) with an empty database for kiln and the bare app."""
    from sqlalchemy import text

    from kiln.db import make_engine_unpooled
    from tests.pg import PostgresServer

    step("[postgresql] starting a throwaway PostgreSQL")
    server = PostgresServer()
    stack.callback(server.stop)
    admin_url = server.start()
    engine = make_engine_unpooled(admin_url)
    try:
        with engine.connect() as conn:
            conn.execute(text("CREATE DATABASE kiln_bench"))
    finally:
        engine.dispose()
    return server.url("kiln_bench")


def check_answers(targets: list[Target], user_id: int, project_id: int, projects: int) -> None:
    """Refuse to measure a route that answers wrongly: fast errors are not throughput."""
    for target in targets:
        response = httpx.get(target.url, headers=target.headers, timeout=10)
        if response.status_code != 200:
            raise RuntimeError(f"{target.label}: HTTP {response.status_code}: {response.text[:300]}")
        if not answer_ok(target.key, response, user_id, project_id, projects):
            raise RuntimeError(
                f"{target.label}: unexpected answer: {dict(response.headers)} {response.text[:300]}"
            )


def answer_ok(key: str, response: httpx.Response, user_id: int, project_id: int, projects: int) -> bool:
    body = response.json()
    headers = response.headers
    link = headers.get("Link", "")
    if key == "bare":
        return isinstance(body, dict) and body.get("id") == user_id
    if key == "kiln_user":
        return isinstance(body, dict) and body.get("username") == "root"
    if key == "kiln_users":
        return isinstance(body, list) and len(body) == PER_PAGE
    if key == "kiln_project":
        return (
            isinstance(body, dict)
            and body.get("id") == project_id
            and isinstance(body.get("namespace"), dict)
            and "permissions" in body
        )
    # kiln counts up to TOTAL_LIMIT rows and leaves the total out above that.
    total = headers.get("X-Total")
    if key == "kiln_projects":
        # Admin view: every project.
        expected = str(projects) if projects <= TOTAL_LIMIT else None
        return _project_page(body) and total == expected and 'rel="next"' in link
    if key == "kiln_projects_keyset":
        # No total; the next page continues below the last id.
        return _project_page(body) and "X-Total" not in headers and "id_before=" in link
    if key == "kiln_projects_user":
        # An ordinary user sees fewer than root: others' private projects are hidden.
        return _project_page(body) and (total is None or 0 < int(total) < projects)
    raise KeyError(key)


def _project_page(body: Any) -> bool:
    """A full page of project entities in descending id order (order_by=id, sort desc)."""
    if not isinstance(body, list) or len(body) != PER_PAGE:
        return False
    if not all(isinstance(p, dict) and isinstance(p.get("id"), int) and "namespace" in p for p in body):
        return False
    ids = [p["id"] for p in body]
    return ids == sorted(ids, reverse=True) and len(set(ids)) == len(ids)


def print_report(
    document: Mapping[str, Any],
    results: list[BackendResult],
    generator: LoadGenerator,
    args: argparse.Namespace,
) -> None:
    machine = document["machine"]
    settings = document["settings"]
    pinning = (
        f"servers on CPU {settings['server_cpu']}, load generator on CPU {settings['loadgen_cpu']}"
        if settings["server_cpu"] is not None
        else "no CPU pinning"
    )
    print()
    print("kiln benchmark")
    print(f"  git {document['git']}, Python {machine['python']}, {machine['cpus']} CPUs, {pinning}")
    print(
        f"  load: {generator.describe()}, {args.duration:g}s per target after {args.warmup:g}s warm-up"
        + (f", median of {args.rounds} rounds" if args.rounds > 1 else "")
    )
    busy = max(machine["loadavg_before"][0], machine["loadavg_after"][0])
    print(
        f"  load average before/after: {machine['loadavg_before'][0]:.2f} / {machine['loadavg_after'][0]:.2f}"
    )
    if busy > (machine["cpus"] or 1) * 0.75:
        print("  WARNING: the machine was busy with other work; req/s and latencies are depressed and")
        print("  noisy. The CPU ms/request column (and its ratio) is the steadier comparison.")
    for result in results:
        print()
        print(f"{result.backend}: {result.users:,} users, {result.projects:,} projects")
        width = max(36, *(len(t.label) for t in result.targets))
        header = (
            f"  {'target':<{width}} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'CPU ms/req':>10} {'errors':>6}"
            f"  {'ratio':>5} {'CPU ratio':>9}"
        )
        print(header)
        print("  " + "-" * (len(header) - 2))
        for target in result.targets:
            m = result.chosen(target.key)
            if target.key == "bare":
                versus = f"  {'(reference)':>15}"
            elif m.requests == 0:
                versus = f"  {'-':>5} {'-':>9}  NO ANSWER"
            else:
                ratio = result.ratio(target.key)
                verdict = "ok" if ratio >= AIM else "BELOW AIM"
                versus = f"  {ratio:>5.2f} {result.cpu_ratio(target.key):>9.2f}  {verdict}"
            print(
                f"  {target.label:<{width}} {m.rps:>8,.0f} {m.p50_ms:>8.2f} {m.p99_ms:>8.2f}"
                f" {m.cpu_ms_per_request:>10.3f} {m.failures:>6}{versus}"
            )
    print()
    timeouts = sum(m.timeouts for r in results for runs in r.rounds.values() for m in runs)
    if timeouts:
        print(
            f"timeouts: {timeouts} requests (all rounds) got no answer within {TIMEOUT_S}s; counted as errors"
        )
    if any(m.requests == 0 for r in results for runs in r.rounds.values() for m in runs):
        print(
            "NO ANSWER: not one request finished within the run; the route is slower than"
            " connections x latency allows. Try fewer --connections or a longer --duration."
        )
    print(f"aim: ratio = kiln req/s / bare req/s >= {AIM:.2f}")
    print("CPU ratio = bare CPU ms/request / kiln CPU ms/request (server process, user + system)")


def git_revision() -> str:
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{head}{'+dirty' if dirty else ''}"


def bin_path(name: str) -> Path:
    """A console script of this virtualenv (next to the interpreter running the harness)."""
    return Path(sys.executable).parent / name


def step(message: str) -> None:
    print(f"bench: {time.strftime('%H:%M:%S')} {message}", file=sys.stderr, flush=True)
