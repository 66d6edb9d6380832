"""Milestones of projects and groups: listed with those of the groups above (and, for a
group, below), created with the scope's next iid, changed, closed and reopened, deleted (their
issues and merge requests lose them), promoted from a project to its group (their issues and
merge requests follow), with the issues and merge requests planned against them and a
burndown chart's events. Reading a project's takes its issues or merge requests open to
the caller, a group's only sight of the group; changing them takes a Reporter (GitLab's
admin_milestone). A milestone's title is unique across a project and its groups, and across
a group's whole hierarchy and its projects."""

from __future__ import annotations

import html
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Literal

import nh3
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from kiln import events, policy
from kiln.auth.actor import Actor
from kiln.db import transaction
from kiln.errors import BadRequest, NotFound
from kiln.models import Milestone
from kiln.models.base import utcnow
from kiln.models.issues import CLOSED
from kiln.models.milestones import ACTIVE
from kiln.models.milestones import CLOSED as MILESTONE_CLOSED
from kiln.models.notes import ISSUE, MERGE_REQUEST
from kiln.pagination import Page, PageResult
from kiln.policy import Action, GroupSubject, ProjectSubject
from kiln.queries import issues as issue_finder
from kiln.queries import merge_requests as merge_request_finder
from kiln.queries import milestones as finder
from kiln.queries.issues import IssueRow, Related
from kiln.queries.merge_requests import Related as MergeRequestRelated
from kiln.queries.milestones import ListScope, MilestoneRow
from kiln.queries.paging import list_page
from kiln.schemas.milestones import MilestoneCreate, MilestoneList, MilestoneUpdate
from kiln.services import epics, internal_ids, merge_request_events, resource_events, subjects

Kind = Literal["groups", "projects"]
Subject = ProjectSubject | GroupSubject

# GitLab answers a milestone missing from the route's project or group with Rails' bare 404.
NOT_FOUND = "404 Not found"
TITLE_TAKEN = "already being used for another group or project milestone."
TITLE_LIMIT = 255
MILESTONE = "Milestone"


@dataclass(slots=True)
class MilestoneIssues:
    """A page of issues with what their views need, and where they are shown (a project's
    milestone: the project and its namespace; a group's: the group) for their references."""

    page: PageResult  # items: IssueRow
    related: Related
    project_id: int | None
    namespace_id: int


@dataclass(slots=True)
class MilestoneMergeRequests:
    """A page of merge requests with what their views need, and where they are shown (as
    MilestoneIssues)."""

    page: PageResult  # items: MergeRequestRow
    related: MergeRequestRelated
    project_id: int | None
    namespace_id: int


@dataclass(slots=True)
class BurndownEvent:
    created_at: str
    weight: int | None
    action: str


# ----------------------------------------------------------------------------- subjects


def _subject(db: Session, actor: Actor | None, kind: Kind, ident: str, *, admin: bool = False) -> Subject:
    """The project or group, read (its milestones open to the actor) or to change them."""
    if kind == "groups":
        return subjects.group(
            db, actor, ident, Action.ADMIN_MILESTONES if admin else Action.READ_GROUP, rows=True
        )
    return subjects.project(
        db, actor, ident, Action.ADMIN_MILESTONES if admin else Action.READ_MILESTONE, rows=True
    )


def _owner(s: Subject) -> dict[str, int]:
    if isinstance(s, GroupSubject):
        return {"group_id": s.group.id}
    return {"project_id": s.project.id}


def _row(db: Session, s: Subject, milestone_id: int) -> MilestoneRow:
    """One of the subject's own milestones (a project's group milestones are its group's)."""
    row = finder.milestone_of(db, milestone_id, **_owner(s))
    if row is None:
        raise NotFound(message=NOT_FOUND)
    return row


def _find(db: Session, s: Subject, milestone_id: int) -> Milestone:
    """The subject's own milestone, for a write."""
    stmt = select(Milestone).where(Milestone.id == milestone_id)
    if isinstance(s, GroupSubject):
        stmt = stmt.where(Milestone.group_id == s.group.id)
    else:
        stmt = stmt.where(Milestone.project_id == s.project.id)
    found = db.scalars(stmt).first()
    if found is None:
        raise NotFound(message=NOT_FOUND)
    return found


# ----------------------------------------------------------------------------- reading


