"""`python -m bench`: kiln's hot routes against bare Litestar routes, same data, same server.

For each database backend: a fresh data directory, `kiln migrate`, bulk users and projects and
one repository, then `kiln serve` and the bare app (bench.bare) as subprocesses on one CPU,
and a load generator on another, measuring one target at a time: closed loop (throughput
against the reference, N connections), then open loop (a fixed rate, latency percentiles).
Then the worst-case requests of bench.cost (how long each stalls other requests, how much it
grows the server), unless --no-cost."""

from __future__ import annotations

import argparse
import base64
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
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any
from urllib.parse import quote

import httpx

from bench import bare as bench_bare
from bench import cost as bench_cost
from bench import dataset
from bench import issues as bench_issues
from bench import merge_requests as bench_merge_requests
from bench import rate_limits as bench_rate_limits
from bench.load import TIMEOUT_S, LoadGenerator, Measurement, OpenLoop, Target, choose, measure
from bench.processes import (
    REPO,
    ROOT_TOKEN,
    Managed,
    bare_server,
    cpu_count,
    free_port,
    kiln_server,
    server_env,
)
from kiln.git.layout import repository_path
from kiln.pagination import TOTAL_LIMIT

RESULTS = Path(__file__).resolve().parent / "results"
# A personal access token of an ordinary bench user (no admin), for the visibility-filtered list.
USER_TOKEN = "kiln-bench-user-token"
PER_PAGE = 20
# Each kiln target's reference (run in the same bare app) and the ratio aimed at (issue
# "reads": Done when); targets without an aim are diagnostics (--extra).
REFERENCE = {
    "kiln_user": "bare",
    "kiln_project": "bare",
    "kiln_projects_user": "bare",
    "kiln_users": "bare",
    "kiln_file": "bare_blob",
    "kiln_file_fresh": "bare_blob",
    "kiln_projects": "bare",
    "kiln_projects_keyset": "bare",
    "kiln_version": "bare_blob",
    **bench_rate_limits.REFERENCE,
    **bench_issues.REFERENCE,
    **bench_merge_requests.REFERENCE,
}
AIMS = {
    "kiln_user": 0.6,
    "kiln_project": 0.4,
    "kiln_projects_user": 0.25,
    "kiln_users": 0.3,
    "kiln_file": 0.6,
    **bench_issues.AIMS,
    **bench_merge_requests.AIMS,
}
EXTRA = ("kiln_projects", "kiln_projects_keyset")
# kiln_version is kiln's stack alone (no database, no git): a bound on every route's ratio, shown
# against the bare blob route because the files API aim is set against it.
# Open loop: at this rate, p90 at most this and no errors.
OPEN_RATE = 200.0
OPEN_P90_MS = 50.0
# The X-Request-Id of the requests whose access-log lines give the statement counts.
COUNT_ID = "bench-count-{key}"


