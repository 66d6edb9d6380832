"""Epics (GitLab's Epics and Epic Links APIs): a group's plans, listed with those of its
subgroups, each holding issues (epic_issues) and child epics up to seven levels deep.

Reading takes sight of the group while the epics feature is on for it (403 otherwise), and a
confidential epic is only for Reporters and up and its author; creating and changing epics
takes a Reporter, deleting one its group's Owner. Start and due dates are fixed by hand or
inherited (the earliest start and latest due date of the milestones of the epic's issues and
of its child epics), and kept stored: every write that changes what they come from calls
`refresh_dates`, which walks up to the top of the tree."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from kiln import events, policy
from kiln.auth.actor import Actor
from kiln.db import transaction
from kiln.entities.epics import Related, Seen
from kiln.errors import Conflict, KilnError, NotFound, ValidationFailed
from kiln.models import (
    Epic,
    EpicIssue,
    Issue,
    Milestone,
    Namespace,
    Todo,
)
from kiln.models.base import utcnow
from kiln.models.epics import CLOSED, OPENED
from kiln.models.namespaces import ancestor_ids
from kiln.models.notes import EPIC
from kiln.models.todos import MARKED
from kiln.pagination import Page, PageResult
from kiln.policy import Action, GroupSubject
from kiln.queries import epics as finder
from kiln.queries import issuables as issuable_finder
from kiln.queries import users as user_finder
from kiln.queries.epics import EpicRow
from kiln.queries.paging import offset_page
from kiln.schemas.epics import (
    ChildEpicCreate,
    ChildEpicMove,
    ChildEpicRef,
    ChildEpics,
    EpicCreate,
    EpicList,
    EpicUpdate,
)
from kiln.services import (
    features,
    internal_ids,
    issuables,
    label_links,
    mentions,
    resource_events,
    subjects,
    subscriptions,
    system_notes,
    todos,
)
from kiln.services.label_links import LabelScope

MAX_DEPTH = 7
# Room left between neighbours when positions are handed out again.
POSITION_GAP = 1024

NO_EPIC = "No matching epic found. Make sure that you are adding a valid epic URL."
ITSELF = "This epic cannot be added. An epic cannot be added to itself."
ALREADY_CHILD = "This epic cannot be added. It is already assigned to the parent epic."
ANCESTOR = "This epic cannot be added. It is already an ancestor of the parent epic."
OTHER_GROUP = (
    "This epic cannot be added. An epic must belong to the same group or subgroup as its parent epic."
)
TOO_DEEP = (
    f"This epic cannot be added. One or more epics would exceed the maximum depth ({MAX_DEPTH}) "
    "from its most distant ancestor."
)
CONFIDENTIAL_PARENT = "A non-confidential epic cannot be assigned to a confidential parent epic"
PUBLIC_ISSUES = "Cannot make the epic confidential if it contains non-confidential issues"
PUBLIC_CHILDREN = "Cannot make the epic confidential if it contains non-confidential child epics"
NO_CHILD = "No Epic found for given params"


@dataclass(slots=True)
class Epics:
    """A page of epics with what their views show besides, seen from the listed group."""

    page: PageResult  # items: EpicRow
    related: Related
    seen: Seen


@dataclass(slots=True)
class OneEpic:
    """One epic to render; `subscribed` only for single-epic answers."""

    row: EpicRow
    related: Related
    seen: Seen
    subscribed: bool | None = None


@dataclass(slots=True)
class ChildList:
    """An epic's children the caller may read, in order."""

    rows: list[EpicRow]
    related: Related
    seen: Seen


@dataclass(slots=True)
class MarkedTodo:
    """A to-do just marked, with the group, the author and the epic its view shows."""

    todo: Todo
    group: Any
    author: Any
    epic: OneEpic


@dataclass(slots=True)
class LinkedChild:
    """A child epic just made, with its parent (GitLab's LinkedEpic view)."""

    row: EpicRow
    parent: EpicRow
    has_children: bool
    has_issues: bool