def list_milestones(db: Session, actor: Actor, kind: Kind, q: MilestoneList, page: Page) -> PageResult:
    """A project's milestones (with include_ancestors, its groups' too), or a group's (with
    its visible ancestors' and, include_descendants, its subgroups' and their projects');
    by due date, none last, newest first among equals. iids are ignored with ancestors."""
    s = _subject(db, actor, kind, q.id)
    if isinstance(s, ProjectSubject):
        ns = s.namespace
        groups = ns.ancestor_ids if q.ancestors and ns.is_group else None
        scope = ListScope(project_id=s.project.id, group_ids=groups)
    elif q.ancestors or q.include_descendants:
        g = s.group
        scope = ListScope(
            group_id=g.id,
            ancestor_ids=g.ancestor_ids if q.ancestors else [g.id],
            below=g.traversal if q.include_descendants else None,
        )
    else:
        scope = ListScope(group_id=s.group.id)
    frame: tuple[date, date] | None = None
    if q.start_date is not None and q.end_date is not None:
        frame = (q.start_date, q.end_date)
    if q.containing_date is not None:
        frame = (q.containing_date, q.containing_date)
    return finder.page_of(
        db,
        actor,
        scope,
        state=q.state,
        iids=None if q.ancestors else q.iids,
        title=q.title or None,
        search=q.search,
        search_title=q.search_title,
        updated_before=q.updated_before,
        updated_after=q.updated_after,
        frame=frame,
        page=page,
    )


def get_milestone(db: Session, actor: Actor, kind: Kind, ident: str, milestone_id: int) -> MilestoneRow:
    s = _subject(db, actor, kind, ident)
    return _row(db, s, milestone_id)


def milestone_issues(
    db: Session, actor: Actor, kind: Kind, ident: str, milestone_id: int, page: Page
) -> MilestoneIssues:
    """The milestone's issues the caller may read (a group milestone's across every project
    they see), by their labels' priority, then newest first."""
    s = _subject(db, actor, kind, ident)
    m = _row(db, s, milestone_id)
    if isinstance(s, ProjectSubject):
        where: tuple[int | None, int] = (s.project.id, s.namespace.id)
        if not policy.may(actor, Action.READ_ISSUE, s):
            # Milestones open through merge requests alone: no issue to show.
            return MilestoneIssues(list_page([], page), Related(), *where)
        found = finder.issue_page(
            db, actor, m.id, page, project_id=s.project.id, see_all=policy.sees_confidential(actor, s)
        )
    else:
        where = (None, s.group.id)
        found = finder.issue_page(db, actor, m.id, page)
    rows: list[IssueRow] = issue_finder.rows_by_ids(db, found.items)
    found.items = rows
    return MilestoneIssues(found, issue_finder.related_of(db, rows), *where)


def milestone_merge_requests(
    db: Session, actor: Actor, kind: Kind, ident: str, milestone_id: int, page: Page
) -> MilestoneMergeRequests:
    """The milestone's merge requests the caller may read (a group milestone's across every
    project whose merge requests they read), by their labels' priority, then newest first."""
    s = _subject(db, actor, kind, ident)
    m = _row(db, s, milestone_id)
    if isinstance(s, ProjectSubject):
        where: tuple[int | None, int] = (s.project.id, s.namespace.id)
        if not policy.may(actor, Action.READ_MERGE_REQUEST, s):
            # Milestones open through issues alone: no merge request to show.
            return MilestoneMergeRequests(list_page([], page), MergeRequestRelated(), *where)
        found = finder.merge_request_page(db, actor, m.id, page, project_id=s.project.id)
    else:
        where = (None, s.group.id)
        found = finder.merge_request_page(db, actor, m.id, page)
    return MilestoneMergeRequests(found, merge_request_finder.related_of(db, found.items), *where)


def burndown_events(
    db: Session, actor: Actor, kind: Kind, ident: str, milestone_id: int
) -> list[BurndownEvent]:
    """GitLab's burndown chart events: for each of the milestone's issues the caller may read
    (created by the chart's end: the due date, or today while it is ahead), its creation,
    then its closes and reopenings in order (a repeat of the same action left out), and for a
    closed issue with no close recorded a close at the start date. None without both dates."""
    s = _subject(db, actor, kind, ident)
    m = _row(db, s, milestone_id)
    if m.start_date is None or m.due_date is None:
        return []
    end = min(m.due_date, datetime.now(UTC).date())
    until = datetime.combine(end + timedelta(days=1), time.min, UTC)
    if isinstance(s, ProjectSubject):
        if not policy.may(actor, Action.READ_ISSUE, s):
            return []
        issues, changes = finder.burndown_rows(
            db, actor, m.id, until, project_id=s.project.id, see_all=policy.sees_confidential(actor, s)
        )
    else:
        issues, changes = finder.burndown_rows(db, actor, m.id, until)
    by_issue: dict[int, list[Any]] = {}
    for change in changes:
        by_issue.setdefault(change.issue_id, []).append(change)
    out: list[BurndownEvent] = []
    legacy_close = f"{m.start_date.isoformat()}T00:00:00.000Z"
    for issue in issues:
        out.append(BurndownEvent(issue.created_at, issue.weight, "created"))
        previous = None
        closed_recorded = False
        for change in by_issue.get(issue.id, ()):
            if change.action == previous:
                continue
            previous = change.action
            closed_recorded = closed_recorded or change.action == CLOSED
            out.append(BurndownEvent(change.created_at, issue.weight, change.action))
        if issue.state == CLOSED and not closed_recorded:
            out.append(BurndownEvent(legacy_close, issue.weight, CLOSED))
    return out


