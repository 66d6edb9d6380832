"""Commits: history lists, single commits with stats and diffs, the refs that hold a commit,
commit comments, commits built from file actions, cherry-picks and reverts.

Writes go through kiln.git.writes (one writer per repository, compare-and-swap of the
branch) and end with the push bookkeeping of kiln.services.repositories."""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from typing import Any

import pygit2
from sqlalchemy.orm import Session

from kiln import events, policy
from kiln.auth.actor import Actor
from kiln.config import Settings
from kiln.db import transaction
from kiln.errors import BadRequest, Forbidden, KilnError, NotFound, ParamError, ValidationFailed
from kiln.git import history, names, picks
from kiln.git.diffs import FileDiff, tree_diff
from kiln.git.errors import (
    ActionFailed,
    ConcurrentUpdate,
    EmptyCommit,
    InvalidRefName,
    RefNotFound,
)
from kiln.git.history import LogQuery, Stats
from kiln.git.names import is_object_id
from kiln.git.refs import branch_tip, resolve_commit
from kiln.git.writes import FileAction, Person, commit_actions, write_commit
from kiln.models import CommitNote
from kiln.pagination import TOTAL_LIMIT, Page, PageResult
from kiln.policy import Action
from kiln.queries import commits as commit_reads
from kiln.queries import pipelines as pipeline_reads
from kiln.queries.commits import CommitNoteRow
from kiln.queries.paging import list_page
from kiln.queries.pipelines import PipelineRow
from kiln.queries.users import UserRow
from kiln.schemas.commits import (
    CherryPick,
    CommitAction,
    CommitCommentCreate,
    CommitCreate,
    CommitList,
    Revert,
)
from kiln.services import repositories, subjects
from kiln.services.repositories import RepoContext

CHERRY_PICK_FAILED = (
    "Sorry, we cannot cherry-pick this commit automatically. This commit may already have been "
    "cherry-picked, or a more recent commit may have updated some of its content."
)
REVERT_FAILED = (
    "Sorry, we cannot revert this commit automatically. This commit may already have been "
    "reverted, or a more recent commit may have updated some of its content."
)
ON_BRANCH = "You can only create or edit files when you are on a branch"
_SHA = re.compile(r"[0-9a-fA-F]{7,40}")


class PickFailed(KilnError):
    """400 {"message", "error_code": "empty"|"conflict"} (+ "dry_run": "error")."""

    status = 400

    def __init__(self, message: str, error_code: str, *, dry_run: bool) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.dry_run = dry_run

    def body(self) -> dict[str, Any]:
        body = {"message": str(self), "error_code": self.error_code}
        if self.dry_run:
            body["dry_run"] = "error"
        return body


@dataclass(slots=True)
class Where:
    """The project a commit belongs to, as its views need it."""

    project_id: int
    full_path: str


@dataclass(slots=True)
class Listed:
    commit: pygit2.Commit
    stats: Stats | None
    trailers: dict[str, list[str]] | None


@dataclass(slots=True)
class CommitListing:
    where: Where
    commits: list[Listed]
    page: PageResult


@dataclass(slots=True)
class CommitDetail:
    where: Where
    commit: pygit2.Commit
    stats: Stats | None
    # The commit's newest pipeline (its `status` and `last_pipeline`), for those who see them.
    pipeline: PipelineRow | None = None


@dataclass(slots=True)
class Picked:
    where: Where
    commit: pygit2.Commit | None  # None after a dry run


@dataclass(slots=True)
class NoteRecord:
    note: CommitNoteRow
    author: UserRow


def _where(ctx: RepoContext) -> Where:
    return Where(ctx.project.id, f"{ctx.subject.namespace.full_path}/{ctx.project.path}")


def _latest_pipeline(db: Session, actor: Actor | None, ctx: RepoContext, sha: str) -> PipelineRow | None:
    """The commit's newest pipeline, when the actor may see the project's pipelines."""
    if not policy.may(actor, Action.READ_PIPELINE, ctx.subject):
        return None
    return pipeline_reads.latest_for_sha(db, ctx.project.id, sha)


