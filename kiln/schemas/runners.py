"""Request contracts for runners (GitLab's lib/api/ci/runners.rb, lib/api/ci/runner.rb and
lib/api/users.rb `POST /user/runners`): what a runner sends with its tokens and what users
send to manage runners. `tag_list` comes as an array or a comma-separated string (older
runners send the string in a form body)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, model_validator

from kiln.models.ci import RUNNER_TYPES
from kiln.schemas._types import (
    Flag,
    GrapeMessage,
    Int,
    OptionalStr,
    PageParams,
    Params,
    mutually_exclusive,
)
from kiln.schemas.pipelines import Status as JobStatus


def _tags(value: Any) -> Any:
    """An array of names, a comma-separated string, or an array of such strings; names are
    stripped and the empty ones dropped, as GitLab's tag parser does."""
    if isinstance(value, str):
        value = [value]
    if isinstance(value, list):
        out: list[str] = []
        for item in value:
            if not isinstance(item, (str, int, float)):
                return value  # invalid, left to the type
            for part in str(item).split(","):
                name = part.strip()
                if name and name not in out:
                    out.append(name)
        return out
    return value


TagList = Annotated[list[Annotated[str, Field(max_length=255)]], BeforeValidator(_tags)]
AccessLevelName = Literal["not_protected", "ref_protected"]
# Deprecated `scope` values (GitLab's Ci::Runner::AVAILABLE_SCOPES): the legacy types, the
# types, and the statuses; which of them a list takes is the list's business.
LEGACY_TYPES = ("specific", "shared")
STATUSES = ("active", "paused", "online", "offline", "never_contacted", "stale", "not_connected")
SCOPES = (*LEGACY_TYPES, *RUNNER_TYPES, *STATUSES)
RunnerType = Literal[RUNNER_TYPES]  # type: ignore[valid-type]
Scope = Literal[SCOPES]  # type: ignore[valid-type]
Status = Literal[STATUSES]  # type: ignore[valid-type]
# A runner's version prefix: digits, dots and pluses first (GitLab's /^[\d+.]+/).
VersionPrefix = Annotated[str, Field(pattern=r"^[\d+.]+")]


class RunnerInfo(Params):
    """What a runner says of itself (`info`); the rest of the hash (features, config, shell)
    is the job queue's business."""

    name: str | None = None
    version: str | None = None
    revision: str | None = None
    platform: str | None = None
    architecture: str | None = None
    executor: str | None = None


# ----------------------------------------------------------------------------- runner credentials


class RunnerToken(Params):
    """A call made with a runner's authentication token (the `token` parameter, or the
    RUNNER-TOKEN header the router folds in)."""

    token: OptionalStr = None
    system_id: str | None = None
    info: RunnerInfo | None = None


class ManagerDelete(RunnerToken):
    system_id: str


class _RunnerFields(Params):
    description: str | None = None
    maintenance_note: Annotated[str, Field(max_length=1024)] | None = None
    active: Flag | None = None
    paused: Flag | None = None
    locked: Flag | None = None
    run_untagged: Flag | None = None
    tag_list: TagList | None = None
    access_level: AccessLevelName | None = None
    # The column's range: GitLab's own limit is a lower one (ten minutes), checked on saving.
    maximum_timeout: Annotated[int, Field(ge=-(2**31), le=2**31 - 1)] | None = None


class Registration(_RunnerFields):
    """POST /runners with a registration token (the instance's, a project's or a group's)."""

    token: str
    maintainer_note: Annotated[str, Field(max_length=1024)] | None = None
    info: RunnerInfo | None = None

    @model_validator(mode="before")
    @classmethod
    def _one_state(cls, data: Any) -> Any:
        mutually_exclusive(data, "active", "paused")
        return data


class UserRunnerCreate(_RunnerFields):
    """POST /user/runners: a runner made by a signed-in user, for the instance, a group or a
    project, whose token is handed back once."""

    runner_type: RunnerType
    group_id: Int | None = None
    project_id: Int | None = None

    @model_validator(mode="before")
    @classmethod
    def _owner(cls, data: Any) -> Any:
        mutually_exclusive(data, "active", "paused")
        if isinstance(data, dict):
            kind = data.get("runner_type")
            if kind == "group_type" and data.get("group_id") is None:
                raise GrapeMessage("group_id is missing")
            if kind == "project_type" and data.get("project_id") is None:
                raise GrapeMessage("project_id is missing")
        return data


# ----------------------------------------------------------------------------- management

_UPDATABLE = (
    "description",
    "active",
    "paused",
    "tag_list",
    "run_untagged",
    "locked",
    "access_level",
    "maximum_timeout",
    "maintenance_note",
)


class RunnerUpdate(_RunnerFields):
    id: Int

    @model_validator(mode="before")
    @classmethod
    def _something(cls, data: Any) -> Any:
        if isinstance(data, dict):
            if not any(data.get(name) is not None for name in _UPDATABLE):
                raise GrapeMessage(
                    f"{', '.join(_UPDATABLE)} are missing, at least one parameter must be provided"
                )
            mutually_exclusive(data, "active", "paused")
        return data


class RunnerFilters(PageParams):
    """The filters every runner list takes (`scope` only where the list says so)."""

    type: RunnerType | None = None
    status: Status | None = None
    paused: Flag | None = None
    tag_list: TagList | None = None
    version_prefix: VersionPrefix | None = None


class OwnedRunnerList(RunnerFilters):
    """GET /runners: its `scope` takes statuses only (GitLab's AVAILABLE_STATUSES)."""

    scope: Status | None = None


class RunnerList(RunnerFilters):
    """GET /runners/all and a project's runners: `scope` takes types and statuses."""

    scope: Scope | None = None


class ProjectRunnerList(RunnerList):
    id: str


class GroupRunnerList(RunnerFilters):
    id: str


class RunnerGet(Params):
    id: Int


class RunnerJobList(PageParams):
    id: Int
    status: JobStatus | None = None
    order_by: Literal["id"] | None = None
    sort: Literal["asc", "desc"] | None = None
    system_id: str | None = None


class ProjectRunnerEnable(Params):
    id: str
    runner_id: Int


class ProjectRunnerDisable(Params):
    id: str
    runner_id: Int


class SubjectOnly(Params):
    id: str
