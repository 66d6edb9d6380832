"""Resource event views (GitLab's ResourceLabelEvent, ResourceMilestoneEvent,
ResourceStateEvent and ResourceWeightEvent entities)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kiln.entities._format import iso
from kiln.entities.labels import label_basic
from kiln.entities.milestones import milestone as milestone_view
from kiln.entities.users import user_basic

if TYPE_CHECKING:
    from kiln.queries.resource_events import Events


def _head(row: Any, found: Events, base: str) -> dict[str, Any]:
    user = found.users.get(row.user_id) if row.user_id is not None else None
    return {
        "id": row.id,
        "user": user_basic(user, base) if user is not None else None,
        "created_at": iso(row.created_at),
        "resource_type": row.target_type,
        "resource_id": row.target_id,
    }


def label_event(row: Any, found: Events, base: str) -> dict[str, Any]:
    view = _head(row, found, base)
    label = found.labels.get(row.label_id) if row.label_id is not None else None
    view.update(label=label_basic(label) if label is not None else None, action=row.action)
    return view


def milestone_event(row: Any, found: Events, base: str) -> dict[str, Any]:
    view = _head(row, found, base)
    milestone = found.milestones.get(row.milestone_id) if row.milestone_id is not None else None
    view.update(
        milestone=milestone_view(milestone, base) if milestone is not None else None,
        action=row.action,
        state=row.state,
    )
    return view


def state_event(row: Any, found: Events, base: str) -> dict[str, Any]:
    view = _head(row, found, base)
    view["state"] = row.state
    return view


def weight_event(row: Any, found: Events, base: str) -> dict[str, Any]:
    """GitLab's weight event names its issue by `issue_id`, not as a resource."""
    user = found.users.get(row.user_id) if row.user_id is not None else None
    return {
        "id": row.id,
        "user": user_basic(user, base) if user is not None else None,
        "created_at": iso(row.created_at),
        "issue_id": row.target_id,
        "weight": row.weight,
    }


VIEWS = {"label": label_event, "milestone": milestone_event, "state": state_event, "weight": weight_event}
