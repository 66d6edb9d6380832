"""Comparing two commits (merge bases, the commits one has that the other lacks, per-file
diffs shaped as GitLab's diff entries) and summing up who wrote a branch's history.

A diff is bounded as GitLab bounds it (Gitlab::Git::DiffCollection over Gitaly's parser):
a patch of `max_patch_bytes` or more is pruned and marked `too_large`; past `max_files`
files, `max_lines` lines or `max_bytes` bytes the collection stops and overflows; without
`expanded`, files past a tenth of those limits, and patches past a tenth of
`max_patch_bytes`, are pruned and marked `collapsed`. A blob larger than `big_file_bytes`
is never diffed (git's core.bigFileThreshold, lower here): its entry is `too_large` and
counts no lines. Blobs up to IN_PROCESS_BYTES are diffed by libgit2 in this process; larger
ones by a git child, whose output is counted as it comes and held only up to the patch
size shown."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field

import pygit2

from kiln.git import timed
from kiln.git.files import STREAM_BYTES

_RENAMES = pygit2.enums.DiffFind.FIND_RENAMES
_STATUS = pygit2.enums.DeltaStatus
_ZERO = pygit2.Oid(hex="0" * 40)
_EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
# Blobs up to this are diffed by libgit2 in this process, which reads both whole and holds
# the interpreter while it works (a 10 MiB file of short lines: a third of a second and
# 180 MiB); larger ones by a git child.
IN_PROCESS_BYTES = STREAM_BYTES
# Paths one `git diff-tree --numstat` child is given (its command line stays short).
_PATHS_PER_CHILD = 500
# GitLab's average patch size per file in its byte limits (DiffCollection: 5 KB per file).
_BYTES_PER_FILE = 5 * 1024
# GitLab's safe limits are a tenth of the hard ones (Commit::DIFF_SAFE_LIMIT_FACTOR).
_SAFE_FACTOR = 10
# Blob bytes one diff may read before it stops as overflowing: every file may be just under
# big_file_bytes, and a pack's deltas make many such files cheap to push.
_READ_BUDGET_FILES = 10


@dataclass(slots=True, frozen=True)
class DiffLimits:
    """What one diff may cost and show (GitLab's diff_max_files, diff_max_lines,
    diff_max_patch_bytes; `expanded` as the commit diff API asks, not as compare does)."""

    max_files: int
    max_lines: int
    max_patch_bytes: int
    big_file_bytes: int
    expanded: bool = True

    @property
    def max_bytes(self) -> int:
        return self.max_files * _BYTES_PER_FILE

    @property
    def safe_max_files(self) -> int:
        return self.max_files // _SAFE_FACTOR

    @property
    def safe_max_lines(self) -> int:
        return self.max_lines // _SAFE_FACTOR

    @property
    def safe_max_bytes(self) -> int:
        return self.safe_max_files * _BYTES_PER_FILE

    @property
    def patch_safe_bytes(self) -> int:
        return self.max_patch_bytes // _SAFE_FACTOR

    @property
    def read_budget(self) -> int:
        return self.big_file_bytes * _READ_BUDGET_FILES


@dataclass(slots=True)
class FileDiff:
    old_path: str
    new_path: str
    a_mode: str
    b_mode: str
    new_file: bool
    renamed_file: bool
    deleted_file: bool
    # Hunks from the first `@@` on; a one-line notice for binary files.
    diff: str
    too_large: bool = False
    collapsed: bool = False

    def unidiff(self) -> str:
        """The same hunks under `--- a/…` and `+++ b/…` headers, as `git diff` prints them."""
        if not self.diff:
            return ""
        old = "/dev/null" if self.new_file else f"a/{self.old_path}"
        new = "/dev/null" if self.deleted_file else f"b/{self.new_path}"
        return f"--- {old}\n+++ {new}\n{self.diff}"


@dataclass(slots=True)
class DiffSet:
    files: list[FileDiff]
    # True when limits cut the collection short (GitLab's `compare_timeout`).
    overflow: bool


@dataclass(slots=True)
class Comparison:
    # The `from` side of the comparison's web link (merge base, or `from` itself when
    # straight) and the `to` side.
    base_sha: str
    head_sha: str
    same: bool
    commits: list[pygit2.Commit] = field(default_factory=list)
    diffs: list[FileDiff] = field(default_factory=list)
    overflow: bool = False


@dataclass(slots=True)
class Contributor:
    name: str
    email: str
    commits: int = 0
    additions: int = 0
    deletions: int = 0


def merge_base(repo: pygit2.Repository, a: pygit2.Oid, b: pygit2.Oid) -> pygit2.Oid | None:
    try:
        return repo.merge_base(a, b)
    except (KeyError, ValueError, pygit2.GitError):
        return None


def merge_base_of(repo: pygit2.Repository, oids: list[pygit2.Oid]) -> pygit2.Oid | None:
    """The best common ancestor of the first commit and a merge of all the others, as
    `git merge-base first other…` finds it; None when they share no history."""
    try:
        return repo.merge_base_many(oids)
    except (KeyError, ValueError, pygit2.GitError):
        return None


def commits_between(repo: pygit2.Repository, base: pygit2.Oid, head: pygit2.Oid) -> list[pygit2.Commit]:
    """Commits reachable from `head` and not from `base`, parents before children."""
    sort = pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.TIME | pygit2.enums.SortMode.REVERSE
    walker = repo.walk(head, sort)
    walker.hide(base)
    return list(walker)


def _mode(value: int) -> str:
    return f"{value:o}" if value else "0"


def _binary_notice(delta: pygit2.DiffDelta) -> bytes:
    old = "/dev/null" if delta.status == _STATUS.ADDED else f"a/{delta.old_file.path}"
    new = "/dev/null" if delta.status == _STATUS.DELETED else f"b/{delta.new_file.path}"
    return f"Binary files {old} and {new} differ\n".encode()


def _hunks(patch: pygit2.Patch, delta: pygit2.DiffDelta) -> bytes:
    if delta.is_binary:
        return _binary_notice(delta)
    data: bytes = patch.data
    start = data.find(b"\n@@")
    if start < 0:
        return data if data.startswith(b"@@") else b""
    return data[start + 1 :]


@dataclass(slots=True)
class PatchText:
    """A delta's hunks from the first `@@` on: `size` bytes in all, of which `lines` content
    lines (hunk headers aside) of `content_bytes`, as Gitaly counts toward its limits.
    `hunks` is None when the patch reached the bytes the caller keeps (counted, not held)."""

    hunks: bytes | None
    size: int
    lines: int
    content_bytes: int

    @classmethod
    def of(cls, text: bytes, keep: int) -> PatchText:
        lines = content_bytes = 0
        for line in text.splitlines(keepends=True):
            if not line.startswith(b"@@"):
                lines += 1
                content_bytes += len(line)
        return cls(text if len(text) < keep else None, len(text), lines, content_bytes)


def blob_size(repo: pygit2.Repository, oid: pygit2.Oid) -> int:
    """A blob's size from its header alone (its content is not read); 0 for no blob."""
    if oid == _ZERO:
        return 0
    try:
        return int(repo.odb.read_header(oid)[1])
    except (KeyError, ValueError, pygit2.GitError):
        return 0


