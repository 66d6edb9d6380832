"""Merge requests (GitLab's Merge Requests API core): reading one and the three lists,
opening, changing, closing, reopening and deleting merge requests, subscriptions,
participants, reviewers, commits and changes. Who may do what is the policy's; each write's
side effects (system notes, resource events, to-dos, the outbox event, the first diff
version) ride in the write's own transaction, so a refused request changes nothing."""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, replace
from functools import cache
from typing import Any, Literal

import pygit2
from sqlalchemy.orm import Session

from kiln import markdown, policy, references
from kiln.auth.actor import Actor
from kiln.config import Settings
from kiln.db import transaction
from kiln.entities.merge_requests import ANYWHERE, Context, Single, detailed_status_of
from kiln.errors import ConflictList, Forbidden, NotFound
from kiln.git import diffs as git_diffs
from kiln.git import merges as git_merges
from kiln.git.refs import branch_tip
from kiln.models import (
    MergeRequest,
    MergeRequestAssignee,
    MergeRequestReviewer,
)
from kiln.models.ci import SKIPPED, SUCCESS
from kiln.models.merge_requests import CLOSED, MERGED, OPENED, draft_title
from kiln.models.notes import MERGE_REQUEST
from kiln.pagination import Page, PageResult
from kiln.policy import Action, MergeRequestSubject, ProjectSubject
from kiln.queries import issues as issue_finder
from kiln.queries import merge_requests as finder
from kiln.queries import pipelines as pipeline_finder
from kiln.queries import projects as project_finder
from kiln.queries import users as user_finder
from kiln.queries.merge_requests import ListScope, MentionRow, MergeRequestRow, Related
from kiln.queries.paging import list_page
from kiln.queries.users import UserRow
from kiln.schemas.merge_requests import MergeRequestCreate, MergeRequestFilters, MergeRequestUpdate
from kiln.services import (
    approvals,
    cross_references,
    internal_ids,
    issuables,
    label_links,
    mentions,
    merge_request_diffs,
    merge_request_events,
    repositories,
    resource_events,
    subjects,
    subscriptions,
    todos,
)

ListKind = Literal["all", "groups", "projects"]


@dataclass(slots=True)
class OneMergeRequest:
    row: MergeRequestRow
    related: Related
    context: Context
    single: Single


@dataclass(slots=True)
class MergeRequests:
    page: PageResult  # items: MergeRequestRow
    related: Related
    context: Context


# ----------------------------------------------------------------------------- reading one


def _is_participant(db: Session, user_id: int, row: Any) -> bool:
    people = (row.author_id, *row.assignee_ids, *row.reviewer_ids)
    return issuables.takes_part(db, MERGE_REQUEST, row.id, user_id, people)


def _subscribed(db: Session, actor: Actor | None, row: MergeRequestRow) -> bool:
    """The caller's choice, else whether they take part (subscriptions.is_subscribed's rule),
    read in one statement."""
    if actor is None:
        return False
    chosen, commented = finder.subscription_of(db, row.id, actor.id)
    if chosen is not None:
        return chosen
    me = actor.id
    return commented or me == row.author_id or me in row.assignee_ids or me in row.reviewer_ids


# ----------------------------------------------------------------------------- what a merge needs
#
# The rules the merge gate (kiln.services.merges) and the views' detailed_merge_status share,
# so that a merge request the view calls mergeable is one the gate merges.


def must_fast_forward(merge_method: str | None) -> bool:
    """The project's merge method needs the source to contain the target (GitLab's
    should_be_rebased? for fast-forward and semi-linear history): otherwise a rebase first."""
    return merge_method in (git_merges.REBASE_MERGE, git_merges.FF)


def pipeline_passed(project: Any, status: str | None) -> bool:
    """The head pipeline lets a project that requires a passing pipeline merge: it succeeded,
    or it was skipped where the project allows merging then (allow_merge_on_skipped_pipeline)."""
    return status == SUCCESS or (status == SKIPPED and bool(project.allow_merge_on_skipped_pipeline))


def _diverged(settings: Settings | None, row: MergeRequestRow) -> int:
    """Commits on the target branch that the source head lacks."""
    if settings is None or row.head_sha is None:
        return 0
    with contextlib.suppress(KeyError, OSError, ValueError, pygit2.GitError):
        repo = repositories.store(settings).open(row.project_id)
        target = branch_tip(repo, row.target_branch)
        if target is None:
            return 0
        head = pygit2.Oid(hex=row.head_sha)
        if repo.get(head) is None:
            return 0
        base = git_diffs.merge_base(repo, head, target)
        if base is None:
            return 0
        return len(git_diffs.commits_between(repo, base, target))
    return 0


