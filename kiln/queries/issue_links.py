"""Issue link reads."""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass
from functools import cache
from typing import Any

from sqlalchemy import Select, bindparam, or_, select
from sqlalchemy.orm import Session

from kiln.models import IssueLink, Namespace, Project
from kiln.policy import IssueSubject
from kiln.queries.issues import IssueRow, Related
from kiln.queries.reads import row_columns, run

_LINKS = IssueLink.__table__
_PROJECTS = Project.__table__
_NAMESPACES = Namespace.__table__

LinkRow = namedtuple("LinkRow", [c.key for c in _LINKS.c])  # type: ignore[misc]
_P, _N = len(_PROJECTS.c), len(_NAMESPACES.c)


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
