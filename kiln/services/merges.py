"""Merging merge requests (GitLab's accept, merge when the pipeline succeeds and its cancel,
merge_ref, rebase) and the asynchronous mergeability check.

A merge is refused as GitLab refuses it: 401 for who may not merge into the target branch,
405 while the merge request isn't in a mergeable state (closed, draft, a branch gone, the
pipeline or discussions or approvals the project asks for), 406 when it won't merge cleanly
(or needs a rebase under a fast-forward method), 409 when `sha` isn't the source head. The
merge itself is one transaction: the merge request's row is taken by compare-and-swap on its
lock_version (two racing merges: one wins, the other sees it merged and gets 405), the
target branch moves by compare-and-swap, and the bookkeeping (push event, notes, events)
commits with it; any failure puts the branch back, so nothing is half done."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pygit2
from sqlalchemy import event, update
from sqlalchemy.orm import Session, SessionTransaction

from kiln import jobs, policy
from kiln.auth.actor import Actor
from kiln.config import Settings
from kiln.db import transaction
from kiln.errors import (
    BadRequest,
    Conflict,
    Forbidden,
    KilnError,
    NotAcceptable,
    NotAllowed,
    NotFound,
    Unauthorized,
)
from kiln.git import merges as git_merges
from kiln.git import picks
from kiln.git.errors import ConcurrentUpdate, GitError
from kiln.git.refs import branch_tip, delete_ref, update_ref
from kiln.git.writes import Person
from kiln.models import MergeRequest, Pipeline, Project, User
from kiln.models.ci import ACTIVE, CREATED, SCHEDULED, SUCCESS
from kiln.models.merge_requests import (
    CAN_BE_MERGED,
    CANNOT_BE_MERGED,
    EMPTY,
    MERGED,
    OPENED,
    UNCHECKED,
)
from kiln.models.notes import MERGE_REQUEST
from kiln.policy import MergeRequestSubject
from kiln.queries import merge_requests as finder
from kiln.queries import merges as reads
from kiln.queries import users as user_finder
from kiln.schemas.merges import MergeParams, RebaseParams
from kiln.services import (
    approvals,
    issuables,
    issues,
    merge_request_diffs,
    merge_request_events,
    merge_requests,
    repositories,
    resource_events,
    subjects,
)
from kiln.services.merge_requests import OneMergeRequest

CHECK = "merges.check"
AUTO_MERGE = "merges.auto_merge"
CANNOT_MERGE = "Branch cannot be merged"
NOT_MERGEABLE = "Merge request is not mergeable"
REBASE_FAILED = "Rebase failed: Rebase locally, resolve all conflicts, then push the branch."
REBASE_BUSY = (
    "Failed to enqueue the rebase operation, possibly due to a long-lived transaction. Try again later."
)
# A head pipeline that may still succeed: merge when it does.
_RUNNING = frozenset((*ACTIVE, CREATED, SCHEDULED))


# ----------------------------------------------------------------------------- what stops a merge


def merge_level(db: Session, project_id: int, branch: str) -> int | None:
    """The merge access level of the rule protecting `branch` (protected_branches.governing's
    pick), None when unprotected: who may merge into it (policy.may_merge)."""
    rule = repositories.protection_for(db, project_id, branch)
    return rule.merge_access_level if rule is not None else None


def _require_merger(db: Session, actor: Actor | None, s: MergeRequestSubject) -> None:
    """GitLab's can_be_merged_by?: 401 for who may not merge into the target branch."""
    level = merge_level(db, s.project.project.id, s.merge_request.target_branch)
    if not policy.may_merge(actor, s.project, level):
        raise Unauthorized()


def head_pipeline(db: Session, mr: MergeRequest) -> Pipeline | None:
    """The newest pipeline of the source head (GitLab's head pipeline)."""
    found = finder.head_pipeline_id(db, mr)
    return db.get(Pipeline, found) if found is not None else None


def _source_tip(settings: Settings, mr: MergeRequest) -> str | None:
    if mr.source_project_id is None:
        return None
    with contextlib.suppress(KeyError, OSError, pygit2.GitError):
        tip = branch_tip(repositories.store(settings).open(mr.source_project_id), mr.source_branch)
        return str(tip) if tip is not None else None
    return None


