"""Epic issue reads: an epic's issues in their order with what deciding who sees them takes
(each issue's project, its namespace and the caller's level there), in two statements
whatever their number. The ORM `EpicIssue` is for writes."""

from __future__ import annotations

from collections import namedtuple
from datetime import date
from functools import cache
from typing import Any

from sqlalchemy import Date, Select, bindparam, null, select
from sqlalchemy.orm import Session

from kiln.models import EpicIssue, Issue, Namespace, Project
from kiln.queries import access
from kiln.queries.projects import NamespaceRow, ProjectRow
from kiln.queries.reads import row_columns, run

_PROJECTS = Project.__table__
_NAMESPACES = Namespace.__table__
_P = len(_PROJECTS.c)
_N = len(_NAMESPACES.c)

# An issue of an epic: the link's id and position, and the issue's id and project.
LinkRow = namedtuple("LinkRow", ["id", "epic_id", "issue_id", "relative_position", "project_id"])  # type: ignore[misc]


@cache
def _links_statement() -> Select[Any]:
    return (
        select(
            EpicIssue.id, EpicIssue.epic_id, EpicIssue.issue_id, EpicIssue.relative_position, Issue.project_id
        )
        .join(Issue, Issue.id == EpicIssue.issue_id)
        .where(EpicIssue.epic_id == bindparam("epic_id"))
        .order_by(EpicIssue.relative_position.asc().nulls_last(), EpicIssue.id.asc())
    )


def links_of(db: Session, epic_id: int) -> list[LinkRow]:
    """The epic's issues in their order (relative position, then when they were added)."""
    return [LinkRow._make(row) for row in run(db, _links_statement(), {"epic_id": epic_id})]


@cache
def _projects_statement(signed_in: bool) -> Select[Any]:
    ids = bindparam("ids", expanding=True)
    joined: Any = _PROJECTS.join(_NAMESPACES, _NAMESPACES.c.id == _PROJECTS.c.namespace_id)
    level: Any = null()
    if signed_in:
        levels = access.project_levels(bindparam("user_id"), ids, bindparam("today", type_=Date()))
        joined = joined.outerjoin(levels, levels.c.project_id == _PROJECTS.c.id)
        level = levels.c.level
    return (
        select(*row_columns(_PROJECTS), *row_columns(_NAMESPACES), level.label("level"))
        .select_from(joined)
        .where(_PROJECTS.c.id.in_(ids))
    )


def projects_of(
    db: Session, project_ids: list[int], user_id: int | None
) -> dict[int, tuple[ProjectRow, NamespaceRow, int | None]]:
    """Each project with its namespace and the user's level on it, in one statement."""
    if not project_ids:
        return {}
    values: dict[str, Any] = {"ids": list(project_ids)}
    if user_id is not None:
        values.update(user_id=user_id, today=date.today())
    out = {}
    for row in run(db, _projects_statement(user_id is not None), values):
        project = ProjectRow(*row[:_P])
        out[project.id] = (project, NamespaceRow._make(row[_P : _P + _N]), row[_P + _N])
    return out
