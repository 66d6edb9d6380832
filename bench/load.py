"""Drive load at one URL and measure it: wrk when available, else bench.loadgen (asyncio).

Either way the generator is a separate process pinned away from the server, and the
result has the same shape (`Measurement`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bench.processes import Managed, run_bounded

MARKER = "BENCH_JSON "
TIMEOUT_S = 5
# How long a server may take to work off an earlier run's backlog before a measured run.
IDLE_WAIT_S = 600.0

# wrk's own summary is text; this prints the numbers the report needs as one JSON line.
WRK_SCRIPT = """
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '%s{"requests":%d,"duration_s":%.6f,"bytes":%d,"errors":%d,"timeouts":%d,"non_2xx":%d,'
    .. '"mean_ms":%.3f,"p50_ms":%.3f,"p90_ms":%.3f,"p99_ms":%.3f,"max_ms":%.3f}\\n',
    "MARKER", summary.requests, summary.duration / 1e6, summary.bytes,
    e.connect + e.read + e.write, e.timeout, e.status,
    latency.mean / 1e3, latency:percentile(50) / 1e3, latency:percentile(90) / 1e3,
    latency:percentile(99) / 1e3, latency.max / 1e3))
end
""".replace("MARKER", MARKER)


# A target whose every request must be answered afresh: each names it differently (a counter
# in the query, which kiln ignores), so no answer kept for an earlier request fits it.
WRK_FRESH = """
counter = 0
request = function()
  counter = counter + 1
  return wrk.format(nil, wrk.path .. "&fresh=" .. counter)
end
"""


@dataclass
class Target:
    key: str
    label: str
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    # Every request a different query (WRK_FRESH): the route's work in full each time.
    fresh: bool = False


@dataclass
class Measurement:
    requests: int
    duration_s: float
    bytes: int
    errors: int
    timeouts: int
    non_2xx: int
    mean_ms: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float
    # Filled in by the harness: CPU the server spent on the run, and the requests still open
    # when it ended (one per connection), which that CPU also paid for.
    server_cpu_s: float = 0.0
    unfinished: int = 0
    # Open loop only: the offered rate, connections the generator had to open, and how late
    # it sent (p99): above a millisecond or two, the generator itself was short of CPU.
    rate: float = 0.0
    connections_opened: int = 0
    send_late_p99_ms: float = 0.0

    @property
    def served(self) -> int:
        """Answers with a 2xx/3xx status: a fast refusal (503) is not throughput."""
        return self.requests - self.non_2xx

    @property
    def rps(self) -> float:
        return self.served / self.duration_s if self.duration_s else 0.0

    @property
    def failures(self) -> int:
        return self.errors + self.timeouts + self.non_2xx

    @property
    def cpu_ms_per_request(self) -> float:
        """Per served answer, as `rps` counts them: the CPU of refused ones is part of the
        price of those served, so the CPU ratio of two targets stays their throughput ratio on
        a saturated core. Includes the requests left open at the end: the server finishes them
        after the run (their CPU is counted), and for a slow route they are many per completed
        one."""
        return self.server_cpu_s * 1000 / (self.served + self.unfinished) if self.served else 0.0

    def as_dict(self) -> dict[str, float | int]:
        return {
            **asdict(self),
            "rps": round(self.rps, 1),
            "cpu_ms_per_request": round(self.cpu_ms_per_request, 3),
        }


class LoadGenerator:
    name: str

    def __init__(self, connections: int, cpu: int | None) -> None:
        self.connections = connections
        self.cpu = cpu

    def describe(self) -> str:
        raise NotImplementedError

    def command(self, target: Target, duration: float) -> list[str]:
        raise NotImplementedError

    def close(self) -> None:
        """Release what the generator holds between runs."""

    def run(self, target: Target, duration: float) -> Measurement:
        argv = self.command(target, duration)
        done = run_bounded(argv, self.cpu, timeout=duration + 60)
        for line in done.stdout.splitlines():
            if line.startswith(MARKER):
                return Measurement(**json.loads(line[len(MARKER) :]))
        raise RuntimeError(
            f"{self.name} gave no result (exit {done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        )


class Wrk(LoadGenerator):
    name = "wrk"

    def __init__(self, binary: str, connections: int, cpu: int | None) -> None:
        super().__init__(connections, cpu)
        self.binary = binary
        self.script = _script(WRK_SCRIPT)
        self.fresh_script = _script(WRK_SCRIPT + WRK_FRESH)

    def describe(self) -> str:
        return f"wrk -t1 -c{self.connections}"

    def command(self, target: Target, duration: float) -> list[str]:
        argv = [
            self.binary,
            "-t1",
            f"-c{self.connections}",
            f"-d{max(1, round(duration))}s",
            "--timeout",
            "5s",
        ]
        for name, value in target.headers.items():
            argv += ["-H", f"{name}: {value}"]
        script = self.fresh_script if target.fresh else self.script
        return [*argv, "-s", str(script), target.url]

    def close(self) -> None:
        self.script.unlink(missing_ok=True)
        self.fresh_script.unlink(missing_ok=True)


def _script(text: str) -> Path:
    handle, path = tempfile.mkstemp(prefix="kiln-bench-", suffix=".lua")
    with os.fdopen(handle, "w") as script:
        script.write(text)
    return Path(path)


class PythonLoad(LoadGenerator):
    name = "python"

    def describe(self) -> str:
        return f"bench.loadgen (asyncio, {self.connections} keep-alive connections)"

    def pace(self) -> list[str]:
        """bench.loadgen's options for how requests follow one another."""
        return ["--connections", str(self.connections)]

    def command(self, target: Target, duration: float) -> list[str]:
        argv = [
            sys.executable,
            "-m",
            "bench.loadgen",
            "--url",
            target.url,
            *self.pace(),
            "--duration",
            str(duration),
        ]
        for name, value in target.headers.items():
            argv += ["--header", f"{name}: {value}"]
        return [*argv, "--fresh"] if target.fresh else argv