def _unmergeable_state(
    db: Session, settings: Settings, s: MergeRequestSubject, *, skip_ci: bool = False
) -> str | None:
    """Why the merge request isn't in a mergeable state (GitLab's mergeable_state?, with its
    broken?: a branch gone or nothing to merge), or None."""
    mr = s.merge_request
    project = s.project.project
    if mr.state != OPENED:
        return "it is not open"
    if mr.draft:
        return "it is a draft"
    repo = merge_request_diffs.target_repository(settings, mr)
    target = branch_tip(repo, mr.target_branch)
    if target is None or _source_tip(settings, mr) is None or mr.head_sha is None:
        return "a branch is missing"
    if _has_no_commits(db, repo, mr, str(target)):
        return "it has no commits"
    if not skip_ci and project.only_allow_merge_if_pipeline_succeeds:
        pipeline = head_pipeline(db, mr)
        if not merge_requests.pipeline_passed(project, pipeline.status if pipeline is not None else None):
            return "the pipeline did not succeed"
    if project.only_allow_merge_if_all_discussions_are_resolved:
        row = finder.row_by_id(db, mr.id)
        if row is not None and row.unresolved_count:
            return "not all discussions are resolved"
    if approvals.approvals_left(db, s.project, mr) > 0:
        return "it is not approved"
    return None


def _has_no_commits(db: Session, repo: pygit2.Repository, mr: MergeRequest, target: str) -> bool:
    """GitLab's has_no_commits?: the latest version is empty, or the head is already in the
    target (a merge would make a commit merging nothing)."""
    latest = finder.latest_diff(db, mr.latest_diff_id)
    if latest is None or latest.state == EMPTY or mr.head_sha is None:
        return True
    try:
        return git_merges.contains(repo, target, mr.head_sha)
    except (KeyError, ValueError, pygit2.GitError):
        return True


def _cannot_merge(repo: pygit2.Repository, method: str, target: str, head: str) -> bool:
    """GitLab's `!can_be_merged? || should_be_rebased?`."""
    if merge_requests.must_fast_forward(method) and not git_merges.contains(repo, head, target):
        return True
    return not git_merges.mergeable(repo, target, head)


# ----------------------------------------------------------------------------- merging


@dataclass(frozen=True, slots=True)
class Request:
    """What a merge was asked with (kept as merge_params for a merge when the pipeline succeeds)."""

    sha: str
    squash: bool
    should_remove_source_branch: bool | None
    commit_message: str | None
    squash_commit_message: str | None

    def stored(self) -> dict[str, Any]:
        found = {
            "sha": self.sha,
            "squash": self.squash,
            "should_remove_source_branch": self.should_remove_source_branch,
            "commit_message": self.commit_message,
            "squash_commit_message": self.squash_commit_message,
        }
        return {k: v for k, v in found.items() if v is not None}

    @classmethod
    def of(cls, stored: dict[str, Any], mr: MergeRequest) -> Request:
        return cls(
            sha=str(stored.get("sha") or mr.head_sha or ""),
            squash=bool(stored.get("squash", mr.squash)),
            should_remove_source_branch=stored.get("should_remove_source_branch"),
            commit_message=stored.get("commit_message"),
            squash_commit_message=stored.get("squash_commit_message"),
        )


def _full_path(s: MergeRequestSubject) -> str:
    return f"{s.project.namespace.full_path}/{s.project.project.path}"


def default_message(s: MergeRequestSubject) -> str:
    """GitLab's default merge commit message."""
    mr = s.merge_request
    return (
        f"Merge branch '{mr.source_branch}' into '{mr.target_branch}'\n\n{mr.title}\n\n"
        f"See merge request {_full_path(s)}!{mr.iid}"
    )


def _clean(text: str) -> str:
    """A name or email as a git signature can hold it (git drops `<`, `>` and newlines too)."""
    return "".join(c for c in text if c not in "<>\n\r\0").strip() or "unknown"


def _signature(user: Any) -> pygit2.Signature:
    return Person(_clean(user.name or ""), _clean(user.email or "")).signature()


def _squash_of(
    db: Session,
    repo: pygit2.Repository,
    mr: MergeRequest,
    actor: Actor,
    target: str,
    head: str,
    message: str | None,
) -> git_merges.Squash | None:
    """The squash to make, or None when squashing one commit into itself would change nothing
    (GitLab then reports the head as the squash commit)."""
    text = message if message is not None else mr.title
    base = git_merges.merge_base(repo, target, head)
    if base is not None:
        walker = repo.walk(pygit2.Oid(hex=head))
        walker.hide(base)
        own = [c for _, c in zip(range(2), walker, strict=False)]
        if len(own) == 1 and own[0].message.strip() == text.strip():
            return None
    author = db.get(User, mr.author_id) if mr.author_id is not None else None
    return git_merges.Squash(message=text, author=_signature(author or actor.user))


