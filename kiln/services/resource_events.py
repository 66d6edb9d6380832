"""Resource events: the history of labels, milestone, state and weight of an issue, epic or
merge request. Writes call the `*_changed` functions in their own transaction; the routes
read them back, oldest first, for whoever may read the issue (or merge request, or epic)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy.orm import Session

from kiln.auth.actor import Actor
from kiln.errors import NotFound
from kiln.models import ResourceLabelEvent, ResourceMilestoneEvent, ResourceStateEvent, ResourceWeightEvent
from kiln.models.notes import EPIC, ISSUE, MERGE_REQUEST
from kiln.models.resource_events import ADD, REMOVE
from kiln.pagination import Page, PageResult
from kiln.queries import milestones as milestone_finder
from kiln.queries import resource_events as finder
from kiln.queries import users as user_finder
from kiln.queries.resource_events import Events, Kind
from kiln.services import subjects


def _user(actor: Actor | None) -> int | None:
    return actor.id if actor is not None else None


def labels_changed(
    db: Session,
    actor: Actor | None,
    target_type: str,
    target_id: int,
    added: Iterable[int] = (),
    removed: Iterable[int] = (),
) -> None:
    for action, label_ids in ((ADD, added), (REMOVE, removed)):
        for label_id in label_ids:
            db.add(
                ResourceLabelEvent(
                    target_type=target_type,
                    target_id=target_id,
                    user_id=_user(actor),
                    label_id=label_id,
                    action=action,
                )
            )


def milestone_changed(
    db: Session,
    actor: Actor | None,
    target_type: str,
    target_id: int,
    milestone_id: int | None,
    previous_id: int | None,
    state: str,
) -> None:
    """`milestone_id` set (add) or, None, the `previous_id` removed."""
    if milestone_id is not None:
        action, shown = ADD, milestone_id
    else:
        action, shown = REMOVE, previous_id
    db.add(
        ResourceMilestoneEvent(
            target_type=target_type,
            target_id=target_id,
            user_id=_user(actor),
            milestone_id=shown,
            action=action,
            state=state,
        )
    )


def state_changed(db: Session, actor: Actor | None, target_type: str, target_id: int, state: str) -> None:
    """`state`: opened, closed, reopened (merge requests: merged, locked too)."""
    db.add(
        ResourceStateEvent(target_type=target_type, target_id=target_id, user_id=_user(actor), state=state)
    )


def weight_changed(
    db: Session, actor: Actor | None, target_type: str, target_id: int, weight: int | None
) -> None:
    db.add(
        ResourceWeightEvent(target_type=target_type, target_id=target_id, user_id=_user(actor), weight=weight)
    )


# ----------------------------------------------------------------------------- reading

EVENT_NOT_FOUND = "404 Not found"


def _related(db: Session, kind: Kind, rows: list[Any], page: PageResult | None) -> Events:
    """One statement each for the users, labels and milestones of `rows`, whatever their number."""
    user_ids = list(dict.fromkeys(r.user_id for r in rows if r.user_id is not None))
    users = {u.id: u for u in user_finder.rows_by_ids(db, user_ids)}
    labels = (
        finder.labels_by_ids(db, [r.label_id for r in rows if r.label_id is not None])
        if kind == "label"
        else {}
    )
    milestones = (
        milestone_finder.rows_by_ids(db, [r.milestone_id for r in rows if r.milestone_id is not None])
        if kind == "milestone"
        else {}
    )
    return Events(rows, page, users, labels, milestones)


def _target(db: Session, actor: Actor | None, resources: str, ident: str, ref: int) -> tuple[str, int]:
    """The issue or merge request (of a project, by iid) or epic (of a group, by its global
    id, as GitLab reaches epics here) whose events are read: 404 when hidden, as it is."""
    if resources == "issues":
        return ISSUE, subjects.issue(db, actor, ident, ref).issue.id
    if resources == "merge_requests":
        return MERGE_REQUEST, subjects.merge_request(db, actor, ident, ref).merge_request.id
    return EPIC, subjects.epic(db, actor, ident, ref, by_id=True).epic.id


def list_events(
    db: Session, actor: Actor | None, kind: Kind, resources: str, ident: str, ref: int, page: Page
) -> Events:
    target_type, target_id = _target(db, actor, resources, ident, ref)
    result = finder.page_of(db, kind, target_type, target_id, page)
    return _related(db, kind, result.items, result)


def get_event(
    db: Session, actor: Actor | None, kind: Kind, resources: str, ident: str, ref: int, event_id: int
) -> Events:
    target_type, target_id = _target(db, actor, resources, ident, ref)
    row = finder.one_of(db, kind, target_type, target_id, event_id)
    if row is None:
        raise NotFound(message=EVENT_NOT_FOUND)
    return _related(db, kind, [row], None)