def _commit(ctx: RepoContext, sha: str) -> pygit2.Commit:
    if ctx.repo is None or not sha:
        raise NotFound("Commit")
    try:
        return resolve_commit(ctx.repo, sha)
    except RefNotFound:
        raise NotFound("Commit") from None


# ---------------------------------------------------------------------------- reads


def list_commits(
    db: Session, viewer: Actor | None, ident: str, q: CommitList, page: Page, settings: Settings
) -> CommitListing:
    ctx = repositories.for_read(db, viewer, ident, settings)
    if ctx.repo is None:
        raise NotFound("Repository")
    where = _where(ctx)
    ref = q.ref_name or ctx.project.default_branch or "HEAD"
    if not q.all and not history.valid_revision(ref):
        raise BadRequest("ref_name is invalid", raw=True)
    query = LogQuery(
        revisions=[ref],
        all_refs=q.all,
        path=q.path or None,
        since=q.since,
        until=q.until,
        author=q.author,
        first_parent=q.first_parent,
        topo=q.order == "topo",
    )
    if history.excludes_all(query):
        return CommitListing(where, [], PageResult(items=[], total=0, has_next=False))
    if not q.all and ".." not in ref:
        # Named by its commit id, the history's total can be remembered (history.window).
        try:
            query.revisions = [str(resolve_commit(ctx.repo, ref).id)]
        except RefNotFound:
            return CommitListing(where, [], PageResult(items=[], total=0, has_next=False))
    try:
        ids, total = history.window(
            ctx.path, query, skip=page.offset, limit=page.per_page + 1, cap=TOTAL_LIMIT
        )
    except RefNotFound:
        # An unknown ref (or an empty repository) has no history.
        return CommitListing(where, [], PageResult(items=[], total=0, has_next=False))
    has_next = len(ids) > page.per_page
    ids = ids[: page.per_page]
    repo = ctx.repo
    listed = []
    for sha in ids:
        c = repo[sha].peel(pygit2.Commit)
        listed.append(
            Listed(
                c,
                _stats(repo, c, settings) if q.with_stats else None,
                history.parse_trailers(c.message) if q.trailers else None,
            )
        )
    return CommitListing(where, listed, PageResult(items=listed, total=total, has_next=has_next))


def get_commit(
    db: Session, viewer: Actor | None, ident: str, sha: str, with_stats: bool, settings: Settings
) -> CommitDetail:
    ctx = repositories.for_read(db, viewer, ident, settings)
    commit = _commit(ctx, sha)
    assert ctx.repo is not None
    return CommitDetail(
        _where(ctx),
        commit,
        _stats(ctx.repo, commit, settings) if with_stats else None,
        _latest_pipeline(db, viewer, ctx, str(commit.id)),
    )


def commit_sequence(
    db: Session, viewer: Actor | None, ident: str, sha: str, first_parent: bool, settings: Settings
) -> int:
    """How many commits the commit's history holds, itself included."""
    ctx = repositories.for_read(db, viewer, ident, settings)
    commit = _commit(ctx, sha)
    return history.count(ctx.path, LogQuery(revisions=[str(commit.id)], first_parent=first_parent))


def commit_refs(
    db: Session, viewer: Actor | None, ident: str, sha: str, kind: str, page: Page, settings: Settings
) -> PageResult:
    """Items are (type, name): branches first, then tags, each by name."""
    ctx = repositories.for_read(db, viewer, ident, settings)
    commit = _commit(ctx, sha)
    refs = history.refs_containing(
        ctx.path, str(commit.id), branches=kind in ("branch", "all"), tags=kind in ("tag", "all")
    )
    return list_page(refs, page)


def _stats(repo: pygit2.Repository, commit: pygit2.Commit, settings: Settings) -> Stats:
    return history.stats(repo, commit, big_file_bytes=settings.large_blob_bytes)


