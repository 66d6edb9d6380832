"""Files and trees inside a commit, named the way clients name them.

Git stores names as bytes; clients send and receive UTF-8. A name that is valid UTF-8 is
shown as it is; any other name is shown decoded as Latin-1 (every byte is one character, so
the mapping is reversible), and a client's path is matched against both spellings. Paths on
the git side are pygit2's: `str` with undecodable bytes surrogate-escaped (os.fsdecode)."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pygit2

from kiln.git import timed
from kiln.git.errors import GitError
from kiln.git.memo import Memo
from kiln.git.names import is_object_id

EXEC_MODE = int(pygit2.enums.FileMode.BLOB_EXECUTABLE)
_HEX = re.compile(r"[0-9a-fA-F]{4,40}")
# A blob larger than this is read in pieces from a `git cat-file` child, never whole into
# this process (libgit2 reads an object whole); smaller ones are read through libgit2.
STREAM_BYTES = 1 << 20
# How much of a large blob one piece holds (a multiple of 3: its base64 needs no padding).
PIECE_BYTES = 3 << 18


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
    """(git path, object) at `path` as a client names it; None when nothing is there. Walked
    with a stack of its own, never by recursion: a pushed tree may nest thousands deep."""
    parts = path.strip("/").split("/")
    if any(part in ("", ".", "..") for part in parts):
        return None
    last = len(parts) - 1
    # (tree, index of the part to find in it, git path so far); the first spelling on top.
    pending: list[tuple[pygit2.Tree, int, str]] = [(tree, 0, "")]
    while pending:
        current, i, prefix = pending.pop()
        found: list[tuple[pygit2.Tree, int, str]] = []
        for name in _spellings(parts[i]):
            try:
                obj = current[name]
            except (KeyError, ValueError):
                continue
            git_path = prefix + name
            if i == last:
                return git_path, obj
            if isinstance(obj, pygit2.Tree):
                found.append((obj, i + 1, git_path + "/"))
        pending.extend(reversed(found))
    return None


def find_file(repo: pygit2.Repository, commit: pygit2.Commit, path: str) -> FoundFile | None:
    """The blob at `path`; directories and submodules are not files. Its size comes from its
    header: the content is not read (a large blob would be read whole)."""
    found = lookup(commit.tree, path)
    if found is None:
        return None
    git_path, obj = found
    if obj.type_str != "blob":
        return None
    shown = "/".join(display_name(os.fsencode(part)) for part in git_path.split("/"))
    size = int(repo.odb.read_header(obj.id)[1])
    return FoundFile(path=shown, git_path=git_path, blob_id=str(obj.id), size=size, mode=int(obj.filemode))


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


def list_tree(commit: pygit2.Commit, path: str, *, recursive: bool, limit: int) -> TreeEntries | None:
    """Entries under `path` (the root when empty), read as they are taken; None when `path`
    names nothing. A file's path lists nothing."""
    tree: pygit2.Tree = commit.tree
    prefix = ""
    if path.strip("/"):
        found = lookup(tree, path)
        if found is None:
            return None
        git_path, obj = found
        if not isinstance(obj, pygit2.Tree):
            return TreeEntries(None, "", recursive=False, limit=0)
        tree = obj
        prefix = "/".join(display_name(os.fsencode(part)) for part in git_path.split("/")) + "/"
    return TreeEntries(tree, prefix, recursive=recursive, limit=limit)


# The order a listing shows kinds in: trees, then blobs, then submodules.
_KINDS = ("tree", "blob", "commit")


class TreeEntries:
    """A tree's entries as the tree API lists them: trees first, then blobs, then submodules,
    each kind in git's order (a subtree's entries right after it when `recursive`).

    A pushed tree may hold the same subtree twice at each of 40 levels: 2^40 paths in a few
    KiB. So nothing here reads the whole tree up front: iterating walks the tree once per
    kind, each walk yielding its kind as it comes and visiting at most the first `limit`
    entries, and a caller that stops (a page is full) stops the walk. Past `limit` entries
    the listing is those first `limit`, the same for every kind and every page."""

    def __init__(self, tree: pygit2.Tree | None, prefix: str, *, recursive: bool, limit: int) -> None:
        self._tree = tree
        self._prefix = prefix
        self._recursive = recursive
        self._limit = limit
        # How many entries the listing holds, once a walk has visited them all.
        self._size: int | None = None if tree is not None else 0
        # The kinds a finished walk met: a kind it never met costs no walk of its own.
        self._kinds: set[str] | None = None

    def __iter__(self) -> Iterator[TreeItem]:
        for kind in _KINDS:
            if self._kinds is None or kind in self._kinds:
                yield from self._walk(kind)

    def count(self, at_most: int) -> int:
        """How many entries the listing holds, counted up to `at_most` (a total past it is
        never shown): an earlier walk that ended tells it without walking again."""
        if self._size is not None:
            return self._size
        counted = 0
        for _ in self._walk(None):
            counted += 1
            if counted >= at_most:
                break
        return counted

    def _walk(self, kind: str | None) -> Iterator[TreeItem]:
        """Each entry of `kind` (every entry when None) in git's order, a subtree's entries
        right after it when recursive; a stack of iterators stands in for recursion, so depth
        costs no call frames."""
        if self._tree is None:
            return
        limit = self._limit
        recursive = self._recursive
        kinds: set[str] = set()
        visited = 0
        stack: list[tuple[Iterator[pygit2.Object], str]] = [(iter(self._tree), self._prefix)]
        while stack:
            entries, base = stack[-1]
            obj = next(entries, None)
            if obj is None:
                stack.pop()
                continue
            if visited >= limit:
                break
            visited += 1
            found = obj.type_str
            kinds.add(found)
            descend = recursive and isinstance(obj, pygit2.Tree)
            if kind is None or found == kind or descend:
                name = display_name(obj.raw_name or b"")
                if kind is None or found == kind:
                    yield TreeItem(
                        id=str(obj.id), name=name, type=found, path=base + name, mode=int(obj.filemode)
                    )
                if descend:
                    stack.append((iter(obj), base + name + "/"))
        # The walk went through its entries (not stopped by a caller that had enough).
        self._size = visited
        self._kinds = kinds