# ----------------------------------------------------------------------------- validation


def clean_title(title: str) -> str:
    """GitLab keeps a milestone's title as text: markup is taken out, entities decoded."""
    return html.unescape(nh3.clean(title, tags=set())).strip()


def _ruby_hash(errors: dict[str, list[str]]) -> str:
    """The model's errors as GitLab's message shows them (Ruby's Hash#inspect)."""
    parts = []
    for field, messages in errors.items():
        quoted = ", ".join('"' + m.replace("\\", "\\\\").replace('"', '\\"') + '"' for m in messages)
        parts.append(f":{field}=>[{quoted}]")
    return "{" + ", ".join(parts) + "}"


def _date_errors(start: date | None, due: date | None) -> dict[str, list[str]]:
    if start is not None and due is not None and due <= start:
        return {"due_date": ["must be greater than start date"]}
    return {}


def _title_errors(title: str | None) -> dict[str, list[str]]:
    if not title:
        return {"title": ["can't be blank"]}
    if len(title) > TITLE_LIMIT:
        return {"title": [f"is too long (maximum is {TITLE_LIMIT} characters)"]}
    return {}


def _title_taken(db: Session, s: Subject, title: str, except_id: int | None = None) -> bool:
    """A project milestone's title against the project's and its groups' milestones; a group
    milestone's against its whole hierarchy's and every project in the group."""
    if isinstance(s, ProjectSubject):
        groups = s.namespace.ancestor_ids if s.namespace.is_group else []
        return finder.title_taken(
            db, title, project_ids=[s.project.id], group_ids=groups, except_id=except_id
        )
    g = s.group
    hierarchy = sorted({*g.ancestor_ids, *finder.descendant_group_ids(db, g.traversal)})
    return finder.title_taken(
        db, title, project_ids=finder.projects_in_tree(g.traversal), group_ids=hierarchy, except_id=except_id
    )


def _failed(verb: str, errors: dict[str, list[str]]) -> BadRequest:
    return BadRequest(f"Failed to {verb} milestone {_ruby_hash(errors)}", raw=True)


def _flush_title(db: Session, verb: str) -> None:
    """Write the milestone; a title another writer took since it was checked (the database's
    unique title per project or group) is the same 400 as one taken before."""
    try:
        db.flush()
    except IntegrityError:
        raise _failed(verb, {"title": [TITLE_TAKEN]}) from None


def _record(db: Session, actor: Actor, s: Subject, action: str, m: Milestone) -> None:
    """A project milestone's event (GitLab records none for group milestones)."""
    if isinstance(s, ProjectSubject):
        events.record(
            db,
            action,
            project_id=s.project.id,
            actor=actor,
            target_type=MILESTONE,
            target_id=m.id,
            data={"iid": m.iid, "title": m.title},
        )


# ----------------------------------------------------------------------------- changing


def create_milestone(db: Session, actor: Actor, kind: Kind, p: MilestoneCreate) -> MilestoneRow:
    s = _subject(db, actor, kind, p.id, admin=True)
    title = clean_title(p.title)
    errors = {**_date_errors(p.start_date, p.due_date), **_title_errors(title)}
    with transaction(db):
        if "title" not in errors and _title_taken(db, s, title):
            errors["title"] = [TITLE_TAKEN]
        if errors:
            raise _failed("create", errors)
        if isinstance(s, GroupSubject):
            iid = internal_ids.next_iid(db, "group_milestones", s.group.id)
        else:
            iid = internal_ids.next_iid(db, "milestones", s.project.id)
        m = Milestone(
            iid=iid,
            title=title,
            description=p.description,
            start_date=p.start_date,
            due_date=p.due_date,
            state=ACTIVE,
            **_owner(s),
        )
        db.add(m)
        _flush_title(db, "create")
        _record(db, actor, s, "created", m)
        milestone_id = m.id
    return _row(db, s, milestone_id)


