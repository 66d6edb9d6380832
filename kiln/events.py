"""Events: the one way kiln records that something happened (a push, a comment, …).

An event is a row in the outbox table, added in the caller's transaction so that it exists
exactly when the change that caused it does; workers deliver it to hooks, integrations and
activity feeds after the commit."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from kiln.auth.actor import Actor
from kiln.models import Event


def record(
    db: Session,
    action: str,
    *,
    project_id: int | None,
    actor: Actor | None,
    target_type: str | None = None,
    target_id: int | None = None,
    data: dict[str, Any] | None = None,
) -> Event:
    """Add one event to the caller's transaction (not flushed, not committed here).
    `actor` is None for what kiln does on its own (a project's first commit)."""
    event = Event(
        project_id=project_id,
        author_id=actor.id if actor is not None else None,
        action=action,
        target_type=target_type,
        target_id=target_id,
        data=data if data is not None else {},
    )
    db.add(event)
    return event
