"""Star reads: a project's starrers, as `StarRow` records whose users come from
queries.users.rows_by_ids. The ORM `ProjectStar` is for starring and unstarring."""

from __future__ import annotations

from collections import namedtuple
from functools import cache
from typing import Any

from sqlalchemy import Select, bindparam, func, select
from sqlalchemy.orm import Session

from kiln.models import ProjectStar, User
from kiln.pagination import Page, PageResult
from kiln.queries.paging import offset_page
from kiln.queries.reads import row_column
from kiln.queries.text import ESCAPE, contains
from kiln.queries.users import rows_by_ids

_STARS = ProjectStar.__table__
_USERS = User.__table__

StarRow = namedtuple("StarRow", ["id", "user_id", "created_at"])


@cache
def _starrers_statement(*, all_profiles: bool, search: bool) -> Select[Any]:
    """A project's stars in the order they were given, with the filters of one shape bound
    by name: `project_id`, `viewer_id` (whose own private profile still shows), `term`."""
    stmt = (
        select(_STARS.c.id, _STARS.c.user_id, row_column(_STARS.c.created_at))
        .join(_USERS, _USERS.c.id == _STARS.c.user_id)
        .where(_STARS.c.project_id == bindparam("project_id"))
    )
    if not all_profiles:
        stmt = stmt.where(_USERS.c.private_profile.is_(False) | (_USERS.c.id == bindparam("viewer_id")))
    if search:
        term = bindparam("term")
        stmt = stmt.where(
            func.lower(_USERS.c.username).like(term, escape=ESCAPE)
            | func.lower(_USERS.c.name).like(term, escape=ESCAPE)
        )
    return stmt.order_by(_STARS.c.id.asc())


def starrers(
    db: Session, project_id: int, page: Page, *, viewer_id: int | None, all_profiles: bool, search: str | None
) -> PageResult:
    """One page of (StarRow, UserRow): the page's stars, then their users by one statement.
    Without `all_profiles`, private profiles are left out but the viewer's own."""
    stmt = _starrers_statement(all_profiles=all_profiles, search=bool(search))
    values = {"project_id": project_id, "viewer_id": viewer_id or -1, "term": contains(search or "")}
    result = offset_page(db, stmt, page, core=True, params=values)
    stars = [StarRow._make(row) for row in result.items]
    users = {u.id: u for u in rows_by_ids(db, [s.user_id for s in stars])}
    result.items = [(s, users[s.user_id]) for s in stars if s.user_id in users]
    return result
