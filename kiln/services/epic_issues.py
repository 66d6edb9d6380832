"""The issues of an epic (GitLab's Epic Issues API): listed in their order (only those the
caller may see), assigned by the issue's global id (an issue sits in one epic at most, so it
leaves any other), moved among the others, and taken out. Assigning, moving and removing take
a Reporter of the epic's group; the issue's project must be in the epic's group or below it.
Each change keeps the epics' inherited dates (services.epics.refresh_dates)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from kiln import policy
from kiln.auth.actor import Actor
from kiln.db import transaction
from kiln.errors import BadRequest, Conflict, NotFound
from kiln.models import Epic, EpicIssue, Issue, IssueAssignee, Namespace, Project
from kiln.models.notes import EPIC, ISSUE
from kiln.pagination import TOTAL_LIMIT, Page, PageResult
from kiln.policy import Action, GroupSubject, ProjectSubject
from kiln.queries import epic_issues as finder
from kiln.queries import issues as issue_finder
from kiln.queries.epic_issues import LinkRow
from kiln.queries.issues import IssueRow, Related
from kiln.schemas.epic_issues import EpicIssueAssign, EpicIssueList, EpicIssueMove, EpicIssueRef
from kiln.services import epics, subjects, system_notes
from kiln.services.epics import OneEpic

NO_ISSUE = "No matching issue found. Make sure that you are adding a valid issue URL."
ASSIGNED = "Issue(s) already assigned"
CONFIDENTIAL_EPIC = (
    "Cannot assign a confidential epic to a non-confidential issue. Make the issue confidential and try again"
)
NOT_MOVED = "Issue could not be moved!"
LINK_NOT_FOUND = "404 Not found"


@dataclass(slots=True)
class EpicIssues:
    page: PageResult  # items: (LinkRow, IssueRow)
    related: Related


@dataclass(slots=True)
class OneLink:
    id: int
    relative_position: int | None
    epic: OneEpic
    issue: IssueRow
    related: Related


# ----------------------------------------------------------------------------- reading


def _visible(db: Session, actor: Actor | None, epic_id: int) -> list[tuple[LinkRow, IssueRow]]:
    """The epic's issues, in order, that the actor may read: four statements however many."""
    links = finder.links_of(db, epic_id)
    if not links:
        return []
    rows = subjects.readable_issues(
        db, actor, issue_finder.rows_by_ids(db, [link.issue_id for link in links])
    )
    return [(link, rows[link.issue_id]) for link in links if link.issue_id in rows]


def _page(found: list[tuple[LinkRow, IssueRow]], page: Page) -> PageResult:
    chunk = found[page.offset : page.offset + page.per_page]
    total = len(found) if len(found) <= TOTAL_LIMIT else None
    return PageResult(items=chunk, total=total, has_next=len(found) > page.offset + page.per_page)


def _listed(db: Session, actor: Actor | None, epic_id: int, page: Page) -> EpicIssues:
    result = _page(_visible(db, actor, epic_id), page)
    return EpicIssues(result, issue_finder.related_of(db, [row for _, row in result.items]))


def list_issues(db: Session, actor: Actor | None, q: EpicIssueList, page: Page) -> EpicIssues:
    s = subjects.epic(db, actor, q.id, q.epic_iid)
    return _listed(db, actor, s.epic.id, page)


def _link_view(
    db: Session, s: GroupSubject, link_id: int, position: int | None, epic_id: int, issue_id: int
) -> OneLink:
    row = issue_finder.row_by_id(db, issue_id)
    if row is None:
        raise NotFound("Issue")
    one = epics.one(db, s, epic_id)
    return OneLink(link_id, position, one, row, issue_finder.related_of(db, [row]))


# ----------------------------------------------------------------------------- writing


def _issue_subject(db: Session, actor: Actor, issue: Issue) -> ProjectSubject | None:
    """The issue's project as the actor stands in it, if they may read the issue."""
    s = subjects.find_project(db, actor, str(issue.project_id), rows=True)
    if s is None:
        return None
    assignees = list(db.scalars(select(IssueAssignee.user_id).where(IssueAssignee.issue_id == issue.id)))
    return s if policy.may_read_issue(actor, s, issue.confidential, issue.author_id, assignees) else None


def _issue_ref(db: Session, issue: Issue) -> str:
    project = db.get(Project, issue.project_id)
    namespace = db.get(Namespace, project.namespace_id) if project is not None else None
    path = f"{namespace.full_path}/{project.path}" if project is not None and namespace is not None else ""
    return f"{path}#{issue.iid}"


def _epic_ref(db: Session, epic: Epic, project_namespace_id: int) -> str:
    if epic.group_id == project_namespace_id:
        return f"&{epic.iid}"
    group = db.get(Namespace, epic.group_id)
    return f"{group.full_path if group is not None else ''}&{epic.iid}"


