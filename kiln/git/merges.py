"""Merging a merge request's source head into its target branch, in memory: whether it merges
cleanly, the commits each merge method makes (a merge commit, a squash commit, a fast-forward),
rebasing the source onto the target, and the merge ref GitLab keeps for a would-be merge.

Trees are merged by libgit2 (a recursive three-way merge, as `git merge` does); nothing is
written to a worktree. Commits are written as loose objects first and only become reachable
when the branch moves by compare-and-swap (kiln.git.refs.update_ref) under the repository's
write lock, so two racing merges can't both move the target, and a refused merge moves
nothing (an unreferenced object is garbage, never damage: `git fsck` stays clean)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

import pygit2

from kiln.git import picks
from kiln.git.errors import ConcurrentUpdate, EmptyCommit, GitError
from kiln.git.refs import branch_tip, update_ref
from kiln.git.writes import repository_lock

MERGE, REBASE_MERGE, FF = "merge", "rebase_merge", "ff"


class MergeConflict(GitError):
    """The source does not merge cleanly into the target (or they share no history)."""


class NotFastForward(GitError):
    """The method needs the source to contain the target's tip, and it doesn't: rebase first."""


class NothingToMerge(GitError):
    """The source is already in the target: a merge would merge nothing (GitLab refuses a
    merge request without commits)."""


class RebaseConflict(GitError):
    """A source commit does not apply on the target's tip."""


@dataclass(frozen=True, slots=True)
class Squash:
    """Squash the source's commits into one: its message and author."""

    message: str | bytes
    author: pygit2.Signature


@dataclass(frozen=True, slots=True)
class Merged:
    """What a merge made: the target's new tip, the merge commit (None for a fast-forward,
    which makes none: GitLab leaves its merge_commit_sha empty) and the squash commit, if any."""

    tip: str
    merge_commit: str | None
    squash_commit: str | None


def _oid(value: str | pygit2.Oid) -> pygit2.Oid:
    return value if isinstance(value, pygit2.Oid) else pygit2.Oid(hex=value)


def contains(repo: pygit2.Repository, head: str | pygit2.Oid, tip: str | pygit2.Oid) -> bool:
    """Whether `head` has `tip` in its history (a fast-forward from `tip` to `head` is possible)."""
    head, tip = _oid(head), _oid(tip)
    return head == tip or repo.descendant_of(head, tip)


def merge_base(repo: pygit2.Repository, a: str | pygit2.Oid, b: str | pygit2.Oid) -> pygit2.Oid | None:
    try:
        return repo.merge_base(_oid(a), _oid(b))
    except (KeyError, ValueError, pygit2.GitError):
        return None


def merged_tree(repo: pygit2.Repository, target: str | pygit2.Oid, source: str | pygit2.Oid) -> pygit2.Oid:
    """The tree of `source` merged into `target`; MergeConflict when a file conflicts or the
    two share no history (git refuses unrelated histories too)."""
    target, source = _oid(target), _oid(source)
    if merge_base(repo, target, source) is None:
        raise MergeConflict("refusing to merge unrelated histories")
    index = repo.merge_commits(target, source)
    if index.conflicts is not None:
        raise MergeConflict("conflict")
    return index.write_tree(repo)


def mergeable(repo: pygit2.Repository, target: str | pygit2.Oid, source: str | pygit2.Oid) -> bool:
    """Whether `source` merges into `target` without conflicts."""
    try:
        merged_tree(repo, target, source)
    except MergeConflict:
        return False
    return True


def squash_commit(
    repo: pygit2.Repository,
    target: str | pygit2.Oid,
    source: str | pygit2.Oid,
    squash: Squash,
    committer: pygit2.Signature,
) -> pygit2.Oid:
    """One commit holding all of the source's changes since it left the target: the source's
    tree on the merge base (so it merges into the target exactly as the source would)."""
    base = merge_base(repo, target, source)
    if base is None:
        raise MergeConflict("refusing to merge unrelated histories")
    tree = repo[_oid(source)].peel(pygit2.Commit).tree.id
    return repo.create_commit(None, squash.author, committer, squash.message, tree, [base])