def one_of(
    db: Session, actor: Actor | None, s: MergeRequestSubject, *, settings: Settings | None = None
) -> OneMergeRequest:
    """The single view of the subject's merge request as it is now (re-read). `settings`:
    lets diverged_commits_count read the repository (0 without)."""
    from kiln.services import merges  # merges renders its answers with this module's views

    row = finder.row_by_id(db, s.merge_request.id)
    if row is None:
        raise NotFound("Merge Request")
    project = s.project.project
    context = Context(project_id=project.id, namespace_id=project.namespace_id)
    parts = finder.single_parts(db, row)
    pipeline_id = parts.pipeline_id
    pipeline = pipeline_finder.basics_by_ids(db, [pipeline_id]).get(pipeline_id) if pipeline_id else None
    diff_refs = (
        {"base_sha": parts.base_sha, "head_sha": parts.head_sha, "start_sha": parts.start_sha}
        if parts.head_sha is not None
        else None
    )
    diverged = _diverged(settings, row)
    model = s.merge_request
    pipeline_status = pipeline.status if pipeline is not None else None
    status = detailed_status_of(
        row,
        discussions_must_resolve=bool(project.only_allow_merge_if_all_discussions_are_resolved),
        pipeline_must_succeed=bool(project.only_allow_merge_if_pipeline_succeeds),
        pipeline_status=pipeline_status,
        pipeline_passed=pipeline_passed(project, pipeline_status),
        approvals_left=approvals.approvals_left(db, project, model) if row.state == OPENED else 0,
        needs_rebase=must_fast_forward(project.merge_method) and diverged > 0,
    )
    level = merges.merge_level(db, project.id, model.target_branch)
    can_merge = actor is not None and policy.may_merge(actor, s.project, level)
    single = Single(
        subscribed=_subscribed(db, actor, row),
        pipeline=pipeline,
        diff_refs=diff_refs,
        diverged_commits_count=diverged,
        detailed_merge_status=status,
        can_merge=can_merge,
    )
    return OneMergeRequest(row, finder.related_of(db, [row]), context, single)


def get_merge_request(
    db: Session, actor: Actor | None, ident: str, iid: int, *, settings: Settings | None = None
) -> OneMergeRequest:
    return one_of(db, actor, subjects.merge_request(db, actor, ident, iid), settings=settings)


def get_subject(db: Session, actor: Actor | None, ident: str, iid: int) -> MergeRequestSubject:
    """The merge request's subject (404 / 403 as subjects.merge_request decides)."""
    return subjects.merge_request(db, actor, ident, iid)


# ----------------------------------------------------------------------------- lists


def list_merge_requests(
    db: Session, actor: Actor | None, kind: ListKind, q: MergeRequestFilters, page: Page
) -> MergeRequests:
    """A project's merge requests, a group's (its subgroups' included), or every one the
    caller sees (`all`: their own by default, `scope=all` for all)."""
    context = ANYWHERE
    if kind == "projects":
        s = subjects.project(db, actor, q.id or "", Action.READ_MERGE_REQUEST, rows=True)
        scope = ListScope(project_id=s.project.id)
        context = Context(project_id=s.project.id, namespace_id=s.project.namespace_id)
    elif kind == "groups":
        g = subjects.group(db, actor, q.id or "", Action.READ_GROUP, rows=True)
        scope = ListScope(traversal=g.group.traversal, non_archived=q.non_archived)
        context = Context(namespace_id=g.group.id)
    else:
        scope = ListScope(non_archived=False)
        if q.scope is None:
            q = q.model_copy(update={"scope": "created_by_me"})
    if kind != "all" and q.scope is None:
        q = q.model_copy(update={"scope": "all"})
    listing, values = finder.list_statement(
        q, project_finder.viewer_of(actor), actor.id if actor is not None else None, scope
    )
    result = finder.page(db, listing, values, page)
    return MergeRequests(result, finder.related_of(db, result.items), context)


def commit_merge_requests(
    db: Session, actor: Actor | None, ident: str, sha: str, page: Page
) -> MergeRequests:
    """Merge requests of the project that hold the commit or were merged by it, if the caller
    may read the project's merge requests (an empty list otherwise, as GitLab)."""
    s = subjects.project(db, actor, ident, Action.READ_CODE, rows=True)
    context = Context(project_id=s.project.id, namespace_id=s.project.namespace_id)
    ids = (
        finder.ids_with_commit(db, s.project.id, sha)
        if policy.may(actor, Action.READ_MERGE_REQUEST, s)
        else []
    )
    result = list_page(ids, page)
    result.items = finder.rows_by_ids(db, result.items)
    return MergeRequests(result, finder.related_of(db, result.items), context)


