"""Plain records that services fill and entities render: one object per resource carrying
everything its views show, so entities never query and services never format."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pygit2

    from kiln.queries.projects import NamespaceRow, OwnerRow, ProjectRow, SharedGroupRow, StatisticsRow


@dataclass(slots=True)
class ProjectRecord:
    """A project with everything its views show, loaded in a constant number of queries."""

    project: ProjectRow
    namespace: NamespaceRow
    owner: OwnerRow | None = None
    topics: list[str] = field(default_factory=list)
    level: int | None = None
    project_access: int | None = None
    group_access: int | None = None
    forked_from: ProjectRecord | None = None
    statistics: StatisticsRow | None = None
    shared_with_groups: list[SharedGroupRow] = field(default_factory=list)
    custom_attributes: list[tuple[str, str]] | None = None
    can_read_code: bool = True
    can_admin: bool = False  # sees the settings Maintainers see (runners token, import URL, CI)
    can_create_merge_request_in: bool = False
    features_open: dict[str, bool] = field(default_factory=dict)
    # The key it is kept under across requests, when it is (services.projects): it stands
    # for every field above.
    version: tuple[Any, ...] | None = None


@dataclass(slots=True)
class BranchRecord:
    """A branch with what its view shows: git's data and what the branches service decided
    (protection, push rights, merged into the default branch)."""

    name: str
    commit: pygit2.Commit
    merged: bool
    protected: bool
    developers_can_push: bool
    developers_can_merge: bool
    can_push: bool
    default: bool