def _take(db: Session, mr: MergeRequest) -> None:
    """The merge request's row by compare-and-swap while it is open and still as the checks
    read it (`mr`): its lock_version, target branch and head. A racing merge (or close) that
    got there first makes this one 405 (no longer open); a retarget, a push's new version or
    any other write meanwhile makes it 409, so nothing is merged unchecked. The row stays
    locked (PostgreSQL) or the database written (SQLite) until the caller's commit."""
    taken = db.execute(
        update(MergeRequest)
        .where(
            MergeRequest.id == mr.id,
            MergeRequest.lock_version == mr.lock_version,
            MergeRequest.state == OPENED,
            MergeRequest.target_branch == mr.target_branch,
            MergeRequest.head_sha == mr.head_sha,
        )
        .values(lock_version=MergeRequest.lock_version + 1)
        .execution_options(synchronize_session=False)
    )
    if taken.rowcount != 1:  # type: ignore[attr-defined]
        state = reads.state_of(db, mr.id)
        if state != OPENED:
            raise NotAllowed()
        raise Conflict("409 Conflict")
    db.refresh(mr)


def _source_subject(db: Session, actor: Actor, s: MergeRequestSubject) -> Any:
    mr = s.merge_request
    if mr.source_project_id == s.project.project.id:
        return s.project
    if mr.source_project_id is None:
        return None
    with contextlib.suppress(KilnError):
        return subjects.project(db, actor, str(mr.source_project_id))
    return None


def _remove_source(
    db: Session, settings: Settings, actor: Actor, s: MergeRequestSubject, undo: list[Callable[[], None]]
) -> None:
    """Delete the merged source branch when the actor may push to it, it still points at the
    merged head, and it is neither protected nor its project's default branch."""
    mr = s.merge_request
    source = _source_subject(db, actor, s)
    if source is None or mr.source_project_id is None or mr.head_sha is None:
        return
    project = source.project
    branch = mr.source_branch
    if branch == project.default_branch or repositories.protection_for(db, project.id, branch) is not None:
        return
    if not repositories.may_push(db, actor, source, branch):
        return
    repo = repositories.store(settings).open(project.id)
    ref = f"refs/heads/{branch}"
    try:
        delete_ref(repo.path, ref, mr.head_sha)
    except ConcurrentUpdate:
        return
    head = mr.head_sha
    undo.append(lambda: update_ref(repo.path, ref, head, None, "kiln: merge undone"))
    repositories.record_push(db, repositories.model_of(db, project), actor, ref, head, None, repo)