class OpenLoop(PythonLoad):
    """A fixed rate of requests, each on schedule however late the answers (bench.loadgen)."""

    name = "open loop"

    def __init__(self, rate: float, cpu: int | None) -> None:
        super().__init__(0, cpu)
        self.rate = rate

    def describe(self) -> str:
        return f"bench.loadgen open loop, {self.rate:g} requests/s"

    def pace(self) -> list[str]:
        return ["--rate", str(self.rate)]


def measure(
    generator: LoadGenerator,
    target: Target,
    server: Managed,
    sharing: Iterable[Managed],
    duration: float,
) -> Measurement:
    """One measured run, with the server's CPU over it (until it is idle again).

    `sharing`: the servers on the measured one's CPU. None may still be working off an
    earlier run (after an open-loop run, a server slower than the rate has a backlog of
    minutes to work off), or its CPU would slow the measured one down."""
    for busy in sharing:
        busy.wait_idle(timeout=IDLE_WAIT_S)
    cpu_before = server.cpu_seconds()
    measured = generator.run(target, duration)
    server.wait_idle(timeout=IDLE_WAIT_S)
    measured.server_cpu_s = round(server.cpu_seconds() - cpu_before, 3)
    # A closed loop ends with one request open per connection (an open loop has none).
    measured.unfinished = generator.connections
    return measured


def find_wrk(install: bool) -> str | None:
    """wrk on PATH; as root, apt-get may install it (Debian package `wrk`) when allowed."""
    found = shutil.which("wrk")
    if found or not install or os.geteuid() != 0 or shutil.which("apt-get") is None:
        return found
    print("bench: wrk not found; installing it with apt-get", file=sys.stderr)
    env: Mapping[str, str] = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for argv in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "wrk"]):
        result = subprocess.run(argv, env=dict(env), capture_output=True, text=True, check=False)
        if result.returncode != 0:
            print(f"bench: {' '.join(argv)} failed: {result.stderr.strip()[-500:]}", file=sys.stderr)
            return None
    return shutil.which("wrk")


def choose(kind: str, connections: int, cpu: int | None, install: bool) -> LoadGenerator:
    if kind in ("auto", "wrk"):
        binary = find_wrk(install)
        if binary:
            return Wrk(binary, connections, cpu)
        if kind == "wrk":
            raise RuntimeError("wrk is not installed (and could not be installed)")
        print("bench: wrk unavailable; falling back to the Python load generator", file=sys.stderr)
    return PythonLoad(connections, cpu)
