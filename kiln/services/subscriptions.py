"""Subscriptions to issues, epics, labels and merge requests: a user's explicit choice, else
participation (author, assignee, commenter) subscribes them, as GitLab decides `subscribed`.
Subscribing twice or unsubscribing when not subscribed changes nothing (the routes' 304)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from kiln.models import Subscription


def _row(db: Session, user_id: int, kind: str, target_id: int) -> Subscription | None:
    return db.scalars(
        select(Subscription).where(
            Subscription.user_id == user_id,
            Subscription.subscribable_type == kind,
            Subscription.subscribable_id == target_id,
        )
    ).first()


def is_subscribed(
    db: Session, user_id: int | None, kind: str, target_id: int, *, participant: bool = False
) -> bool:
    """Whether the user hears of changes: their explicit choice, else whether they take part."""
    if user_id is None:
        return False
    row = _row(db, user_id, kind, target_id)
    return row.subscribed if row is not None else participant


def set_subscribed(
    db: Session,
    user_id: int,
    kind: str,
    target_id: int,
    subscribed: bool,
    *,
    project_id: int | None = None,
    participant: bool = False,
) -> bool:
    """Record the user's choice in the caller's transaction; False when it was so already."""
    row = _row(db, user_id, kind, target_id)
    current = row.subscribed if row is not None else participant
    if current == subscribed:
        return False
    if row is None:
        db.add(
            Subscription(
                user_id=user_id,
                subscribable_type=kind,
                subscribable_id=target_id,
                project_id=project_id,
                subscribed=subscribed,
            )
        )
    else:
        row.subscribed = subscribed
    db.flush()
    return True