@dataclass
class BackendResult:
    backend: str
    users: int
    projects: int
    targets: list[Target]
    rounds: dict[str, list[Measurement]] = field(default_factory=dict)
    open_loop: dict[str, Measurement] = field(default_factory=dict)
    statements: dict[str, int | None] = field(default_factory=dict)

    def chosen(self, key: str) -> Measurement:
        """The median round by throughput, so one disturbed round does not decide."""
        runs = sorted(self.rounds[key], key=lambda m: m.rps)
        return runs[(len(runs) - 1) // 2]

    def kiln_keys(self) -> list[str]:
        return [t.key for t in self.targets if t.key in REFERENCE]

    def ratio(self, key: str) -> float:
        bare = self.chosen(REFERENCE[key]).rps
        return self.chosen(key).rps / bare if bare else 0.0

    def cpu_ratio(self, key: str) -> float:
        """Bare CPU per request over kiln's: the throughput ratio on a dedicated, saturated core."""
        kiln = self.chosen(key).cpu_ms_per_request
        return self.chosen(REFERENCE[key]).cpu_ms_per_request / kiln if kiln else 0.0

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
                    "reference": REFERENCE.get(t.key),
                    "aim": AIMS.get(t.key),
                    "statements": self.statements.get(t.key),
                    **self.chosen(t.key).as_dict(),
                    "rounds": [m.as_dict() for m in self.rounds[t.key]],
                    "open_loop": self.open_loop[t.key].as_dict() if t.key in self.open_loop else None,
                }
                for t in self.targets
            ],
            "ratios": {key: round(self.ratio(key), 3) for key in self.kiln_keys()},
            "cpu_ratios": {key: round(self.cpu_ratio(key), 3) for key in self.kiln_keys()},
        }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--duration", type=float, default=10.0, help="measured seconds per target (10)")
    parser.add_argument("--warmup", type=float, default=2.0, help="unmeasured seconds before each (2)")
    parser.add_argument("--connections", type=int, default=16, help="keep-alive connections (16)")
    parser.add_argument("--users", type=int, default=10_000, help="users besides root (10000)")
    parser.add_argument("--projects", type=int, default=10_000, help="projects (10000)")
    parser.add_argument(
        "--rounds", type=int, default=1, help="measure every target N times; report the median"
    )
    parser.add_argument("--postgres", action="store_true", help="also run against a throwaway PostgreSQL")
    parser.add_argument(
        "--only-postgres", action="store_true", help="run against a throwaway PostgreSQL only"
    )
    parser.add_argument(
        "--rate",
        type=float,
        default=OPEN_RATE,
        help=f"open loop: requests per second of each target ({OPEN_RATE:g}); 0 skips it",
    )
    parser.add_argument("--open-duration", type=float, default=10.0, help="open loop seconds per target (10)")
    parser.add_argument(
        "--extra", action="store_true", help="also root's project list, with and without keyset pagination"
    )
    parser.add_argument(
        "--issues",
        type=int,
        default=bench_issues.ISSUES,
        help="issues of the issue lists' project; 0 skips them",
    )
    parser.add_argument(
        "--merge-requests",
        type=int,
        default=bench_merge_requests.MERGE_REQUESTS,
        help="merge requests of the merge request lists' project; 0 skips them",
    )
    parser.add_argument(
        "--only",
        default="",
        help="comma-separated kiln targets to measure (e.g. kiln_issues_labels), with their references",
    )
    parser.add_argument("--loadgen", choices=("auto", "wrk", "python"), default="auto")
    parser.add_argument("--no-install", action="store_true", help="never apt-get install wrk")
    parser.add_argument("--no-pin", action="store_true", help="do not pin server and load generator to CPUs")
    parser.add_argument("--keep", action="store_true", help="keep the data directories and server logs")
    parser.add_argument(
        "--no-cost", action="store_true", help="skip the worst-case requests (bench.cost, about a minute)"
    )
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
        backends = (
            ("postgresql",)
            if args.only_postgres
            else ("sqlite", "postgresql")
            if args.postgres
            else ("sqlite",)
        )
        for backend in backends:
            results.append(run_backend(backend, args, generator, server_cpu))
        costs = [] if args.no_cost else bench_cost.run(pin=not args.no_pin, keep=args.keep)
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
            "aims": AIMS,
            "open_loop": {"rate": args.rate, "duration_s": args.open_duration, "p90_aim_ms": OPEN_P90_MS},
        },
        "backends": [r.as_dict() for r in results],
        "cost": {
            "aims": {"stall_ms": bench_cost.STALL_AIM_MS, "growth_mib": bench_cost.GROWTH_AIM_MIB},
            "requests": [asdict(o) for o in costs],
        },
    }
    print_report(document, results, generator, args)
    if costs:
        bench_cost.print_report(costs)
    args.results_dir.mkdir(parents=True, exist_ok=True)
    path = args.results_dir / f"{started.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(document, indent=2) + "\n")
    (args.results_dir / "latest.json").write_text(json.dumps(document, indent=2) + "\n")
    print(f"\nresults: {path}")
    errors = sum(m.failures for r in results for runs in r.rounds.values() for m in runs)
    errors += sum(m.failures for r in results for m in r.open_loop.values())
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
        data_dir.mkdir(parents=True)
        kiln_port, bare_port = free_port(), free_port()
        if backend == "postgresql":
            url = start_postgres(stack)
        else:
            url = f"sqlite:///{(data_dir / 'kiln.db').resolve()}"
        # Named for kiln as for the bare app: both read this database and nothing else.
        env = server_env(data_dir, kiln_port, KILN_DATABASE_URL=url)

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
        issues = None
        if args.issues:
            step(f"[{backend}] inserting {args.issues:,} issues (bench.issues)")
            issues = bench_issues.populate(url, user_id, args.issues)
        merge_requests = None
        if args.merge_requests:
            step(f"[{backend}] inserting {args.merge_requests:,} merge requests (bench.merge_requests)")
            merge_requests = bench_merge_requests.populate(url, data_dir, user_id, args.merge_requests)
        dataset.analyze(url)
        step(f"[{backend}] writing project {project_id}'s repository")
        content = dataset.repository(data_dir, project_id)

        step(f"[{backend}] starting kiln and the bare app")
        kiln = kiln_server(bin_path("kiln"), kiln_port, env, work / "kiln.log", server_cpu)
        stack.callback(kiln.stop)
        bare = bare_server(
            bare_port,
            {
                **env,
                bench_bare.DATABASE_URL_ENV: url,
                bench_bare.REPO_ENV: str(repository_path(data_dir / "repositories", project_id)),
                bench_bare.FILE_ENV: dataset.REPO_FILE,
                **(bench_merge_requests.bare_env(merge_requests) if merge_requests is not None else {}),
            },
            work / "bare.log",
            server_cpu,
        )
        stack.callback(bare.stop)

        targets = bench_targets(kiln_port, bare_port, user_id, project_id, args.extra)
        targets += bench_rate_limits.targets(targets)
        if issues is not None:
            api = f"http://127.0.0.1:{kiln_port}/api/v4"
            targets += bench_issues.targets(api, {"Private-Token": USER_TOKEN}, issues)
        if merge_requests is not None:
            api = f"http://127.0.0.1:{kiln_port}/api/v4"
            targets += bench_merge_requests.targets(
                api, f"http://127.0.0.1:{bare_port}", {"Private-Token": USER_TOKEN}, merge_requests
            )
        targets = selected(targets, args.only)
        kiln.wait_ready(targets[1].url, targets[1].headers)
        bare.wait_ready(targets[0].url, {})
        check_answers(targets, user_id, project_id, projects, content)
        statements = count_statements(targets, kiln, url)

        servers = {t.key: kiln if t.key in REFERENCE else bare for t in targets}
        result = BackendResult(
            backend, users, projects, targets, {t.key: [] for t in targets}, statements=statements
        )
        for number in range(1, args.rounds + 1):
            for target in targets:
                round_note = f" (round {number}/{args.rounds})" if args.rounds > 1 else ""
                step(
                    f"[{backend}] {target.label}{round_note}: {args.warmup:g}s warm-up, {args.duration:g}s measured"
                )
                bench_rate_limits.switch(url, target)
                if args.warmup > 0:
                    generator.run(target, args.warmup)
                result.rounds[target.key].append(
                    measure(generator, target, servers[target.key], (kiln, bare), args.duration)
                )
        if args.rate > 0:
            open_loop = OpenLoop(args.rate, generator.cpu)
            for target in targets:
                step(f"[{backend}] {target.label}: open loop, {args.rate:g}/s for {args.open_duration:g}s")
                bench_rate_limits.switch(url, target)
                result.open_loop[target.key] = measure(
                    open_loop, target, servers[target.key], (kiln, bare), args.open_duration
                )
        for server in (kiln, bare):
            if server.proc.poll() is not None:
                raise RuntimeError(f"{server.name} died during the run:\n{server.tail()}")
        return result