def _sides(repo: pygit2.Repository, delta: pygit2.DiffDelta) -> int:
    """The larger of the delta's two blobs (submodules have none here)."""
    sizes = [
        blob_size(repo, side.id)
        for side in (delta.old_file, delta.new_file)
        if side.mode not in (0, pygit2.enums.FileMode.COMMIT)
    ]
    return max(sizes, default=0)


@dataclass(slots=True)
class Changes:
    """The deltas between two trees, and the trees (a patch too big for libgit2 is asked of
    git by them)."""

    diff: pygit2.Diff
    old: pygit2.Tree | None
    new: pygit2.Tree


def changes(repo: pygit2.Repository, old: pygit2.Tree | None, new: pygit2.Tree) -> Changes:
    """The deltas from `old` (the empty tree when None) to `new`, renames found unless an
    added or removed blob is too big to compare in this process (libgit2 reads both whole
    and holds the interpreter meanwhile)."""
    diff = (
        new.diff_to_tree(swap=True, context_lines=3)
        if old is None
        else old.diff_to_tree(new, context_lines=3)
    )
    candidates = (delta for delta in diff.deltas if delta.status in (_STATUS.ADDED, _STATUS.DELETED))
    if all(_sides(repo, delta) <= IN_PROCESS_BYTES for delta in candidates):
        diff.find_similar(flags=_RENAMES)
    return Changes(diff, old, new)