def _execute(db: Session, settings: Settings, actor: Actor, s: MergeRequestSubject, asked: Request) -> None:
    """The merge, in one transaction with its bookkeeping: the row is taken first, the branch
    moves once the merge is made, and is put back if anything after it (or the commit) fails."""
    mr = s.merge_request
    project = s.project.project
    repo = merge_request_diffs.target_repository(settings, mr)
    undo: list[Callable[[], None]] = []
    try:
        with transaction(db):
            _undo_unless_committed(db, undo)
            _take(db, mr)
            # Checked again on the row as taken (locked until the commit): what was checked
            # before is what is merged, whatever changed meanwhile.
            _require_merger(db, actor, s)
            if _unmergeable_state(db, settings, s) is not None:
                raise NotAllowed()
            target = branch_tip(repo, mr.target_branch)
            head = mr.head_sha
            if target is None or head is None:
                raise NotAllowed()
            if asked.sha and asked.sha != head:
                raise Conflict(f"SHA does not match HEAD of source branch: {head}")
            if _cannot_merge(repo, project.merge_method, str(target), head):
                raise NotAcceptable(CANNOT_MERGE)
            squash = (
                _squash_of(db, repo, mr, actor, str(target), head, asked.squash_commit_message)
                if asked.squash
                else None
            )
            try:
                made = git_merges.build(
                    repo,
                    method=project.merge_method,
                    target=str(target),
                    source=head,
                    message=asked.commit_message if asked.commit_message is not None else default_message(s),
                    committer=_signature(actor.user),
                    squash=squash,
                )
            except (git_merges.MergeConflict, git_merges.NotFastForward):
                raise NotAcceptable(CANNOT_MERGE) from None
            except git_merges.NothingToMerge:
                raise NotAllowed() from None
            try:
                git_merges.move_branch(
                    repo, mr.target_branch, made.tip, str(target), f"kiln: merge !{mr.iid}"
                )
            except ConcurrentUpdate:
                raise Conflict("409 Conflict - the target branch moved; try again") from None
            undo.append(lambda: git_merges.undo_move(repo, mr.target_branch, made.tip, str(target)))
            now = datetime.now(UTC)
            mr.state = MERGED
            mr.merged_by_id = actor.id
            mr.merged_at = now
            mr.merge_commit_sha = made.merge_commit
            mr.squash_commit_sha = made.squash_commit or (head if asked.squash else None)
            mr.merge_status = CAN_BE_MERGED
            mr.merge_error = None
            if asked.squash:
                mr.squash = True
            mr.merge_params = {**(mr.merge_params or {}), **asked.stored()}
            model = repositories.model_of(db, project)
            repositories.record_push(
                db, model, actor, f"refs/heads/{mr.target_branch}", str(target), made.tip, repo
            )
            remove = asked.should_remove_source_branch
            if remove is None:
                remove = bool(mr.force_remove_source_branch)
            if remove:
                _remove_source(db, settings, actor, s, undo)
            issuables.note(db, actor, MERGE_REQUEST, mr, "merged")
            resource_events.state_changed(db, actor, MERGE_REQUEST, mr.id, MERGED)
            merge_request_events.record(db, actor, mr, merge_request_events.MERGE)
            issues.close_by_merge_request(db, actor, settings, s)
            recheck_target(db, mr.project_id, mr.target_branch)
            db.flush()
    except BaseException:
        _undo(undo)
        raise


def _undo(undo: list[Callable[[], None]]) -> None:
    """Put back what a merge moved, newest first, each step once."""
    while undo:
        step = undo.pop()
        with contextlib.suppress(GitError, OSError):
            step()


def _undo_unless_committed(db: Session, undo: list[Callable[[], None]]) -> None:
    """The merge's branch moves are put back if the transaction they ride in rolls back
    rather than commits, also when that transaction is a caller's that ends after the merge
    returns (the automatic merge runs inside its job's, which commits with the job marked
    done): a failed commit never leaves the target moved and the merge request open."""
    ended: list[bool] = []

    def committed(session: Session) -> None:
        ended.append(True)

    def rolled_back(session: Session, previous: SessionTransaction) -> None:
        if previous.parent is None and not ended:
            ended.append(True)
            _undo(undo)

    event.listen(db, "after_commit", committed, once=True)
    event.listen(db, "after_soft_rollback", rolled_back)


def _asked(s: MergeRequestSubject, p: MergeParams) -> Request:
    mr = s.merge_request
    option = s.project.project.squash_option
    squash = p.squash if p.squash is not None else mr.squash
    if option == "always":
        squash = True
    elif option == "never":
        squash = False
    return Request(
        sha=p.sha or "",
        squash=bool(squash),
        should_remove_source_branch=p.should_remove_source_branch,
        commit_message=p.merge_commit_message,
        squash_commit_message=p.squash_commit_message,
    )


def merge(db: Session, actor: Actor, p: MergeParams, settings: Settings) -> OneMergeRequest:
    """PUT …/merge: merge now, or set it to merge when the head pipeline succeeds."""
    s = subjects.merge_request(db, actor, p.id, p.merge_request_iid)
    _require_merger(db, actor, s)
    mr = s.merge_request
    auto = p.when_pipeline_succeeds
    pipeline = head_pipeline(db, mr) if auto else None
    unmergeable = _unmergeable_state(db, settings, s, skip_ci=auto)
    if auto:
        immediately = pipeline is not None and pipeline.status == SUCCESS
        automatically = pipeline is not None and pipeline.status in _RUNNING and unmergeable is None
        if immediately:
            unmergeable = _unmergeable_state(db, settings, s)
    else:
        immediately = unmergeable is None
        automatically = False
    if not immediately and not automatically:
        raise NotAllowed()
    if unmergeable is not None:
        raise NotAcceptable(CANNOT_MERGE)
    repo = merge_request_diffs.target_repository(settings, mr)
    target = branch_tip(repo, mr.target_branch)
    assert mr.head_sha is not None
    assert target is not None
    if _cannot_merge(repo, s.project.project.merge_method, str(target), mr.head_sha):
        raise NotAcceptable(CANNOT_MERGE)
    if p.sha and p.sha != mr.head_sha:
        raise Conflict(f"SHA does not match HEAD of source branch: {mr.head_sha}")
    asked = _asked(s, p)
    if automatically:
        with transaction(db):
            _take(db, mr)
            enable_auto_merge(db, actor, mr, asked)
            db.flush()
    else:
        _execute(db, settings, actor, s, asked)
    return merge_requests.one_of(db, actor, s, settings=settings)


