"""Applying one commit's change (cherry-pick) or its inverse (revert) onto another commit
as a three-way merge of trees in memory: no worktree, nothing written until the caller
commits the tree through kiln.git.writes.write_commit. Also: bringing a commit over from
another repository (a fork's source) before building on it."""

from __future__ import annotations

from pathlib import Path

import pygit2

from kiln.git import timed
from kiln.git.errors import EmptyCommit, GitError, RefNotFound


class PickConflict(GitError):
    """The change does not apply cleanly on the target."""


def _empty_tree(repo: pygit2.Repository) -> pygit2.Tree:
    return repo[repo.TreeBuilder().write()].peel(pygit2.Tree)


def _parent_tree(repo: pygit2.Repository, commit: pygit2.Commit) -> pygit2.Tree:
    # A merge commit is applied relative to its first parent (its mainline).
    return commit.parents[0].tree if commit.parents else _empty_tree(repo)


def _merge(
    repo: pygit2.Repository, ancestor: pygit2.Tree, ours: pygit2.Commit, theirs: pygit2.Tree
) -> pygit2.Oid:
    index = repo.merge_trees(ancestor, ours.tree, theirs)
    if index.conflicts is not None:
        raise PickConflict("conflict")
    tree = index.write_tree(repo)
    if tree == ours.tree.id:
        raise EmptyCommit("already applied")
    return tree


def cherry_pick_tree(repo: pygit2.Repository, commit: pygit2.Commit, onto: pygit2.Commit) -> pygit2.Oid:
    """The tree of `onto` with `commit`'s change applied; PickConflict or EmptyCommit."""
    return _merge(repo, _parent_tree(repo, commit), onto, commit.tree)


def revert_tree(repo: pygit2.Repository, commit: pygit2.Commit, onto: pygit2.Commit) -> pygit2.Oid:
    """The tree of `onto` with `commit`'s change undone; PickConflict or EmptyCommit."""
    return _merge(repo, commit.tree, onto, _parent_tree(repo, commit))


def fetch_commit(repo: pygit2.Repository, source_path: Path, sha: str) -> None:
    """Copy `sha` and its history from the repository at `source_path` into `repo` (no ref
    is created: the commit built on it keeps it reachable)."""
    if _has(repo, sha):
        return
    result = timed.run(
        [
            "git",
            "-c",
            "uploadpack.allowAnySHA1InWant=true",
            "fetch",
            "--quiet",
            "--no-tags",
            "--no-write-fetch-head",
            str(source_path),
            sha,
        ],
        cwd=repo.path,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0 or not _has(repo, sha):
        raise RefNotFound(sha)


def _has(repo: pygit2.Repository, sha: str) -> bool:
    # libgit2 rescans the packs on a miss, so objects another process just wrote are seen.
    try:
        repo[sha].peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError):
        return False
    return True
