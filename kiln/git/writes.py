"""The one way kiln writes commits: build a tree from file actions on top of a parent,
write the commit, then move the branch with a compare-and-swap (kiln.git.refs)."""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pygit2

from kiln.git import timed
from kiln.git.errors import ActionFailed, EmptyCommit
from kiln.git.files import STREAM_BYTES, last_commit_for_path
from kiln.git.names import path_problem
from kiln.git.refs import branch_tip, update_ref

FILE_MODE = pygit2.enums.FileMode.BLOB
EXEC_MODE = pygit2.enums.FileMode.BLOB_EXECUTABLE
STALE = "You are attempting to update a file that has changed since you started editing it."

_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


@contextmanager
def repository_lock(repo_path: Path) -> Iterator[None]:
    """One writer per repository: a thread lock in this process and a file lock across
    processes and nodes sharing the volume."""
    key = str(repo_path)
    with _locks_guard:
        lock = _locks.setdefault(key, threading.Lock())
    with lock:
        fd = os.open(repo_path / "kiln-write.lock", os.O_CREAT | os.O_RDWR, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


@dataclass(slots=True)
class FileAction:
    action: str  # create, update, delete, move, chmod
    file_path: str
    content: bytes | None = None
    previous_path: str | None = None
    execute_filemode: bool | None = None
    last_commit_id: str | None = None


@dataclass(slots=True)
class Person:
    name: str
    email: str

    def signature(self, when: datetime | None = None) -> pygit2.Signature:
        moment = when or datetime.now(UTC)
        return pygit2.Signature(self.name, self.email, int(moment.timestamp()), 0)


def _subject(message: str) -> str:
    return (message.splitlines() or ["commit"])[0]


class _Paths:
    """The files of the tree being built and how many files lie under each directory, kept
    up to date action by action: each check and change costs the depth of its path, never
    the size of the tree (a commit's actions stay linear in their number)."""

    def __init__(self, index: pygit2.Index) -> None:
        self.files: set[str] = set()
        self.dirs: dict[str, int] = {}
        for entry in index:
            self.add(entry.path)

    def add(self, path: str) -> None:
        self.files.add(path)
        for parent in _parents(path):
            self.dirs[parent] = self.dirs.get(parent, 0) + 1

    def discard(self, path: str) -> None:
        if path not in self.files:
            return
        self.files.remove(path)
        for parent in _parents(path):
            left = self.dirs[parent] - 1
            if left:
                self.dirs[parent] = left
            else:
                del self.dirs[parent]

    def check_free(self, path: str) -> None:
        """GitLab's refusals for a path that would clash with a file or directory."""
        if path in self.files:
            raise ActionFailed("A file with this name already exists")
        if path in self.dirs:
            raise ActionFailed("A directory with this name already exists")
        if any(parent in self.files for parent in _parents(path)):
            raise ActionFailed("A file with this name already exists")


def _write_blob(repo: pygit2.Repository, repo_path: Path, data: bytes) -> pygit2.Oid:
    """A large blob is compressed by `git hash-object` in a child: libgit2 would hold the
    interpreter for the whole compression (about 3 ms a MiB), and every other request with it."""
    if len(data) <= STREAM_BYTES:
        return repo.create_blob(data)
    written = timed.run(
        ["git", "hash-object", "-w", "--stdin"], cwd=repo_path, input=data, capture_output=True, check=True
    )
    return pygit2.Oid(hex=written.stdout.decode("ascii").strip())


def _parents(path: str) -> Iterator[str]:
    """`a`, `a/b` for `a/b/c`."""
    end = path.find("/")
    while end >= 0:
        yield path[:end]
        end = path.find("/", end + 1)


def _apply(
    repo: pygit2.Repository,
    repo_path: Path,
    index: pygit2.Index,
    paths: _Paths,
    parent: str | None,
    action: FileAction,
) -> None:
    problem = path_problem(action.file_path)
    if problem is None and action.previous_path is not None:
        problem = path_problem(action.previous_path)
    if problem is not None:
        raise ActionFailed(
            f"Your changes could not be committed, because the file path is invalid: {action.file_path}"
        )
    path = action.file_path
    exists = path in paths.files

    def check_fresh(p: str) -> None:
        if action.last_commit_id and parent is not None:
            last = last_commit_for_path(repo_path, parent, p)
            given = action.last_commit_id.lower()
            # A short id must still name one commit: at least 7 hex digits, as git abbreviates.
            if last is not None and not (len(given) >= 7 and last.startswith(given)):
                raise ActionFailed(STALE)

    if action.action == "create":
        paths.check_free(path)
        blob = _write_blob(repo, repo_path, action.content or b"")
        index.add(pygit2.IndexEntry(path, blob, EXEC_MODE if action.execute_filemode else FILE_MODE))
        paths.add(path)
    elif action.action == "update":
        if not exists:
            raise ActionFailed("A file with this name doesn't exist")
        check_fresh(path)
        mode = index[path].mode
        index.add(pygit2.IndexEntry(path, _write_blob(repo, repo_path, action.content or b""), mode))
    elif action.action == "delete":
        if not exists:
            raise ActionFailed("A file with this name doesn't exist")
        check_fresh(path)
        index.remove(path)
        paths.discard(path)
    elif action.action == "move":
        source = action.previous_path or ""
        if source not in paths.files:
            raise ActionFailed("A file with this name doesn't exist")
        check_fresh(source)
        entry = index[source]
        index.remove(source)
        paths.discard(source)
        paths.check_free(path)
        blob = _write_blob(repo, repo_path, action.content) if action.content is not None else entry.id
        index.add(pygit2.IndexEntry(path, blob, entry.mode))
        paths.add(path)
    elif action.action == "chmod":
        if not exists:
            raise ActionFailed("A file with this name doesn't exist")
        entry = index[path]
        index.add(pygit2.IndexEntry(path, entry.id, EXEC_MODE if action.execute_filemode else FILE_MODE))
    else:
        raise ActionFailed(f"Unknown action '{action.action}'")


def commit_actions(
    repo: pygit2.Repository,
    *,
    branch: str,
    actions: list[FileAction],
    message: str,
    author: Person,
    committer: Person,
    start: pygit2.Commit | None = None,
    force: bool = False,
    allow_empty: bool = False,
) -> tuple[pygit2.Commit, str | None]:
    """Commit `actions` onto `branch` (created from `start` when it doesn't exist yet, or
    reset onto `start` with `force`); returns the commit and the branch's previous tip."""
    repo_path = Path(repo.path)
    with repository_lock(repo_path):
        tip = branch_tip(repo, branch)
        base: pygit2.Commit | None
        if tip is not None and not force:
            base = repo[tip].peel(pygit2.Commit)
        else:
            base = start
        index = pygit2.Index()
        if base is not None:
            index.read_tree(base.tree)
        paths = _Paths(index)
        parent = str(base.id) if base is not None else None
        for action in actions:
            _apply(repo, repo_path, index, paths, parent, action)
        tree = index.write_tree(repo)
        if base is not None and tree == base.tree.id and not allow_empty:
            raise EmptyCommit("no changes")
        parents = [base.id] if base is not None else []
        oid = repo.create_commit(None, author.signature(), committer.signature(), message, tree, parents)
        previous = str(tip) if tip is not None else None
        update_ref(
            repo_path,
            f"refs/heads/{branch}",
            str(oid),
            previous,
            f"kiln: {_subject(message)}",
        )
        return repo[oid].peel(pygit2.Commit), previous


def write_commit(
    repo: pygit2.Repository,
    *,
    branch: str,
    tree: pygit2.Oid,
    parents: list[pygit2.Oid],
    message: str,
    author: pygit2.Signature,
    committer: pygit2.Signature,
    expected_tip: str | None,
) -> pygit2.Commit:
    """A commit with a tree built elsewhere (cherry-pick, revert, merges), swapped in only if
    the branch still points where the caller saw it."""
    repo_path = Path(repo.path)
    with repository_lock(repo_path):
        oid = repo.create_commit(None, author, committer, message, tree, parents)
        update_ref(repo_path, f"refs/heads/{branch}", str(oid), expected_tip, f"kiln: {_subject(message)}")
        return repo[oid].peel(pygit2.Commit)
