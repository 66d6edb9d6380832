"""Reading a repository's history as a whole: comparing two refs (also across a fork
network), the merge base of refs, its contributors, and archives of a commit's tree."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pygit2
from sqlalchemy.orm import Session

from kiln import policy
from kiln.auth.actor import Actor
from kiln.config import Settings
from kiln.errors import BadRequest, Forbidden, NotFound
from kiln.git import archive as git_archive
from kiln.git import diffs
from kiln.git.errors import RefNotFound
from kiln.git.names import path_problem
from kiln.git.refs import resolve_commit
from kiln.pagination import Page, PageResult
from kiln.policy import Action
from kiln.queries import compare as compare_reads
from kiln.queries.paging import list_page
from kiln.schemas.compare import ArchiveParams, CompareParams, ContributorList, MergeBaseParams
from kiln.services import subjects
from kiln.services.repositories import RepoContext, diff_limits, for_read

NO_ACCESS_TO_FORK = "You don't have access to this fork's parent project"
# The archive formats a route may name (archive.zip, archive.tar.gz, …).
ARCHIVE_FORMATS = git_archive.FORMATS


def _commit(repo: pygit2.Repository | None, ref: str) -> pygit2.Commit:
    """The commit `ref` names; an empty name names nothing (not the default branch)."""
    ref = ref.strip()
    if repo is None or not ref:
        raise RefNotFound(ref)
    return resolve_commit(repo, ref)


# ---------------------------------------------------------------------------- compare


@dataclass(slots=True)
class CompareResult:
    comparison: diffs.Comparison
    # The project whose repository answered `from` (GitLab links the comparison there).
    full_path: str


def compare(
    db: Session, actor: Actor | None, ident: str, q: CompareParams, settings: Settings
) -> CompareResult:
    """`to` is read in this project, `from` in `from_project_id` (a project of the same fork
    network; this one by default)."""
    ctx = for_read(db, actor, ident, settings)
    other = _from_project(db, actor, ident, ctx, q.from_project_id)
    from_ctx = other or ctx
    try:
        head = _commit(ctx.repo, q.to_ref)
        start = _commit(from_ctx.repo, q.from_ref)
    except RefNotFound:
        raise NotFound("Ref") from None
    if start.id == head.id:
        # Nothing to diff, so no diff limits to read.
        same = diffs.Comparison(base_sha=str(start.id), head_sha=str(head.id), same=True)
        return CompareResult(comparison=same, full_path=from_ctx.full_path)
    repo = _joined(other, ctx) if other is not None else ctx.repo
    assert repo is not None
    comparison = diffs.compare(
        repo,
        repo[start.id].peel(pygit2.Commit),
        repo[head.id].peel(pygit2.Commit),
        diff_limits(db, settings, expanded=False),
        straight=q.straight,
    )
    return CompareResult(comparison=comparison, full_path=from_ctx.full_path)


def _from_project(
    db: Session, actor: Actor | None, ident: str, ctx: RepoContext, from_project_id: int | None
) -> RepoContext | None:
    """The other project of a cross-project compare; None when it is this one."""
    if from_project_id is None or from_project_id == ctx.project.id:
        return None
    refused = BadRequest(f"Target project id:{from_project_id} is not a fork of project id:{ident}", raw=True)
    try:
        s = subjects.project(db, actor, str(from_project_id), rows=True)
    except NotFound:
        raise refused from None
    if _network_root(db, s.project) != _network_root(db, ctx.project):
        raise refused
    if not policy.may(actor, Action.READ_CODE, s):
        raise Forbidden(NO_ACCESS_TO_FORK)
    st = ctx.store
    repo = st.find(s.project.id)
    return RepoContext(subject=s, store=st, repo=repo)


def _network_root(db: Session, project: Any) -> int:
    """The project every fork in the network descends from."""
    return compare_reads.network_root(db, project.id, project.forked_from_id)


def _joined(other: RepoContext, ctx: RepoContext) -> pygit2.Repository:
    """The `from` project's repository reading this project's objects too (a handle of its
    own: the shared cache stays untouched)."""
    repo = pygit2.Repository(str(other.path))
    if ctx.repo is not None:
        repo.odb.add_disk_alternate(str(Path(ctx.repo.path) / "objects"))
    return repo


# ---------------------------------------------------------------------------- merge base


@dataclass(slots=True)
class MergeBase:
    commit: pygit2.Commit
    full_path: str


def merge_base(
    db: Session, actor: Actor | None, ident: str, q: MergeBaseParams, settings: Settings
) -> MergeBase:
    """The best common ancestor of the refs (branches, tags, commit ids; GitLab asks git for
    `merge-base first other…`). Fewer than two refs, or any that names no commit, is 400;
    refs without common history are 404 Merge Base Not Found."""
    ctx = for_read(db, actor, ident, settings)
    if len(q.refs) < 2:
        raise BadRequest("Provide at least 2 refs", raw=True)
    found: dict[str, pygit2.Commit | None] = {}
    for ref in q.refs:
        if ref not in found:
            found[ref] = _named_commit(ctx.repo, ref)
    unknown = [ref for ref, commit in found.items() if commit is None]
    if unknown:
        noun = "ref" if len(unknown) == 1 else "refs"
        raise BadRequest(f"Could not find {noun}: {', '.join(unknown)}", raw=True)
    assert ctx.repo is not None
    commits = [found[ref] for ref in q.refs]
    base = diffs.merge_base_of(ctx.repo, [c.id for c in commits if c is not None])
    if base is None:
        raise NotFound("Merge Base")
    return MergeBase(commit=ctx.repo[base].peel(pygit2.Commit), full_path=ctx.full_path)


def _named_commit(repo: pygit2.Repository | None, ref: str) -> pygit2.Commit | None:
    """The commit a ref names; None for none (an empty name names nothing, not HEAD)."""
    try:
        return _commit(repo, ref)
    except RefNotFound:
        return None


# ---------------------------------------------------------------------------- contributors


def contributors(
    db: Session, actor: Actor | None, ident: str, q: ContributorList, page: Page, settings: Settings
) -> PageResult:
    """Authors of the ref's last 2,000 non-merge commits; any error is a bare 404, as in GitLab."""
    ctx = for_read(db, actor, ident, settings)
    if ctx.repo is None or (ctx.repo.head_is_unborn and not q.ref):
        return list_page([], page)
    try:
        head = _commit(ctx.repo, q.ref or ctx.project.default_branch or "HEAD")
    except RefNotFound:
        raise NotFound() from None
    found = diffs.contributors(ctx.repo, head)
    if q.order_by == "commits":
        found.sort(key=lambda c: (c.commits, c.email.lower()), reverse=q.sort == "desc")
    else:
        found.sort(key=lambda c: (getattr(c, q.order_by).lower(), c.email), reverse=q.sort == "desc")
    return list_page(found, page)


