"""Files and trees inside a commit, named the way clients name them.

Git stores names as bytes; clients send and receive UTF-8. A name that is valid UTF-8 is
shown as it is; any other name is shown decoded as Latin-1 (every byte is one character, so
the mapping is reversible), and a client's path is matched against both spellings. Paths on
the git side are pygit2's: `str` with undecodable bytes surrogate-escaped (os.fsdecode)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pygit2

from kiln.git import timed
from kiln.git.errors import GitError
from kiln.git.memo import Memo
from kiln.git.refs import is_object_id

EXEC_MODE = int(pygit2.enums.FileMode.BLOB_EXECUTABLE)
_HEX = re.compile(r"[0-9a-fA-F]{4,40}")


@dataclass(slots=True)
class FoundFile:
    """A blob at a path of a commit's tree: what the tree says of it, without its bytes (a
    commit's files never change, so this is kept across requests, and holds no repository)."""

    path: str  # as clients name it
    git_path: str  # as pygit2 and the git binary take it
    blob_id: str
    size: int
    mode: int

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]

    @property
    def executable(self) -> bool:
        return self.mode == EXEC_MODE


@dataclass(slots=True)
class TreeItem:
    id: str
    name: str
    type: str  # tree, blob, or commit (a submodule)
    path: str
    mode: int


def display_name(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def _spellings(component: str) -> list[str]:
    """The git-side names a client's path component may stand for."""
    names = [component]
    try:
        raw = component.encode("latin-1")
    except UnicodeEncodeError:
        return names
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        names.append(os.fsdecode(raw))  # shown as Latin-1 because it isn't UTF-8
    return names


def lookup(tree: pygit2.Tree, path: str) -> tuple[str, pygit2.Object] | None:
    """(git path, object) at `path` as a client names it; None when nothing is there."""
    parts = path.strip("/").split("/")
    if any(part in ("", ".", "..") for part in parts):
        return None

    def walk(current: pygit2.Tree, i: int, prefix: str) -> tuple[str, pygit2.Object] | None:
        for name in _spellings(parts[i]):
            try:
                obj = current[name]
            except (KeyError, ValueError):
                continue
            git_path = prefix + name
            if i == len(parts) - 1:
                return git_path, obj
            if isinstance(obj, pygit2.Tree):
                found = walk(obj, i + 1, git_path + "/")
                if found is not None:
                    return found
        return None

    return walk(tree, 0, "")


def find_file(commit: pygit2.Commit, path: str) -> FoundFile | None:
    """The blob at `path`; directories and submodules are not files."""
    found = lookup(commit.tree, path)
    if found is None:
        return None
    git_path, obj = found
    if not isinstance(obj, pygit2.Blob):
        return None
    shown = "/".join(display_name(os.fsencode(part)) for part in git_path.split("/"))
    return FoundFile(
        path=shown, git_path=git_path, blob_id=str(obj.id), size=obj.size, mode=int(obj.filemode)
    )


def last_commit_for_path(repo_path: Path, revision: str, git_path: str) -> str | None:
    """The newest commit reachable from `revision` that touched `git_path` (a literal path:
    `*` or `:` in a name match only themselves). A commit id as `revision` makes the answer
    immutable, so it is remembered: path history is the costly part of reading a file."""

    def walk() -> str | None:
        result = timed.run(
            ["git", "--literal-pathspecs", "log", "-1", "--format=%H", revision, "--", os.fsencode(git_path)],
            cwd=repo_path,
            capture_output=True,
            check=False,
        )
        if result.returncode != 0:
            raise GitError(result.stderr.decode("utf-8", "replace").strip())
        return result.stdout.decode("ascii", "replace").strip() or None

    if not is_object_id(revision):
        return walk()
    return _last_commit.compute((str(repo_path), revision, git_path), walk)


_last_commit: Memo[str | None] = Memo(4096)


def list_tree(commit: pygit2.Commit, path: str, *, recursive: bool) -> list[TreeItem] | None:
    """Entries under `path` (the root when empty): trees first, then blobs, then submodules,
    each in git's order; None when `path` names nothing. A file's path lists nothing."""
    tree: pygit2.Tree = commit.tree
    prefix = ""
    if path.strip("/"):
        found = lookup(tree, path)
        if found is None:
            return None
        git_path, obj = found
        if not isinstance(obj, pygit2.Tree):
            return []
        tree = obj
        prefix = "/".join(display_name(os.fsencode(part)) for part in git_path.split("/")) + "/"
    items = list(_entries(tree, prefix, recursive))
    order = {"tree": 0, "blob": 1, "commit": 2}
    return sorted(items, key=lambda item: order[item.type])  # stable: git order within a kind


def _entries(tree: pygit2.Tree, prefix: str, recursive: bool) -> Iterator[TreeItem]:
    for obj in tree:
        name = display_name(obj.raw_name or b"")
        kind = obj.type_str
        yield TreeItem(id=str(obj.id), name=name, type=kind, path=prefix + name, mode=int(obj.filemode))
        if recursive and isinstance(obj, pygit2.Tree):
            yield from _entries(obj, prefix + name + "/", recursive)


def blob_by_sha(repo: pygit2.Repository, sha: str) -> pygit2.Blob | None:
    """A blob by its full or abbreviated id; anything else (a tree, a commit, nonsense) is None."""
    if not _HEX.fullmatch(sha):
        return None
    try:
        obj = repo.get(sha) if len(sha) == 40 else repo[sha]
    except (KeyError, ValueError, pygit2.GitError):
        return None
    return obj if isinstance(obj, pygit2.Blob) else None


# A README GitLab renders (its markup formats) is preferred over a plain one (no extension, .txt).
_README_MARKUP = {
    "md",
    "markdown",
    "mdown",
    "mkd",
    "mkdn",
    "rst",
    "adoc",
    "asciidoc",
    "asc",
    "textile",
    "rdoc",
    "org",
    "creole",
    "wiki",
    "mediawiki",
    "pod",
    "rmd",
}
_README_PLAIN = {"", "txt"}


def readme_name(repo: pygit2.Repository) -> str | None:
    """The README at the root of HEAD, as GitLab picks it for `readme_url`: a markup one
    first, then a plain one, by name within each; None in an empty repository."""
    if repo.head_is_unborn:
        return None
    try:
        tree = repo.head.peel(pygit2.Commit).tree
    except (KeyError, ValueError, pygit2.GitError):
        return None
    markup: list[str] = []
    plain: list[str] = []
    for entry in tree:
        if entry.type_str != "blob":
            continue
        name = display_name(entry.raw_name)
        stem, _, ext = name.partition(".")
        if stem.lower() != "readme":
            continue
        if ext.lower() in _README_MARKUP:
            markup.append(name)
        elif ext.lower() in _README_PLAIN:
            plain.append(name)
    found = sorted(markup) or sorted(plain)
    return found[0] if found else None


def has_branches(repo: pygit2.Repository) -> bool:
    return any(ref.startswith(b"refs/heads/") for ref in repo.raw_listall_references())


def chunks(data: bytes, size: int = 64 * 1024) -> Iterator[bytes]:
    view = memoryview(data)
    for start in range(0, len(view), size):
        yield bytes(view[start : start + size])