def _notes(
    db: Session, actor: Actor, epic: Epic, issue: Issue, *, added: bool, moved_from: Epic | None = None
) -> None:
    """GitLab's notes on the epic and on the issue when an issue joins or leaves an epic."""
    project = db.get(Project, issue.project_id)
    namespace_id = project.namespace_id if project is not None else 0
    issue_ref, epic_ref = _issue_ref(db, issue), _epic_ref(db, epic, namespace_id)
    epic_note = f"added issue {issue_ref}" if added else f"removed issue {issue_ref}"
    if moved_from is not None:
        issue_note = f"changed epic to {epic_ref}"
    else:
        issue_note = f"added to epic {epic_ref}" if added else f"removed from epic {epic_ref}"
    system_notes.add(
        db, actor, noteable_type=EPIC, noteable_id=epic.id, body=epic_note, group_id=epic.group_id
    )
    system_notes.add(
        db, actor, noteable_type=ISSUE, noteable_id=issue.id, body=issue_note, project_id=issue.project_id
    )


def assign_issue(db: Session, actor: Actor, p: EpicIssueAssign) -> OneLink:
    """Put an issue (by global id) into the epic, first in its order."""
    s = subjects.epic(db, actor, p.id, p.epic_iid, Action.CREATE_EPIC, rows=False)
    issue = db.get(Issue, p.issue_id)
    if issue is None:
        raise NotFound(message=LINK_NOT_FOUND)
    project_s = _issue_subject(db, actor, issue)
    if project_s is None or not epics.within(project_s.namespace, s.group.group):
        raise NotFound(message=NO_ISSUE)
    with transaction(db):
        epic = db.get(Epic, s.epic.id)
        assert epic is not None
        existing = db.scalars(select(EpicIssue).where(EpicIssue.issue_id == issue.id)).first()
        if existing is not None and existing.epic_id == epic.id:
            raise Conflict(ASSIGNED)
        if epic.confidential and not issue.confidential:
            raise Conflict(CONFIDENTIAL_EPIC)
        previous = None
        if existing is not None:
            previous = db.get(Epic, existing.epic_id)
            db.delete(existing)
            db.flush()
            if previous is not None:
                system_notes.add(
                    db,
                    actor,
                    noteable_type=EPIC,
                    noteable_id=previous.id,
                    body=f"removed issue {_issue_ref(db, issue)}",
                    group_id=previous.group_id,
                )
        lowest = db.scalar(select(func.min(EpicIssue.relative_position)).where(EpicIssue.epic_id == epic.id))
        link = EpicIssue(
            epic_id=epic.id,
            issue_id=issue.id,
            relative_position=(lowest if lowest is not None else 0) - epics.POSITION_GAP,
        )
        db.add(link)
        db.flush()
        _notes(db, actor, epic, issue, added=True, moved_from=previous)
        epics.refresh_dates(db, [epic.id, previous.id if previous is not None else None])
        ids = (link.id, link.relative_position, epic.id, issue.id)
    return _link_view(db, s.group, *ids)


def _link_of(db: Session, actor: Actor, epic_id: int, link_id: int) -> tuple[EpicIssue, Issue]:
    """The epic's link `link_id` whose issue the actor may read (404 otherwise)."""
    link = db.scalars(select(EpicIssue).where(EpicIssue.id == link_id, EpicIssue.epic_id == epic_id)).first()
    issue = db.get(Issue, link.issue_id) if link is not None else None
    if link is None or issue is None or _issue_subject(db, actor, issue) is None:
        raise NotFound(message=LINK_NOT_FOUND)
    return link, issue


def move_issue(db: Session, actor: Actor, p: EpicIssueMove, page: Page) -> EpicIssues:
    """Place an issue after the link `move_before_id` or before `move_after_id`; answers the
    epic's issues in their new order."""
    s = subjects.epic(db, actor, p.id, p.epic_iid, Action.CREATE_EPIC, rows=False)
    with transaction(db):
        link, _ = _link_of(db, actor, s.epic.id, p.epic_issue_id)
        ids = [row.id for row in finder.links_of(db, s.epic.id)]
        order = epics.reorder(ids, link.id, p.move_before_id, p.move_after_id)
        if order is None:
            raise BadRequest({"error": NOT_MOVED})
        for position, link_id in enumerate(order):
            db.execute(
                update(EpicIssue)
                .where(EpicIssue.id == link_id)
                .values(relative_position=position * epics.POSITION_GAP),
                execution_options={"synchronize_session": False},
            )
    return _listed(db, actor, s.epic.id, page)


def remove_issue(db: Session, actor: Actor, p: EpicIssueRef) -> OneLink:
    """Take an issue out of the epic; answers the link as it was."""
    s = subjects.epic(db, actor, p.id, p.epic_iid, Action.CREATE_EPIC, rows=False)
    with transaction(db):
        epic = db.get(Epic, s.epic.id)
        assert epic is not None
        link, issue = _link_of(db, actor, epic.id, p.epic_issue_id)
        ids = (link.id, link.relative_position, epic.id, issue.id)
        db.delete(link)
        db.flush()
        _notes(db, actor, epic, issue, added=False)
        epics.refresh_dates(db, [epic.id])
    return _link_view(db, s.group, *ids)
