"""Issues (GitLab's Issues API core): reading one and the three lists, opening, changing,
closing, reopening, deleting, moving, cloning and ordering issues, subscriptions and
participants. Who may do what is the policy's; each write's side effects (system notes,
resource events, to-dos, mentions, the outbox event) ride in the write's own transaction,
so a refused or invalid request changes nothing."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from typing import Any, Literal

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from kiln import events, policy, references
from kiln.auth.actor import Actor
from kiln.config import Settings
from kiln.db import transaction
from kiln.entities.issues import ANYWHERE, Context
from kiln.entities.merge_requests import Context as MergeRequestContext
from kiln.errors import BadRequest, Forbidden, NotFound, ValidationFailed
from kiln.models import (
    Epic,
    EpicIssue,
    Issue,
    IssueAssignee,
    Label,
    LabelLink,
    Milestone,
    Note,
)
from kiln.models.issues import CLOSED, OPENED
from kiln.models.notes import ISSUE
from kiln.models.todos import ASSIGNED
from kiln.pagination import Page, PageResult
from kiln.policy import Action, IssueSubject, MergeRequestSubject, ProjectSubject
from kiln.queries import issues as finder
from kiln.queries import merge_requests as mr_finder
from kiln.queries import projects as project_finder
from kiln.queries.issues import IssueRow, ListScope, Related
from kiln.queries.paging import list_page
from kiln.schemas.issues import (
    IssueCreate,
    IssueFilters,
    IssueUpdate,
)
from kiln.services import (
    cross_references,
    epics,
    internal_ids,
    issuables,
    label_links,
    mentions,
    merge_requests,
    resource_events,
    subjects,
    subscriptions,
    system_notes,
    todos,
)

ListKind = Literal["all", "groups", "projects"]


@dataclass(slots=True)
class OneIssue:
    row: IssueRow
    related: Related
    context: Context
    subscribed: bool


@dataclass(slots=True)
class Issues:
    page: PageResult  # items: IssueRow
    related: Related
    context: Context


# ----------------------------------------------------------------------------- reading


def list_issues(
    db: Session,
    actor: Actor | None,
    kind: ListKind,
    q: IssueFilters,
    page: Page,
    *,
    settings: Settings | None = None,
) -> Issues:
    """A project's issues, a group's (its subgroups' included), or every issue the caller
    sees (`all`: their own by default, `scope=all` for all)."""
    context = ANYWHERE
    if kind == "projects":
        s = subjects.project(db, actor, q.id or "", Action.READ_ISSUE, rows=True)
        scope = ListScope(project_id=s.project.id, sees_confidential=policy.sees_confidential(actor, s))
        context = Context(project_id=s.project.id, namespace_id=s.project.namespace_id)
    elif kind == "groups":
        g = subjects.group(db, actor, q.id or "", Action.READ_GROUP, rows=True)
        scope = ListScope(traversal=g.group.traversal, non_archived=q.non_archived)
        context = Context(namespace_id=g.group.id)
    else:
        scope = ListScope(non_archived=q.non_archived)
        if q.scope is None:
            q = q.model_copy(update={"scope": "created_by_me"})
    stmt, values = finder.list_statement(
        q, project_finder.viewer_of(actor), actor.id if actor is not None else None, scope, date.today()
    )
    result = finder.page(db, stmt, values, page)
    related = finder.related_of(db, result.items)
    _count_merge_requests(db, actor, settings, result.items, related)
    return Issues(result, related, context)


def _is_participant(db: Session, user_id: int, issue_id: int, author_id: int | None, assignees: Any) -> bool:
    return issuables.takes_part(db, ISSUE, issue_id, user_id, (author_id, *assignees))


def _subscribed(db: Session, actor: Actor | None, row: IssueRow) -> bool:
    if actor is None:
        return False
    participant = _is_participant(db, actor.id, row.id, row.author_id, row.assignee_ids)
    return subscriptions.is_subscribed(db, actor.id, ISSUE, row.id, participant=participant)


def _count_merge_requests(
    db: Session, actor: Actor | None, settings: Settings | None, rows: list[IssueRow], related: Related
) -> None:
    """merge_requests_count: how many merge requests the caller reads close each issue (one
    bounded statement for the page; without `settings` none are counted)."""
    if settings is None or not rows:
        return
    refs = [merge_requests.IssueRef(r.id, r.project_id, r.project_path, r.iid) for r in rows]
    found = merge_requests.naming_merge_requests(db, actor, settings, refs)
    related.merge_requests_count = {issue_id: len(mrs) for issue_id, mrs in found.closing.items()}


def _one(db: Session, actor: Actor | None, s: IssueSubject, settings: Settings | None = None) -> OneIssue:
    row = finder.row_by_id(db, s.issue.id)
    if row is None:
        raise NotFound("Issue")
    context = Context(project_id=s.project.project.id, namespace_id=s.project.project.namespace_id)
    related = finder.related_of(db, [row])
    _count_merge_requests(db, actor, settings, [row], related)
    return OneIssue(row, related, context, _subscribed(db, actor, row))


def get_issue(
    db: Session, actor: Actor | None, ident: str, iid: int, *, settings: Settings | None = None
) -> OneIssue:
    return _one(db, actor, subjects.issue(db, actor, ident, iid), settings)


def get_issue_by_id(db: Session, actor: Actor, issue_id: int) -> OneIssue:
    """Any issue by its global id: administrators only, as GitLab has it."""
    if not policy.is_admin(actor):
        raise Forbidden()
    found = finder.project_and_iid(db, issue_id)
    if found is None:
        raise NotFound("Issue")
    row = finder.row_by_id(db, issue_id)
    assert row is not None
    return OneIssue(row, finder.related_of(db, [row]), ANYWHERE, _subscribed(db, actor, row))


# ----------------------------------------------------------------------------- shared by writes


# Shared with merge requests (services.issuables).
_now = issuables.now
_label_scope = issuables.label_scope
_group_ids = issuables.group_ids
_milestone = issuables.usable_milestone


def _hook(confidential: bool) -> str:
    return "confidential_issue" if confidential else "issue"


def _event(
    db: Session,
    actor: Actor | None,
    issue: Issue,
    action: str,
    hook_action: str,
    changes: dict[str, Any] | None = None,
) -> None:
    data: dict[str, Any] = {"hook": _hook(issue.confidential), "hook_action": hook_action, "iid": issue.iid}
    if changes:
        data["changes"] = changes
    events.record(
        db,
        action,
        project_id=issue.project_id,
        actor=actor,
        target_type="Issue",
        target_id=issue.id,
        data=data,
    )


def _note(db: Session, actor: Actor, issue: Issue, body: str) -> None:
    issuables.note(db, actor, ISSUE, issue, body)


def _close(db: Session, actor: Actor, issue: Issue, note: str) -> None:
    """Close an open issue: its state, the system note, the state event, its to-dos done."""
    issue.state, issue.closed_at, issue.closed_by_id = CLOSED, _now(), actor.id
    _note(db, actor, issue, note)
    resource_events.state_changed(db, actor, ISSUE, issue.id, CLOSED)
    todos.done_for_target(db, ISSUE, issue.id)


def _assignable(db: Session, s: ProjectSubject, ids: list[int], issue: Issue | None = None) -> list[int]:
    """The ids of users who may be assigned: they exist and may read the issue as it is
    (a confidential one: Reporters, its author; being assigned is no way in), as GitLab
    leaves out the others; 0 and unknown ids are left out, each id kept once."""
    confidential = bool(issue.confidential) if issue is not None else False
    author_id = issue.author_id if issue is not None else None

    def may_read(user: Actor, seen: ProjectSubject) -> bool:
        return policy.may_read_issue(user, seen, confidential, author_id, ())

    return issuables.readers(db, s, ids, may_read)


CONFIDENTIAL_EPIC = (
    "Cannot assign a confidential epic to a non-confidential issue. Make the issue confidential and try again"
)
PUBLIC_IN_CONFIDENTIAL_EPIC = "this issue cannot be made public since it belongs to a confidential epic"


def _epic(
    db: Session, actor: Actor, s: ProjectSubject, issue: Issue, epic_id: int | None, epic_iid: int | None
) -> Epic | None:
    """The epic named by global id or by iid in the project's group (an ancestor's by id),
    which the caller may read and add issues to (404 "Epic" for one hidden from them, 403
    without a Reporter's place in its group); a confidential one only for a confidential issue."""
    groups = _group_ids(s)
    if not groups:
        return None
    if epic_id is not None:
        found = db.get(Epic, epic_id)
        epic = found if found is not None and found.group_id in groups else None
    else:
        epic = db.scalars(select(Epic).where(Epic.group_id == groups[-1], Epic.iid == epic_iid)).first()
    if epic is None:
        return None
    subjects.epic(db, actor, str(epic.group_id), epic.iid, Action.CREATE_EPIC)
    if epic.confidential and not issue.confidential:
        raise BadRequest(CONFIDENTIAL_EPIC, raw=True)
    return epic


def _in_confidential_epic(db: Session, issue_id: int) -> bool:
    return bool(
        db.scalar(
            select(Epic.confidential)
            .join(EpicIssue, EpicIssue.epic_id == Epic.id)
            .where(EpicIssue.issue_id == issue_id)
        )
    )


def _set_epic(db: Session, issue: Issue, epic: Epic | None) -> None:
    current = db.scalars(select(EpicIssue).where(EpicIssue.issue_id == issue.id)).first()
    before = current.epic_id if current is not None else None
    if epic is None:
        if current is not None:
            db.delete(current)
    elif current is None:
        db.add(EpicIssue(epic_id=epic.id, issue_id=issue.id))
    else:
        current.epic_id = epic.id
    db.flush()
    epics.refresh_dates(db, [before, epic.id if epic is not None else None])


def _epic_id_of(db: Session, issue_id: int) -> int | None:
    return db.scalar(select(EpicIssue.epic_id).where(EpicIssue.issue_id == issue_id))


def _refresh_epic_dates(db: Session, issue_id: int) -> None:
    """An issue's milestone gives its epic inherited dates: they follow its changes."""
    db.flush()
    epics.refresh_dates(db, [_epic_id_of(db, issue_id)])


def _set_assignees(db: Session, actor: Actor, issue: Issue, current: list[int], wanted: list[int]) -> bool:
    """Assign exactly `wanted`: rows, the system note, ASSIGNED to-dos for the new ones."""
    return issuables.set_people(db, actor, ISSUE, issue, IssueAssignee, current, wanted)


def _long_date(value: date) -> str:
    return f"{value.strftime('%B')} {value.day}, {value.year}"


def _locked(db: Session, issue_id: int) -> Issue:
    """The issue as the write's transaction sees it, locked against concurrent writers
    (PostgreSQL; SQLite has one writer at a time)."""
    return finder.locked(db, issue_id)


def _reloaded(db: Session, actor: Actor | None, s: ProjectSubject, issue_id: int) -> OneIssue:
    row = finder.row_by_id(db, issue_id)
    if row is None:
        raise NotFound("Issue")
    context = Context(project_id=s.project.id, namespace_id=s.project.namespace_id)
    return OneIssue(row, finder.related_of(db, [row]), context, _subscribed(db, actor, row))


# ----------------------------------------------------------------------------- opening


def create_issue(db: Session, actor: Actor, p: IssueCreate) -> OneIssue:
    """Open an issue. Without GitLab's admin_issue (a Guest, a non-member of a public
    project) labels, milestone, assignees, due date, weight, lock and epic are dropped."""
    s = subjects.project(db, actor, p.id, Action.CREATE_ISSUE, rows=True)
    issuables.validate_text(p.title, p.description, creating=True)
    admin = policy.may(actor, Action.ADMIN_ISSUE, s)
    given = p.given()
    with transaction(db):
        if p.iid is not None and p.iid > 0 and policy.may_backdate(actor, s):
            # An iid chosen by an administrator or Owner (imports): later ones go above it.
            taken = db.scalar(select(Issue.id).where(Issue.project_id == s.project.id, Issue.iid == p.iid))
            if taken is not None:
                raise ValidationFailed({"iid": ["has already been taken"]})
            internal_ids.track(db, "issues", s.project.id, p.iid)
            iid = p.iid
        else:
            iid = internal_ids.next_iid(db, "issues", s.project.id)
        issue = Issue(
            iid=iid,
            project_id=s.project.id,
            author_id=actor.id,
            title=p.title.strip(),
            description=p.description,
            confidential=bool(p.confidential),
            issue_type=p.issue_type or "issue",
        )
        if p.created_at is not None and policy.may_backdate(actor, s):
            issue.created_at = issue.updated_at = p.created_at
        if admin:
            issue.due_date = p.due_date
            issue.weight = p.weight
            if p.discussion_locked is not None:
                issue.discussion_locked = p.discussion_locked
            if p.milestone_id:
                m = _milestone(db, s, p.milestone_id)
                issue.milestone_id = m.id if m is not None else None
        db.add(issue)
        db.flush()
        if admin:
            wanted = p.assignee_ids if "assignee_ids" in given else ([p.assignee_id] if p.assignee_id else [])
            for uid in _assignable(db, s, wanted or [], issue):
                db.add(IssueAssignee(issue_id=issue.id, user_id=uid))
                if uid != actor.id:
                    todos.add(
                        db,
                        user_id=uid,
                        author_id=actor.id,
                        action=ASSIGNED,
                        target_type=ISSUE,
                        target_id=issue.id,
                        project_id=issue.project_id,
                    )
            if p.labels:
                create = policy.may(actor, Action.ADMIN_LABELS, s)
                found = label_links.resolve(db, _label_scope(s), p.labels, create=create)
                label_links.set_labels(db, actor, ISSUE, issue.id, [label.id for label in found])
            if issue.milestone_id is not None:
                resource_events.milestone_changed(
                    db, actor, ISSUE, issue.id, issue.milestone_id, None, OPENED
                )
            if issue.weight is not None:
                resource_events.weight_changed(db, actor, ISSUE, issue.id, issue.weight)
            if p.epic_id is not None or p.epic_iid is not None:
                _set_epic(db, issue, _epic(db, actor, s, issue, p.epic_id, p.epic_iid))
        mentions.record(
            db, actor, p.description, target_type=ISSUE, target_id=issue.id, project_id=issue.project_id
        )
        cross_references.record_issuable(db, actor, ISSUE, issue, s)
        _event(db, actor, issue, "opened", "open")
        db.flush()
        issue_id = issue.id
    return _reloaded(db, actor, s, issue_id)


# ----------------------------------------------------------------------------- changing


def update_issue(db: Session, actor: Actor, p: IssueUpdate) -> OneIssue:
    """Change an issue's fields, close or reopen it. Its author, assignees and Reporters and
    up may; the planning fields (labels, milestone, assignees, due date, weight, lock, epic)
    take admin_issue and are dropped without it."""
    s = subjects.issue(db, actor, p.id, p.issue_iid, rows=True)
    project = s.project
    if not policy.may_update_issue(actor, project, s.issue.author_id, s.assignee_ids):
        raise Forbidden()
    issuables.validate_text(p.title, p.description, creating=False)
    admin = policy.may(actor, Action.ADMIN_ISSUE, project)
    given = p.given()
    with transaction(db):
        issue = _locked(db, s.issue.id)
        named_before = cross_references.text_of(issue.title, issue.description)
        current_assignees = list(
            db.scalars(
                select(IssueAssignee.user_id)
                .where(IssueAssignee.issue_id == issue.id)
                .order_by(IssueAssignee.created_at, IssueAssignee.user_id)
            )
        )
        changes: dict[str, Any] = {}
        touched = False

        def changed(name: str, before: Any, after: Any) -> None:
            changes[name] = {"previous": before, "current": after}

        if p.title is not None and p.title.strip() != issue.title:
            new_title = p.title.strip()
            _note(db, actor, issue, f"changed title from **{issue.title}** to **{new_title}**")
            changed("title", issue.title, new_title)
            issue.title = new_title
            issue.last_edited_at, issue.last_edited_by_id = _now(), actor.id
        if p.confidential is not None and p.confidential != issue.confidential:
            if not p.confidential and _in_confidential_epic(db, issue.id):
                raise ValidationFailed({"confidential": [PUBLIC_IN_CONFIDENTIAL_EPIC]})
            word = "made the issue confidential" if p.confidential else "made the issue visible to everyone"
            _note(db, actor, issue, word)
            changed("confidential", issue.confidential, p.confidential)
            # Before mentions are recorded: only those who may read the issue as it ends get a to-do.
            issue.confidential = p.confidential
            db.flush()
        if "description" in given and (p.description or None) != (issue.description or None):
            before = issue.description
            _note(db, actor, issue, "changed the description")
            changed("description", before, p.description)
            issue.description = p.description
            issue.last_edited_at, issue.last_edited_by_id = _now(), actor.id
            mentions.record(
                db,
                actor,
                p.description,
                target_type=ISSUE,
                target_id=issue.id,
                project_id=issue.project_id,
                previous_text=before,
            )
        if p.issue_type is not None and p.issue_type != issue.issue_type:
            changed("issue_type", issue.issue_type, p.issue_type)
            issue.issue_type = p.issue_type
        if admin:
            touched |= _update_planning(db, actor, s, issue, p, given, current_assignees, changed)
        action, hook_action = "updated", "update"
        if p.state_event == "close" and issue.state != CLOSED:
            _close(db, actor, issue, "closed")
            changed("state_id", OPENED, CLOSED)
            action, hook_action = "closed", "close"
        elif p.state_event == "reopen" and issue.state != OPENED:
            issue.state, issue.closed_at, issue.closed_by_id = OPENED, None, None
            _note(db, actor, issue, "reopened")
            resource_events.state_changed(db, actor, ISSUE, issue.id, "reopened")
            changed("state_id", CLOSED, OPENED)
            action, hook_action = "reopened", "reopen"
        if changes or touched:
            issue.updated_at = _now()
            if p.updated_at is not None and policy.may_backdate(actor, project):
                issue.updated_at = p.updated_at
            _event(db, actor, issue, action, hook_action, changes)
        cross_references.record_issuable(db, actor, ISSUE, issue, project, named_before)
        db.flush()
    return _reloaded(db, actor, project, s.issue.id)


def _update_planning(
    db: Session,
    actor: Actor,
    s: IssueSubject,
    issue: Issue,
    p: IssueUpdate,
    given: set[str],
    current_assignees: list[int],
    changed: Any,
) -> bool:
    """Labels, milestone, assignees, due date, weight, lock and epic of an update (admin_issue)."""
    project = s.project
    touched = issuables.update_labels(db, actor, ISSUE, project, issue, p, given, changed)
    if "milestone_id" in given and issuables.update_milestone(
        db, actor, ISSUE, project, issue, p.milestone_id, changed
    ):
        _refresh_epic_dates(db, issue.id)
    if "assignee_ids" in given or "assignee_id" in given:
        wanted_ids = p.assignee_ids if "assignee_ids" in given else ([p.assignee_id] if p.assignee_id else [])
        wanted = _assignable(db, project, wanted_ids or [], issue)
        if _set_assignees(db, actor, issue, current_assignees, wanted):
            changed("assignees", current_assignees, wanted)
            touched = True
    if "due_date" in given and p.due_date != issue.due_date:
        if p.due_date is not None:
            _note(db, actor, issue, f"changed due date to {_long_date(p.due_date)}")
        else:
            _note(db, actor, issue, "removed due date")
        changed(
            "due_date",
            issue.due_date.isoformat() if issue.due_date else None,
            p.due_date.isoformat() if p.due_date else None,
        )
        issue.due_date = p.due_date
    if "weight" in given and p.weight != issue.weight:
        _note(
            db,
            actor,
            issue,
            f"changed weight to **{p.weight}**" if p.weight is not None else "removed the weight",
        )
        resource_events.weight_changed(db, actor, ISSUE, issue.id, p.weight)
        changed("weight", issue.weight, p.weight)
        issue.weight = p.weight
    issuables.update_lock(db, actor, ISSUE, issue, p.discussion_locked, "this issue", changed)
    if "epic_id" in given or "epic_iid" in given:
        epic = _epic(db, actor, project, issue, p.epic_id, p.epic_iid) if (p.epic_id or p.epic_iid) else None
        _set_epic(db, issue, epic)
        touched = True
    return touched


def delete_issue(db: Session, actor: Actor, ident: str, iid: int) -> None:
    """Delete an issue with what hangs off it by (type, id): labels, notes, award emoji,
    to-dos, subscriptions."""
    s = subjects.issue(db, actor, ident, iid, Action.DESTROY_ISSUE, rows=True)
    with transaction(db):
        issue = db.get(Issue, s.issue.id)
        if issue is None:
            raise NotFound("Issue")
        issue_id = issue.id
        issuables.delete_dependents(db, ISSUE, issue_id)
        _event(db, actor, issue, "deleted", "delete")
        epic_id = _epic_id_of(db, issue_id)
        db.delete(issue)
        db.flush()
        epics.refresh_dates(db, [epic_id])


# ----------------------------------------------------------------------------- subscriptions


def set_subscription(db: Session, actor: Actor, ident: str, iid: int, subscribed: bool) -> OneIssue | None:
    """Subscribe or unsubscribe; None when it was so already (the route's 304)."""
    s = subjects.issue(db, actor, ident, iid, rows=True)
    issue = s.issue
    with transaction(db):
        participant = _is_participant(db, actor.id, issue.id, issue.author_id, s.assignee_ids)
        done = subscriptions.set_subscribed(
            db, actor.id, ISSUE, issue.id, subscribed, project_id=issue.project_id, participant=participant
        )
    if not done:
        return None
    return _reloaded(db, actor, s.project, issue.id)


def participants(db: Session, actor: Actor | None, ident: str, iid: int, page: Page) -> PageResult:
    """The issue's author, assignees and those who commented, each once."""
    s = subjects.issue(db, actor, ident, iid, rows=True)
    # Who wrote only internal notes is not shown to those who cannot read them.
    internal = policy.sees_confidential(actor, s.project)
    people = (s.issue.author_id, *s.assignee_ids)
    return issuables.participants(db, ISSUE, s.issue.id, people, page, internal=internal)


# ----------------------------------------------------------------------------- moving, cloning


def _reference(project_path: str, iid: int) -> str:
    return f"{project_path}#{iid}"


def _full_path(s: ProjectSubject) -> str:
    return f"{s.namespace.full_path}/{s.project.path}"


def _copy(
    db: Session,
    actor: Actor,
    source: IssueSubject,
    target: ProjectSubject,
    *,
    author_id: int | None,
    with_notes: bool,
) -> Issue:
    """A new issue in `target` with the source's content; labels and milestone are carried
    when the target sees ones of the same title, assignees as they are."""
    old = source.issue
    new = Issue(
        iid=internal_ids.next_iid(db, "issues", target.project.id),
        project_id=target.project.id,
        author_id=author_id,
        title=old.title,
        description=old.description,
        confidential=old.confidential,
        issue_type=old.issue_type,
        due_date=old.due_date,
        weight=old.weight,
        time_estimate=old.time_estimate,
        discussion_locked=old.discussion_locked,
    )
    titles = list(
        db.scalars(
            select(Label.title)
            .join(LabelLink, LabelLink.label_id == Label.id)
            .where(LabelLink.target_type == ISSUE, LabelLink.target_id == old.id)
        )
    )
    if old.milestone_id is not None:
        before = db.get(Milestone, old.milestone_id)
        if before is not None:
            groups = _group_ids(target)
            found = db.scalars(
                select(Milestone).where(
                    Milestone.title == before.title,
                    (Milestone.project_id == target.project.id)
                    | (Milestone.group_id.in_(groups) if groups else Milestone.id.is_(None)),
                )
            ).first()
            new.milestone_id = found.id if found is not None else None
    db.add(new)
    db.flush()
    labels = label_links.resolve(db, _label_scope(target), titles, create=False)
    label_links.set_labels(db, actor, ISSUE, new.id, [label.id for label in labels])
    for uid in source.assignee_ids:
        db.add(IssueAssignee(issue_id=new.id, user_id=uid))
    if with_notes:
        notes = db.scalars(
            select(Note)
            .where(Note.noteable_type == ISSUE, Note.noteable_id == old.id)
            .order_by(Note.created_at, Note.id)
        ).all()
        discussions: dict[str, str] = {}
        for n in notes:
            db.add(
                Note(
                    noteable_type=ISSUE,
                    noteable_id=new.id,
                    project_id=target.project.id,
                    author_id=n.author_id,
                    body=n.body,
                    type=n.type,
                    system=n.system,
                    internal=n.internal,
                    discussion_id=discussions.setdefault(n.discussion_id, system_notes.new_discussion_id()),
                    created_at=n.created_at,
                    updated_at=n.updated_at,
                )
            )
        new.user_notes_count = old.user_notes_count
        new.upvotes, new.downvotes = old.upvotes, old.downvotes
    db.flush()
    return new


def _targets(
    db: Session, actor: Actor, ident: str, iid: int, to_project_id: int
) -> tuple[IssueSubject, ProjectSubject]:
    s = subjects.issue(db, actor, ident, iid, rows=True)
    target = subjects.find_project(db, actor, str(to_project_id), rows=True)
    if target is None or not policy.may(actor, Action.READ_PROJECT, target):
        raise NotFound("Project")
    return s, target


def move_issue(db: Session, actor: Actor, p: Any) -> OneIssue:
    """Move an issue: a copy in the target project (its next iid there, its notes, labels
    and milestone of the same titles), the original closed with moved_to_id."""
    s, target = _targets(db, actor, p.id, p.issue_iid, p.to_project_id)
    if target.project.id == s.project.project.id:
        raise BadRequest("Cannot move issue to project it originates from!", raw=True)
    if s.issue.moved_to_id is not None:
        raise BadRequest("Cannot move issue which has been moved already!", raw=True)
    if not (
        policy.may(actor, Action.ADMIN_ISSUE, s.project) and policy.may(actor, Action.ADMIN_ISSUE, target)
    ):
        raise BadRequest("Cannot move issue due to insufficient permissions!", raw=True)
    with transaction(db):
        old = _locked(db, s.issue.id)
        new = _copy(db, actor, s, target, author_id=old.author_id, with_notes=True)
        source_path = _full_path(s.project)
        _note(db, actor, new, f"moved from {_reference(source_path, old.iid)}")
        _note(db, actor, old, f"moved to {_reference(_full_path(target), new.iid)}")
        old.moved_to_id = new.id
        if old.state != CLOSED:
            old.state, old.closed_at, old.closed_by_id = CLOSED, _now(), actor.id
            resource_events.state_changed(db, actor, ISSUE, old.id, CLOSED)
            todos.done_for_target(db, ISSUE, old.id)
            _event(db, actor, old, "closed", "close", {"state_id": {"previous": OPENED, "current": CLOSED}})
        old.updated_at = _now()
        _event(db, actor, new, "opened", "open")
        db.flush()
        new_id = new.id
    return _reloaded(db, actor, target, new_id)


def clone_issue(db: Session, actor: Actor, p: Any) -> OneIssue:
    """Copy an issue to a project (its own too); notes only `with_notes`."""
    s, target = _targets(db, actor, p.id, p.issue_iid, p.to_project_id)
    if not (
        policy.may(actor, Action.ADMIN_ISSUE, s.project) and policy.may(actor, Action.ADMIN_ISSUE, target)
    ):
        raise BadRequest("Cannot clone issue due to insufficient permissions!", raw=True)
    with transaction(db):
        old = db.get(Issue, s.issue.id)
        assert old is not None
        new = _copy(db, actor, s, target, author_id=actor.id, with_notes=p.with_notes)
        _note(db, actor, new, f"cloned from {_reference(_full_path(s.project), old.iid)}")
        _note(db, actor, old, f"cloned to {_reference(_full_path(target), new.iid)}")
        _event(db, actor, new, "opened", "open")
        db.flush()
        new_id = new.id
    return _reloaded(db, actor, target, new_id)


# ----------------------------------------------------------------------------- ordering

# Room left between positions, as GitLab's RelativePositioning leaves it.
_GAP = 512


def reorder_issue(db: Session, actor: Actor, p: Any) -> OneIssue:
    """Place the issue after `move_before_id` and before `move_after_id` (issues of the same
    project), by its relative position; others move up when there is no room between."""
    s = subjects.issue(db, actor, p.id, p.issue_iid, rows=True)
    if not policy.may_update_issue(actor, s.project, s.issue.author_id, s.assignee_ids):
        raise Forbidden()
    project_id = s.project.project.id
    with transaction(db):
        issue = db.get(Issue, s.issue.id)
        assert issue is not None

        def neighbour(issue_id: int | None) -> Issue | None:
            if issue_id is None:
                return None
            found = db.get(Issue, issue_id)
            if found is None or found.project_id != project_id or found.id == issue.id:
                raise NotFound("Issue")
            if found.relative_position is None:
                highest = db.scalar(
                    select(func.max(Issue.relative_position)).where(Issue.project_id == project_id)
                )
                found.relative_position = (highest or 0) + _GAP
                db.flush()
            return found

        before = neighbour(p.move_before_id)  # comes before this issue
        after = neighbour(p.move_after_id)  # comes after this issue
        if before is None and after is None:
            raise ValidationFailed({"base": ["move_before_id or move_after_id is required"]})
        low = before.relative_position if before is not None else None
        high = after.relative_position if after is not None else None
        if low is not None and high is None:
            high = db.scalar(
                select(func.min(Issue.relative_position)).where(
                    Issue.project_id == project_id, Issue.relative_position > low, Issue.id != issue.id
                )
            )
        if high is not None and low is None:
            low = db.scalar(
                select(func.max(Issue.relative_position)).where(
                    Issue.project_id == project_id, Issue.relative_position < high, Issue.id != issue.id
                )
            )
        if low is None:
            position = (high or 0) - _GAP
        elif high is None:
            position = low + _GAP
        else:
            if high - low < 2:
                # No room: everything from `high` up moves along.
                db.execute(
                    update(Issue)
                    .where(
                        Issue.project_id == project_id, Issue.relative_position >= high, Issue.id != issue.id
                    )
                    .values(relative_position=Issue.relative_position + _GAP),
                    execution_options={"synchronize_session": False},
                )
                high += _GAP
                if after is not None:
                    db.refresh(after)
            position = (low + high) // 2
        issue.relative_position = position
        db.flush()
    return _reloaded(db, actor, s.project, s.issue.id)


# ----------------------------------------------------------------------------- merge requests


@dataclass(slots=True)
class MergeRequestsOf:
    page: PageResult  # items: queries.merge_requests.MergeRequestRow
    related: mr_finder.Related
    context: MergeRequestContext


def _merge_requests_of(
    db: Session, actor: Actor | None, settings: Settings, ident: str, iid: int, page: Page, *, closing: bool
) -> MergeRequestsOf:
    s = subjects.issue(db, actor, ident, iid)
    issue, project = s.issue, s.project.project
    path = f"{s.project.namespace.full_path}/{project.path}"
    found = merge_requests.naming_merge_requests(
        db, actor, settings, [merge_requests.IssueRef(issue.id, project.id, path, issue.iid)]
    )
    if closing:
        # GitLab's closed_by: the issue's project's merge requests, newest first.
        ids = [m.id for m in found.closing.get(issue.id, []) if m.project_id == project.id]
    else:
        # GitLab's related_merge_requests: those naming it (the closing ones among them), by iid.
        ids = list(dict.fromkeys(m.id for m in sorted(found.naming.get(issue.id, []), key=lambda m: m.iid)))
    result = list_page(ids, page)
    result.items = mr_finder.rows_by_ids(db, result.items)
    context = MergeRequestContext(project_id=project.id, namespace_id=project.namespace_id)
    return MergeRequestsOf(result, mr_finder.related_of(db, result.items), context)


def closed_by(
    db: Session, actor: Actor | None, settings: Settings, ident: str, iid: int, page: Page
) -> MergeRequestsOf:
    """GET …/issues/:iid/closed_by: the project's merge requests (open or merged) that close
    the issue, those the caller may read."""
    return _merge_requests_of(db, actor, settings, ident, iid, page, closing=True)


def related_merge_requests(
    db: Session, actor: Actor | None, settings: Settings, ident: str, iid: int, page: Page
) -> MergeRequestsOf:
    """GET …/issues/:iid/related_merge_requests: merge requests (open or merged, of projects the
    caller reads) that name or close the issue."""
    return _merge_requests_of(db, actor, settings, ident, iid, page, closing=False)


def close_by_merge_request(
    db: Session, actor: Actor, settings: Settings, s: MergeRequestSubject
) -> list[int]:
    """A merge into the project's default branch closes the issues its merge request closes
    (kiln.services.merge_requests.closing_issues), when the project's
    autoclose_referenced_issues is on, in the merge's transaction: those the merging user may
    read and update, with GitLab's "closed via merge request !N" note and state event. The
    ids of the issues closed."""
    if not s.project.project.autoclose_referenced_issues:
        return []
    mr = s.merge_request

    def how(project_id: int) -> str:
        here = project_id == mr.project_id
        return f"closed via merge request {f'!{mr.iid}' if here else f'{_full_path(s.project)}!{mr.iid}'}"

    return _close_named(db, actor, merge_requests.closing_issues(db, actor, settings, s), how)


def close_by_commit(
    db: Session, actor: Actor, settings: Settings, s: ProjectSubject, commit: Any
) -> list[int]:
    """A commit pushed to the default branch closes the issues its message closes (GitLab's
    closing pattern), when autoclose_referenced_issues is on: those its author may read and
    update, with "closed via commit <sha>" (the commit as the issue's project names it). The
    ids of the issues closed."""
    if not s.project.autoclose_referenced_issues:
        return []
    keys = merge_requests.closing_keys([commit.message], settings.external_url)
    if not keys:
        return []
    found = references.References(db, actor, settings.external_url, project=s)
    named = [(project, row) for _, project, row in found.named((references.ISSUE, key) for key in keys)]
    sha = str(commit.id)

    def how(project_id: int) -> str:
        return f"closed via commit {sha if project_id == s.project.id else f'{_full_path(s)}@{sha}'}"

    return _close_named(db, actor, named, how)


def _close_named(
    db: Session, actor: Actor, named: list[tuple[Any, Any]], how: Callable[[int], str]
) -> list[int]:
    """Close the open issues of `named` (kiln.references' project and row) the actor may
    update, each with the note `how(its project id)`; the ids of those closed."""
    closed = []
    for project, row in named:
        assignees = [actor.id] if row.assigned else []
        if row.state == CLOSED or not policy.may_update_issue(
            actor, project.subject, row.author_id, assignees
        ):
            continue
        issue = _locked(db, row.id)
        if issue.state == CLOSED:
            continue
        _close(db, actor, issue, how(project.id))
        issue.updated_at = _now()
        _event(db, actor, issue, "closed", "close", {"state_id": {"previous": OPENED, "current": CLOSED}})
        closed.append(issue.id)
    db.flush()
    return closed