def selected(targets: list[Target], only: str) -> list[Target]:
    """The targets `--only` names and the references they are measured against (all of them
    without it), in their order: references first."""
    wanted = {key.strip() for key in only.split(",") if key.strip()}
    if not wanted:
        return targets
    unknown = wanted - {t.key for t in targets}
    if unknown:
        raise SystemExit(f"--only: no such target {sorted(unknown)}")
    keep = wanted | {REFERENCE[key] for key in wanted if key in REFERENCE}
    return [t for t in targets if t.key in keep]


def bench_targets(kiln_port: int, bare_port: int, user_id: int, project_id: int, extra: bool) -> list[Target]:
    """The references first (bare user row, bare blob), then kiln's routes."""
    root = {"Private-Token": ROOT_TOKEN}
    member = {"Private-Token": USER_TOKEN}
    api = f"http://127.0.0.1:{kiln_port}/api/v4"
    bare = f"http://127.0.0.1:{bare_port}"
    file_path = quote(dataset.REPO_FILE, safe="")
    listing = f"/projects?per_page={PER_PAGE}"
    targets = [
        Target("bare", f"bare GET /users/{user_id} (one row)", f"{bare}/users/{user_id}"),
        Target("kiln_user", "kiln GET /user", f"{api}/user", root),
        Target("kiln_project", f"kiln GET /projects/{project_id}", f"{api}/projects/{project_id}", root),
        Target("kiln_projects_user", f"kiln GET {listing} (member)", f"{api}{listing}", member),
        Target(
            "kiln_users", f"kiln GET /users?per_page={PER_PAGE}", f"{api}/users?per_page={PER_PAGE}", root
        ),
    ]
    if extra:
        ordered = f"{listing}&order_by=id"
        targets += [
            Target("kiln_projects", f"kiln GET {ordered} (root)", f"{api}{ordered}", root),
            Target(
                "kiln_projects_keyset",
                f"kiln GET {ordered}&pagination=keyset (root)",
                f"{api}{ordered}&pagination=keyset",
                root,
            ),
        ]
    targets += [
        Target("bare_blob", "bare GET /blob (pygit2)", f"{bare}/blob"),
        Target(
            "kiln_file",
            f"kiln GET /projects/{project_id}/repository/files/…?ref=main",
            f"{api}/projects/{project_id}/repository/files/{file_path}?ref=main",
            root,
        ),
        # The same read, answered in full each time (a new query on every request: no kept
        # answer fits): what a read costs the first time, or for a caller reading it once.
        Target(
            "kiln_file_fresh",
            "  the same, a new query each time (answered in full)",
            f"{api}/projects/{project_id}/repository/files/{file_path}?ref=main",
            root,
            fresh=True,
        ),
        Target("kiln_version", "kiln GET /version, anonymous (no SQL, no git)", f"{api}/version"),
    ]
    return targets