def update_milestone(db: Session, actor: Actor, kind: Kind, p: MilestoneUpdate) -> MilestoneRow:
    """Title, description and dates as given (null clears a description or a date; a blank
    title is ignored, as GitLab's), and `state_event` close or activate. Nothing is written
    when any of it is invalid."""
    s = _subject(db, actor, kind, p.id, admin=True)
    given = p.given()
    with transaction(db):
        m = _find(db, s, p.milestone_id)
        title = clean_title(p.title) if p.title is not None else ""
        start = p.start_date if "start_date" in given else m.start_date
        due = p.due_date if "due_date" in given else m.due_date
        errors = _date_errors(start, due)
        if title and title != m.title:
            errors.update(_title_errors(title))
            if "title" not in errors and _title_taken(db, s, title, except_id=m.id):
                errors["title"] = [TITLE_TAKEN]
        if errors:
            raise _failed("update", errors)
        if title:
            m.title = title
        if "description" in given:
            m.description = p.description
        m.start_date, m.due_date = start, due
        if p.state_event == "close" and m.state == ACTIVE:
            m.state = MILESTONE_CLOSED
            _record(db, actor, s, "closed", m)
        elif p.state_event == "activate" and m.state == MILESTONE_CLOSED:
            m.state = ACTIVE
            _record(db, actor, s, "reopened", m)
        _flush_title(db, "update")
        milestone_id = m.id
        if "start_date" in given or "due_date" in given:
            epics.refresh_dates(db, finder.planning_epic_ids(db, milestone_id))
    return _row(db, s, milestone_id)


def _release_issues(db: Session, actor: Actor, milestone_id: int) -> None:
    """The milestone's issues lose it, each with its milestone event and an issue update."""
    for issue_id, iid, project_id, state, confidential in finder.release_issues(db, milestone_id, utcnow()):
        resource_events.milestone_changed(db, actor, ISSUE, issue_id, None, milestone_id, state)
        events.record(
            db,
            "updated",
            project_id=project_id,
            actor=actor,
            target_type="Issue",
            target_id=issue_id,
            data={
                "hook": "confidential_issue" if confidential else "issue",
                "hook_action": "update",
                "iid": iid,
                "changes": {"milestone_id": {"previous": milestone_id, "current": None}},
            },
        )


def _release_merge_requests(db: Session, actor: Actor, milestone_id: int) -> None:
    """The milestone's merge requests lose it, each with its milestone event and a merge
    request update (GitLab's DestroyService runs MergeRequests::UpdateService on each)."""
    for mr in finder.planned_merge_requests(db, milestone_id):
        mr.milestone_id = None
        mr.updated_at = utcnow()
        resource_events.milestone_changed(db, actor, MERGE_REQUEST, mr.id, None, milestone_id, mr.state)
        merge_request_events.record(
            db, actor, mr, "update", changes={"milestone_id": {"previous": milestone_id, "current": None}}
        )
    db.flush()


def delete_milestone(db: Session, actor: Actor, kind: Kind, ident: str, milestone_id: int) -> None:
    s = _subject(db, actor, kind, ident, admin=True)
    with transaction(db):
        m = _find(db, s, milestone_id)
        planning = finder.planning_epic_ids(db, m.id)
        _release_issues(db, actor, m.id)
        _release_merge_requests(db, actor, m.id)
        _record(db, actor, s, "destroyed", m)
        db.flush()
        db.delete(m)
        db.flush()
        epics.refresh_dates(db, planning)


def promote_milestone(db: Session, actor: Actor, ident: str, milestone_id: int) -> MilestoneRow:
    """A project milestone becomes its group's, with the group's next iid: the milestones of
    the same title in the group's projects merge into it, their issues keep it (GitLab's
    PromoteService). The caller changes milestones in both the project and the group."""
    s = subjects.project(db, actor, ident, Action.ADMIN_MILESTONES, rows=True)
    if not s.namespace.is_group:
        raise BadRequest("Promotion failed - Project does not belong to a group.", raw=True)
    g = subjects.group(db, actor, str(s.namespace.id), Action.ADMIN_MILESTONES, rows=True)
    with transaction(db):
        m = _find(db, s, milestone_id)
        siblings = finder.direct_project_ids(db, g.group.id)
        merged = finder.same_titled(db, m.title, siblings)
        promoted = Milestone(
            iid=internal_ids.next_iid(db, "group_milestones", g.group.id),
            group_id=g.group.id,
            title=m.title,
            description=m.description,
            start_date=m.start_date,
            due_date=m.due_date,
            state=m.state,
        )
        db.add(promoted)
        db.flush()
        finder.move_planned(db, siblings, merged, promoted.id)
        promoted_id = promoted.id
    return _row(db, g, promoted_id)
