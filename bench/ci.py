"""CI under load, `python -m bench.ci [--postgres]`: what runners and pipeline creation cost a
`kiln serve`, beside the bare row route (bench.bare) driven by the same client in the same run.

1. Pipeline creation: `POST /projects/:id/pipeline` for a 50-job configuration (5 stages of
   10 jobs, one with `needs`), PIPELINES times; latency p50, p95 and max.
2. Jobs handed out: RUNNERS runners (instance runners made with `POST /user/runners`) each
   long-poll `POST /jobs/request` and finish every job they get at once (`PUT /jobs/:id`,
   success) until the pipelines of step 1 are done: jobs per second, and the requests per
   second this took next to the bare route's requests per second with as many clients.
3. An idle runner: one runner long-polling with no job for IDLE seconds: its requests per
   second and the CPU the server spent meanwhile (the server's own idle work included; it
   is measured alone just before for comparison)."""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx

from bench.cli import bin_path, git_revision, start_postgres, step
from bench.processes import (
    ROOT_TOKEN,
    Managed,
    bare_server,
    free_port,
    kiln_server,
    public_project,
    server_env,
)

JOBS_PER_STAGE = 10
STAGES = ("one", "two", "three", "four", "five")
ROOT = {"Private-Token": ROOT_TOKEN}
# How long kiln holds a job request with nothing to hand out (GitLab's Workhorse: 50 s).
LONG_POLL_ENV = "KILN_CI_LONG_POLL_SECONDS"


def configuration() -> str:
    """50 jobs: 5 stages of 10, the last job of each stage after the first needing the
    first job of the stage before."""
    lines = ["stages: [" + ", ".join(STAGES) + "]", ""]
    for s, stage in enumerate(STAGES):
        for j in range(JOBS_PER_STAGE):
            lines += [f"{stage}-{j}:", f"  stage: {stage}", "  script:", f"    - echo {stage} {j}"]
            if s and j == JOBS_PER_STAGE - 1:
                lines += [f"  needs: [{STAGES[s - 1]}-0]"]
            lines.append("")
    return "\n".join(lines)


@dataclass
class Report:
    backend: str
    revision: str
    pipelines: int
    pipeline_create_ms_p50: float
    pipeline_create_ms_p95: float
    pipeline_create_ms_max: float
    runners: int
    jobs: int
    jobs_per_s: float
    runner_requests_per_s: float
    bare_requests_per_s: float
    idle_seconds: float
    idle_runner_requests_per_s: float
    idle_server_cpu_percent: float
    idle_server_cpu_percent_with_runner: float


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p * (len(ordered) - 1)))]


def create_pipelines(base: str, project_id: int, n: int) -> list[float]:
    times: list[float] = []
    with httpx.Client(base_url=base, headers=ROOT, timeout=60) as client:
        for _ in range(n):
            start = time.perf_counter()
            r = client.post(f"/api/v4/projects/{project_id}/pipeline", json={"ref": "main"})
            times.append((time.perf_counter() - start) * 1000)
            if r.status_code != 201:
                raise RuntimeError(f"pipeline not created: {r.status_code} {r.text[:300]}")
    return times


def register_runners(base: str, n: int) -> list[str]:
    tokens = []
    with httpx.Client(base_url=base, headers=ROOT, timeout=30) as client:
        for i in range(n):
            r = client.post(
                "/api/v4/user/runners",
                json={"runner_type": "instance_type", "description": f"bench {i}", "run_untagged": True},
            )
            if r.status_code != 201:
                raise RuntimeError(f"runner not created: {r.status_code} {r.text[:300]}")
            tokens.append(r.json()["token"])
    return tokens


async def hand_out(base: str, tokens: list[str], total: int, timeout: float) -> tuple[int, int, float]:
    """Runners take and finish jobs until `total` are done: (jobs, requests, seconds)."""
    done = 0
    requests = 0
    finished = asyncio.Event()

    async def runner(token: str) -> None:
        nonlocal done, requests
        async with httpx.AsyncClient(base_url=base, timeout=120) as client:
            while not finished.is_set():
                r = await client.post(
                    "/api/v4/jobs/request", json={"token": token, "info": {"name": "bench"}}
                )
                requests += 1
                if r.status_code != 201:
                    continue
                job = r.json()
                u = await client.put(
                    f"/api/v4/jobs/{job['id']}", json={"token": job["token"], "state": "success"}
                )
                requests += 1
                if u.status_code != 200:
                    raise RuntimeError(f"job update refused: {u.status_code} {u.text[:200]}")
                done += 1
                if done >= total:
                    finished.set()

    start = time.perf_counter()
    tasks = [asyncio.create_task(runner(t)) for t in tokens]
    try:
        await asyncio.wait_for(finished.wait(), timeout)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return done, requests, time.perf_counter() - start


async def bare_rate(url: str, clients: int, seconds: float) -> float:
    """Requests per second `clients` closed-loop clients get from the bare row route."""
    count = 0
    stop = time.perf_counter() + seconds

    async def client_loop() -> None:
        nonlocal count
        async with httpx.AsyncClient(timeout=30) as client:
            while time.perf_counter() < stop:
                r = await client.get(url)
                r.raise_for_status()
                count += 1

    start = time.perf_counter()
    await asyncio.gather(*(client_loop() for _ in range(clients)))
    return count / (time.perf_counter() - start)