def count_statements(targets: list[Target], kiln: Managed, database_url: str) -> dict[str, int | None]:
    """Each kiln route's SQL statements per request, from kiln's access log: the third of
    three requests (the first ones may fill caches), found by its X-Request-Id."""
    for target in targets:
        if target.key not in REFERENCE:
            continue
        bench_rate_limits.switch(database_url, target)
        for n in range(3):
            headers = {**target.headers, "X-Request-Id": f"{COUNT_ID.format(key=target.key)}-{n}"}
            url = f"{target.url}&fresh=count-{n}" if target.fresh else target.url
            httpx.get(url, headers=headers, timeout=10).raise_for_status()
    time.sleep(0.5)
    lines: dict[str, int | None] = {}
    for line in kiln.tail(lines=100_000).splitlines():
        start = line.find("{")
        if start < 0 or "bench-count-" not in line:
            continue
        try:
            entry = json.loads(line[start:])
        except ValueError:
            continue
        if isinstance(entry, dict):
            lines[str(entry.get("request_id"))] = entry.get("statements")
    # The references by construction: one row read, no database at all.
    counts: dict[str, int | None] = {"bare": 1, "bare_blob": 0}
    for target in targets:
        if target.key in REFERENCE:
            counts[target.key] = lines.get(f"{COUNT_ID.format(key=target.key)}-2")
    return counts


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


def check_answers(
    targets: list[Target], user_id: int, project_id: int, projects: int, content: bytes
) -> None:
    """Refuse to measure a route that answers wrongly: fast errors are not throughput."""
    for target in targets:
        response = httpx.get(target.url, headers=target.headers, timeout=10)
        if response.status_code != 200:
            raise RuntimeError(f"{target.label}: HTTP {response.status_code}: {response.text[:300]}")
        if not answer_ok(target.key, response, user_id, project_id, projects, content):
            raise RuntimeError(
                f"{target.label}: unexpected answer: {dict(response.headers)} {response.text[:300]}"
            )


