"""Keeping repositories fast to read: a commit-graph with changed-path Bloom filters turns
path-limited history and blame from a walk of every commit into a walk of the few that
touched the path. Housekeeping on request (repack, prune), and snapshots of a repository
as it is on disk."""

from __future__ import annotations

import fcntl
import os
import tarfile
from collections.abc import Iterator
from pathlib import Path

from kiln.git import timed


def refresh_commit_graph(repo_path: Path) -> None:
    """Idempotent; cheap when nothing changed (git rewrites only what is new)."""
    timed.run(
        ["git", "commit-graph", "write", "--reachable", "--changed-paths", "--split"],
        cwd=repo_path,
        capture_output=True,
        check=False,
    )


# ---------------------------------------------------------------------------- housekeeping

# Unreachable objects younger than this are kept by a prune: a push under way writes its
# objects before the ref that makes them reachable.
PRUNE_GRACE = "30.minutes.ago"
_LOCK = "kiln-housekeeping.lock"


class HousekeepingBusy(Exception):
    """Housekeeping of this repository is already running."""


class HousekeepingFailed(Exception):
    """A git step of housekeeping failed; its message is git's."""


def housekeep(repo_path: Path, *, prune: bool) -> None:
    """Eager housekeeping (GitLab's `eager` task): refs packed, every object repacked into one
    pack with a reachability bitmap (unreachable objects left loose, not lost), and the
    commit-graph rewritten; `prune` also removes unreachable loose objects past the grace
    period. One run per repository at a time: a second is HousekeepingBusy."""
    lock = repo_path / _LOCK
    with lock.open("a") as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise HousekeepingBusy() from None
        try:
            steps: list[list[str]] = [
                ["git", "pack-refs", "--all", "--prune"],
                ["git", "repack", "-A", "-d", "-q", "--write-bitmap-index"],
            ]
            if prune:
                steps.append(["git", "prune", f"--expire={PRUNE_GRACE}"])
            for args in steps:
                done = timed.run(args, cwd=repo_path, capture_output=True, check=False)
                if done.returncode != 0:
                    raise HousekeepingFailed(done.stderr.decode(errors="replace").strip())
            refresh_commit_graph(repo_path)
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


# ---------------------------------------------------------------------------- snapshots

_SNAPSHOT_TOP = ("HEAD", "packed-refs", "shallow", "refs", "objects")
_BLOCK = 512
_CHUNK = 1024 * 1024


def _snapshot_entries(repo_path: Path) -> Iterator[Path]:
    """What a snapshot holds, directories before their contents; files being written (git's
    temporary files and locks, kiln's) are left out."""
    for name in _SNAPSHOT_TOP:
        top = repo_path / name
        if top.is_dir():
            for folder, dirs, files in os.walk(top):
                dirs.sort()
                here = Path(folder)
                yield here
                for f in sorted(files):
                    if not (f.endswith(".lock") or f.startswith(("tmp_", ".tmp-", "incoming-"))):
                        yield here / f
        elif top.is_file():
            yield top


def _header(name: str, *, size: int, mode: int, mtime: float, directory: bool) -> bytes:
    info = tarfile.TarInfo(name + "/" if directory else name)
    info.type = tarfile.DIRTYPE if directory else tarfile.REGTYPE
    info.size = 0 if directory else size
    info.mode = mode & 0o7777
    info.mtime = int(mtime)
    return info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")


def snapshot(repo_path: Path) -> Iterator[bytes]:
    """A tar of the bare repository as it is on disk (GitLab's snapshot: possibly
    inconsistent while it is written to, never partial per file), made as it is sent: each
    file is read through the handle it was opened with, so one replaced meanwhile is sent
    whole as it was."""
    for path in _snapshot_entries(repo_path):
        name = path.relative_to(repo_path).as_posix()
        if path.is_dir():
            st = path.stat()
            yield _header(name, size=0, mode=st.st_mode, mtime=st.st_mtime, directory=True)
            continue
        try:
            fh = path.open("rb")
        except FileNotFoundError:
            continue  # gone since the walk (a repack removed it)
        with fh:
            st = os.fstat(fh.fileno())
            yield _header(name, size=st.st_size, mode=st.st_mode, mtime=st.st_mtime, directory=False)
            left = st.st_size
            while left > 0:
                chunk = fh.read(min(_CHUNK, left))
                if not chunk:
                    chunk = bytes(min(_CHUNK, left))  # shrunk while read: the header's size holds
                left -= len(chunk)
                yield chunk
            if st.st_size % _BLOCK:
                yield bytes(_BLOCK - st.st_size % _BLOCK)
    yield bytes(2 * _BLOCK)
