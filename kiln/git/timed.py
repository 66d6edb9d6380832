"""`git` child processes, timed for the operator's metrics (kiln_git_process_duration_seconds,
by git command): every module here that runs git does it through `run`, reads one through
`reading`, or reports a process it streams from with `observe`."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from time import perf_counter
from typing import Any

from kiln.metrics import observe_git

_WITH_VALUE = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace"})


def run(args: Sequence[Any], **kwargs: Any) -> subprocess.CompletedProcess[Any]:
    """subprocess.run, timed under the git command it runs."""
    started = perf_counter()
    try:
        return subprocess.run(args, **kwargs)  # noqa: PLW1510 — callers pass check
    finally:
        observe(args, perf_counter() - started)


@contextmanager
def reading(
    args: Sequence[Any], *, cwd: Any, stderr: Any = subprocess.DEVNULL
) -> Iterator[subprocess.Popen[bytes]]:
    """A git child whose output the caller reads as it comes (and waits for, to see its
    status). A reader that stops early, a client gone or an error, must not leave git
    writing to nobody: the child is killed then. Its stdout is closed and it is timed."""
    started = perf_counter()
    child = subprocess.Popen(args, cwd=cwd, stdout=subprocess.PIPE, stderr=stderr)
    try:
        yield child
    finally:
        if child.poll() is None:
            child.kill()
        if child.stdout is not None:
            child.stdout.close()
        child.wait()
        observe(args, perf_counter() - started)


def observe(args: Sequence[Any], seconds: float) -> None:
    observe_git(command_of(args), seconds)


def command_of(args: Sequence[Any]) -> str:
    """The git command of an argument list: `git -c x=y fetch …` is "fetch"."""
    skip = False
    for arg in args[1:]:
        if skip:
            skip = False
        elif not isinstance(arg, str):
            break
        elif arg in _WITH_VALUE:
            skip = True
        elif not arg.startswith("-"):
            return arg
    return "unknown"