def _file_diffs(
    db: Session, repo: pygit2.Repository, commit: pygit2.Commit, settings: Settings
) -> list[FileDiff]:
    """The change against the first parent, expanded and within the instance's diff limits
    (GitLab's `commit.diffs(expanded: true)`)."""
    parent = commit.parents[0] if commit.parents else None
    return tree_diff(repo, parent, commit, repositories.diff_limits(db, settings, expanded=True)).files


def commit_diff(
    db: Session, viewer: Actor | None, ident: str, sha: str, page: Page, settings: Settings
) -> PageResult:
    """Items are kiln.git.diffs.FileDiff."""
    ctx = repositories.for_read(db, viewer, ident, settings)
    commit = _commit(ctx, sha)
    assert ctx.repo is not None
    return list_page(_file_diffs(db, ctx.repo, commit, settings), page)


def list_comments(
    db: Session, viewer: Actor | None, ident: str, sha: str, page: Page, settings: Settings
) -> tuple[list[NoteRecord], PageResult]:
    """Records of row records: the page's comments, then their authors."""
    ctx = repositories.for_read(db, viewer, ident, settings)
    commit = _commit(ctx, sha)
    pairs, result = commit_reads.comments(db, ctx.project.id, str(commit.id), page)
    return [NoteRecord(note, author) for note, author in pairs], result


# ---------------------------------------------------------------------------- comments


def create_comment(
    db: Session, actor: Actor, ident: str, sha: str, p: CommitCommentCreate, settings: Settings
) -> NoteRecord:
    """A line comment only for the full SHA, a path in the commit's diff, an added line of
    it and line_type `new`; anything else is a comment on the commit as a whole."""
    ctx = repositories.for_read(db, actor, ident, settings)
    commit = _commit(ctx, sha)
    if not p.note.strip():
        raise ValidationFailed({"note": ["can't be blank"]})
    path: str | None = None
    line: int | None = None
    if p.path is not None and p.line is not None and p.line_type == "new" and is_object_id(sha.lower()):
        assert ctx.repo is not None
        for entry in _file_diffs(db, ctx.repo, commit, settings):
            if entry.new_path == p.path and p.line in history.added_lines(entry.diff):
                path, line = p.path, p.line
                break
    with transaction(db):
        note = CommitNote(
            project_id=ctx.project.id,
            commit_sha=str(commit.id),
            author_id=actor.user.id,
            note=p.note,
            path=path,
            line=line,
            line_type="new" if path is not None else None,
        )
        db.add(note)
        db.flush()
        events.record(
            db,
            "commented",
            project_id=ctx.project.id,
            actor=actor,
            target_type="DiffNote" if path is not None else "Note",
            target_id=note.id,
            data={"noteable_type": "Commit", "commit_id": str(commit.id)},
        )
    # Read again after the write, as the list reads it, so both answer the same.
    saved = commit_reads.comment_by_id(db, note.id)
    if saved is None:  # the project was removed since
        raise NotFound("Project")
    return NoteRecord(saved, actor.user)


# ---------------------------------------------------------------------------- writes


def _writable(db: Session, actor: Actor, ident: str, settings: Settings) -> RepoContext:
    """The project for a write whose refusal is the branch's (GitLab answers a caller
    without push rights "You are not allowed to push into this branch")."""
    return repositories.for_read(db, actor, ident, settings)


def _refused(message: str) -> BadRequest:
    return BadRequest(message, raw=True)


def _start_project(
    db: Session, actor: Actor, ctx: RepoContext, ident: str, settings: Settings
) -> RepoContext:
    """The project a new branch starts from: this one, or the project this one was forked from."""
    s = subjects.project(db, actor, ident)
    if s.project.id == ctx.project.id:
        return ctx
    if not policy.may(actor, Action.READ_CODE, s) or ctx.project.forked_from_id != s.project.id:
        raise Forbidden(
            f"Project is not included in the fork network for {s.namespace.full_name} / {s.project.name}"
        )
    st = repositories.store(settings)
    repo = st.find(s.project.id)
    return RepoContext(subject=s, store=st, repo=repo)


