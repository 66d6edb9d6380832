"""Milestone views (GitLab's Milestone entity) and burndown events."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Any

from kiln.entities._format import day

if TYPE_CHECKING:
    from kiln.queries.milestones import MilestoneRow


def web_url(row: MilestoneRow, base: str) -> str:
    """A project milestone's page under its project, a group milestone's under /groups/."""
    if row.project_id is not None:
        return f"{base}/{row.project_path}/-/milestones/{row.iid}"
    return f"{base}/groups/{row.group_path}/-/milestones/{row.iid}"


def milestone(row: MilestoneRow, base: str, today: date | None = None) -> dict[str, Any]:
    """A milestone; `expired` once its due date has passed (UTC `today` unless given)."""
    today = today if today is not None else datetime.now(UTC).date()
    view: dict[str, Any] = {"id": row.id, "iid": row.iid}
    if row.project_id is not None:
        view["project_id"] = row.project_id
    else:
        view["group_id"] = row.group_id
    view.update(
        title=row.title,
        description=row.description,
        state=row.state,
        created_at=row.created_at,
        updated_at=row.updated_at,
        due_date=day(row.due_date),
        start_date=day(row.start_date),
        expired=row.due_date is not None and row.due_date < today,
        web_url=web_url(row, base),
    )
    return view


def burndown_event(created_at: str, weight: int | None, action: str) -> dict[str, Any]:
    """One point of a burndown chart: an issue created, closed or reopened, with its weight."""
    return {"created_at": created_at, "weight": weight, "action": action}
