"""Reading history: commit lists through `git log` (path-limited history is where the git
binary beats libgit2), and per-commit facts: stats, the refs that contain a commit,
trailers, the added lines of a diff."""

from __future__ import annotations

import math
import re
import subprocess
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pygit2

from kiln.git import timed
from kiln.git.diffs import changes, line_counts
from kiln.git.errors import RefNotFound
from kiln.git.memo import Memo
from kiln.git.names import is_object_id

_TRAILER = re.compile(r"^([A-Za-z0-9][A-Za-z0-9-]*)[ \t]*:[ \t]*(.*)$")
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")


@dataclass(slots=True)
class Stats:
    additions: int
    deletions: int

    @property
    def total(self) -> int:
        return self.additions + self.deletions


@dataclass(slots=True)
class LogQuery:
    """What `git log` is asked for: revisions (or every ref), limits, order."""

    revisions: list[str]
    all_refs: bool = False
    path: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    author: str | None = None
    first_parent: bool = False
    topo: bool = False


def title(message: str) -> str:
    """The first line of a message, whole."""
    return re.split(r"[\r\n]", message, maxsplit=1)[0]


def parse_trailers(message: str) -> dict[str, list[str]]:
    """`Key: value` lines of the message's last paragraph, when every line of it is one
    (continuation lines, indented, fold into the trailer above them)."""
    paragraphs = re.split(r"\n[ \t]*\n", message.strip("\n"))
    if len(paragraphs) < 2:
        return {}
    found: list[tuple[str, str]] = []
    for line in paragraphs[-1].split("\n"):
        if line[:1] in (" ", "\t") and found:
            key, value = found[-1]
            found[-1] = (key, f"{value} {line.strip()}")
            continue
        m = _TRAILER.match(line)
        if m is None:
            return {}
        found.append((m.group(1), m.group(2).strip()))
    out: dict[str, list[str]] = {}
    for key, value in found:
        out.setdefault(key, []).append(value)
    return out


def valid_revision(rev: str) -> bool:
    """What git may take as a revision argument: no option, whitespace, NUL or tree path."""
    return bool(rev) and not rev.startswith("-") and not re.search(r"[\s\x00:]", rev)


def _log_args(q: LogQuery) -> list[str]:
    args: list[str] = []
    # Whole seconds since the epoch, both bounds inclusive (see `excludes_all`). A commit is
    # never dated before the epoch: an earlier `since` bounds nothing.
    if q.since is not None and q.since.timestamp() > 0:
        args.append(f"--since={_git_date(math.ceil(q.since.timestamp()))}")
    if q.until is not None:
        args.append(f"--until={_git_date(math.floor(q.until.timestamp()))}")
    if q.author:
        args.append(f"--author={q.author}")
    if q.first_parent:
        args.append("--first-parent")
    if q.topo:
        args.append("--topo-order")
    if q.all_refs:
        args.append("--all")
    args.append("--end-of-options")
    if not q.all_refs:
        args.extend(q.revisions)
    args.append("--")
    if q.path:
        args.append(q.path)
    return args


def _git_date(seconds: int) -> str:
    """Git's raw date, `@<seconds> +0000`: any time from the epoch on, where a calendar date
    after 2099 (or before 1970) is one git cannot read and quietly ignores as a bound."""
    return f"@{seconds} +0000"


def excludes_all(q: LogQuery) -> bool:
    """Whether the dates bound out every commit: `until` before the epoch (git keeps no
    earlier date), or `since` after `until`."""
    if q.until is None:
        return False
    until = math.floor(q.until.timestamp())
    return until < 0 or (q.since is not None and math.ceil(q.since.timestamp()) > until)


