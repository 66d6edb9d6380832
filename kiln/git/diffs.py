"""Comparing two commits (merge bases, the commits one has that the other lacks, per-file
diffs shaped as GitLab's diff entries) and summing up who wrote a branch's history.

A diff is bounded as GitLab bounds it (Gitlab::Git::DiffCollection over Gitaly's parser):
a patch of `max_patch_bytes` or more is pruned and marked `too_large`; past `max_files`
files, `max_lines` lines or `max_bytes` bytes the collection stops and overflows; without
`expanded`, files past a tenth of those limits, and patches past a tenth of
`max_patch_bytes`, are pruned and marked `collapsed`. A blob larger than `big_file_bytes`
is never diffed in this process (git's core.bigFileThreshold, lower here because libgit2
diffs in kiln's own memory): its entry is `too_large` and counts no lines."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import pygit2

_RENAMES = pygit2.enums.DiffFind.FIND_RENAMES
_STATUS = pygit2.enums.DeltaStatus
_ZERO = pygit2.Oid(hex="0" * 40)
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


def commits_between(repo: pygit2.Repository, base: pygit2.Oid, head: pygit2.Oid) -> list[pygit2.Commit]:
    """Commits reachable from `head` and not from `base`, parents before children."""
    sort = pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.TIME | pygit2.enums.SortMode.REVERSE
    walker = repo.walk(head, sort)
    walker.hide(base)
    return list(walker)


def _mode(value: int) -> str:
    return f"{value:o}" if value else "0"


def _hunks(patch: pygit2.Patch, delta: pygit2.DiffDelta) -> bytes:
    if delta.is_binary:
        old = "/dev/null" if delta.status == _STATUS.ADDED else f"a/{delta.old_file.path}"
        new = "/dev/null" if delta.status == _STATUS.DELETED else f"b/{delta.new_file.path}"
        return f"Binary files {old} and {new} differ\n".encode()
    data: bytes = patch.data
    start = data.find(b"\n@@")
    if start < 0:
        return data if data.startswith(b"@@") else b""
    return data[start + 1 :]


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


def changes(
    repo: pygit2.Repository, old: pygit2.Tree | None, new: pygit2.Tree, *, big_file_bytes: int
) -> pygit2.Diff:
    """The deltas from `old` (the empty tree when None) to `new`, renames found unless an
    added or removed blob is too big to compare in this process (libgit2 reads both whole)."""
    diff = (
        new.diff_to_tree(swap=True, context_lines=3)
        if old is None
        else old.diff_to_tree(new, context_lines=3)
    )
    candidates = (delta for delta in diff.deltas if delta.status in (_STATUS.ADDED, _STATUS.DELETED))
    if all(_sides(repo, delta) <= big_file_bytes for delta in candidates):
        diff.find_similar(flags=_RENAMES)
    return diff


def patches(
    repo: pygit2.Repository, diff: pygit2.Diff, big_file_bytes: int
) -> Iterator[tuple[pygit2.DiffDelta, pygit2.Patch | None, int]]:
    """Each delta with its patch and the blob bytes the patch read; None for a delta whose
    blob is over `big_file_bytes`, whose patch is never made."""
    for n, delta in enumerate(diff.deltas):
        size = _sides(repo, delta)
        if size > big_file_bytes:
            yield delta, None, 0
            continue
        yield delta, diff[n], size


def tree_diff(
    repo: pygit2.Repository, old: pygit2.Commit | None, new: pygit2.Commit, limits: DiffLimits
) -> DiffSet:
    """Changes from `old`'s tree (the empty tree when None) to `new`'s, renames detected,
    bounded by `limits` as GitLab bounds a diff collection."""
    diff = changes(
        repo, old.tree if old is not None else None, new.tree, big_file_bytes=limits.big_file_bytes
    )
    files: list[FileDiff] = []
    lines = size = read = 0
    for seen, (delta, patch, cost) in enumerate(patches(repo, diff, limits.big_file_bytes), start=1):
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
        text = _hunks(patch, delta) if patch is not None else b""
        patch_lines = text.count(b"\n")
        lines += patch_lines
        size += len(text)
        if not limits.expanded and patch_lines and _over_safe_limits(limits, seen, lines, size):
            entry.collapsed = True
        if len(text) >= limits.max_patch_bytes:
            entry.too_large = True
        elif not limits.expanded and len(text) >= limits.patch_safe_bytes:
            entry.collapsed = True
        if not (entry.too_large or entry.collapsed):
            entry.diff = text.decode("utf-8", errors="replace")
        if seen > limits.max_files or lines > limits.max_lines or size > limits.max_bytes:
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