# ----------------------------------------------------------------------------- shared by writes


def _note(db: Session, actor: Actor, mr: MergeRequest, body: str) -> None:
    issuables.note(db, actor, MERGE_REQUEST, mr, body)


def _people(db: Session, s: ProjectSubject, ids: list[int]) -> list[int]:
    """Users who may be assigned or asked to review: active, and able to read the project's
    merge requests (GitLab leaves the others out); 0 and unknown ids dropped, each once."""
    return issuables.readers(db, s, ids, lambda user, seen: policy.may(user, Action.READ_MERGE_REQUEST, seen))


def _set_people(
    db: Session,
    actor: Actor,
    mr: MergeRequest,
    table: Any,
    current: list[int],
    wanted: list[int],
    *,
    review: bool,
) -> bool:
    """Assign (or ask to review) exactly `wanted` (issuables.set_people), flushed."""
    changed = issuables.set_people(db, actor, MERGE_REQUEST, mr, table, current, wanted, review=review)
    if changed:
        db.flush()
    return changed


def _locked(db: Session, merge_request_id: int) -> MergeRequest:
    """The merge request as the write's transaction sees it, locked against concurrent
    writers (queries.merge_requests.locked); gone meanwhile, the 404 of one never found."""
    found = finder.locked(db, merge_request_id)
    if found is None:
        raise NotFound("Merge Request")
    return found


def _reloaded(
    db: Session, actor: Actor | None, settings: Settings | None, s: ProjectSubject, mr_id: int
) -> OneMergeRequest:
    fresh = db.get(MergeRequest, mr_id)
    if fresh is None:
        raise NotFound("Merge Request")
    found = finder.subject_row(db, s.project.id, fresh.iid)
    assert found is not None
    subject = MergeRequestSubject(
        project=s, merge_request=found[0], assignee_ids=tuple(found[1]), reviewer_ids=tuple(found[2])
    )
    return one_of(db, actor, subject, settings=settings)


def _branch_exists(settings: Settings, project_id: int, branch: str) -> bool:
    with contextlib.suppress(KeyError, OSError, ValueError, pygit2.GitError):
        repo = repositories.store(settings).open(project_id)
        return branch_tip(repo, branch) is not None
    return False


def _after_change(db: Session, actor: Actor, mr: MergeRequest) -> None:
    """What runs after a merge request's branches change (in the write's transaction): the
    mergeability check and merge request pipelines."""
    from kiln.services import merges  # merges renders its answers with this module's views

    merges.enqueue_check(db, mr)
    merge_request_diffs.after_change(db, actor, mr)


# ----------------------------------------------------------------------------- opening

SAME_BRANCH = "You can't use same project/branch for source and target"
DUPLICATE = "Another open merge request already exists for this source branch: !{iid}"