# ----------------------------------------------------------------------------- merge when the pipeline succeeds


def enable_auto_merge(db: Session, actor: Actor, mr: MergeRequest, asked: Request | None = None) -> None:
    """Merge when the pipeline succeeds, in the caller's transaction, on a row it holds (taken
    or locked): the merge route's, with what it was asked, or the
    `merge_request.merge_when_pipeline_succeeds` push option's, without waiting for a
    pipeline (the push's is still being made), as GitLab's push options set it."""
    already = mr.merge_when_pipeline_succeeds
    stored = asked.stored() if asked is not None else dict(mr.merge_params or {})
    mr.merge_when_pipeline_succeeds = True
    mr.merge_user_id = actor.id
    mr.merge_params = {**stored, "sha": mr.head_sha}
    mr.lock_version = MergeRequest.lock_version + 1  # type: ignore[assignment]
    if not already:
        body = f"enabled an automatic merge when the pipeline for {mr.head_sha} succeeds"
        issuables.note(db, actor, MERGE_REQUEST, mr, body)


def cancel_auto_merge(
    db: Session, mr: MergeRequest, reason: str | None = None, actor: Actor | None = None
) -> bool:
    """Turn off merge when the pipeline succeeds, in the caller's transaction, with GitLab's
    system note ("canceled the automatic merge", or "aborted the automatic merge because
    <reason>" when something else stopped it, as a push to the source). False when it wasn't on."""
    if not mr.merge_when_pipeline_succeeds:
        return False
    mr.merge_when_pipeline_succeeds = False
    mr.merge_user_id = None
    mr.merge_params = {}
    mr.lock_version = MergeRequest.lock_version + 1  # type: ignore[assignment]
    body = (
        "canceled the automatic merge" if reason is None else f"aborted the automatic merge because {reason}"
    )
    issuables.note(db, actor, MERGE_REQUEST, mr, body)
    return True


def cancel(db: Session, actor: Actor, ident: str, iid: int) -> None:
    """POST …/cancel_merge_when_pipeline_succeeds: 401 for who may not update the merge
    request, 405 once it is merged or closed, 406 when no automatic merge is set."""
    s = subjects.merge_request(db, actor, ident, iid)
    mr = s.merge_request
    if not policy.may_update_merge_request(actor, s.project, mr.author_id, s.assignee_ids):
        raise Unauthorized()
    if mr.state != OPENED:
        raise NotAllowed()
    if not mr.merge_when_pipeline_succeeds:
        raise NotAcceptable("406 Not Acceptable")
    with transaction(db):
        _take(db, mr)
        cancel_auto_merge(db, mr, None, actor)
        db.flush()


def after_pipeline_success(db: Session, pipeline: Pipeline) -> None:
    """A pipeline just succeeded (kiln.services.pipeline_processing): queue the merge of the
    open merge requests set to merge when their head pipeline, this one, succeeds."""
    for mr_id in reads.awaiting(db, pipeline):
        jobs.enqueue(db, AUTO_MERGE, {"merge_request_id": mr_id, "pipeline_id": pipeline.id})


