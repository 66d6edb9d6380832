"""The shell executor: job scripts run as child processes of the runner, each in its own
process group so a timeout or a cancel ends the whole tree."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

Output = Callable[[bytes], None]
KILL_GRACE = 3.0


@dataclass
class RunResult:
    """How a script ended: its exit code, or that it was stopped."""

    exit_code: int
    timed_out: bool = False
    canceled: bool = False


class Executor(Protocol):
    """What a job needs from an executor."""

    name: str
    shell: str

    def prepare(self, job_id: int, builds_dir: Path, output: Output) -> None: ...

    def path(self, host_path: Path) -> str: ...

    def run(
        self,
        script: Path,
        env: dict[str, str],
        cwd: Path,
        *,
        output: Output,
        deadline: float | None,
        cancel: threading.Event,
    ) -> RunResult: ...

    def cleanup(self) -> None: ...


def script_text(lines: Sequence[str], *, echo: bool = True) -> str:
    """A POSIX shell script running `lines` in order, echoing each one as GitLab does, and
    stopping at the first failing one with its exit code."""
    out = ["set -e", "set -o pipefail 2>/dev/null || true", "set +o noclobber"]
    for line in lines:
        if echo:
            shown = line.strip().splitlines() or [""]
            label = shown[0] + (" # collapsed multi-line command" if len(shown) > 1 else "")
            out.append(f"printf '%s\\n' {_quote(chr(27) + '[32;1m$ ' + label + chr(27) + '[0;m')}")
        out.append(line)
    out.append("")
    return "\n".join(out)


def _quote(value: str) -> str:
    return "'" + value.replace("'", "'\"'\"'") + "'"


def _kill_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def run_process(
    argv: Sequence[str],
    *,
    env: dict[str, str],
    cwd: Path,
    output: Output,
    deadline: float | None,
    cancel: threading.Event,
    stop: Callable[[subprocess.Popen[bytes]], None] | None = None,
) -> RunResult:
    """Run `argv` streaming its output; end its process group at the deadline or on cancel."""
    process = subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        cwd=cwd,
        start_new_session=True,
    )
    assert process.stdout is not None
    pipe = process.stdout.fileno()

    def pump() -> None:
        while True:
            try:
                chunk = os.read(pipe, 65536)
            except OSError:
                return
            if not chunk:
                return
            output(chunk)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    timed_out = canceled = False
    stopping_since: float | None = None
    while True:
        try:
            process.wait(timeout=0.05)
            break
        except subprocess.TimeoutExpired:
            pass
        now = time.monotonic()
        if stopping_since is None:
            if cancel.is_set():
                canceled = True
            elif deadline is not None and now >= deadline:
                timed_out = True
            if canceled or timed_out:
                stopping_since = now
                if stop is not None:
                    stop(process)
                _kill_group(process.pid, signal.SIGTERM)
        elif now - stopping_since >= KILL_GRACE:
            _kill_group(process.pid, signal.SIGKILL)
    # Whatever the script left running in the background goes with it.
    _kill_group(process.pid, signal.SIGKILL)
    reader.join(timeout=5)
    process.stdout.close()
    code = process.returncode
    if code < 0:
        code = 128 - code
    return RunResult(exit_code=code, timed_out=timed_out, canceled=canceled)


class ShellExecutor:
    """Runs scripts with bash (or sh) on this machine, in the job's own folder."""

    name = "shell"

    def __init__(self) -> None:
        self.shell = "bash" if shutil.which("bash") else "sh"

    def prepare(self, job_id: int, builds_dir: Path, output: Output) -> None:
        output(f"Using Shell ({self.shell}) executor...\n".encode())

    def path(self, host_path: Path) -> str:
        return str(host_path)

    def run(
        self,
        script: Path,
        env: dict[str, str],
        cwd: Path,
        *,
        output: Output,
        deadline: float | None,
        cancel: threading.Event,
    ) -> RunResult:
        argv = (
            [self.shell, "--noprofile", "--norc", str(script)]
            if self.shell == "bash"
            else ["sh", str(script)]
        )
        return run_process(argv, env=env, cwd=cwd, output=output, deadline=deadline, cancel=cancel)

    def cleanup(self) -> None:
        return None