def patches(
    repo: pygit2.Repository, found: Changes, *, big_file_bytes: int, keep: int
) -> Iterator[tuple[pygit2.DiffDelta, PatchText | None, int]]:
    """Each delta with its patch (hunks held up to `keep` bytes) and the blob bytes reading it
    cost. A patch of blobs up to IN_PROCESS_BYTES is made by libgit2; of larger ones by a
    `git diff-tree` child whose output is counted as it comes; None for a delta with a blob
    over `big_file_bytes`, whose patch is never made."""
    for n, delta in enumerate(found.diff.deltas):
        size = _sides(repo, delta)
        if size > big_file_bytes:
            yield delta, None, 0
        elif size > IN_PROCESS_BYTES:
            yield delta, _patch_from_git(repo, found, delta, keep), size
        else:
            yield delta, PatchText.of(_hunks(found.diff[n], delta), keep), size


def line_counts(repo: pygit2.Repository, found: Changes, *, big_file_bytes: int) -> tuple[int, int]:
    """Lines added and removed over every delta: counted by libgit2 for blobs up to
    IN_PROCESS_BYTES, by one `git diff-tree --numstat` child for all the larger ones (a
    batch of paths at a time), and not at all for a blob over `big_file_bytes`."""
    additions = deletions = 0
    larger: list[bytes] = []
    for n, delta in enumerate(found.diff.deltas):
        size = _sides(repo, delta)
        if size > big_file_bytes:
            continue
        if size > IN_PROCESS_BYTES:
            larger.extend(dict.fromkeys(os.fsencode(p) for p in (delta.old_file.path, delta.new_file.path)))
            continue
        _context, added, removed = found.diff[n].line_stats
        additions += added
        deletions += removed
    for start in range(0, len(larger), _PATHS_PER_CHILD):
        added, removed = _numstat(repo, found, larger[start : start + _PATHS_PER_CHILD])
        additions += added
        deletions += removed
    return additions, deletions


def _numstat(repo: pygit2.Repository, found: Changes, paths: list[bytes]) -> tuple[int, int]:
    old = str(found.old.id) if found.old is not None else _EMPTY_TREE
    args: list[str | bytes] = [
        "git",
        "--literal-pathspecs",
        "diff-tree",
        "--numstat",
        "-z",
        "--no-renames",
        "--no-ext-diff",
        "--no-textconv",
        old,
        str(found.new.id),
        "--",
        *paths,
    ]
    result = timed.run(args, cwd=repo.path, capture_output=True, check=False)
    additions = deletions = 0
    if result.returncode != 0:
        return 0, 0
    for record in result.stdout.split(b"\0"):
        added, _, rest = record.partition(b"\t")
        removed, _, _path = rest.partition(b"\t")
        if added.isdigit() and removed.isdigit():  # a binary file's counts are "-"
            additions += int(added)
            deletions += int(removed)
    return additions, deletions


def _patch_from_git(
    repo: pygit2.Repository, found: Changes, delta: pygit2.DiffDelta, keep: int
) -> PatchText | None:
    """The delta's patch from `git diff-tree`, read a line at a time: only the first `keep`
    bytes of hunks are held. None when git cannot make it (objects only an alternate
    handle of this process reaches)."""
    paths = dict.fromkeys(os.fsencode(p) for p in (delta.old_file.path, delta.new_file.path))
    old = str(found.old.id) if found.old is not None else _EMPTY_TREE
    args: list[str | bytes] = [
        "git",
        "--literal-pathspecs",
        "diff-tree",
        "-p",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        "--no-renames",
        "-U3",
        old,
        str(found.new.id),
        "--",
        *paths,
    ]
    held: list[bytes] | None = []
    size = lines = content_bytes = 0
    in_hunks = False
    with timed.reading(args, cwd=repo.path) as child:
        assert child.stdout is not None
        for read in child.stdout:
            if read.startswith(b"diff --git "):
                in_hunks = False
                continue
            if not in_hunks and not read.startswith((b"@@", b"Binary files ")):
                continue
            in_hunks = True
            line = _binary_notice(delta) if read.startswith(b"Binary files ") else read
            size += len(line)
            if held is not None:
                held.append(line)
                if size >= keep:
                    held = None
            if not line.startswith(b"@@"):
                lines += 1
                content_bytes += len(line)
        status = child.wait()
    if status != 0:
        return None
    hunks = b"".join(held) if held is not None else None
    return PatchText(hunks, size, lines, content_bytes)