def create_merge_request(
    db: Session, actor: Actor, settings: Settings, p: MergeRequestCreate
) -> OneMergeRequest:
    """Open a merge request from `source_branch` of the route's project into `target_branch`
    of `target_project_id` (the same project, or the upstream of a fork). Without GitLab's
    admin_merge_request on the target, labels, milestone, assignees and reviewers are dropped."""
    source = subjects.project(db, actor, p.id, rows=True)
    target = source
    if p.target_project_id is not None and p.target_project_id != source.project.id:
        found = subjects.find_project(db, actor, str(p.target_project_id), rows=True)
        if found is None or not policy.may(actor, Action.READ_PROJECT, found):
            raise NotFound("Project")
        if not finder.is_fork_of(db, source.project.forked_from_id, found.project.id):
            raise ConflictList(["Source project is not a fork of the target project"], 422)
        target = found
    if not policy.may_create_merge_request(actor, source, target):
        raise Forbidden()
    issuables.validate_text(p.title, p.description, creating=True)
    if not _branch_exists(settings, source.project.id, p.source_branch):
        raise ConflictList([f'Source branch "{p.source_branch}" does not exist'], 400)
    if not _branch_exists(settings, target.project.id, p.target_branch):
        raise ConflictList([f'Target branch "{p.target_branch}" does not exist'], 400)
    if source.project.id == target.project.id and p.source_branch == p.target_branch:
        raise ConflictList([SAME_BRANCH], 422)
    admin = policy.may(actor, Action.ADMIN_MERGE_REQUEST, target)
    given = p.given()
    title = p.title.strip()
    with transaction(db):
        duplicate = finder.open_duplicate(
            db, target.project.id, source.project.id, p.source_branch, p.target_branch, None
        )
        if duplicate is not None:
            raise ConflictList([DUPLICATE.format(iid=duplicate)])
        remove_source = p.remove_source_branch
        mr = MergeRequest(
            iid=internal_ids.next_iid(db, "merge_requests", target.project.id),
            project_id=target.project.id,
            source_project_id=source.project.id,
            source_branch=p.source_branch,
            target_branch=p.target_branch,
            author_id=actor.id,
            title=title,
            description=p.description,
            draft=draft_title(title),
            force_remove_source_branch=remove_source,
            squash=bool(p.squash),
            allow_collaboration=bool(p.allow_collaboration or p.allow_maintainer_to_push)
            and source.project.id != target.project.id,
            approvals_before_merge=p.approvals_before_merge,
            merge_params={"force_remove_source_branch": remove_source} if remove_source is not None else {},
        )
        if admin and p.milestone_id:
            m = issuables.usable_milestone(db, target, p.milestone_id)
            mr.milestone_id = m.id if m is not None else None
        db.add(mr)
        db.flush()
        if admin:
            wanted = p.assignee_ids if "assignee_ids" in given else ([p.assignee_id] if p.assignee_id else [])
            _set_people(
                db, actor, mr, MergeRequestAssignee, [], _people(db, target, wanted or []), review=False
            )
            _set_people(
                db,
                actor,
                mr,
                MergeRequestReviewer,
                [],
                _people(db, target, p.reviewer_ids or []),
                review=True,
            )
            if p.labels:
                create = policy.may(actor, Action.ADMIN_LABELS, target)
                labels = label_links.resolve(db, issuables.label_scope(target), p.labels, create=create)
                label_links.set_labels(db, actor, MERGE_REQUEST, mr.id, [label.id for label in labels])
            if mr.milestone_id is not None:
                resource_events.milestone_changed(
                    db, actor, MERGE_REQUEST, mr.id, mr.milestone_id, None, OPENED
                )
        merge_request_diffs.record_version(db, settings, mr)
        mentions.record(
            db, actor, p.description, target_type=MERGE_REQUEST, target_id=mr.id, project_id=mr.project_id
        )
        cross_references.record_issuable(db, actor, MERGE_REQUEST, mr, target)
        merge_request_events.record(db, actor, mr, merge_request_events.OPEN)
        _after_change(db, actor, mr)
        db.flush()
        mr_id = mr.id
    return _reloaded(db, actor, settings, target, mr_id)


# ----------------------------------------------------------------------------- changing


