"""Epic issue reads: an epic's issues in their order with what deciding who sees them takes
(each issue's project, its namespace and the caller's level there), in two statements
whatever their number. The ORM `EpicIssue` is for writes."""

from __future__ import annotations

from collections import namedtuple
from functools import cache
from typing import Any

from sqlalchemy import Select, bindparam, select
from sqlalchemy.orm import Session

from kiln.models import EpicIssue, Issue, Namespace, Project
from kiln.queries.reads import run

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