@jobs.handler(AUTO_MERGE)
def _auto_merge(ctx: jobs.JobContext, payload: dict[str, Any]) -> None:
    """Merge as the user who set it, with what they asked; a merge that is refused now turns
    the automatic merge off with GitLab's note saying why."""
    db = ctx.db
    # Locked for the job's transaction: what is read here is what is merged or cancelled.
    mr = finder.locked(db, int(payload["merge_request_id"]))
    if mr is None or mr.state != OPENED or not mr.merge_when_pipeline_succeeds:
        return
    pipeline = head_pipeline(db, mr)
    if pipeline is None or pipeline.id != int(payload["pipeline_id"]) or pipeline.status != SUCCESS:
        return
    user = user_finder.row_by_id(db, mr.merge_user_id) if mr.merge_user_id is not None else None
    if user is None:
        cancel_auto_merge(db, mr, "the user who set it is gone")
        return
    actor = Actor(user=user, via="session", scopes=None)
    asked = Request.of(mr.merge_params or {}, mr)
    project = db.get(Project, mr.project_id)
    if project is None:
        return
    try:
        s = subjects.merge_request(db, actor, str(project.id), mr.iid)
    except KilnError:
        cancel_auto_merge(db, mr, "the user who set it may no longer see it")
        return
    reason = _auto_merge_refusal(db, ctx.settings, actor, s, asked)
    if reason is not None:
        cancel_auto_merge(db, s.merge_request, reason)
        s.merge_request.merge_error = reason
        return
    try:
        _execute(db, ctx.settings, actor, s, asked)
    except (NotAllowed, NotAcceptable, Conflict) as exc:
        # Refused after all (it raced something): the job's transaction is rolled back by the
        # raise; retrying re-reads everything.
        raise RuntimeError(str(exc)) from None


def _auto_merge_refusal(
    db: Session, settings: Settings, actor: Actor, s: MergeRequestSubject, asked: Request
) -> str | None:
    mr = s.merge_request
    level = merge_level(db, s.project.project.id, mr.target_branch)
    if not policy.may_merge(actor, s.project, level):
        return "the user who set it may no longer merge"
    if asked.sha and asked.sha != mr.head_sha:
        return "the source branch was updated"
    if _unmergeable_state(db, settings, s) is not None:
        return "the merge request is not mergeable"
    repo = merge_request_diffs.target_repository(settings, mr)
    target = branch_tip(repo, mr.target_branch)
    assert target is not None
    assert mr.head_sha is not None
    if _cannot_merge(repo, s.project.project.merge_method, str(target), mr.head_sha):
        return "the merge request cannot be merged"
    return None


# ----------------------------------------------------------------------------- the mergeability check


def enqueue_check(db: Session, mr: MergeRequest) -> None:
    """Mark an open merge request unchecked and queue its check, in the caller's transaction
    (after it is opened, its source is pushed or its target moves)."""
    if mr.state != OPENED:
        return
    mr.merge_status = UNCHECKED
    jobs.enqueue(db, CHECK, {"merge_request_id": mr.id})


def recheck_target(db: Session, project_id: int, branch: str) -> None:
    """The target branch `branch` of project `project_id` moved: its open merge requests are
    unchecked again and checked by the job queue. One UPDATE that re-reads the state: a
    merge request merged or closed meanwhile keeps its status."""
    found = reads.open_into(db, project_id, branch)
    if not found:
        return
    db.execute(
        update(MergeRequest)
        .where(MergeRequest.id.in_(found), MergeRequest.state == OPENED)
        .values(merge_status=UNCHECKED)
        .execution_options(synchronize_session="fetch")
    )
    for mr_id in found:
        jobs.enqueue(db, CHECK, {"merge_request_id": mr_id})


def check(db: Session, settings: Settings, mr: MergeRequest) -> str:
    """Whether the source head merges into the target's tip without conflicts, stored as the
    merge request's merge_status unless its head moved meanwhile; returns the status."""
    status = CANNOT_BE_MERGED
    head = mr.head_sha
    with contextlib.suppress(KeyError, OSError, ValueError, pygit2.GitError, GitError):
        repo = merge_request_diffs.target_repository(settings, mr)
        target = branch_tip(repo, mr.target_branch)
        if target is not None and head is not None and git_merges.mergeable(repo, target, head):
            status = CAN_BE_MERGED
    db.execute(
        update(MergeRequest)
        .where(MergeRequest.id == mr.id, MergeRequest.state == OPENED, MergeRequest.head_sha == head)
        .values(merge_status=status)
        .execution_options(synchronize_session=False)
    )
    return status


@jobs.handler(CHECK)
def _check(ctx: jobs.JobContext, payload: dict[str, Any]) -> None:
    mr = ctx.db.get(MergeRequest, int(payload["merge_request_id"]))
    if mr is not None and mr.state == OPENED:
        check(ctx.db, ctx.settings, mr)