def update_merge_request(
    db: Session, actor: Actor, settings: Settings, p: MergeRequestUpdate
) -> OneMergeRequest:
    """Change a merge request's fields, close or reopen it. Its author, assignees and
    Developers and up may; labels, milestone, assignees, reviewers and the lock take
    admin_merge_request and are dropped without it, as GitLab does."""
    s = subjects.merge_request(db, actor, p.id, p.merge_request_iid, rows=True)
    project = s.project
    if not policy.may_update_merge_request(actor, project, s.merge_request.author_id, s.assignee_ids):
        raise Forbidden()
    issuables.validate_text(p.title, p.description, creating=False)
    admin = policy.may(actor, Action.ADMIN_MERGE_REQUEST, project)
    given = p.given()
    with transaction(db):
        mr = _locked(db, s.merge_request.id)
        named_before = cross_references.text_of(mr.title, mr.description)
        changes: dict[str, Any] = {}
        touched = False
        branches_moved = False

        def changed(name: str, before: Any, after: Any) -> None:
            changes[name] = {"previous": before, "current": after}

        if p.title is not None and p.title.strip() != mr.title:
            new_title = p.title.strip()
            was_draft, now_draft = bool(mr.draft), draft_title(new_title)
            if was_draft != now_draft:
                _note(
                    db,
                    actor,
                    mr,
                    "marked this merge request as **draft**"
                    if now_draft
                    else "marked this merge request as **ready**",
                )
                changed("draft", was_draft, now_draft)
            else:
                _note(db, actor, mr, f"changed title from **{mr.title}** to **{new_title}**")
            changed("title", mr.title, new_title)
            mr.title, mr.draft = new_title, now_draft
            mr.last_edited_at, mr.last_edited_by_id = issuables.now(), actor.id
        if "description" in given and (p.description or None) != (mr.description or None):
            before = mr.description
            _note(db, actor, mr, "changed the description")
            changed("description", before, p.description)
            mr.description = p.description
            mr.last_edited_at, mr.last_edited_by_id = issuables.now(), actor.id
            mentions.record(
                db,
                actor,
                p.description,
                target_type=MERGE_REQUEST,
                target_id=mr.id,
                project_id=mr.project_id,
                previous_text=before,
            )
        if p.target_branch is not None and p.target_branch != mr.target_branch:
            if not _branch_exists(settings, mr.project_id, p.target_branch):
                raise ConflictList([f'Target branch "{p.target_branch}" does not exist'], 400)
            if mr.source_project_id == mr.project_id and p.target_branch == mr.source_branch:
                raise ConflictList([SAME_BRANCH], 422)
            if mr.state == OPENED:
                dup = finder.open_duplicate(
                    db, mr.project_id, mr.source_project_id or 0, mr.source_branch, p.target_branch, mr.id
                )
                if dup is not None:
                    raise ConflictList([DUPLICATE.format(iid=dup)])
            _note(db, actor, mr, f"changed target branch from `{mr.target_branch}` to `{p.target_branch}`")
            changed("target_branch", mr.target_branch, p.target_branch)
            mr.target_branch = p.target_branch
            branches_moved = True
        if p.remove_source_branch is not None and p.remove_source_branch != mr.force_remove_source_branch:
            changed("force_remove_source_branch", mr.force_remove_source_branch, p.remove_source_branch)
            mr.force_remove_source_branch = p.remove_source_branch
            mr.merge_params = {
                **(mr.merge_params or {}),
                "force_remove_source_branch": p.remove_source_branch,
            }
        if p.squash is not None and p.squash != mr.squash:
            changed("squash", mr.squash, p.squash)
            mr.squash = p.squash
        collaboration = (
            p.allow_collaboration if p.allow_collaboration is not None else p.allow_maintainer_to_push
        )
        if (
            collaboration is not None
            and mr.source_project_id != mr.project_id
            and collaboration != mr.allow_collaboration
        ):
            changed("allow_collaboration", mr.allow_collaboration, collaboration)
            mr.allow_collaboration = collaboration
        if p.approvals_before_merge is not None and p.approvals_before_merge != mr.approvals_before_merge:
            changed("approvals_before_merge", mr.approvals_before_merge, p.approvals_before_merge)
            mr.approvals_before_merge = p.approvals_before_merge
        if admin:
            touched |= _update_planning(db, actor, s, mr, p, given, changed)
        hook_action = merge_request_events.UPDATE
        if p.state_event == "close" and mr.state == OPENED:
            mr.state, mr.closed_at, mr.closed_by_id = CLOSED, issuables.now(), actor.id
            _note(db, actor, mr, "closed")
            resource_events.state_changed(db, actor, MERGE_REQUEST, mr.id, CLOSED)
            todos.done_for_target(db, MERGE_REQUEST, mr.id)
            changed("state_id", OPENED, CLOSED)
            hook_action = merge_request_events.CLOSE
        elif p.state_event == "reopen" and mr.state == CLOSED:
            _refuse_reopen(db, settings, mr)
            mr.state, mr.closed_at, mr.closed_by_id = OPENED, None, None
            _note(db, actor, mr, "reopened")
            resource_events.state_changed(db, actor, MERGE_REQUEST, mr.id, "reopened")
            changed("state_id", CLOSED, OPENED)
            hook_action = merge_request_events.REOPEN
            branches_moved = True
        if changes or touched:
            mr.updated_at = issuables.now()
            merge_request_events.record(db, actor, mr, hook_action, changes)
        if branches_moved and mr.state == OPENED:
            merge_request_diffs.record_version(db, settings, mr)
            _after_change(db, actor, mr)
        cross_references.record_issuable(db, actor, MERGE_REQUEST, mr, project, named_before)
        db.flush()
    return _reloaded(db, actor, settings, project, s.merge_request.id)


def _refuse_reopen(db: Session, settings: Settings, mr: MergeRequest) -> None:
    """GitLab refuses to reopen a merge request whose branches are gone or that an open one
    with the same branches would duplicate."""
    if mr.source_project_id is None or not _branch_exists(settings, mr.source_project_id, mr.source_branch):
        raise ConflictList([f'Source branch "{mr.source_branch}" does not exist'], 400)
    if not _branch_exists(settings, mr.project_id, mr.target_branch):
        raise ConflictList([f'Target branch "{mr.target_branch}" does not exist'], 400)
    dup = finder.open_duplicate(
        db, mr.project_id, mr.source_project_id, mr.source_branch, mr.target_branch, mr.id
    )
    if dup is not None:
        raise ConflictList([DUPLICATE.format(iid=dup)])


