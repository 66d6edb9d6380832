"""Comparing two commits (merge bases, the commits one has that the other lacks, per-file
diffs shaped as GitLab's diff entries) and summing up who wrote a branch's history."""

from __future__ import annotations

from dataclasses import dataclass, field

import pygit2

# A compare stops collecting patches past these (GitLab marks the collection as overflowing).
MAX_FILES = 1000
MAX_LINES = 50_000

_RENAMES = pygit2.enums.DiffFind.FIND_RENAMES
_STATUS = pygit2.enums.DeltaStatus


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


def _hunks(patch: pygit2.Patch, delta: pygit2.DiffDelta) -> str:
    if delta.is_binary:
        old = "/dev/null" if delta.status == _STATUS.ADDED else f"a/{delta.old_file.path}"
        new = "/dev/null" if delta.status == _STATUS.DELETED else f"b/{delta.new_file.path}"
        return f"Binary files {old} and {new} differ\n"
    data: bytes = patch.data
    start = data.find(b"\n@@")
    if start < 0:
        return "" if not data.startswith(b"@@") else data.decode("utf-8", errors="replace")
    return data[start + 1 :].decode("utf-8", errors="replace")


def tree_diff(
    repo: pygit2.Repository,
    old: pygit2.Commit | None,
    new: pygit2.Commit,
    *,
    max_files: int = MAX_FILES,
    max_lines: int = MAX_LINES,
) -> DiffSet:
    """Changes from `old`'s tree (the empty tree when None) to `new`'s, renames detected."""
    if old is None:
        diff = new.tree.diff_to_tree(swap=True, context_lines=3)
    else:
        diff = repo.diff(old.tree, new.tree, context_lines=3)
    diff.find_similar(flags=_RENAMES)
    files: list[FileDiff] = []
    lines = 0
    overflow = False
    for patch in diff:
        if patch is None:
            continue
        if len(files) >= max_files:
            overflow = True
            break
        delta = patch.delta
        text = _hunks(patch, delta)
        too_large = False
        lines += text.count("\n")
        if lines > max_lines:
            overflow = True
            too_large = True
            text = ""
        files.append(
            FileDiff(
                old_path=delta.old_file.path,
                new_path=delta.new_file.path,
                a_mode=_mode(delta.old_file.mode),
                b_mode=_mode(delta.new_file.mode),
                new_file=delta.status == _STATUS.ADDED,
                renamed_file=delta.status == _STATUS.RENAMED,
                deleted_file=delta.status == _STATUS.DELETED,
                diff=text,
                too_large=too_large,
            )
        )
    return DiffSet(files=files, overflow=overflow)


def compare(
    repo: pygit2.Repository, start: pygit2.Commit, head: pygit2.Commit, *, straight: bool
) -> Comparison:
    """`from...to` (diff from the merge base) or, `straight`, `from..to` (diff of the two
    trees); the commits are those of `head` that `start` lacks, either way."""
    if start.id == head.id:
        return Comparison(base_sha=str(start.id), head_sha=str(head.id), same=True)
    base: pygit2.Commit | None = start
    if not straight:
        oid = merge_base(repo, start.id, head.id)
        base = repo[oid].peel(pygit2.Commit) if oid is not None else None
    diffs = tree_diff(repo, base, head)
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