def build(
    repo: pygit2.Repository,
    *,
    method: str,
    target: str,
    source: str,
    message: str | bytes,
    committer: pygit2.Signature,
    squash: Squash | None = None,
) -> Merged:
    """The commits a merge of `source` into `target` makes with `method`, written but not yet
    reachable. MergeConflict, or NotFastForward for `rebase_merge`/`ff` when the source doesn't
    contain the target's tip (GitLab asks for a rebase then); NothingToMerge when the source
    is already in the target."""
    if contains(repo, target, source):
        raise NothingToMerge("the source is already in the target")
    if method in (REBASE_MERGE, FF) and not contains(repo, source, target):
        raise NotFastForward("fast-forward merge is not possible")
    merged_tree(repo, target, source)  # conflicts refuse every method alike
    head = _oid(source)
    squashed = None
    if squash is not None:
        head = squash_commit(repo, target, source, squash, committer)
        squashed = str(head)
    if method == FF:
        return Merged(tip=str(head), merge_commit=None, squash_commit=squashed)
    tree = merged_tree(repo, target, head)
    commit = repo.create_commit(None, committer, committer, message, tree, [_oid(target), head])
    return Merged(tip=str(commit), merge_commit=str(commit), squash_commit=squashed)


def move_branch(repo: pygit2.Repository, branch: str, new: str, expected: str, message: str) -> None:
    """Point `branch` at `new` if it still points at `expected`, under the write lock;
    ConcurrentUpdate otherwise."""
    path = Path(repo.path)
    with repository_lock(path):
        tip = branch_tip(repo, branch)
        if tip is None or str(tip) != expected:
            raise ConcurrentUpdate(f"{branch} moved")
        update_ref(path, f"refs/heads/{branch}", new, expected, message)


def undo_move(repo: pygit2.Repository, branch: str, moved_to: str, back_to: str) -> None:
    """Put `branch` back where it was after a move whose bookkeeping failed, unless something
    moved it since (then it is left alone: that update is someone else's)."""
    path = Path(repo.path)
    with repository_lock(path), contextlib.suppress(ConcurrentUpdate):
        update_ref(path, f"refs/heads/{branch}", back_to, moved_to, "kiln: merge undone")


def rebase(repo: pygit2.Repository, *, onto: str, head: str, committer: pygit2.Signature) -> str:
    """`head`'s own commits (those not in `onto`) replayed on `onto`, as `git rebase` does:
    merge commits are dropped (the history is made linear), commits whose change is already
    there are skipped, authors and messages are kept byte for byte. Returns the new head
    (`head` itself when it already contains `onto`); RebaseConflict when a commit won't apply."""
    if contains(repo, head, onto):
        return head
    base = merge_base(repo, onto, head)
    if base is None:
        raise RebaseConflict("no common history")
    sort = pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.REVERSE
    walker = repo.walk(_oid(head), sort)
    walker.hide(_oid(onto))
    current = repo[_oid(onto)].peel(pygit2.Commit)
    for commit in list(walker):
        if len(commit.parents) > 1:
            continue
        try:
            tree = picks.cherry_pick_tree(repo, commit, current)
        except picks.PickConflict:
            raise RebaseConflict(str(commit.id)) from None
        except EmptyCommit:
            continue
        parents = [current.id]
        if commit.message_encoding:
            oid = repo.create_commit(
                None, commit.author, committer, commit.raw_message, tree, parents, commit.message_encoding
            )
        else:
            oid = repo.create_commit(None, commit.author, committer, commit.raw_message, tree, parents)
        current = repo[oid].peel(pygit2.Commit)
    return str(current.id)


def point_ref(repo: pygit2.Repository, ref: str, new: str) -> None:
    """Point a merge request's own ref (not a branch) at `new`, by compare-and-swap against
    what it points at now."""
    path = Path(repo.path)
    with repository_lock(path):
        found = repo.references.get(ref)
        old = str(found.target) if found is not None else None
        if old != new:
            update_ref(path, ref, new, old, "kiln: merge ref")