def answer_ok(
    key: str, response: httpx.Response, user_id: int, project_id: int, projects: int, content: bytes
) -> bool:
    body = response.json()
    headers = response.headers
    link = headers.get("Link", "")
    key = bench_rate_limits.base_key(key)
    if key == "bare":
        return isinstance(body, dict) and body.get("id") == user_id
    if key in ("bare_blob", "kiln_file", "kiln_file_fresh"):
        return isinstance(body, dict) and base64.b64decode(body.get("content", "")) == content
    if key == "kiln_user":
        return isinstance(body, dict) and body.get("username") == "root"
    if key == "kiln_version":
        return isinstance(body, dict) and "version" in body
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
        return _project_page(body, by_id=True) and total == expected and 'rel="next"' in link
    if key == "kiln_projects_keyset":
        # No total; the next page continues below the last id.
        return _project_page(body, by_id=True) and "X-Total" not in headers and "id_before=" in link
    if key == "kiln_projects_user":
        # An ordinary user sees fewer than root: others' private projects are hidden.
        return _project_page(body, by_id=False) and (total is None or 0 < int(total) < projects)
    if key in bench_issues.REFERENCE:
        return bench_issues.answer_ok(key, response)
    if key in bench_merge_requests.REFERENCE or key == "bare_mr_diff":
        return bench_merge_requests.answer_ok(key, response)
    raise KeyError(key)


def _project_page(body: Any, *, by_id: bool) -> bool:
    """A full page of distinct project entities, in descending id order when ordered by id."""
    if not isinstance(body, list) or len(body) != PER_PAGE:
        return False
    if not all(isinstance(p, dict) and isinstance(p.get("id"), int) and "namespace" in p for p in body):
        return False
    ids = [p["id"] for p in body]
    return len(set(ids)) == len(ids) and (not by_id or ids == sorted(ids, reverse=True))


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
            f"  {'target':<{width}} {'req/s':>7} {'p50 ms':>7} {'p99 ms':>7} {'CPU ms/req':>10} {'err':>4}"
            f" {'SQL':>4}  {'ratio':>5} {'CPU ratio':>9} {'aim':>5}"
        )
        print(header)
        print("  " + "-" * (len(header) - 2))
        for target in result.targets:
            m = result.chosen(target.key)
            sql = result.statements.get(target.key)
            if target.key not in REFERENCE:
                versus = f"  {'(reference)':>15}"
            elif m.requests == 0:
                versus = f"  {'-':>5} {'-':>9}  NO ANSWER"
            else:
                ratio = result.ratio(target.key)
                aim = AIMS.get(target.key)
                verdict = "" if aim is None else "ok" if ratio >= aim else "BELOW AIM"
                aimed = f"{aim:>5.2f}" if aim is not None else f"{'-':>5}"
                versus = f"  {ratio:>5.2f} {result.cpu_ratio(target.key):>9.2f} {aimed}  {verdict}"
            print(
                f"  {target.label:<{width}} {m.rps:>7,.0f} {m.p50_ms:>7.2f} {m.p99_ms:>7.2f}"
                f" {m.cpu_ms_per_request:>10.3f} {m.failures:>4} {'?' if sql is None else sql:>4}{versus}"
            )
        if result.open_loop:
            print()
            print(f"  open loop, {args.rate:g} requests/s each, {args.open_duration:g}s:")
            header = (
                f"  {'target':<{width}} {'req/s':>7} {'p50 ms':>7} {'p90 ms':>7} {'p99 ms':>7} {'max ms':>8}"
                f" {'err':>4} {'CPU %':>6}"
            )
            print(header)
            print("  " + "-" * (len(header) - 2))
            for target in result.targets:
                m = result.open_loop[target.key]
                cpu = 100 * m.server_cpu_s / m.duration_s if m.duration_s else 0.0
                verdict = "ok" if m.p90_ms <= OPEN_P90_MS and not m.failures else "ABOVE AIM"
                print(
                    f"  {target.label:<{width}} {m.rps:>7,.0f} {m.p50_ms:>7.2f} {m.p90_ms:>7.2f} {m.p99_ms:>7.2f}"
                    f" {m.max_ms:>8.1f} {m.failures:>4} {cpu:>6.0f}  {verdict}"
                    + (
                        f"  (generator late p99 {m.send_late_p99_ms:.1f} ms)"
                        if m.send_late_p99_ms > 5
                        else ""
                    )
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
    print("ratio = kiln req/s / its reference's req/s (the bare row route; the bare blob route for files)")
    print(
        "CPU ratio = reference CPU ms/request / kiln CPU ms/request (server and its child processes, user + system)"
    )
    print("SQL = statements per request (kiln's access log)")
    if args.rate > 0:
        print(
            f"open loop aim: p90 <= {OPEN_P90_MS:g} ms, no errors; CPU % = server CPU over the run"
            " (100 = its whole core)"
        )


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
