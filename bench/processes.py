"""Subprocesses the harness owns: started in their own session, pinned to a CPU, always reaped."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import httpx

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
REPO = Path(__file__).resolve().parent.parent
ROOT_TOKEN = "kiln-bench-root-token"
ROOT_PASSWORD = "kiln-bench-root-password"


def server_env(data_dir: Path, port: int, **extra: str | None) -> dict[str, str]:
    """The environment of every kiln server a harness starts (kiln, the bare app, `kiln
    migrate`; the end-to-end tests' servers too). `extra` sets variables, or with None
    removes them.

    The shell's own KILN_* settings are left out: kiln and the bare app (whose engine reads
    the same settings) must see the same database and pool whatever the shell exports, and a
    stray KILN_DATABASE_URL would point kiln elsewhere than the data it is measured on. Root's
    password is hashed cheaply: no measured route checks a password."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KILN_")}
    env.update(
        {
            "KILN_DATA_DIR": str(data_dir),
            "KILN_EXTERNAL_URL": f"http://127.0.0.1:{port}",
            "KILN_ROOT_TOKEN": ROOT_TOKEN,
            "KILN_ROOT_PASSWORD": ROOT_PASSWORD,
            "KILN_PASSWORD_TIME_COST": "1",
            "KILN_PASSWORD_MEMORY_COST": "8192",
        }
    )
    for key, value in extra.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def public_project(base: str, name: str) -> dict[str, object]:
    """A public project with a README, created through the API as root: what a bench crafts
    its repository in."""
    created = httpx.post(
        f"{base}/api/v4/projects",
        headers={"Private-Token": ROOT_TOKEN},
        json={"name": name, "initialize_with_readme": True, "visibility": "public"},
        timeout=30,
    )
    created.raise_for_status()
    return dict(created.json())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpu_count() -> int:
    return len(os.sched_getaffinity(0))


def pin_to(cpu: int | None) -> Callable[[], None] | None:
    """A preexec hook that pins the child (and the threads it starts) to one CPU."""
    if cpu is None:
        return None

    def pin() -> None:
        os.sched_setaffinity(0, {cpu})

    return pin


class Managed:
    """One long-running child (a server): logs to a file, killed with its whole process group."""

    def __init__(
        self, name: str, argv: Sequence[str], env: Mapping[str, str], log: Path, cpu: int | None
    ) -> None:
        self.name = name
        self.log = log
        self._out = log.open("ab")
        self.proc = subprocess.Popen(
            list(argv),
            env=dict(env),
            stdout=self._out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=pin_to(cpu),  # noqa: PLW1509 - the harness starts no threads
        )

    def wait_ready(self, url: str, headers: Mapping[str, str], timeout: float = 60.0) -> None:
        """Poll until the URL answers 200; a child that dies or never answers is an error."""
        deadline = time.monotonic() + timeout
        last = "no answer"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode}:\n{self.tail()}")
            try:
                response = httpx.get(url, headers=dict(headers), timeout=2.0)
            except httpx.TransportError as exc:
                last = repr(exc)
            else:
                if response.status_code == 200:
                    return
                last = f"HTTP {response.status_code}: {response.text[:200]}"
            time.sleep(0.2)
        raise RuntimeError(f"{self.name} not ready after {timeout:.0f}s ({last}):\n{self.tail()}")

    def cpu_seconds(self) -> float:
        """CPU time (user + system) the server and its descendants have used so far, with
        the children they have reaped (kiln runs `git` per request on some routes).

        Per request, this stays comparable when other work on the machine slows the
        wall clock down; throughput alone does not."""
        return sum(_cpu_of(pid) for pid in _tree(self.proc.pid))

    def wait_idle(self, timeout: float = 60.0, interval: float = 0.25) -> float:
        """Wait until the server stops using CPU; returns the seconds waited.

        When a load run ends, the requests already read keep running (a blocking handler is
        not cancelled by a closed connection). For a slow route that backlog is seconds of
        work; measured next, it would count its CPU against requests it did not complete."""
        started = time.monotonic()
        last = self.cpu_seconds()
        quiet = 0
        # Twice in a row at most one clock tick per interval (the job workers' idle polling):
        # once alone could be a busy server that other work kept off the CPU.
        while quiet < 2 and time.monotonic() - started < timeout:
            time.sleep(interval)
            now = self.cpu_seconds()
            quiet = quiet + 1 if now - last <= 1.0 / CLOCK_TICKS else 0
            last = now
        return time.monotonic() - started

    def tail(self, lines: int = 30) -> str:
        self._out.flush()
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        if self.proc.poll() is None:
            _signal_group(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                _signal_group(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self._out.close()


def _tree(pid: int) -> list[int]:
    found = [pid]
    for current in found:
        for children in Path(f"/proc/{current}/task").glob("*/children"):
            try:
                found += [int(child) for child in children.read_text().split()]
            except OSError:
                continue
    return found


def _cpu_of(pid: int) -> float:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    # Fields after the parenthesised command name: utime, stime (the 14th and 15th), then
    # cutime and cstime, where the CPU of the children it has reaped lands. A live child is
    # in the tree itself, a reaped one only in its parent's: nothing counts twice.
    fields = stat.rsplit(")", 1)[1].split()
    return sum(int(v) for v in fields[11:15]) / CLOCK_TICKS


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, sig)


def run_bounded(argv: Sequence[str], cpu: int | None, timeout: float) -> subprocess.CompletedProcess[str]:
    """A short-lived child (the load generator): output captured, killed if it overstays."""
    proc = subprocess.Popen(
        list(argv),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
        preexec_fn=pin_to(cpu),  # noqa: PLW1509 - the harness starts no threads
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException:
        _signal_group(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    return subprocess.CompletedProcess(list(argv), proc.returncode, out, err)


def kiln_server(kiln_bin: Path, port: int, env: Mapping[str, str], log: Path, cpu: int | None) -> Managed:
    """`kiln serve` exactly as an operator starts it: one process, on localhost."""
    argv = [str(kiln_bin), "serve", "--host", "127.0.0.1", "--port", str(port), "--processes", "1"]
    return Managed("kiln serve", argv, env, log, cpu)


def bare_server(port: int, env: Mapping[str, str], log: Path, cpu: int | None) -> Managed:
    """The bare app (bench.bare) served as `kiln serve` serves kiln: uvicorn with uvloop and
    httptools, proxy headers on, one process. What it serves comes from `env` (its BENCH_*
    variables)."""
    argv = [
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
        str(port),
        "--loop",
        "uvloop",
        "--http",
        "httptools",
        "--log-level",
        "warning",
        "--proxy-headers",
        "--workers",
        "1",
    ]
    return Managed("bare app", argv, env, log, cpu)
