"""Protected branch reads: a project's rules as `ProtectedBranchRow` records, for the rule
views and for matching branches in memory. The ORM `ProtectedBranch` is for writes."""

from __future__ import annotations

from collections import namedtuple
from functools import cache
from typing import Any

from sqlalchemy import Select, bindparam, func, select
from sqlalchemy.orm import Session

from kiln.models import ProtectedBranch
from kiln.pagination import Page, PageResult
from kiln.queries.paging import offset_page
from kiln.queries.reads import row_columns, run
from kiln.queries.text import ESCAPE, contains

_RULES = ProtectedBranch.__table__

ProtectedBranchRow = namedtuple("ProtectedBranchRow", [c.key for c in _RULES.c])  # type: ignore[misc]


@cache
def _rules_statement(*, search: bool = False) -> Select[Any]:
    """A project's rules, oldest first (matching picks the oldest of equals); `search`
    narrows them to names containing `term`."""
    stmt = select(*row_columns(_RULES)).where(_RULES.c.project_id == bindparam("project_id"))
    if search:
        stmt = stmt.where(func.lower(_RULES.c.name).like(bindparam("term"), escape=ESCAPE))
    return stmt.order_by(_RULES.c.id)


@cache
def _by_name_statement() -> Select[Any]:
    return select(*row_columns(_RULES)).where(
        _RULES.c.project_id == bindparam("project_id"), _RULES.c.name == bindparam("name")
    )


def rules_of(db: Session, project_id: int) -> list[ProtectedBranchRow]:
    """All rules of a project in one statement, for matching many branches in memory."""
    return [ProtectedBranchRow._make(row) for row in run(db, _rules_statement(), {"project_id": project_id})]


def page_of_rules(db: Session, project_id: int, search: str | None, page: Page) -> PageResult:
    """One page of a project's rules, the rows themselves (a rule is its own row)."""
    stmt = _rules_statement(search=bool(search))
    values: dict[str, Any] = {"project_id": project_id}
    if search:
        values["term"] = contains(search)
    result = offset_page(db, stmt, page, core=True, params=values)
    result.items = [ProtectedBranchRow._make(row) for row in result.items]
    return result


def rule_by_name(db: Session, project_id: int, name: str) -> ProtectedBranchRow | None:
    row = run(db, _by_name_statement(), {"project_id": project_id, "name": name}).first()
    return None if row is None else ProtectedBranchRow._make(row)
