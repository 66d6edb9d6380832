"""Issue link reads, and the projects of issues shown beside another's (linked issues, to-do
targets) with the caller's level on each, read in one statement for any number of them, so
whoever shows those issues can tell which the caller may see."""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from functools import cache
from typing import Any

from sqlalchemy import Date, Select, bindparam, null, or_, select
from sqlalchemy.orm import Session

from kiln.models import IssueLink, Namespace, Project
from kiln.policy import IssueSubject
from kiln.queries import access
from kiln.queries.issues import IssueRow, Related
from kiln.queries.projects import NamespaceRow, ProjectRow
from kiln.queries.reads import row_columns, run

_LINKS = IssueLink.__table__
_PROJECTS = Project.__table__
_NAMESPACES = Namespace.__table__

LinkRow = namedtuple("LinkRow", [c.key for c in _LINKS.c])  # type: ignore[misc]
_P, _N = len(_PROJECTS.c), len(_NAMESPACES.c)


@dataclass(frozen=True, slots=True)
class ProjectAccess:
    """A project an issue lives in, with the caller's level there: what deciding whether
    they may see the issue takes."""

    project: ProjectRow
    namespace: NamespaceRow
    level: int | None


@dataclass(slots=True)
class Linked:
    """An issue linked to the route's issue, with the link as the route's issue sees it."""

    issue: IssueRow
    link: LinkRow
    link_type: str


@dataclass(slots=True)
class LinkedIssues:
    subject: IssueSubject
    items: list[Linked]
    related: Related


@dataclass(slots=True)
class OneLink:
    """A link as stored: its source and target issues and its type."""

    subject: IssueSubject
    source: IssueRow
    target: IssueRow
    link_type: str
    related: Related


@cache
def _projects_statement(signed_in: bool) -> Select[Any]:
    ids = bindparam("ids", expanding=True)
    stmt = select(*row_columns(_PROJECTS), *row_columns(_NAMESPACES)).join(
        _NAMESPACES, _NAMESPACES.c.id == _PROJECTS.c.namespace_id
    )
    if signed_in:
        levels = access.project_levels(bindparam("user_id"), ids, bindparam("today", type_=Date()))
        stmt = stmt.outerjoin(levels, levels.c.project_id == _PROJECTS.c.id).add_columns(levels.c.level)
    else:
        stmt = stmt.add_columns(null().label("level"))
    return stmt.where(_PROJECTS.c.id.in_(ids))


def projects_of(db: Session, user_id: int | None, project_ids: Iterable[int]) -> dict[int, ProjectAccess]:
    """The projects by id with `user_id`'s level on each, in one statement whatever their number."""
    ids = sorted(set(project_ids))
    if not ids:
        return {}
    values: dict[str, Any] = {"ids": ids}
    if user_id is not None:
        values.update(user_id=user_id, today=date.today())
    found: dict[int, ProjectAccess] = {}
    for row in run(db, _projects_statement(user_id is not None), values):
        project = ProjectRow(*row[:_P])
        found[project.id] = ProjectAccess(project, NamespaceRow._make(row[_P : _P + _N]), row[_P + _N])
    return found


# ----------------------------------------------------------------------------- links


@cache
def _links_of_statement() -> Select[Any]:
    """Every link with the issue at either end, oldest first."""
    issue = bindparam("issue_id")
    return (
        select(*row_columns(_LINKS))
        .where(or_(_LINKS.c.source_id == issue, _LINKS.c.target_id == issue))
        .order_by(_LINKS.c.id)
    )


def links_of(db: Session, issue_id: int) -> list[LinkRow]:
    return [LinkRow._make(r) for r in run(db, _links_of_statement(), {"issue_id": issue_id})]


@cache
def _link_statement() -> Select[Any]:
    issue = bindparam("issue_id")
    return select(*row_columns(_LINKS)).where(
        _LINKS.c.id == bindparam("link_id"), or_(_LINKS.c.source_id == issue, _LINKS.c.target_id == issue)
    )


def link_of(db: Session, issue_id: int, link_id: int) -> LinkRow | None:
    """A link by id, only if the issue is at one of its ends."""
    row = run(db, _link_statement(), {"issue_id": issue_id, "link_id": link_id}).first()
    return None if row is None else LinkRow._make(row)
