"""Custom attribute reads: the (key, value) pairs of one user, group or project, by
statements built once per kind. The ORM models are for writes."""

from __future__ import annotations

from functools import cache
from typing import Any, Literal

from sqlalchemy import Select, Table, bindparam, select
from sqlalchemy.orm import Session

from kiln.models import GroupCustomAttribute, ProjectCustomAttribute, UserCustomAttribute
from kiln.queries.reads import run

Kind = Literal["users", "groups", "projects"]
# Each kind's table and the column naming what the attributes hang on.
TABLES: dict[str, tuple[Table, str]] = {
    "users": (UserCustomAttribute.__table__, "user_id"),
    "groups": (GroupCustomAttribute.__table__, "namespace_id"),
    "projects": (ProjectCustomAttribute.__table__, "project_id"),
}


@cache
def _statement(kind: Kind, *, one: bool) -> Select[Any]:
    table, column = TABLES[kind]
    stmt = select(table.c.key, table.c.value).where(table.c[column] == bindparam("owner_id"))
    return stmt.where(table.c.key == bindparam("key")) if one else stmt.order_by(table.c.key)


def pairs_of(db: Session, kind: Kind, owner_id: int) -> list[tuple[str, str]]:
    """Every attribute of one owner, by key."""
    return [(key, value) for key, value in run(db, _statement(kind, one=False), {"owner_id": owner_id})]


def pair(db: Session, kind: Kind, owner_id: int, key: str) -> tuple[str, str] | None:
    row = run(db, _statement(kind, one=True), {"owner_id": owner_id, "key": key}).first()
    return None if row is None else (row[0], row[1])