def tree_diff(
    repo: pygit2.Repository, old: pygit2.Commit | None, new: pygit2.Commit, limits: DiffLimits
) -> DiffSet:
    """Changes from `old`'s tree (the empty tree when None) to `new`'s, renames detected,
    bounded by `limits` as GitLab bounds a diff collection."""
    found = changes(repo, old.tree if old is not None else None, new.tree)
    files: list[FileDiff] = []
    lines = size = read = 0
    patched = patches(repo, found, big_file_bytes=limits.big_file_bytes, keep=limits.max_patch_bytes)
    for seen, (delta, patch, cost) in enumerate(patched, start=1):
        read += cost
        entry = FileDiff(
            old_path=delta.old_file.path,
            new_path=delta.new_file.path,
            a_mode=_mode(delta.old_file.mode),
            b_mode=_mode(delta.new_file.mode),
            new_file=delta.status == _STATUS.ADDED,
            renamed_file=delta.status == _STATUS.RENAMED,
            deleted_file=delta.status == _STATUS.DELETED,
            diff="",
            too_large=patch is None,
        )
        if patch is not None:
            # Gitaly's parser: a patch's content lines count toward the limits unless it is
            # pruned (collapsed or too large); the collection overflows at the limits.
            counted_lines, counted_bytes = patch.lines, patch.content_bytes
            lines += counted_lines
            size += counted_bytes
            if not limits.expanded and counted_lines and _over_safe_limits(limits, seen, lines, size):
                entry.collapsed = True
                lines -= counted_lines
                size -= counted_bytes
            elif patch.size >= limits.max_patch_bytes or patch.hunks is None:
                entry.too_large = True
                lines -= counted_lines
                size -= counted_bytes
            elif not limits.expanded and patch.size >= limits.patch_safe_bytes:
                entry.collapsed = True
            else:
                entry.diff = patch.hunks.decode("utf-8", errors="replace")
        if seen > limits.max_files or lines >= limits.max_lines or size >= limits.max_bytes:
            return DiffSet(files=files, overflow=True)
        if read > limits.read_budget:
            return DiffSet(files=files, overflow=True)
        files.append(entry)
    return DiffSet(files=files, overflow=False)


def _over_safe_limits(limits: DiffLimits, files: int, lines: int, size: int) -> bool:
    return files > limits.safe_max_files or lines > limits.safe_max_lines or size > limits.safe_max_bytes


def compare(
    repo: pygit2.Repository, start: pygit2.Commit, head: pygit2.Commit, limits: DiffLimits, *, straight: bool
) -> Comparison:
    """`from...to` (diff from the merge base) or, `straight`, `from..to` (diff of the two
    trees); the commits are those of `head` that `start` lacks, either way."""
    if start.id == head.id:
        return Comparison(base_sha=str(start.id), head_sha=str(head.id), same=True)
    base: pygit2.Commit | None = start
    if not straight:
        oid = merge_base(repo, start.id, head.id)
        base = repo[oid].peel(pygit2.Commit) if oid is not None else None
    diffs = tree_diff(repo, base, head, limits)
    return Comparison(
        base_sha=str(base.id) if base is not None else str(start.id),
        head_sha=str(head.id),
        same=False,
        commits=commits_between(repo, start.id, head.id),
        diffs=diffs.files,
        overflow=diffs.overflow,
    )


def contributors(repo: pygit2.Repository, head: pygit2.Commit, limit: int = 2000) -> list[Contributor]:
    """Authors of the last `limit` non-merge commits, by email; each named as in their most
    recent commit. GitLab counts no additions or deletions here, and neither does kiln."""
    found: dict[str, Contributor] = {}
    seen = 0
    for commit in repo.walk(head.id, pygit2.enums.SortMode.TIME):
        if len(commit.parent_ids) > 1:
            continue
        seen += 1
        if seen > limit:
            break
        author = commit.author
        entry = found.get(author.email)
        if entry is None:
            entry = found[author.email] = Contributor(name=author.name, email=author.email)
        elif not entry.name:
            entry.name = author.name
        entry.commits += 1
    return list(found.values())