def _update_planning(
    db: Session,
    actor: Actor,
    s: MergeRequestSubject,
    mr: MergeRequest,
    p: MergeRequestUpdate,
    given: set[str],
    changed: Any,
) -> bool:
    """Labels, milestone, assignees, reviewers and lock of an update (admin_merge_request)."""
    project = s.project
    touched = issuables.update_labels(db, actor, MERGE_REQUEST, project, mr, p, given, changed)
    if "milestone_id" in given:
        issuables.update_milestone(db, actor, MERGE_REQUEST, project, mr, p.milestone_id, changed)
    if "assignee_ids" in given or "assignee_id" in given:
        wanted_ids = p.assignee_ids if "assignee_ids" in given else ([p.assignee_id] if p.assignee_id else [])
        current_ids = list(s.assignee_ids)
        wanted_people = _people(db, project, wanted_ids or [])
        if _set_people(db, actor, mr, MergeRequestAssignee, current_ids, wanted_people, review=False):
            changed("assignees", current_ids, wanted_people)
            touched = True
    if "reviewer_ids" in given:
        current_ids = list(s.reviewer_ids)
        wanted_people = _people(db, project, p.reviewer_ids or [])
        if _set_people(db, actor, mr, MergeRequestReviewer, current_ids, wanted_people, review=True):
            changed("reviewers", current_ids, wanted_people)
            touched = True
    issuables.update_lock(
        db, actor, MERGE_REQUEST, mr, p.discussion_locked, "the discussion in this merge request", changed
    )
    return touched


# ----------------------------------------------------------------------------- deleting


def delete_merge_request(db: Session, actor: Actor, settings: Settings, ident: str, iid: int) -> None:
    """Delete a merge request with what hangs off it by (type, id): labels, notes, award
    emoji, to-dos, subscriptions (versions, assignees, reviewers, approvals by foreign key);
    its head ref goes after the commit."""
    s = subjects.merge_request(db, actor, ident, iid, Action.DESTROY_MERGE_REQUEST, rows=True)
    with transaction(db):
        mr = db.get(MergeRequest, s.merge_request.id)
        if mr is None:
            raise NotFound("Merge Request")
        issuables.delete_dependents(db, MERGE_REQUEST, mr.id)
        db.delete(mr)
        db.flush()
    merge_request_diffs.forget_refs(settings, mr)


# ----------------------------------------------------------------------------- subscriptions, people


def set_subscription(
    db: Session, actor: Actor, settings: Settings, ident: str, iid: int, subscribed: bool
) -> OneMergeRequest | None:
    """Subscribe or unsubscribe; None when it was so already (the route's 304)."""
    s = subjects.merge_request(db, actor, ident, iid, rows=True)
    row = finder.row_by_id(db, s.merge_request.id)
    if row is None:
        raise NotFound("Merge Request")
    with transaction(db):
        participant = _is_participant(db, actor.id, row)
        done = subscriptions.set_subscribed(
            db,
            actor.id,
            MERGE_REQUEST,
            row.id,
            subscribed,
            project_id=row.project_id,
            participant=participant,
        )
    if not done:
        return None
    return one_of(db, actor, s, settings=settings)


def participants(db: Session, actor: Actor | None, ident: str, iid: int, page: Page) -> PageResult:
    """The merge request's author, assignees, reviewers and those who commented, each once."""
    s = subjects.merge_request(db, actor, ident, iid, rows=True)
    people = (s.merge_request.author_id, *s.assignee_ids, *s.reviewer_ids)
    return issuables.participants(db, MERGE_REQUEST, s.merge_request.id, people, page)


def reviewers(db: Session, actor: Actor | None, ident: str, iid: int) -> list[tuple[UserRow, str, Any]]:
    """Each reviewer with where their review stands: (user, state, created_at)."""
    s = subjects.merge_request(db, actor, ident, iid, rows=True)
    rows = finder.reviewer_rows(db, s.merge_request.id)
    users = {u.id: u for u in user_finder.rows_by_ids(db, [r[0] for r in rows])}
    return [(users[r[0]], r[1], r[2]) for r in rows if r[0] in users]


# ----------------------------------------------------------------------------- commits, changes


@dataclass(slots=True)
class Commits:
    page: PageResult  # items: MergeRequestDiffCommit
    project_path: str


def commits(db: Session, actor: Actor | None, ident: str, iid: int, page: Page) -> Commits:
    """The latest version's commits, newest first (GitLab reads them from the version)."""
    s = subjects.merge_request(db, actor, ident, iid, rows=True)
    mr = s.merge_request
    found = finder.diff_commits(db, mr.latest_diff_id) if mr.latest_diff_id is not None else []
    return Commits(list_page(found, page), f"{s.project.namespace.full_path}/{s.project.project.path}")


# No limits but these, for access_raw_diffs (GitLab reads the diffs from git then, uncut).
_RAW = 2**31


