"""Request contracts for pipeline schedules and their variables (GitLab's
lib/api/ci/pipeline_schedules.rb parameters)."""

from __future__ import annotations

from typing import Literal

from kiln.schemas._types import Flag, Int, PageParams, Params

VariableType = Literal["env_var", "file"]


class ScheduleList(PageParams):
    id: str
    scope: Literal["active", "inactive"] | None = None


class ScheduleGet(Params):
    id: str
    pipeline_schedule_id: Int


class SchedulePipelines(PageParams):
    id: str
    pipeline_schedule_id: Int
    sort: Literal["asc", "desc"] = "asc"  # type: ignore[assignment]


class ScheduleCreate(Params):
    id: str
    description: str
    ref: str
    cron: str
    cron_timezone: str = "UTC"
    active: Flag = True


class ScheduleUpdate(Params):
    id: str
    pipeline_schedule_id: Int
    description: str | None = None
    ref: str | None = None
    cron: str | None = None
    cron_timezone: str | None = None
    active: Flag | None = None


class ScheduleVariableGet(Params):
    id: str
    pipeline_schedule_id: Int
    key: str


class ScheduleVariableCreate(Params):
    id: str
    pipeline_schedule_id: Int
    key: str
    value: str
    variable_type: VariableType = "env_var"


class ScheduleVariableUpdate(Params):
    id: str
    pipeline_schedule_id: Int
    key: str
    value: str | None = None
    variable_type: VariableType | None = None
