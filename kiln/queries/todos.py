"""To-do reads: a page of a user's to-dos (filtered as GitLab's TodosFinder filters them,
newest first) and what their views name, one statement each whatever the page's size:
authors, projects and groups (with the user's standing there, to tell which targets they
may still read), and the issues and epics they point at."""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass, field
from datetime import date
from functools import cache
from typing import Any

from sqlalchemy import Date, Select, bindparam, select
from sqlalchemy.orm import Session

from kiln.models import Namespace, Todo
from kiln.pagination import Page, PageResult
from kiln.queries import access
from kiln.queries.epics import EpicRow
from kiln.queries.epics import LabelRow as EpicLabelRow
from kiln.queries.issues import IssueRow, Related
from kiln.queries.merge_requests import MergeRequestRow
from kiln.queries.merge_requests import Related as MergeRequestRelated
from kiln.queries.paging import offset_page
from kiln.queries.projects import NamespaceRow, ProjectAccess
from kiln.queries.reads import row_columns, run
from kiln.queries.users import UserRow

_TODOS = Todo.__table__
_NAMESPACES = Namespace.__table__
TodoRow = namedtuple("TodoRow", [c.key for c in _TODOS.c])  # type: ignore[misc]
_N = len(_NAMESPACES.c)
# The filters a listing may carry (each a bind parameter of the same name).
FILTERS = ("action", "author_id", "project_id", "group_id", "target_type")


@dataclass(frozen=True, slots=True)
class GroupAccess:
    """A group a to-do is in, with the user's level there and whether something inside it
    relates them to it: what deciding whether they may read its epics takes."""

    group: NamespaceRow
    level: int | None
    related: bool


@dataclass(slots=True)
class TodoSet:
    """To-dos with what their views show; `issues`, `epics` and `merge_requests` hold the
    targets the user may read (a target they no longer may is left out)."""

    todos: list[TodoRow]
    page: PageResult | None = None
    users: dict[int, UserRow] = field(default_factory=dict)
    projects: dict[int, ProjectAccess] = field(default_factory=dict)
    groups: dict[int, GroupAccess] = field(default_factory=dict)
    issues: dict[int, IssueRow] = field(default_factory=dict)
    issue_related: Related = field(default_factory=Related)
    epics: dict[int, EpicRow] = field(default_factory=dict)
    epic_labels: dict[int, list[EpicLabelRow]] = field(default_factory=dict)
    merge_requests: dict[int, MergeRequestRow] = field(default_factory=dict)
    merge_request_related: MergeRequestRelated = field(default_factory=MergeRequestRelated)


@cache
def _listing(filters: tuple[str, ...]) -> Select[Any]:
    stmt = select(*row_columns(_TODOS)).where(
        _TODOS.c.user_id == bindparam("user_id"), _TODOS.c.state == bindparam("state")
    )
    for name in filters:
        stmt = stmt.where(_TODOS.c[name] == bindparam(name))
    return stmt.order_by(_TODOS.c.id.desc())


def page_of(db: Session, user_id: int, state: str, filters: dict[str, Any], page: Page) -> PageResult:
    """The user's to-dos in `state`, newest first; `filters` keyed by FILTERS."""
    shape = tuple(name for name in FILTERS if name in filters)
    values = {"user_id": user_id, "state": state, **filters}
    result = offset_page(db, _listing(shape), page, core=True, params=values)
    result.items = [TodoRow._make(row) for row in result.items]
    return result


@cache
def _one_statement() -> Select[Any]:
    return select(*row_columns(_TODOS)).where(
        _TODOS.c.id == bindparam("todo_id"), _TODOS.c.user_id == bindparam("user_id")
    )


def one_of(db: Session, user_id: int, todo_id: int) -> TodoRow | None:
    """The user's own to-do by id (another's is none)."""
    row = run(db, _one_statement(), {"todo_id": todo_id, "user_id": user_id}).first()
    return None if row is None else TodoRow._make(row)


@cache
def _groups_statement() -> Select[Any]:
    ns = _NAMESPACES
    user_id, today = bindparam("user_id"), bindparam("today", type_=Date())
    return select(
        *row_columns(ns),
        access.group_level_column(ns, user_id, today).label("level"),
        access.related_column(ns, user_id, today).label("related"),
    ).where(ns.c.id.in_(bindparam("ids", expanding=True)))


def groups_of(db: Session, user_id: int, group_ids: list[int]) -> dict[int, GroupAccess]:
    """The groups by id with the user's standing on each, in one statement."""
    if not group_ids:
        return {}
    values = {"ids": sorted(set(group_ids)), "user_id": user_id, "today": date.today()}
    found: dict[int, GroupAccess] = {}
    for row in run(db, _groups_statement(), values):
        group = NamespaceRow._make(row[:_N])
        found[group.id] = GroupAccess(group, row[_N], bool(row[_N + 1]))
    return found
