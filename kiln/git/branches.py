"""Branches and tags as the API sees them: GitLab's name rules, the refs with their commits,
ancestry for `merged`, and ref changes that are compare-and-swap updates under the
repository's write lock (a push racing an API change makes one of them fail, never both
succeed silently)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pygit2

from kiln.git.names import BRANCH_PREFIX, TAG_PREFIX
from kiln.git.refs import delete_ref, update_ref
from kiln.git.writes import repository_lock

_TYPE_NAMES = {
    pygit2.enums.ObjectType.COMMIT: "commit",
    pygit2.enums.ObjectType.TREE: "tree",
    pygit2.enums.ObjectType.BLOB: "blob",
    pygit2.enums.ObjectType.TAG: "tag",
}


@dataclass(slots=True)
class BranchRef:
    name: str
    commit: pygit2.Commit


@dataclass(slots=True)
class TagRef:
    name: str
    # What refs/tags/<name> points at: the tag object of an annotated tag, else the commit.
    target: str
    commit: pygit2.Commit | None
    annotation: pygit2.Tag | None


def _peel_commit(obj: pygit2.Object) -> pygit2.Commit | None:
    try:
        peeled = obj.peel(pygit2.Commit)
    except (pygit2.GitError, ValueError, KeyError):
        return None
    return peeled if isinstance(peeled, pygit2.Commit) else None


def list_branches(repo: pygit2.Repository) -> list[BranchRef]:
    """Every branch that points at a commit, in name order."""
    out: list[BranchRef] = []
    for ref in repo.references.iterator(pygit2.enums.ReferenceFilter.BRANCHES):
        commit = _branch_commit(repo, ref)
        if commit is not None:
            out.append(BranchRef(ref.name[len(BRANCH_PREFIX) :], commit))
    out.sort(key=lambda b: b.name)
    return out


def find_branch(repo: pygit2.Repository, name: str) -> BranchRef | None:
    try:
        ref = repo.references.get(f"{BRANCH_PREFIX}{name}")
    except (ValueError, pygit2.GitError):
        return None
    if ref is None:
        return None
    commit = _branch_commit(repo, ref)
    return None if commit is None else BranchRef(name, commit)


def _branch_commit(repo: pygit2.Repository, ref: pygit2.Reference) -> pygit2.Commit | None:
    try:
        obj = repo[ref.resolve().target]
    except (KeyError, ValueError, pygit2.GitError):
        return None
    return _peel_commit(obj)


def list_tags(repo: pygit2.Repository) -> list[TagRef]:
    out: list[TagRef] = []
    for ref in repo.references.iterator(pygit2.enums.ReferenceFilter.TAGS):
        tag = _tag_ref(repo, ref)
        if tag is not None:
            out.append(tag)
    out.sort(key=lambda t: t.name)
    return out


def find_tag(repo: pygit2.Repository, name: str) -> TagRef | None:
    try:
        ref = repo.references.get(f"{TAG_PREFIX}{name}")
    except (ValueError, pygit2.GitError):
        return None
    return None if ref is None else _tag_ref(repo, ref)


def _tag_ref(repo: pygit2.Repository, ref: pygit2.Reference) -> TagRef | None:
    try:
        target = ref.resolve().target
        obj = repo[target]
    except (KeyError, ValueError, pygit2.GitError):
        return None
    annotation = obj if isinstance(obj, pygit2.Tag) else None
    return TagRef(ref.name[len(TAG_PREFIX) :], str(target), _peel_commit(obj), annotation)


def merged_into(repo: pygit2.Repository, tip: pygit2.Oid, base: pygit2.Oid | None) -> bool:
    """GitLab's `merged`: the branch's commit is in `base`'s history and is not `base` itself."""
    if base is None or tip == base:
        return False
    try:
        return bool(repo.descendant_of(base, tip))
    except (pygit2.GitError, ValueError, KeyError):
        return False


def contained_in_any(repo: pygit2.Repository, oid: pygit2.Oid, tips: list[pygit2.Oid]) -> bool:
    for tip in tips:
        if tip == oid:
            return True
        try:
            if repo.descendant_of(tip, oid):
                return True
        except (pygit2.GitError, ValueError, KeyError):
            continue
    return False


def hierarchy_conflict(repo: pygit2.Repository, prefix: str, name: str) -> bool:
    """`a/b` can't exist next to `a` (git keeps refs as files and directories)."""
    full = f"{prefix}{name}"
    parts = name.split("/")
    for i in range(1, len(parts)):
        if repo.references.get(f"{prefix}{'/'.join(parts[:i])}") is not None:
            return True
    nested = f"{full}/"
    return any(r.startswith(nested) for r in repo.references)


def create_ref(repo_path: Path, ref: str, new: str, message: str) -> None:
    """Create `ref` at `new`; ConcurrentUpdate if it appeared meanwhile."""
    with repository_lock(repo_path):
        update_ref(repo_path, ref, new, None, message)


def remove_ref(repo_path: Path, ref: str, expected: str) -> None:
    """Delete `ref` only if it still points at `expected`; ConcurrentUpdate otherwise."""
    with repository_lock(repo_path):
        delete_ref(repo_path, ref, expected)


def _clean(text: str) -> str:
    # Header fields of a git object: no angle brackets or line breaks inside them.
    return " ".join(text.replace("<", "").replace(">", "").split())


def write_tag_object(
    repo: pygit2.Repository, name: str, target: pygit2.Object, tagger: pygit2.Signature, message: str
) -> str:
    """An annotated tag object, written without touching any ref (pygit2's create_tag would
    move refs/tags/<name> itself, past the compare-and-swap)."""
    offset = tagger.offset
    sign = "-" if offset < 0 else "+"
    zone = f"{sign}{abs(offset) // 60:02d}{abs(offset) % 60:02d}"
    header = (
        f"object {target.id}\n"
        f"type {_TYPE_NAMES[target.type]}\n"
        f"tag {name}\n"
        f"tagger {_clean(tagger.name)} <{_clean(tagger.email)}> {tagger.time} {zone}\n"
    )
    body = message if message.endswith("\n") else f"{message}\n"
    oid = repo.odb.write(pygit2.enums.ObjectType.TAG, f"{header}\n{body}".encode())
    return str(oid)