def _content(action: CommitAction) -> bytes | None:
    if action.content is None:
        return None
    if action.encoding == "base64":
        # Lenient, as Ruby's Base64.decode64: characters outside the alphabet are skipped.
        cleaned = re.sub(r"[^A-Za-z0-9+/]", "", action.content)
        try:
            return base64.b64decode(cleaned + "=" * (-len(cleaned) % 4))
        except binascii.Error:
            raise _refused(f"Invalid base64 content for {action.file_path}") from None
    return action.content.encode("utf-8")


def _file_action(action: CommitAction) -> FileAction:
    content = _content(action)
    if action.action in ("create", "update") and content is None:
        content = b""
    return FileAction(
        action=action.action,
        file_path=action.file_path,
        content=content if action.action in ("create", "update", "move") else None,
        previous_path=action.previous_path if action.action == "move" else None,
        execute_filemode=action.execute_filemode if action.action == "chmod" else None,
        last_commit_id=action.last_commit_id if action.action in ("update", "move", "delete") else None,
    )


def _concurrent(branch: str) -> BadRequest:
    return _refused(f"Could not update branch {branch}. Please refresh and try again.")


def _invalid_new_branch(branch: str) -> BadRequest:
    return _refused(
        f"Something went wrong when we tried to create '{branch}' for you: Branch name is invalid"
    )


def _start_commit(
    repo: pygit2.Repository, source: RepoContext, start_branch: str | None, start_sha: str | None
) -> pygit2.Commit | None:
    """The commit a new branch (or a forced one) starts from, brought into `repo` if it lives
    in another project's repository."""
    source_repo = source.repo
    start: pygit2.Commit | None = None
    if start_sha is not None:
        if not _SHA.fullmatch(start_sha):
            raise _refused(f"Invalid start_sha '{start_sha}'")
        try:
            start = resolve_commit(source_repo, start_sha) if source_repo is not None else None
        except RefNotFound:
            start = None
        if start is None or not str(start.id).startswith(start_sha.lower()):
            raise _refused(f"Cannot find start_sha '{start_sha}'")
    elif start_branch and source_repo is not None and history.has_branches(source_repo):
        tip = branch_tip(source_repo, start_branch)
        if tip is None:
            raise _refused(ON_BRANCH)
        start = source_repo[tip].peel(pygit2.Commit)
    if start is not None and source_repo is not None and source_repo.path != repo.path:
        try:
            picks.fetch_commit(repo, source.path, str(start.id))
        except RefNotFound:
            raise _refused(f"Cannot find start_sha '{start.id}'") from None
        start = repo[start.id].peel(pygit2.Commit)
    return start