def _diff_set(
    db: Session,
    settings: Settings,
    s: MergeRequestSubject,
    *,
    raw: bool,
    refs: dict[str, Any] | Literal[False] | None = False,
) -> git_diffs.DiffSet:
    """The files the latest version changes (base..head), bounded as the instance bounds diffs.
    `refs`: the version's diff_refs when the caller read them already (None: no version)."""
    mr = s.merge_request
    empty = git_diffs.DiffSet(files=[], overflow=False)
    if refs is False:
        latest = finder.latest_diff(db, mr.latest_diff_id)
        refs = (
            None
            if latest is None
            else {
                "base_sha": latest.base_commit_sha,
                "head_sha": latest.head_commit_sha,
                "start_sha": latest.start_commit_sha,
            }
        )
    if refs is None:
        return empty
    limits = repositories.diff_limits(db, settings, expanded=True)
    if raw:
        limits = replace(limits, max_files=_RAW, max_lines=_RAW, max_patch_bytes=_RAW)
    with contextlib.suppress(KeyError, OSError, ValueError, pygit2.GitError):
        repo = merge_request_diffs.target_repository(settings, mr)
        head = repo[refs["head_sha"]].peel(pygit2.Commit)
        base_sha = refs["base_sha"] or refs["start_sha"]
        base = repo[base_sha].peel(pygit2.Commit) if base_sha else None
        return git_diffs.tree_diff(repo, base, head, limits)
    return empty


def changes(
    db: Session, actor: Actor | None, settings: Settings, ident: str, iid: int, *, raw: bool = False
) -> tuple[OneMergeRequest, git_diffs.DiffSet]:
    """The merge request and the files its latest version changes."""
    s = subjects.merge_request(db, actor, ident, iid, rows=True)
    one = one_of(db, actor, s, settings=settings)
    return one, _diff_set(db, settings, s, raw=raw, refs=one.single.diff_refs)


def diffs(
    db: Session, actor: Actor | None, settings: Settings, ident: str, iid: int, page: Page
) -> PageResult:
    """A page of the files the latest version changes (items: git FileDiff)."""
    s = subjects.merge_request(db, actor, ident, iid, rows=True)
    return list_page(_diff_set(db, settings, s, raw=False).files, page)


# ----------------------------------------------------------------------------- issues it closes or mentions

# GitLab's default issue_closing_pattern: a closing word ("Closes", "fixed", "Resolving",
# "implements", ...), then issue references (`#1`, `group/project#1`, this instance's issue
# URLs) listed with commas and "and". Atomic separators keep the matching linear.
_ISSUE_TOKEN = r"(?:[A-Za-z0-9_./\-]*\#\d+|https?://[^\s,;]+?/issues/\d+)"
_CLOSING = re.compile(
    r"\b(?:[Cc]los(?:e[sd]?|ing)|[Ff]ix(?:e[sd]|ing)?|[Rr]esolv(?:e[sd]?|ing)|[Ii]mplement(?:s|ed|ing)?)"
    rf":?(?> +)(?:issues? +)?{_ISSUE_TOKEN}(?:(?> *(?:, *)?)(?:and +)?(?:issues? +)?{_ISSUE_TOKEN})*+"
)


@cache
def _issue_links(base: str) -> re.Pattern[str]:
    """This instance's issue URLs: <external url>/<project path>/-/issues/<iid>."""
    return re.compile(
        rf"{re.escape(base.rstrip('/'))}/(?P<path>[A-Za-z0-9_.\-]+(?:/[A-Za-z0-9_.\-]+)+?)"
        r"/(?:-/)?issues/(?P<iid>\d+)\b"
    )


def _issue_keys(segment: str, base: str) -> list[tuple[str, int]]:
    """The issues a run of plain text names: (project path in lower case, "" for the text's
    own project; iid), in order (kiln.references reads `#1` and `group/project#1`)."""
    found = [(ref.start, ref.key) for ref in references.find(segment) if ref.kind == references.ISSUE]
    found += [
        (m.start(), (m.group("path").lower(), int(m.group("iid"))))
        for m in _issue_links(base).finditer(segment)
    ]
    return [key for _, key in sorted(found, key=lambda f: f[0])]


def closing_keys(texts: list[str | None], base: str) -> list[tuple[str, int]]:
    """The issues `texts` close with GitLab's closing pattern (outside code), each once."""
    out: dict[tuple[str, int], None] = {}
    for text in texts:
        for segment in markdown.plain_segments(text):
            for m in _CLOSING.finditer(segment):
                for key in _issue_keys(m.group(0), base):
                    out[key] = None
    return list(out)


def mentioned_keys(texts: list[str | None], base: str) -> list[tuple[str, int]]:
    """Every issue `texts` name (outside code), each once."""
    out: dict[tuple[str, int], None] = {}
    for text in texts:
        for segment in markdown.plain_segments(text):
            for key in _issue_keys(segment, base):
                out[key] = None
    return list(out)


