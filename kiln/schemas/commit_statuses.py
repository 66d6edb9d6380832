"""Request contracts for commit statuses (GitLab's lib/api/commit_statuses.rb parameters)."""

from __future__ import annotations

from typing import Literal

from kiln.schemas._types import Flag, Int, PageParams, Params

State = Literal["pending", "running", "success", "failed", "canceled", "skipped"]


class StatusList(PageParams):
    id: str
    sha: str
    ref: str | None = None
    stage: str | None = None
    name: str | None = None
    pipeline_id: Int | None = None
    all: Flag = False
    order_by: Literal["id", "pipeline_id"] = "id"
    sort: Literal["asc", "desc"] = "asc"  # type: ignore[assignment]


class StatusCreate(Params):
    id: str
    sha: str
    state: State
    ref: str | None = None
    name: str | None = None
    # GitLab's older name for `name`.
    context: str | None = None
    target_url: str | None = None
    description: str | None = None
    coverage: float | None = None
    pipeline_id: Int | None = None