def _git(repo_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return timed.run(
        ["git", "--literal-pathspecs", *args],
        cwd=repo_path,
        capture_output=True,
        text=True,
        check=False,
    )


def log(repo_path: Path, q: LogQuery, *, skip: int, limit: int) -> list[str]:
    """The ids of one window of history; RefNotFound when a revision does not resolve."""
    result = _git(
        repo_path, "log", "-z", "--format=%H", f"--skip={skip}", f"--max-count={limit}", *_log_args(q)
    )
    if result.returncode != 0:
        raise RefNotFound(" ".join(q.revisions))
    return [line for line in result.stdout.split("\x00") if line.strip()]


def count(repo_path: Path, q: LogQuery, *, cap: int | None = None) -> int:
    """How many commits the query lists, counting at most `cap`."""
    limit = [f"--max-count={cap}"] if cap is not None else []
    result = _git(repo_path, "rev-list", "--count", *limit, *_log_args(q))
    if result.returncode != 0:
        raise RefNotFound(" ".join(q.revisions))
    return int(result.stdout.strip() or 0)


def window(repo_path: Path, q: LogQuery, *, skip: int, limit: int, cap: int) -> tuple[list[str], int | None]:
    """`limit` ids of the history from `skip`, and how many commits it holds in all (None
    above `cap`). Over commit ids the total never changes and is remembered, so only the
    first request at a tip walks the whole history."""
    key = _total_key(repo_path, q, cap)
    found, total = _totals.get(key) if key is not None else (False, None)
    if found:
        return log(repo_path, q, skip=skip, limit=limit), total
    if q.path is not None and skip + limit <= cap:
        # A path's history is short: one walk gives both the window and the total.
        every = log(repo_path, q, skip=0, limit=cap + 1)
        ids = every[skip : skip + limit]
        total = len(every) if len(every) <= cap else None
    else:
        ids = log(repo_path, q, skip=skip, limit=limit)
        if len(ids) < limit and (ids or skip == 0):
            end = skip + len(ids)
            total = end if end <= cap else None
        else:
            n = count(repo_path, q, cap=cap + 1)
            total = n if n <= cap else None
    if key is not None:
        _totals.put(key, total)
    return ids, total


def _total_key(repo_path: Path, q: LogQuery, cap: int) -> tuple[object, ...] | None:
    if q.all_refs or not q.revisions or not all(is_object_id(r) for r in q.revisions):
        return None
    return (str(repo_path), cap, *_log_args(q))


_totals: Memo[int | None] = Memo(4096)


def stats(repo: pygit2.Repository, commit: pygit2.Commit, *, big_file_bytes: int) -> Stats:
    """Lines added and removed against the first parent (the empty tree for a root commit),
    renames found, as GitLab counts them; a blob over `big_file_bytes` counts as binary
    (no lines), as git counts one over core.bigFileThreshold, and is never read."""
    parent = commit.parents[0].tree if commit.parents else None
    found = changes(repo, parent, commit.tree)
    additions, deletions = line_counts(repo, found, big_file_bytes=big_file_bytes)
    return Stats(additions=additions, deletions=deletions)


def refs_containing(repo_path: Path, sha: str, *, branches: bool, tags: bool) -> list[tuple[str, str]]:
    """(kind, name) of the branches, then the tags, whose history holds `sha`, by name."""
    patterns = (["refs/heads/"] if branches else []) + (["refs/tags/"] if tags else [])
    if not patterns:
        return []
    result = timed.run(
        ["git", "for-each-ref", f"--contains={sha}", "--format=%(refname)", *patterns],
        cwd=repo_path,
        capture_output=True,
        text=True,
        check=False,
    )
    out: list[tuple[str, str]] = []
    for ref in result.stdout.splitlines():
        if ref.startswith("refs/heads/"):
            out.append(("branch", ref.removeprefix("refs/heads/")))
        elif ref.startswith("refs/tags/"):
            out.append(("tag", ref.removeprefix("refs/tags/")))
    return out


def has_branches(repo: pygit2.Repository) -> bool:
    return any(True for _ in repo.references.iterator(pygit2.enums.ReferenceFilter.BRANCHES))


def added_lines(hunks: str) -> set[int]:
    """Numbers, in the new file, of the lines a diff's hunks add."""
    out: set[int] = set()
    line = 0
    for text in hunks.split("\n"):
        m = _HUNK.match(text)
        if m is not None:
            line = int(m.group(1))
        elif text.startswith("+"):
            out.add(line)
            line += 1
        elif text.startswith(" "):
            line += 1
    return out