def _names(key: tuple[str, int], own_path: str, path: str, iid: int) -> bool:
    """Whether `key`, read in a text of project `own_path`, is issue `iid` of project `path`."""
    return key[1] == iid and (key[0] or own_path.lower()) == path.lower()


@dataclass(slots=True)
class IssuesOf:
    page: PageResult  # items: IssueRow
    related: issue_finder.Related
    context: Any  # kiln.entities.issues.Context


def _visible_issues(
    db: Session, actor: Actor | None, settings: Settings, s: MergeRequestSubject, keys: list[tuple[str, int]]
) -> list[tuple[Any, Any]]:
    """The issues `keys` name that exist and `actor` may read, as (project, issue row) of
    kiln.references (one statement per kind, whatever their number)."""
    found = references.References(db, actor, settings.external_url, project=s.project)
    return [(project, row) for _, project, row in found.named((references.ISSUE, key) for key in keys)]


def _issues_page(db: Session, s: MergeRequestSubject, ids: list[int], page: Page) -> IssuesOf:
    from kiln.entities.issues import Context as IssueContext

    result = list_page(ids, page)
    result.items = issue_finder.rows_by_ids(db, result.items)
    project = s.project.project
    context = IssueContext(project_id=project.id, namespace_id=project.namespace_id)
    return IssuesOf(result, issue_finder.related_of(db, result.items), context)


def _closes_default_branch(s: MergeRequestSubject) -> bool:
    return s.merge_request.target_branch == s.project.project.default_branch


def closing_issues(
    db: Session, actor: Actor | None, settings: Settings, s: MergeRequestSubject, *, commits: bool = True
) -> list[tuple[Any, Any]]:
    """The issues the merge request closes when merged, that `actor` may read: those its title,
    description and (`commits`) its latest version's commit messages name with the closing
    pattern, when it targets the project's default branch (GitLab closes none otherwise)."""
    if not _closes_default_branch(s):
        return []
    mr = s.merge_request
    texts = [mr.title, mr.description]
    if commits:
        texts += finder.commit_messages(db, mr.latest_diff_id)
    keys = closing_keys(texts, settings.external_url)
    return _visible_issues(db, actor, settings, s, keys) if keys else []


def closes_issues(
    db: Session, actor: Actor | None, settings: Settings, ident: str, iid: int, page: Page
) -> IssuesOf:
    """GET …/closes_issues: the issues merging it will close, those the caller may read."""
    s = subjects.merge_request(db, actor, ident, iid, rows=True)
    ids = [row.id for _, row in closing_issues(db, actor, settings, s)]
    return _issues_page(db, s, ids, page)


def related_issues(
    db: Session, actor: Actor | None, settings: Settings, ident: str, iid: int, page: Page
) -> IssuesOf:
    """GET …/related_issues: the issues its title and description name, those the caller may
    read, in the order they are named."""
    s = subjects.merge_request(db, actor, ident, iid, rows=True)
    mr = s.merge_request
    keys = mentioned_keys([mr.title, mr.description], settings.external_url)
    ids = [row.id for _, row in _visible_issues(db, actor, settings, s, keys)] if keys else []
    return _issues_page(db, s, ids, page)


@dataclass(frozen=True, slots=True)
class IssueRef:
    """An issue as the merge requests' texts name it."""

    id: int
    project_id: int
    path: str  # its project's full path
    iid: int


@dataclass(slots=True)
class NamingMergeRequests:
    """Per issue id, the merge requests (newest first) that close it and that name it."""

    closing: dict[int, list[MentionRow]]
    naming: dict[int, list[MentionRow]]


def naming_merge_requests(
    db: Session, actor: Actor | None, settings: Settings, issues: list[IssueRef]
) -> NamingMergeRequests:
    """Which open and merged merge requests the actor may read close or name `issues`, read from
    their titles and descriptions: one bounded statement (queries.merge_requests.mentioning),
    then exact matching here. Closing counts only into the project's default branch."""
    out = NamingMergeRequests({}, {})
    if not issues:
        return out
    base = settings.external_url
    rows: list[MentionRow] = finder.mentioning(
        db,
        project_finder.viewer_of(actor),
        actor.id if actor is not None else None,
        [(i.project_id, i.path, i.iid) for i in issues],
        (OPENED, MERGED),
    )
    for row in rows:
        texts = [row.title, row.description]
        named = mentioned_keys(texts, base)
        closing = closing_keys(texts, base) if row.target_branch == row.default_branch else []
        for issue in issues:
            if any(_names(key, row.path, issue.path, issue.iid) for key in named):
                out.naming.setdefault(issue.id, []).append(row)
            if any(_names(key, row.path, issue.path, issue.iid) for key in closing):
                out.closing.setdefault(issue.id, []).append(row)
    return out
