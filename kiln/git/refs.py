"""Resolving names to commits, and compare-and-swap updates of refs.

Every ref change goes through `update_ref`, which hands the swap to `git update-ref
<ref> <new> <old>`: it takes git's own ref lock, so an API edit racing a push fails cleanly
instead of losing either side."""

from __future__ import annotations

from pathlib import Path

import pygit2

from kiln.git import timed
from kiln.git.errors import ConcurrentUpdate, InvalidRefName, RefNotFound
from kiln.git.names import object_name_like, readable_ref

ZERO = "0" * 40


def resolve_commit(repo: pygit2.Repository, ref: str | None) -> pygit2.Commit:
    """A branch, tag (annotated or not), full or short SHA, or revision expression; HEAD
    (the default branch) when `ref` is empty."""
    name = ref or "HEAD"
    if not readable_ref(name):
        raise RefNotFound(name)
    candidates = [f"refs/heads/{name}", f"refs/tags/{name}", name] if ref else ["HEAD"]
    if object_name_like(name):
        # git's own order: a full object id names that object, whatever refs share its name.
        candidates.insert(0, name)
    for candidate in candidates:
        try:
            obj = repo.revparse_single(candidate)
        except (KeyError, ValueError, pygit2.GitError):
            continue
        try:
            commit = obj.peel(pygit2.Commit)
        except (pygit2.GitError, ValueError):
            continue
        return commit
    raise RefNotFound(name)


def branch_tip(repo: pygit2.Repository, branch: str) -> pygit2.Oid | None:
    if not readable_ref(branch):
        return None
    ref = repo.references.get(f"refs/heads/{branch}")
    return None if ref is None else ref.resolve().target


def update_ref(repo_path: Path, ref: str, new: str, old: str | None, message: str) -> None:
    """Point `ref` at `new` if it still points at `old` (None: it must not exist yet)."""
    if not pygit2.reference_is_valid_name(ref):
        raise InvalidRefName(ref)
    result = timed.run(
        ["git", "update-ref", "-m", message, ref, new, old or ZERO],
        cwd=repo_path,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise ConcurrentUpdate(result.stderr.strip())


def delete_ref(repo_path: Path, ref: str, old: str) -> None:
    result = timed.run(
        ["git", "update-ref", "-d", ref, old],
        cwd=repo_path,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise ConcurrentUpdate(result.stderr.strip())