# ----------------------------------------------------------------------------- merge ref and rebase


def merge_ref_head(db: Session, actor: Actor | None, ident: str, iid: int, settings: Settings) -> str:
    """GET …/merge_ref: the commit merging the source head into the target's tip, kept at
    refs/merge-requests/<iid>/merge; 400 "Merge request is not mergeable" otherwise."""
    s = subjects.merge_request(db, actor, ident, iid)
    mr = s.merge_request
    not_mergeable = BadRequest(NOT_MERGEABLE, raw=True)
    repo = merge_request_diffs.target_repository(settings, mr)
    target = branch_tip(repo, mr.target_branch)
    head = mr.head_sha
    if (
        mr.state != OPENED
        or target is None
        or head is None
        or _has_no_commits(db, repo, mr, str(target))
        or not git_merges.mergeable(repo, target, head)
    ):
        raise not_mergeable
    ref = f"refs/merge-requests/{mr.iid}/merge"
    current = repo.references.get(ref)
    if current is not None:
        with contextlib.suppress(KeyError, ValueError, pygit2.GitError):
            commit = repo[current.target].peel(pygit2.Commit)
            if [str(p) for p in commit.parent_ids] == [str(target), head]:
                return str(commit.id)
    author = db.get(User, mr.author_id) if mr.author_id is not None else None
    who = author if author is not None else (actor.user if actor is not None else None)
    signature = _signature(who) if who is not None else pygit2.Signature("kiln", "kiln@localhost")
    made = git_merges.build(
        repo,
        method=git_merges.MERGE,
        target=str(target),
        source=head,
        message=default_message(s),
        committer=signature,
    )
    git_merges.point_ref(repo, ref, made.tip)
    return made.tip


def rebase(db: Session, actor: Actor, p: RebaseParams, settings: Settings) -> bool:
    """PUT …/rebase: the source branch's own commits replayed onto the target's tip, the
    branch moved by compare-and-swap (409 when it moved meanwhile); 403 for who may not push
    to the source branch (a rebase rewrites its history: a force push, which a protected
    branch may refuse). A conflict is kept as the merge request's merge_error, as GitLab's
    rebase reports it. The push's refresh job records the new version, its pipeline, notes
    and events, as after any push. Done at once: returns whether a rebase is still in
    progress (never)."""
    s = subjects.merge_request(db, actor, p.id, p.merge_request_iid)
    mr = s.merge_request
    source = _source_subject(db, actor, s)
    if source is None or not repositories.may_push(db, actor, source, mr.source_branch, force=True):
        raise Forbidden()
    store = repositories.store(settings)
    try:
        source_repo = store.open(source.project.id)
    except (KeyError, OSError, pygit2.GitError):
        raise NotFound("Branch") from None
    target_repo = merge_request_diffs.target_repository(settings, mr)
    head = branch_tip(source_repo, mr.source_branch)
    onto = branch_tip(target_repo, mr.target_branch)
    if head is None or onto is None:
        _failed(db, mr, REBASE_FAILED)
        return False
    if source.project.id != mr.project_id:
        picks.fetch_commit(source_repo, store.path(mr.project_id), str(onto))
    try:
        new = git_merges.rebase(source_repo, onto=str(onto), head=str(head), committer=_signature(actor.user))
    except git_merges.RebaseConflict:
        _failed(db, mr, REBASE_FAILED)
        return False
    ref = f"refs/heads/{mr.source_branch}"
    moved = False
    try:
        with transaction(db):
            _take(db, mr)
            if new != str(head):
                try:
                    update_ref(source_repo.path, ref, new, str(head), "kiln: rebase")
                except ConcurrentUpdate:
                    raise Conflict(REBASE_BUSY) from None
                moved = True
                options = ["ci.skip"] if p.skip_ci else []
                model = repositories.model_of(db, source.project)
                repositories.record_push(db, model, actor, ref, str(head), new, source_repo, options)
            mr.merge_error = None
            db.flush()
    except BaseException:
        if moved:
            with contextlib.suppress(GitError, OSError):
                update_ref(source_repo.path, ref, str(head), new, "kiln: rebase undone")
        raise
    return False


def _failed(db: Session, mr: MergeRequest, error: str) -> None:
    with transaction(db):
        _take(db, mr)
        mr.merge_error = error
        db.flush()