@dataclass(slots=True, frozen=True)
class BlobRef:
    """A blob found by id, with its size from its header: its content is not read yet."""

    repo: pygit2.Repository
    id: str
    size: int

    def data(self) -> bytes:
        """The whole content, read through libgit2 (blob_pieces reads a large one)."""
        return self.repo[self.id].peel(pygit2.Blob).data  # type: ignore[no-any-return]

    def pieces(self) -> Iterator[bytes]:
        return blob_pieces(self.repo, self.id, self.size)


def find_blob(repo: pygit2.Repository, sha: str) -> BlobRef | None:
    """A blob by its full or abbreviated id, found by its header alone; anything else (a
    tree, a commit, an ambiguous or unknown id, nonsense) is None."""
    if not _HEX.fullmatch(sha):
        return None
    try:
        oid = repo.expand_id(sha) if len(sha) < 40 else pygit2.Oid(hex=sha)
        kind, size = repo.odb.read_header(oid)
    except (KeyError, ValueError, pygit2.GitError):
        return None
    if kind != pygit2.enums.ObjectType.BLOB:
        return None
    return BlobRef(repo=repo, id=str(oid), size=int(size))


def blob_pieces(repo: pygit2.Repository, blob_id: str, size: int) -> Iterator[bytes]:
    """A blob's content in pieces of PIECE_BYTES: read through libgit2 when it is small, from
    a `git cat-file` child when it is large, so a large blob never sits whole in memory."""
    if size <= STREAM_BYTES:
        yield from chunks(repo[blob_id].peel(pygit2.Blob).data, PIECE_BYTES)
        return
    with timed.reading(["git", "cat-file", "blob", blob_id], cwd=repo.path) as child:
        assert child.stdout is not None
        while piece := child.stdout.read(PIECE_BYTES):
            yield piece


# libgit2 tells text from binary by a blob's first bytes (GIT_FILTER_BYTES_TO_CHECK_NUL).
BINARY_PROBE_BYTES = 8000
# Bytes libgit2 counts as neither printable nor whitespace, NUL apart (git_str_is_binary).
_UNPRINTABLE = bytes(
    c for c in [*range(1, 0x20), 0x7F] if c not in (0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x1B)
)
_WHITESPACE = b"\t\n\v\r"


def looks_binary(head: bytes) -> bool:
    """libgit2's git_blob_is_binary on a blob's first BINARY_PROBE_BYTES: a UTF-16 or UTF-32
    byte-order mark or a NUL is binary, and so is text with more than one unprintable byte
    per 128 printable ones. A large blob, read in pieces, is told from its first piece
    exactly as pygit2 tells a small one."""
    data = head[:BINARY_PROBE_BYTES]
    if data[:4] in (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff") or data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return True
    if data[:3] == b"\xef\xbb\xbf":
        data = data[3:]
    if b"\x00" in data:
        return True
    unprintable = len(data) - len(data.translate(None, _UNPRINTABLE))
    printable = len(data) - unprintable - (len(data) - len(data.translate(None, _WHITESPACE)))
    return (printable >> 7) < unprintable


class _Resumed:
    """A blob's pieces, the first of which was read already; closing them ends git's child
    whether or not any piece was taken."""

    def __init__(self, first: bytes, rest: Iterator[bytes]) -> None:
        self._first: bytes | None = first or None
        self._rest = rest

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        first = self._first
        if first is not None:
            self._first = None
            return first
        return next(self._rest)

    def close(self) -> None:
        close = getattr(self._rest, "close", None)
        if close is not None:
            close()


@dataclass(slots=True)
class RawBlob:
    """A blob about to be sent raw in pieces: whether it is binary, told from its first piece,
    and its content (the first piece included), each further piece read as it is taken."""

    binary: bool
    pieces: Iterator[bytes]


def open_blob(repo: pygit2.Repository, blob_id: str, size: int, *, head: bool = False) -> RawBlob:
    """A blob's first piece read (from a `git cat-file` child when it is large), enough to
    tell text from binary; the rest follows from the same child. `head`: only the kind is
    wanted, and the child ends at once."""
    pieces = blob_pieces(repo, blob_id, size)
    try:
        first = next(pieces, b"")
    except BaseException:
        pieces.close()
        raise
    binary = looks_binary(first)
    if head:
        pieces.close()
        return RawBlob(binary, iter(()))
    return RawBlob(binary, _Resumed(first, pieces))


def blob_sha256(repo: pygit2.Repository, blob_id: str, size: int) -> str:
    """The SHA-256 of a blob's content (the files API's content_sha256), read in pieces and
    remembered by blob: a blob's content never changes."""
    key = (repo.path, blob_id)
    found, digest = _digests.get(key)
    if found:
        return digest  # type: ignore[return-value]
    hasher = hashlib.sha256()
    for piece in blob_pieces(repo, blob_id, size):
        hasher.update(piece)
    value = hasher.hexdigest()
    _digests.put(key, value)
    return value


_digests: Memo[str] = Memo(4096)


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