def create_commit(db: Session, actor: Actor, ident: str, p: CommitCreate, settings: Settings) -> CommitDetail:
    ctx = _writable(db, actor, ident, settings)
    source = _start_project(db, actor, ctx, p.start_project, settings) if p.start_project else ctx
    repositories.require_push(db, actor, ctx.subject, p.branch, force=p.force)
    if len(p.actions) > settings.max_commit_actions:
        raise ParamError(
            f"actions is expected to have length less than or equal to {settings.max_commit_actions}"
        )
    actions = [_file_action(a) for a in p.actions]
    repo = ctx.ensure()
    start_branch = p.start_branch if p.start_branch is not None or p.start_sha is not None else p.branch
    was_empty = not history.has_branches(repo)
    start = _start_commit(repo, source, start_branch, p.start_sha)
    different = start_branch != p.branch or source.project.id != ctx.project.id
    exists = branch_tip(repo, p.branch) is not None
    if different and exists and not p.force and not was_empty:
        raise _refused(
            f"A branch called '{p.branch}' already exists. Switch to that branch in order to make changes"
        )
    if not exists and not names.valid_new_branch(p.branch):
        raise _invalid_new_branch(p.branch)
    user = actor.user
    author = Person(p.author_name or user.name, p.author_email or user.email)
    try:
        commit, previous = commit_actions(
            repo,
            branch=p.branch,
            actions=actions,
            message=p.commit_message,
            author=author,
            committer=Person(user.name, user.email),
            start=start,
            force=p.force,
            allow_empty=True,
        )
    except ActionFailed as exc:
        raise _refused(str(exc)) from None
    except EmptyCommit:
        raise _refused("No changes were made") from None
    except InvalidRefName:
        raise _invalid_new_branch(p.branch) from None
    except ConcurrentUpdate:
        raise _concurrent(p.branch) from None
    with transaction(db):
        if was_empty:
            repositories.adopt_first_branch(db, ctx.project, repo, p.branch)
        repositories.record_push(
            db, ctx.project, actor, f"refs/heads/{p.branch}", previous, str(commit.id), repo
        )
    return CommitDetail(
        _where(ctx),
        commit,
        _stats(repo, commit, settings) if p.stats else None,
        _latest_pipeline(db, actor, ctx, str(commit.id)),
    )


def _target_branch(ctx: RepoContext, branch: str) -> pygit2.Commit:
    if not names.valid_new_branch(branch):
        raise _refused("The branch refname is invalid")
    assert ctx.repo is not None
    tip = branch_tip(ctx.repo, branch)
    if tip is None:
        raise NotFound("Branch")
    return ctx.repo[tip].peel(pygit2.Commit)


def _apply(
    db: Session,
    actor: Actor,
    ident: str,
    sha: str,
    branch: str,
    dry_run: bool,
    settings: Settings,
    *,
    revert: bool,
    message: str | None = None,
) -> Picked:
    ctx = _writable(db, actor, ident, settings)
    repositories.require_push(db, actor, ctx.subject, branch)
    commit = _commit(ctx, sha)
    onto = _target_branch(ctx, branch)
    repo = ctx.repo
    assert repo is not None
    failed = REVERT_FAILED if revert else CHERRY_PICK_FAILED
    try:
        tree = picks.revert_tree(repo, commit, onto) if revert else picks.cherry_pick_tree(repo, commit, onto)
    except picks.PickConflict:
        raise PickFailed(failed, "conflict", dry_run=dry_run) from None
    except EmptyCommit:
        raise PickFailed(failed, "empty", dry_run=dry_run) from None
    if dry_run:
        return Picked(_where(ctx), None)
    user = Person(actor.user.name, actor.user.email).signature()
    if revert:
        title = history.title(commit.message).strip()
        text = f'Revert "{title}"\n\nThis reverts commit {commit.id}'
        author = user
    else:
        original = commit.message.rstrip("\n")
        text = message or f"{original}\n\n(cherry picked from commit {commit.id})"
        author = commit.author
    try:
        new = write_commit(
            repo,
            branch=branch,
            tree=tree,
            parents=[onto.id],
            message=text,
            author=author,
            committer=user,
            expected_tip=str(onto.id),
        )
    except ConcurrentUpdate:
        raise _concurrent(branch) from None
    repositories.bookkeeping(db, ctx, actor, f"refs/heads/{branch}", str(onto.id), str(new.id))
    return Picked(_where(ctx), new)


def cherry_pick(db: Session, actor: Actor, ident: str, sha: str, p: CherryPick, settings: Settings) -> Picked:
    """The commit's change on top of `branch`; the message names the picked commit."""
    return _apply(db, actor, ident, sha, p.branch, p.dry_run, settings, revert=False, message=p.message)


def revert(db: Session, actor: Actor, ident: str, sha: str, p: Revert, settings: Settings) -> Picked:
    return _apply(db, actor, ident, sha, p.branch, p.dry_run, settings, revert=True)
