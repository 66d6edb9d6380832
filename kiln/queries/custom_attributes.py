"""Custom attribute reads: the (key, value) pairs of one user, group or project, by
statements built once per kind. The ORM models are for writes."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any, Literal

from sqlalchemy import ColumnElement, Select, Table, bindparam, func, select, tuple_
from sqlalchemy.orm import Session

from kiln.models import GroupCustomAttribute, ProjectCustomAttribute, UserCustomAttribute
from kiln.queries.reads import run

Kind = Literal["users", "groups", "projects"]
Attribute = UserCustomAttribute | GroupCustomAttribute | ProjectCustomAttribute
# Each kind's model and the column naming what the attributes hang on: the one mapping that
# reads (TABLES) and writes (services.custom_attributes) derive from.
MODELS: dict[str, tuple[type[Attribute], str]] = {
    "users": (UserCustomAttribute, "user_id"),
    "groups": (GroupCustomAttribute, "namespace_id"),
    "projects": (ProjectCustomAttribute, "project_id"),
}
TABLES: dict[str, tuple[Table, str]] = {
    kind: (model.__table__, column)  # type: ignore[misc]
    for kind, (model, column) in MODELS.items()
}


def matching(kind: Kind, owner_column: Any, pairs: Mapping[str, str]) -> list[ColumnElement[bool]]:
    """A list filter (`custom_attributes[key]=value`), all pairs to hold, on the listed table's
    `owner_column`: the owners having as many of the pairs as were asked (a key is unique per
    owner), one subquery however many pairs come, so a thousand pairs never nest a thousand
    conditions."""
    if not pairs:
        return []
    table, column = TABLES[kind]
    owners = (
        select(table.c[column])
        .where(tuple_(table.c.key, table.c.value).in_(list(pairs.items())))
        .group_by(table.c[column])
        .having(func.count() == len(pairs))
    )
    return [owner_column.in_(owners)]


@cache
def _of_owners_statement(kind: Kind) -> Select[Any]:
    table, column = TABLES[kind]
    return (
        select(table.c[column], table.c.key, table.c.value)
        .where(table.c[column].in_(bindparam("ids", expanding=True)))
        .order_by(table.c.key)
    )


def of_owners(db: Session, kind: Kind, owner_ids: list[int]) -> dict[int, list[tuple[str, str]]]:
    """Every attribute of each owner, by key, in one statement (a page's `with_custom_attributes`)."""
    out: dict[int, list[tuple[str, str]]] = {owner: [] for owner in owner_ids}
    if owner_ids:
        for owner, key, value in run(db, _of_owners_statement(kind), {"ids": owner_ids}):
            out[owner].append((key, value))
    return out


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