# ---------------------------------------------------------------------------- archives


@dataclass(slots=True)
class Archive:
    filename: str
    media_type: str
    body: AsyncIterator[bytes]


def archive(
    db: Session, actor: Actor | None, ident: str, q: ArchiveParams, fmt: str | None, settings: Settings
) -> Archive:
    """`fmt` comes from the path (`archive.zip`) and wins over the `format` parameter. An
    unknown ref or path is GitLab's 404 File Not Found."""
    ctx = for_read(db, actor, ident, settings)
    repo = ctx.repo
    if repo is None or repo.head_is_unborn:
        raise NotFound("File")
    ref = q.sha or ctx.project.default_branch or repo.head.shorthand
    path = (q.path or "").strip("/") or None
    try:
        commit = _commit(repo, ref)
    except RefNotFound:
        raise NotFound("File") from None
    if path is not None:
        if path_problem(path) is not None:
            raise NotFound("File")
        try:
            entry = commit.tree[path]
        except KeyError:
            raise NotFound("File") from None
        if entry.type_str == "commit":
            raise NotFound("File")  # a submodule: nothing of it is in this repository
    ext = git_archive.extension(fmt or q.format)
    sha = str(commit.id)
    prefix = git_archive.archive_prefix(ctx.project.path, ref, sha, path)
    return Archive(
        filename=f"{prefix}.{ext}",
        media_type=git_archive.media_type(ext),
        body=git_archive.stream(ctx.path, sha, prefix, ext, path),
    )


async def started(found: Archive) -> Archive:
    """The archive with its first bytes already made, so a `git archive` that fails at once is
    an error answer rather than an empty 200."""
    found.body = await git_archive.primed(found.body)
    return found
