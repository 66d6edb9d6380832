"""Request contracts for pipelines (GitLab's lib/api/ci/pipelines.rb parameters)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field

from kiln.models.ci import STATUSES
from kiln.schemas._types import Flag, Int, PageParams, Params, When

Scope = Literal["running", "pending", "finished", "branches", "tags"]
OrderBy = Literal["id", "status", "ref", "updated_at", "user_id"]
Status = Literal[STATUSES]  # type: ignore[valid-type]
# GitLab's Ci::Pipeline sources.
SOURCES = (
    "unknown",
    "push",
    "web",
    "trigger",
    "schedule",
    "api",
    "external",
    "pipeline",
    "chat",
    "webide",
    "merge_request_event",
    "external_pull_request_event",
    "parent_pipeline",
    "ondemand_dast_scan",
    "ondemand_dast_validation",
    "security_orchestration_policy",
    "container_registry_push",
    "duo_workflow",
    "pipeline_execution_policy_schedule",
)
Source = Literal[SOURCES]  # type: ignore[valid-type]


class PipelineList(PageParams):
    id: str
    scope: Scope | None = None
    status: Status | None = None
    ref: str | None = None
    sha: str | None = None
    yaml_errors: Flag | None = None
    name: str | None = None
    username: str | None = None
    updated_after: When | None = None
    updated_before: When | None = None
    created_after: When | None = None
    created_before: When | None = None
    order_by: OrderBy = "id"
    sort: Literal["asc", "desc"] = "desc"  # type: ignore[assignment]
    source: Source | None = None


class PipelineGet(Params):
    id: str
    pipeline_id: Int


class PipelineLatest(Params):
    id: str
    ref: str | None = None


def _variables(value: Any) -> Any:
    """An array of {key, value, variable_type}, or a hash of key → value (`variables[K]=v`)."""
    if isinstance(value, dict) and not {"key", "value"} & set(value):
        return [{"key": k, "value": v} for k, v in value.items()]
    if isinstance(value, dict):
        return [value]
    return value


class VariableParam(Params):
    key: Annotated[str, Field(max_length=255)]
    value: str = ""
    variable_type: Literal["env_var", "file"] = "env_var"


class PipelineCreate(Params):
    id: str
    ref: str
    variables: Annotated[list[VariableParam], BeforeValidator(_variables)] = []
    # GitLab's pipeline inputs: accepted, not read (kiln has no `spec: inputs`).
    inputs: dict[str, Any] | None = None


class PipelineMetadata(Params):
    id: str
    pipeline_id: Int
    name: Annotated[str, Field(max_length=255)]