class LinkRefused(Exception):
    """A parent-child link GitLab refuses: its message and the status the links API answers."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


# ----------------------------------------------------------------------------- reading


def seen_from(s: GroupSubject) -> Seen:
    return Seen(s.group.id, s.group.full_path)


def related_of(db: Session, rows: list[EpicRow]) -> Related:
    """Labels and authors of `rows`: two statements, whatever their number."""
    if not rows:
        return Related()
    author_ids = list(dict.fromkeys(r.author_id for r in rows if r.author_id is not None))
    users = {u.id: u for u in user_finder.rows_by_ids(db, author_ids)}
    return Related(labels=finder.labels_of(db, [r.id for r in rows]), users=users)


def _standings(
    db: Session, actor: Actor | None, group: Any, *, descendants: bool, ancestors: bool
) -> tuple[list[int], list[int]]:
    """Of the group's hierarchy: the groups whose epics the actor may read, and those whose
    confidential epics too."""
    above = ancestor_ids(group.traversal)[:-1] if ancestors else []
    readable: list[int] = []
    confidential: list[int] = []
    found = finder.hierarchy(
        db, group, actor.id if actor is not None else None, descendants=descendants, ancestor_ids=above
    )
    for ns, level, related in found:
        standing = GroupSubject(group=ns, level=level, related=related)
        if policy.may(actor, Action.READ_EPIC, standing):
            readable.append(ns.id)
            if policy.sees_confidential(actor, standing):
                confidential.append(ns.id)
    return readable, confidential


def list_epics(db: Session, actor: Actor | None, q: EpicList, page: Page) -> Epics:
    """The group's epics with its descendants' (and ancestors' when asked) that the actor may
    read; `iids` looks in the group alone, as GitLab does."""
    s = subjects.epics_group(db, actor, q.id)
    only_here = bool(q.iids)
    readable, confidential = _standings(
        db,
        actor,
        s.group,
        descendants=q.include_descendant_groups and not only_here,
        ancestors=q.include_ancestor_groups and not only_here,
    )
    restricted = set(confidential) != set(readable)
    stmt = finder.listing(q, restricted=restricted, signed_in=actor is not None)
    values = finder.listing_params(readable, confidential, actor.id if actor is not None else None)
    result = offset_page(db, stmt, page, core=True, params=values)
    result.items = [EpicRow._make(row) for row in result.items]
    return Epics(result, related_of(db, result.items), seen_from(s))


def one(db: Session, s: GroupSubject, epic_id: int, *, subscribed: bool | None = None) -> OneEpic:
    row = finder.row_by_id(db, epic_id)
    if row is None:
        raise NotFound("Epic")
    return OneEpic(row, related_of(db, [row]), seen_from(s), subscribed)


def is_subscribed(db: Session, actor: Actor | None, epic: Epic) -> bool:
    """The caller's choice, else whether they take part (wrote it or a note on it)."""
    if actor is None:
        return False
    participant = epic.author_id == actor.id or finder.commented(db, epic.id, actor.id)
    return subscriptions.is_subscribed(db, actor.id, EPIC, epic.id, participant=participant)


def get_epic(db: Session, actor: Actor | None, ident: str, iid: int) -> OneEpic:
    s = subjects.epic(db, actor, ident, iid)
    return one(db, s.group, s.epic.id, subscribed=is_subscribed(db, actor, s.epic))


def _readable_children(db: Session, actor: Actor | None, epic: Epic, group: Any) -> list[EpicRow]:
    """The epic's children the actor may read (they may sit in subgroups hidden from them)."""
    rows = finder.children_of(db, epic.id)
    if not rows:
        return rows
    readable, confidential = _standings(db, actor, group, descendants=True, ancestors=False)
    mine = actor.id if actor is not None else None
    return [
        r
        for r in rows
        if r.group_id in readable
        and (not r.confidential or r.group_id in confidential or r.author_id == mine)
    ]


def list_children(db: Session, actor: Actor | None, p: ChildEpics) -> ChildList:
    s = subjects.epic(db, actor, p.id, p.epic_iid)
    rows = _readable_children(db, actor, s.epic, s.group.group)
    return ChildList(rows, related_of(db, rows), seen_from(s.group))


# ----------------------------------------------------------------------------- validation


def _ancestors(db: Session, epic: Epic) -> list[Epic]:
    """The epic's parent, its parent's parent, … (at most the depth the tree allows, and a
    loop in stored data ends the walk)."""
    out: list[Epic] = []
    seen = {epic.id}
    current = epic
    while current.parent_id is not None and current.parent_id not in seen and len(out) <= MAX_DEPTH:
        parent = db.get(Epic, current.parent_id)
        if parent is None:
            break
        out.append(parent)
        seen.add(parent.id)
        current = parent
    return out


def _height(db: Session, epic_id: int | None) -> int:
    """Levels of the subtree under (and including) an epic; 1 for a new epic."""
    if epic_id is None:
        return 1
    level, height, seen = [epic_id], 1, {epic_id}
    while level and height <= MAX_DEPTH:
        below = [i for i in db.scalars(select(Epic.id).where(Epic.parent_id.in_(level))) if i not in seen]
        if not below:
            break
        seen.update(below)
        level = below
        height += 1
    return height


def _group_of(db: Session, group_id: int) -> Namespace:
    found = db.get(Namespace, group_id)
    assert found is not None
    return found


def within(inner: Any, outer: Any) -> bool:
    """Whether the group `inner` is `outer` or below it."""
    return bool(inner.id == outer.id or inner.traversal.startswith(outer.traversal.rstrip("/") + "/"))


def _may_read(db: Session, actor: Actor | None, epic: Epic) -> GroupSubject | None:
    """The epic's group as the actor stands in it, if they may read the epic; else None."""
    s = subjects.find_group(db, actor, str(epic.group_id))
    if s is None or not features.enabled(db, features.EPICS, group=s.group):
        return None
    return s if policy.may_read_epic(actor, s, epic.confidential, epic.author_id) else None


def check_link(
    db: Session, actor: Actor | None, parent: Epic | None, child: Epic | None, child_group: Any
) -> None:
    """Refuse linking `child` (None: a new epic in `child_group`) under `parent` as GitLab
    does: a parent the actor may not link under, itself, its own child already, one of its
    own ancestors, a parent in a group that is not its own or above it, or a tree deeper than
    seven levels."""
    if parent is None:
        raise LinkRefused(NO_EPIC, 404)
    s = _may_read(db, actor, parent)
    if s is None or not policy.may(actor, Action.CREATE_EPIC, s):
        raise LinkRefused(NO_EPIC, 404)
    above = _ancestors(db, parent)
    if child is not None:
        if child.id == parent.id:
            raise LinkRefused(ITSELF, 409)
        if child.parent_id == parent.id:
            raise LinkRefused(ALREADY_CHILD, 409)
        if any(a.id == child.id for a in above):
            raise LinkRefused(ANCESTOR, 409)
    if not within(child_group, s.group):
        raise LinkRefused(OTHER_GROUP, 409)
    if len(above) + 1 + _height(db, child.id if child is not None else None) > MAX_DEPTH:
        raise LinkRefused(TOO_DEEP, 409)
    confidential = child.confidential if child is not None else False
    if parent.confidential and not confidential:
        raise LinkRefused(CONFIDENTIAL_PARENT, 409)


def _parent_for(
    db: Session, actor: Actor, parent_id: int, child: Epic | None, group: Any, confidential: bool
) -> Epic:
    """The parent named by `parent_id` on a create or an update, or the 400 GitLab answers."""
    parent = db.get(Epic, parent_id)
    try:
        # Readable first: a confidential parent hidden from the caller is "No epic", not named.
        check_link(db, actor, parent, child, group)
        if child is None and parent is not None and parent.confidential and not confidential:
            raise LinkRefused(CONFIDENTIAL_PARENT, 409)
    except LinkRefused as refused:
        key = "confidential" if refused.message == CONFIDENTIAL_PARENT else "base"
        raise ValidationFailed({key: [refused.message]}) from None
    assert parent is not None
    return parent


# ----------------------------------------------------------------------------- dates


def _inherited(db: Session, epic_id: int) -> tuple[date | None, int | None, date | None, int | None]:
    """(start, its milestone, due, its milestone) inherited from the milestones of the epic's
    issues and from its child epics (a child's date leaves the milestone unnamed)."""
    milestones = db.execute(
        select(Milestone.id, Milestone.start_date, Milestone.due_date)
        .join(Issue, Issue.milestone_id == Milestone.id)
        .join(EpicIssue, EpicIssue.issue_id == Issue.id)
        .where(EpicIssue.epic_id == epic_id)
    ).all()
    children = db.execute(select(Epic.start_date, Epic.due_date).where(Epic.parent_id == epic_id)).all()
    start: tuple[date, int | None] | None = None
    due: tuple[date, int | None] | None = None
    for ms_id, ms_start, ms_due in milestones:
        if ms_start is not None and (start is None or ms_start < start[0]):
            start = (ms_start, ms_id)
        if ms_due is not None and (due is None or ms_due > due[0]):
            due = (ms_due, ms_id)
    for child_start, child_due in children:
        if child_start is not None and (start is None or child_start < start[0]):
            start = (child_start, None)
        if child_due is not None and (due is None or child_due > due[0]):
            due = (child_due, None)
    return (
        start[0] if start else None,
        start[1] if start else None,
        due[0] if due else None,
        due[1] if due else None,
    )


def refresh_dates(db: Session, epic_ids: Iterable[int | None]) -> None:
    """Store each epic's composite start and due dates (fixed, else inherited) and those of
    the epics above it whose dates follow; in the caller's transaction. Writes that change
    an epic's issues, its children, their milestones or its fixed dates call this."""
    pending = [i for i in dict.fromkeys(epic_ids) if i is not None]
    done: set[int] = set()
    while pending:
        epic_id = pending.pop(0)
        if epic_id in done:
            continue
        done.add(epic_id)
        epic = db.get(Epic, epic_id)
        if epic is None:
            continue
        start, start_ms, due, due_ms = _inherited(db, epic_id)
        new_start = epic.start_date_fixed if epic.start_date_is_fixed else start
        new_due = epic.due_date_fixed if epic.due_date_is_fixed else due
        changed = (new_start, new_due) != (epic.start_date, epic.due_date)
        epic.start_date, epic.due_date = new_start, new_due
        epic.start_date_sourcing_milestone_id, epic.due_date_sourcing_milestone_id = start_ms, due_ms
        db.flush()
        if changed and epic.parent_id is not None:
            pending.append(epic.parent_id)


# ----------------------------------------------------------------------------- writing


def _scope(group: Any) -> LabelScope:
    """Labels an epic of `group` may carry: those of the group and the groups above it."""
    return LabelScope(project_id=None, group_ids=ancestor_ids(group.traversal))


def _event(
    db: Session, actor: Actor, epic: Epic, action: str, hook_action: str, changes: dict[str, Any]
) -> None:
    data: dict[str, Any] = {
        "hook": "epic",
        "hook_action": hook_action,
        "iid": epic.iid,
        "group_id": epic.group_id,
    }
    if changes:
        data["changes"] = changes
    events.record(db, action, project_id=None, actor=actor, target_type="Epic", target_id=epic.id, data=data)


def _note(db: Session, actor: Actor, epic: Epic, body: str) -> None:
    system_notes.add(db, actor, noteable_type=EPIC, noteable_id=epic.id, body=body, group_id=epic.group_id)


def _reference(db: Session, epic: Epic, from_group_id: int) -> str:
    """`&iid` within its own group, `group/path&iid` from another."""
    if epic.group_id == from_group_id:
        return f"&{epic.iid}"
    return f"{_group_of(db, epic.group_id).full_path}&{epic.iid}"


def _relation_notes(db: Session, actor: Actor, parent: Epic, child: Epic, *, added: bool) -> None:
    """GitLab's notes on both ends of a parent-child link."""
    child_ref, parent_ref = _reference(db, child, parent.group_id), _reference(db, parent, child.group_id)
    if added:
        _note(db, actor, parent, f"added epic {child_ref} as child epic")
        _note(db, actor, child, f"added epic {parent_ref} as parent epic")
    else:
        _note(db, actor, parent, f"removed child epic {child_ref}")
        _note(db, actor, child, f"removed parent epic {parent_ref}")


def _first_position(db: Session, parent_id: int) -> int:
    lowest = db.scalar(select(func.min(Epic.relative_position)).where(Epic.parent_id == parent_id))
    return (lowest if lowest is not None else 0) - POSITION_GAP


def _link(db: Session, actor: Actor, parent: Epic, child: Epic) -> None:
    """Make `child` the first child of `parent`, leaving its previous parent."""
    previous = child.parent_id
    if previous is not None:
        old = db.get(Epic, previous)
        if old is not None:
            _relation_notes(db, actor, old, child, added=False)
    child.relative_position = _first_position(db, parent.id)
    child.parent_id = parent.id
    db.flush()
    _relation_notes(db, actor, parent, child, added=True)
    refresh_dates(db, [previous, parent.id])


def _new_epic(
    db: Session,
    actor: Actor,
    s: GroupSubject,
    *,
    title: str,
    description: str | None,
    confidential: bool,
    labels: list[str] | None,
    dates: dict[str, date | None],
    start_fixed: bool | None,
    due_fixed: bool | None,
    parent: Epic | None,
    created_at: Any = None,
) -> Epic:
    """Insert an epic with its labels, parent and dates, in the caller's transaction."""
    group = s.group
    epic = Epic(
        iid=internal_ids.next_iid(db, "epics", group.id),
        group_id=group.id,
        author_id=actor.id,
        title=title,
        description=description,
        confidential=confidential,
        state=OPENED,
        start_date_is_fixed=bool(start_fixed),
        due_date_is_fixed=bool(due_fixed),
        start_date_fixed=dates.get("start_date_fixed"),
        due_date_fixed=dates.get("due_date_fixed"),
    )
    if created_at is not None:
        epic.created_at = epic.updated_at = created_at
    db.add(epic)
    db.flush()
    if labels:
        found = label_links.resolve(
            db, _scope(group), labels, create=policy.may(actor, Action.ADMIN_LABELS, s)
        )
        label_links.set_labels(db, actor, EPIC, epic.id, [label.id for label in found])
    if parent is not None:
        _link(db, actor, parent, epic)
    refresh_dates(db, [epic.id])
    mentions.record(db, actor, description, target_type=EPIC, target_id=epic.id, group_id=group.id)
    _event(db, actor, epic, "opened", "open", {})
    return epic


def _confidential_allowed(db: Session, group: Any) -> bool:
    return features.enabled(db, features.CONFIDENTIAL_EPICS, group=group)


def create_epic(db: Session, actor: Actor, p: EpicCreate) -> OneEpic:
    s = subjects.epics_group(db, actor, p.id, Action.CREATE_EPIC, rows=False)
    issuables.validate_text(p.title, p.description, creating=True)
    confidential = bool(p.confidential) if _confidential_allowed(db, s.group) else False
    created_at = p.created_at if p.created_at is not None and policy.may_backdate(actor, s) else None
    with transaction(db):
        parent = None
        if p.parent_id is not None:
            parent = _parent_for(db, actor, p.parent_id, None, s.group, confidential)
        epic = _new_epic(
            db,
            actor,
            s,
            title=p.title,
            description=p.description,
            confidential=confidential,
            labels=p.labels,
            dates=p.fixed_dates(),
            start_fixed=p.start_date_is_fixed,
            due_fixed=p.due_date_is_fixed,
            parent=parent,
            created_at=created_at,
        )
        epic_id = epic.id
    return one(db, s, epic_id)


def _confidentiality_problem(db: Session, epic: Epic, confidential: bool) -> str | None:
    """Why the epic may not become (non-)confidential, as GitLab words it."""
    if confidential:
        public_issue = db.scalar(
            select(Issue.id)
            .join(EpicIssue, EpicIssue.issue_id == Issue.id)
            .where(EpicIssue.epic_id == epic.id, Issue.confidential.is_(False))
            .limit(1)
        )
        if public_issue is not None:
            return PUBLIC_ISSUES
        public_child = db.scalar(
            select(Epic.id).where(Epic.parent_id == epic.id, Epic.confidential.is_(False)).limit(1)
        )
        if public_child is not None:
            return PUBLIC_CHILDREN
        return None
    if epic.parent_id is not None:
        parent = db.get(Epic, epic.parent_id)
        if parent is not None and parent.confidential:
            return CONFIDENTIAL_PARENT
    return None


def _label_titles(db: Session, ids: Iterable[int]) -> dict[int, str]:
    return issuable_finder.label_titles(db, list(ids))


def update_epic(db: Session, actor: Actor, p: EpicUpdate) -> OneEpic:
    s = subjects.epic(db, actor, p.id, p.epic_iid, Action.CREATE_EPIC, rows=False)
    given = p.given()
    issuables.validate_text(p.title if "title" in given else None, p.description, creating=False)
    group = s.group.group
    with transaction(db):
        epic = db.get(Epic, s.epic.id)
        assert epic is not None
        changes: dict[str, Any] = {}
        if p.title is not None and p.title != epic.title:
            changes["title"] = {"previous": epic.title, "current": p.title}
            _note(db, actor, epic, f"changed title from **{epic.title}** to **{p.title}**")
            epic.title = p.title
        if p.description is not None and p.description != (epic.description or ""):
            previous = epic.description
            changes["description"] = {"previous": previous, "current": p.description}
            _note(db, actor, epic, "changed the description")
            epic.description = p.description
            epic.last_edited_at, epic.last_edited_by_id = utcnow(), actor.id
        if (
            p.confidential is not None
            and p.confidential != epic.confidential
            and _confidential_allowed(db, group)
        ):
            problem = _confidentiality_problem(db, epic, p.confidential)
            if problem is not None:
                raise ValidationFailed({"confidential": [problem]})
            changes["confidential"] = {"previous": epic.confidential, "current": p.confidential}
            epic.confidential = p.confidential
            _note(
                db,
                actor,
                epic,
                "made the epic confidential" if p.confidential else "made the epic visible to everyone",
            )
        if "description" in changes:
            # After a change of confidentiality: only those who may read the epic as it ends
            # are given a to-do.
            db.flush()
            mentions.record(
                db,
                actor,
                p.description,
                target_type=EPIC,
                target_id=epic.id,
                group_id=epic.group_id,
                previous_text=changes["description"]["previous"],
            )
        _update_labels(db, actor, epic, s.group, p, changes)
        before = (epic.start_date, epic.due_date)
        _update_dates(epic, p, changes)
        if p.parent_id is not None:
            parent = _parent_for(db, actor, p.parent_id, epic, group, epic.confidential)
            changes["parent_id"] = {"previous": epic.parent_id, "current": parent.id}
            _link(db, actor, parent, epic)
        action, hook_action = "updated", "update"
        if p.state_event == "close" and epic.state != CLOSED:
            epic.state, epic.closed_at, epic.closed_by_id = CLOSED, utcnow(), actor.id
            resource_events.state_changed(db, actor, EPIC, epic.id, "closed")
            todos.done_for_target(db, EPIC, epic.id)
            changes["state"] = {"previous": OPENED, "current": CLOSED}
            action, hook_action = "closed", "close"
        elif p.state_event == "reopen" and epic.state != OPENED:
            epic.state, epic.closed_at, epic.closed_by_id = OPENED, None, None
            resource_events.state_changed(db, actor, EPIC, epic.id, "reopened")
            changes["state"] = {"previous": CLOSED, "current": OPENED}
            action, hook_action = "reopened", "reopen"
        if p.updated_at is not None and policy.may_backdate(actor, s.group):
            epic.updated_at = p.updated_at
        elif changes:
            epic.updated_at = utcnow()
        db.flush()
        refresh_dates(db, [epic.id])
        _date_notes(db, actor, epic, before)
        if changes:
            _event(db, actor, epic, action, hook_action, changes)
        epic_id = epic.id
    return one(db, s.group, epic_id)


def _update_labels(
    db: Session, actor: Actor, epic: Epic, s: GroupSubject, p: EpicUpdate, changes: dict[str, Any]
) -> None:
    given = p.given()
    if not given & {"labels", "add_labels", "remove_labels"}:
        return
    current = label_links.label_ids_of(db, EPIC, epic.id)
    wanted = issuables.wanted_labels(db, actor, s, _scope(s.group), current, p, given)
    added, removed = label_links.set_labels(db, actor, EPIC, epic.id, wanted)
    if added or removed:
        titles = _label_titles(db, [*current, *wanted])
        changes["labels"] = {
            "previous": [titles.get(i) for i in current],
            "current": [titles.get(i) for i in wanted],
        }


def _update_dates(epic: Epic, p: EpicUpdate, changes: dict[str, Any]) -> None:
    fixed = p.fixed_dates()
    for name in ("start_date_fixed", "due_date_fixed"):
        if name in fixed and fixed[name] != getattr(epic, name):
            changes[name] = {"previous": _day(getattr(epic, name)), "current": _day(fixed[name])}
            setattr(epic, name, fixed[name])
    for name in ("start_date_is_fixed", "due_date_is_fixed"):
        value = getattr(p, name)
        if value is not None and value != getattr(epic, name):
            changes[name] = {"previous": getattr(epic, name), "current": value}
            setattr(epic, name, value)


def _date_notes(db: Session, actor: Actor, epic: Epic, before: tuple[date | None, date | None]) -> None:
    """GitLab's notes when an epic's start or due date changes."""
    for kind, old, new in (
        ("start date", before[0], epic.start_date),
        ("due date", before[1], epic.due_date),
    ):
        if old == new:
            continue
        if new is None:
            _note(db, actor, epic, f"removed the {kind}")
        else:
            _note(db, actor, epic, f"changed {kind} to {new.strftime('%b')} {new.day}, {new.year}")


def _day(value: date | None) -> str | None:
    return value.isoformat() if value is not None else None


def delete_epic(db: Session, actor: Actor, ident: str, iid: int) -> None:
    """Delete an epic (its group's Owner): its issues leave it, its children lose their
    parent (GitLab 16.11 and later), and its parent's dates follow."""
    s = subjects.epic(db, actor, ident, iid, Action.DESTROY_EPIC, rows=False)
    with transaction(db):
        epic = db.get(Epic, s.epic.id)
        assert epic is not None
        parent_id = epic.parent_id
        _event(db, actor, epic, "deleted", "delete", {})
        db.execute(
            update(Epic).where(Epic.parent_id == epic.id).values(parent_id=None),
            execution_options={"synchronize_session": False},
        )
        db.execute(
            delete(EpicIssue).where(EpicIssue.epic_id == epic.id),
            execution_options={"synchronize_session": False},
        )
        issuables.delete_dependents(db, EPIC, epic.id)
        db.delete(epic)
        db.flush()
        refresh_dates(db, [parent_id])


def mark_todo(db: Session, actor: Actor, ident: str, iid: int) -> MarkedTodo | None:
    """A to-do for the caller on the epic; None (304) when one is pending already."""
    s = subjects.epic(db, actor, ident, iid)
    epic_id, group_id = s.epic.id, s.epic.group_id
    if todos.pending_of(db, actor.id, EPIC, epic_id, MARKED) is not None:
        return None
    with transaction(db):
        todo = todos.add(
            db,
            user_id=actor.id,
            author_id=actor.id,
            action=MARKED,
            target_type=EPIC,
            target_id=epic_id,
            group_id=group_id,
        )
        db.refresh(todo)
    return MarkedTodo(todo, s.group.group, actor.user, one(db, s.group, epic_id))


# ----------------------------------------------------------------------------- child epics


def _refused(exc: LinkRefused) -> KilnError:
    """The links API's answer: 404 or 409 with GitLab's message."""
    return NotFound(message=exc.message) if exc.status == 404 else Conflict(exc.message)


def assign_child(db: Session, actor: Actor, p: ChildEpicRef) -> OneEpic:
    """Make an existing epic (by global id) a child of this one; it leaves its old parent."""
    s = subjects.epic(db, actor, p.id, p.epic_iid, Action.CREATE_EPIC, rows=False)
    with transaction(db):
        parent = db.get(Epic, s.epic.id)
        child = db.get(Epic, p.child_epic_id)
        assert parent is not None
        try:
            if child is None or _may_read(db, actor, child) is None:
                raise LinkRefused(NO_EPIC, 404)
            check_link(db, actor, parent, child, _group_of(db, child.group_id))
        except LinkRefused as refused:
            raise _refused(refused) from None
        _link(db, actor, parent, child)
        child_id = child.id
    return one(db, s.group, child_id)


def create_child(db: Session, actor: Actor, p: ChildEpicCreate) -> LinkedChild:
    """A new epic in the group, under this one; confidential as its parent unless told."""
    s = subjects.epic(db, actor, p.id, p.epic_iid, Action.CREATE_EPIC, rows=False)
    issuables.validate_text(p.title, None, creating=True)
    group = s.group.group
    with transaction(db):
        parent = db.get(Epic, s.epic.id)
        assert parent is not None
        confidential = parent.confidential if p.confidential is None else p.confidential
        if not _confidential_allowed(db, group):
            confidential = False
        try:
            if parent.confidential and not confidential:
                raise LinkRefused(CONFIDENTIAL_PARENT, 409)
            check_link(db, actor, parent, None, group)
        except LinkRefused as refused:
            raise ValidationFailed({"base": [refused.message]}) from None
        epic = _new_epic(
            db,
            actor,
            s.group,
            title=p.title,
            description=None,
            confidential=confidential,
            labels=None,
            dates={},
            start_fixed=None,
            due_fixed=None,
            parent=parent,
        )
        child_id, parent_id = epic.id, parent.id
    rows = finder.rows_by_ids(db, [child_id, parent_id])
    return LinkedChild(rows[0], rows[1], has_children=False, has_issues=False)


def _child_of(db: Session, parent: Epic, child_id: int) -> Epic:
    child = db.get(Epic, child_id)
    if child is None or child.parent_id != parent.id:
        raise NotFound(message=NO_CHILD)
    return child


def remove_child(db: Session, actor: Actor, p: ChildEpicRef) -> OneEpic:
    """Take a child epic out of this one (it stays, without a parent)."""
    s = subjects.epic(db, actor, p.id, p.epic_iid)
    if not policy.may(actor, Action.CREATE_EPIC, s.group):
        raise NotFound(message=NO_CHILD)
    with transaction(db):
        parent = db.get(Epic, s.epic.id)
        assert parent is not None
        child = _child_of(db, parent, p.child_epic_id)
        if _may_read(db, actor, child) is None:
            raise NotFound(message=NO_CHILD)
        child.parent_id = None
        child.relative_position = None
        db.flush()
        _relation_notes(db, actor, parent, child, added=False)
        refresh_dates(db, [parent.id])
        child_id = child.id
    return one(db, s.group, child_id)


def reorder(ids: list[int], moved: int, before: int | None, after: int | None) -> list[int] | None:
    """`ids` with `moved` placed after `before` or in front of `after` (GitLab's move_before_id
    and move_after_id: the neighbour meant to come before it, and the one after it); None when
    neither names another member of `ids`."""
    rest = [i for i in ids if i != moved]
    if before is not None and before in rest:
        at = rest.index(before) + 1
    elif after is not None and after in rest:
        at = rest.index(after)
    else:
        return None
    return [*rest[:at], moved, *rest[at:]]


def move_child(db: Session, actor: Actor, p: ChildEpicMove) -> ChildList:
    s = subjects.epic(db, actor, p.id, p.epic_iid, Action.CREATE_EPIC, rows=False)
    with transaction(db):
        parent = db.get(Epic, s.epic.id)
        assert parent is not None
        _child_of(db, parent, p.child_epic_id)
        siblings = [r.id for r in finder.children_of(db, parent.id)]
        order = reorder(siblings, p.child_epic_id, p.move_before_id, p.move_after_id)
        if order is None:
            raise _refused(LinkRefused("Epic not found for given params", 404))
        for position, epic_id in enumerate(order):
            db.execute(
                update(Epic).where(Epic.id == epic_id).values(relative_position=position * POSITION_GAP),
                execution_options={"synchronize_session": False},
            )
    return list_children(db, actor, ChildEpics(id=p.id, epic_iid=p.epic_iid))
