"""Records of groups as their views show them."""

from __future__ import annotations

from dataclasses import dataclass

from kiln.models import Namespace
from kiln.records import ProjectRecord


@dataclass(slots=True)
class GroupRecord:
    """A group with what its views show, loaded in a constant number of queries."""

    group: Namespace
    default_branch_protection: int
    statistics: dict[str, int] | None = None
    custom_attributes: list[tuple[str, str]] | None = None
    projects: list[ProjectRecord] | None = None
    shared_projects: list[ProjectRecord] | None = None
