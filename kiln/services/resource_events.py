"""Resource events: the history of labels, milestone, state and weight of an issue, epic or
merge request. Writes call the `*_changed` functions in their own transaction."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy.orm import Session

from kiln.auth.actor import Actor
from kiln.models import ResourceLabelEvent, ResourceMilestoneEvent, ResourceStateEvent, ResourceWeightEvent
from kiln.models.resource_events import ADD, REMOVE


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
    for label_id in added:
        db.add(
            ResourceLabelEvent(
                target_type=target_type,
                target_id=target_id,
                user_id=_user(actor),
                label_id=label_id,
                action=ADD,
            )
        )
    for label_id in removed:
        db.add(
            ResourceLabelEvent(
                target_type=target_type,
                target_id=target_id,
                user_id=_user(actor),
                label_id=label_id,
                action=REMOVE,
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
