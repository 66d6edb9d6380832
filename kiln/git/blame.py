"""Blame through the git binary (`git blame --porcelain`), many times faster than libgit2's on
long histories; consecutive lines from the same commit form one range, as GitLab groups them.

Git's output is read line by line as it comes: for every line of the file it carries a header
and the line itself, several times the file's size, which is never held whole."""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from kiln.git import timed
from kiln.git.errors import GitError

_HEADER = re.compile(rb"^([0-9a-f]{40,64}) \d+ \d+(?: \d+)?$")
_TOO_SHORT = re.compile(rb"has only \d+ lines?")


class RangeOutsideFile(GitError):
    """The requested first line lies beyond the end of the file."""


@dataclass(slots=True)
class BlameGroup:
    sha: str
    lines: list[str] = field(default_factory=list)


def blame(
    repo_path: Path, revision: str, git_path: str, *, start: int | None = None, end: int | None = None
) -> list[BlameGroup]:
    """Ranges of `git_path` at `revision`; lines `start`..`end` (1-based, inclusive) when given."""
    args: list[str | bytes] = ["git", "blame", "--porcelain"]
    if start is not None and end is not None:
        args += ["-L", f"{start},{end}"]
    args += [revision, "--", os.fsencode(git_path)]
    # Errors go to a file: a pipe left unread could fill and stop git while its output is read.
    with tempfile.TemporaryFile() as errors:
        with timed.reading(args, cwd=repo_path, stderr=errors) as child:
            assert child.stdout is not None
            groups = parse_porcelain(child.stdout)
            status = child.wait()
        if status != 0:
            errors.seek(0)
            message = errors.read(64 * 1024)
            if _TOO_SHORT.search(message):
                raise RangeOutsideFile("range is outside of the file length")
            raise GitError(message.decode("utf-8", "replace").strip())
    return groups


def parse_porcelain(lines: Iterable[bytes]) -> list[BlameGroup]:
    """Ranges from porcelain output, a line at a time (with or without their newlines)."""
    groups: list[BlameGroup] = []
    sha: str | None = None
    for raw in lines:
        line = raw[:-1] if raw.endswith(b"\n") else raw
        if line.startswith(b"\t"):
            if sha is None:
                continue
            text = line[1:].decode("utf-8", "replace")
            if not groups or groups[-1].sha != sha:
                groups.append(BlameGroup(sha))
            groups[-1].lines.append(text)
            continue
        header = _HEADER.match(line)
        if header is not None:
            sha = header.group(1).decode("ascii")
    return groups