async def idle_runner(base: str, token: str, seconds: float) -> int:
    """Requests one runner makes in `seconds` with no job to get; each must be a 204."""
    requests = 0
    stop = time.perf_counter() + seconds
    async with httpx.AsyncClient(base_url=base, timeout=120) as client:
        while time.perf_counter() < stop:
            r = await client.post("/api/v4/jobs/request", json={"token": token})
            if r.status_code != 204:
                raise RuntimeError(f"an idle runner got {r.status_code}: {r.text[:200]}")
            requests += 1
    return requests


def cpu_percent(server: Managed, seconds: float, during: Any = None) -> tuple[float, Any]:
    before = server.cpu_seconds()
    start = time.perf_counter()
    result = asyncio.run(during) if during is not None else time.sleep(seconds)
    spent = server.cpu_seconds() - before
    return 100 * spent / (time.perf_counter() - start), result


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.ci", description=__doc__.split("\n")[0])
    parser.add_argument("--postgres", action="store_true", help="also on a throwaway PostgreSQL")
    parser.add_argument("--pipelines", type=int, default=20)
    parser.add_argument("--runners", type=int, default=20)
    parser.add_argument("--idle", type=float, default=120.0, help="seconds an idle runner polls")
    parser.add_argument("--long-poll", type=float, default=50.0, help="seconds kiln holds a job request")
    parser.add_argument("--results-dir", type=Path, default=Path(__file__).parent / "results")
    return parser.parse_args(argv)


def run_backend(name: str, database_url: str | None, args: argparse.Namespace) -> Report:
    with ExitStack() as stack:
        data = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="kiln-bench-ci-")))
        port, bare_port = free_port(), free_port()
        url = database_url or f"sqlite:///{data / 'kiln.db'}"
        env = server_env(data, port, KILN_DATABASE_URL=url, **{LONG_POLL_ENV: str(args.long_poll)})
        step(f"[{name}] starting kiln serve")
        kiln = kiln_server(bin_path("kiln"), port, env, data / "kiln.log", None)
        stack.callback(kiln.stop)
        base = f"http://127.0.0.1:{port}"
        kiln.wait_ready(f"{base}/api/v4/version", ROOT)
        bare = bare_server(bare_port, {**env, "BENCH_DATABASE_URL": url}, data / "bare.log", None)
        stack.callback(bare.stop)
        bare.wait_ready(f"http://127.0.0.1:{bare_port}/users/1", {})

        project = public_project(base, "bench-ci")
        r = httpx.post(
            f"{base}/api/v4/projects/{project['id']}/repository/files/.gitlab-ci.yml",
            headers=ROOT,
            json={"branch": "main", "content": configuration(), "commit_message": "CI [skip ci]"},
            timeout=30,
        )
        r.raise_for_status()

        step(f"[{name}] creating {args.pipelines} pipelines of 50 jobs")
        times = create_pipelines(base, int(project["id"]), args.pipelines)
        tokens = register_runners(base, args.runners)

        step(f"[{name}] the bare route with {args.runners} clients")
        bare_rps = asyncio.run(bare_rate(f"http://127.0.0.1:{bare_port}/users/1", args.runners, 10.0))

        total = args.pipelines * len(STAGES) * JOBS_PER_STAGE
        step(f"[{name}] {args.runners} runners take {total} jobs")
        jobs, requests, seconds = asyncio.run(hand_out(base, tokens, total, timeout=1800))

        step(f"[{name}] the server idle, then with one idle runner for {args.idle:.0f} s")
        kiln.wait_idle()
        idle_alone, _ = cpu_percent(kiln, min(args.idle, 30.0))
        with_runner, polls = cpu_percent(kiln, args.idle, idle_runner(base, tokens[0], args.idle))
        return Report(
            backend=name,
            revision=git_revision(),
            pipelines=args.pipelines,
            pipeline_create_ms_p50=round(statistics.median(times), 1),
            pipeline_create_ms_p95=round(percentile(times, 0.95), 1),
            pipeline_create_ms_max=round(max(times), 1),
            runners=args.runners,
            jobs=jobs,
            jobs_per_s=round(jobs / seconds, 1),
            runner_requests_per_s=round(requests / seconds, 1),
            bare_requests_per_s=round(bare_rps, 1),
            idle_seconds=args.idle,
            idle_runner_requests_per_s=round(polls / args.idle, 4),
            idle_server_cpu_percent=round(idle_alone, 2),
            idle_server_cpu_percent_with_runner=round(with_runner, 2),
        )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    reports = [run_backend("sqlite", None, args)]
    if args.postgres:
        with ExitStack() as stack:
            reports.append(run_backend("postgresql", start_postgres(stack), args))
    args.results_dir.mkdir(parents=True, exist_ok=True)
    out = args.results_dir / f"ci-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps([asdict(r) for r in reports], indent=2))
    for r in reports:
        print(
            f"{r.backend}: pipeline creation (50 jobs) p50 {r.pipeline_create_ms_p50} ms, "
            f"p95 {r.pipeline_create_ms_p95} ms; {r.runners} runners took {r.jobs} jobs at "
            f"{r.jobs_per_s}/s ({r.runner_requests_per_s} req/s; bare route {r.bare_requests_per_s} req/s, "
            f"ratio {r.runner_requests_per_s / r.bare_requests_per_s:.2f}); an idle runner "
            f"{r.idle_runner_requests_per_s} req/s, server CPU {r.idle_server_cpu_percent_with_runner}% "
            f"(alone {r.idle_server_cpu_percent}%)"
        )
    print(f"written {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
