"""Pipeline schedule reads: a project's schedules, one schedule, its variables, its pipelines
and the last of them. Also the basic pipeline record (GitLab's PipelineBasic) that schedules,
commits and commit statuses show. The ORM models are for writes."""

from __future__ import annotations

from collections import namedtuple
from functools import cache
from typing import Any

from sqlalchemy import Select, bindparam, select
from sqlalchemy.orm import Session

from kiln.models.ci import Pipeline, PipelineSchedule, PipelineScheduleVariable
from kiln.pagination import Page, PageResult
from kiln.queries.paging import offset_page
from kiln.queries.reads import run

_SCHEDULES = PipelineSchedule.__table__
_VARIABLES = PipelineScheduleVariable.__table__
_PIPELINES = Pipeline.__table__

_SCHEDULE_COLUMNS = (
    "id",
    "project_id",
    "owner_id",
    "description",
    "ref",
    "cron",
    "cron_timezone",
    "next_run_at",
    "active",
    "created_at",
    "updated_at",
)
_VARIABLE_COLUMNS = ("id", "schedule_id", "key", "value", "variable_type", "raw")
PIPELINE_BASIC_COLUMNS = (
    "id",
    "iid",
    "project_id",
    "sha",
    "ref",
    "status",
    "source",
    "created_at",
    "updated_at",
    "name",
)

ScheduleRow = namedtuple("ScheduleRow", _SCHEDULE_COLUMNS)  # type: ignore[misc]
ScheduleVariableRow = namedtuple("ScheduleVariableRow", _VARIABLE_COLUMNS)  # type: ignore[misc]
PipelineBasicRow = namedtuple("PipelineBasicRow", PIPELINE_BASIC_COLUMNS)  # type: ignore[misc]


def pipeline_basic_columns() -> list[Any]:
    return [_PIPELINES.c[name] for name in PIPELINE_BASIC_COLUMNS]


@cache
def _list_statement(scope: str | None) -> Select[Any]:
    stmt = select(*(_SCHEDULES.c[n] for n in _SCHEDULE_COLUMNS)).where(
        _SCHEDULES.c.project_id == bindparam("project_id")
    )
    if scope == "active":
        stmt = stmt.where(_SCHEDULES.c.active.is_(True))
    elif scope == "inactive":
        stmt = stmt.where(_SCHEDULES.c.active.is_(False))
    return stmt.order_by(_SCHEDULES.c.id)


def page_of_project(db: Session, project_id: int, scope: str | None, page: Page) -> PageResult:
    """The project's schedules, oldest first; `scope` keeps the active or inactive ones."""
    result = offset_page(db, _list_statement(scope), page, core=True, params={"project_id": project_id})
    result.items = [ScheduleRow._make(r) for r in result.items]
    return result


@cache
def _one_statement() -> Select[Any]:
    return select(*(_SCHEDULES.c[n] for n in _SCHEDULE_COLUMNS)).where(
        _SCHEDULES.c.id == bindparam("schedule_id"), _SCHEDULES.c.project_id == bindparam("project_id")
    )


def schedule_of(db: Session, project_id: int, schedule_id: int) -> ScheduleRow | None:
    row = run(db, _one_statement(), {"schedule_id": schedule_id, "project_id": project_id}).first()
    return None if row is None else ScheduleRow._make(row)


@cache
def _variables_statement() -> Select[Any]:
    return (
        select(*(_VARIABLES.c[n] for n in _VARIABLE_COLUMNS))
        .where(_VARIABLES.c.schedule_id == bindparam("schedule_id"))
        .order_by(_VARIABLES.c.id)
    )


def variables_of(db: Session, schedule_id: int) -> list[ScheduleVariableRow]:
    return [
        ScheduleVariableRow._make(r) for r in run(db, _variables_statement(), {"schedule_id": schedule_id})
    ]


@cache
def _last_pipeline_statement() -> Select[Any]:
    return (
        select(*pipeline_basic_columns())
        .where(_PIPELINES.c.schedule_id == bindparam("schedule_id"))
        .order_by(_PIPELINES.c.id.desc())
        .limit(1)
    )


def last_pipeline(db: Session, schedule_id: int) -> PipelineBasicRow | None:
    """The schedule's newest pipeline."""
    row = run(db, _last_pipeline_statement(), {"schedule_id": schedule_id}).first()
    return None if row is None else PipelineBasicRow._make(row)


@cache
def _pipelines_statement(descending: bool) -> Select[Any]:
    order = _PIPELINES.c.id.desc() if descending else _PIPELINES.c.id
    return (
        select(*pipeline_basic_columns())
        .where(
            _PIPELINES.c.project_id == bindparam("project_id"),
            _PIPELINES.c.schedule_id == bindparam("schedule_id"),
        )
        .order_by(order)
    )


def pipelines_page(
    db: Session, project_id: int, schedule_id: int, descending: bool, page: Page
) -> PageResult:
    """Pipelines the schedule made, by id (oldest first unless `descending`)."""
    result = offset_page(
        db,
        _pipelines_statement(descending),
        page,
        core=True,
        params={"project_id": project_id, "schedule_id": schedule_id},
    )
    result.items = [PipelineBasicRow._make(r) for r in result.items]
    return result
