"""Pipeline schedule views (GitLab's Ci::PipelineSchedule and PipelineScheduleDetails
entities) and their variables (Ci::Variable as a schedule's variable shows it); a schedule's
pipelines render through kiln.entities.pipelines."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kiln.entities._format import iso
from kiln.entities.pipelines import pipeline_basic_at
from kiln.entities.users import user_basic

if TYPE_CHECKING:
    from kiln.queries.pipeline_schedules import PipelineBasicRow, ScheduleRow
    from kiln.queries.users import UserRow


def schedule_variable(key: str, value: str, variable_type: str, raw: bool) -> dict[str, Any]:
    return {"variable_type": variable_type, "key": key, "value": value, "raw": raw}


def schedule(row: ScheduleRow, owner: UserRow | None, base: str) -> dict[str, Any]:
    return {
        "id": row.id,
        "description": row.description,
        "ref": row.ref,
        "cron": row.cron,
        "cron_timezone": row.cron_timezone,
        "next_run_at": iso(row.next_run_at),
        "active": row.active,
        "created_at": iso(row.created_at),
        "updated_at": iso(row.updated_at),
        "owner": user_basic(owner, base) if owner is not None else None,
    }


def schedule_detail(
    row: ScheduleRow,
    owner: UserRow | None,
    last: PipelineBasicRow | None,
    variables: list[dict[str, Any]] | None,
    base: str,
    project_web_url: str,
) -> dict[str, Any]:
    """`variables` None: the caller may not read them, and the view leaves them out."""
    view = schedule(row, owner, base)
    view["last_pipeline"] = pipeline_basic_at(last, project_web_url) if last is not None else None
    if variables is not None:
        view["variables"] = variables
    return view
