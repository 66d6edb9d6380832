"""Request contracts for groups, subgroups and namespaces (GitLab's documented parameters;
the spec shows none of them)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field

from kiln.schemas._types import (
    AccessLevel,
    Day,
    Flag,
    Int,
    OptionalInt,
    PageParams,
    Params,
    SearchText,
    _numeric,
)
from kiln.schemas.projects import GroupProjectList

Visibility = Literal["private", "internal", "public"]
BranchProtection = Annotated[Literal[0, 1, 2, 3, 4], BeforeValidator(_numeric)]
ProjectCreationLevel = Literal["noone", "owner", "maintainer", "developer"]
SubgroupCreationLevel = Literal["owner", "maintainer"]


def _int_list(value: Any) -> Any:
    # `skip_groups=1,2` in a query, `skip_groups[]=1&skip_groups[]=2`, or a JSON array.
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, int):
        return [value]
    return value


IntList = Annotated[list[Int], BeforeValidator(_int_list)]


class GroupList(PageParams):
    """GET /groups, /groups/:id/subgroups and /groups/:id/descendant_groups."""

    statistics: Flag = False
    archived: Flag | None = None
    skip_groups: IntList | None = None
    all_available: Flag | None = None
    visibility: Visibility | None = None
    search: SearchText | None = None
    owned: Flag = False
    order_by: Literal["name", "path", "id", "similarity"] = "name"
    sort: Literal["asc", "desc"] | None = None
    min_access_level: AccessLevel | None = None
    top_level_only: Flag = False
    marked_for_deletion_on: Day | None = None
    active: Flag | None = None
    with_custom_attributes: Flag = False
    custom_attributes: dict[str, str] | None = None


class GroupGet(Params):
    with_custom_attributes: Flag = False
    with_projects: Flag = True


class GroupSettings(Params):
    """What create and update share; absent fields are left alone."""

    description: str | None = None
    visibility: Visibility | None = None
    share_with_group_lock: Flag | None = None
    require_two_factor_authentication: Flag | None = None
    two_factor_grace_period: Annotated[int, Field(ge=0, le=2**31 - 1)] | None = None
    project_creation_level: ProjectCreationLevel | None = None
    auto_devops_enabled: Flag | None = None
    subgroup_creation_level: SubgroupCreationLevel | None = None
    emails_disabled: Flag | None = None
    emails_enabled: Flag | None = None
    mentions_disabled: Flag | None = None
    lfs_enabled: Flag | None = None
    request_access_enabled: Flag | None = None
    default_branch: str | None = None
    default_branch_protection: BranchProtection | None = None
    # A multipart image file, or "" to remove the avatar.
    avatar: Any = None


class GroupCreate(GroupSettings):
    name: str
    path: str
    parent_id: OptionalInt = None


class GroupUpdate(GroupSettings):
    name: str | None = None
    path: str | None = None


class GroupDelete(Params):
    permanently_remove: Flag = False
    full_path: str | None = None


class GroupTransfer(Params):
    group_id: OptionalInt = None


class GroupProjects(GroupProjectList):
    """GET /groups/:id/projects: the project list filters plus the group's own."""

    include_ancestor_groups: Flag = False


class NamespaceList(PageParams):
    search: SearchText | None = None
    owned_only: Flag = False
    top_level_only: Flag = False
    full_path_search: Flag = False


class NamespaceExists(Params):
    parent_id: OptionalInt = None


class ProjectGroupList(PageParams):
    """GET /projects/:id/groups (GitLab's Projects::GroupsFinder parameters)."""

    search: SearchText | None = None
    skip_groups: IntList | None = None
    with_shared: Flag = False
    shared_visible_only: Flag = False
    shared_min_access_level: AccessLevel | None = None
