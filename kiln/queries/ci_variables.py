"""CI variable reads at the three levels: a page of one owner's variables, a key's variables
(one per environment scope), and every variable a pipeline may be given. Values come out as
stored (sealed); services.ci_variables unseals them. The ORM models are for writes."""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Sequence
from functools import cache
from typing import Any, Literal

from sqlalchemy import ColumnElement, Select, String, Table, bindparam, false, literal, select, true
from sqlalchemy.orm import Session

from kiln.models import GroupVariable, InstanceVariable, ProjectVariable
from kiln.pagination import Page, PageResult
from kiln.queries.paging import offset_page
from kiln.queries.reads import run

Level = Literal["projects", "groups", "instance"]

_COLUMNS = (
    "id",
    "key",
    "value",
    "variable_type",
    "protected",
    "masked",
    "hidden",
    "raw",
    "description",
)
# `owner_id`: the project or group (None on the instance); `environment_scope`: "*" on the
# instance, which has none.
VariableRow = namedtuple("VariableRow", (*_COLUMNS, "environment_scope", "owner_id"))  # type: ignore[misc]

_TABLES: dict[Level, Table] = {
    "instance": InstanceVariable.__table__,  # type: ignore[dict-item]
    "groups": GroupVariable.__table__,  # type: ignore[dict-item]
    "projects": ProjectVariable.__table__,  # type: ignore[dict-item]
}
_OWNERS: dict[Level, str | None] = {"instance": None, "groups": "namespace_id", "projects": "project_id"}


def _selected(level: Level) -> list[Any]:
    table = _TABLES[level]
    owner = _OWNERS[level]
    columns: list[Any] = [table.c[name] for name in _COLUMNS]
    if owner is None:
        columns += [literal("*", String).label("environment_scope"), literal(None).label("owner_id")]
    else:
        columns += [table.c.environment_scope, table.c[owner].label("owner_id")]
    return columns


def _owned(level: Level) -> ColumnElement[bool]:
    owner = _OWNERS[level]
    return true() if owner is None else _TABLES[level].c[owner] == bindparam("owner_id")


@cache
def _page_statement(level: Level) -> Select[Any]:
    """One owner's variables (every instance variable), oldest first as GitLab pages them."""
    table = _TABLES[level]
    return select(*_selected(level)).where(_owned(level)).order_by(table.c.id)


def page_of(db: Session, level: Level, owner_id: int | None, page: Page) -> PageResult:
    values = {} if _OWNERS[level] is None else {"owner_id": owner_id}
    result = offset_page(db, _page_statement(level), page, core=True, params=values)
    result.items = [VariableRow._make(row) for row in result.items]
    return result


@cache
def _by_key_statement(level: Level, scoped: bool) -> Select[Any]:
    table = _TABLES[level]
    stmt = select(*_selected(level)).where(_owned(level), table.c.key == bindparam("key"))
    if scoped:
        stmt = stmt.where(table.c.environment_scope == bindparam("scope"))
    return stmt.order_by(table.c.id)


def by_key(db: Session, level: Level, owner_id: int | None, key: str, scope: str | None) -> list[VariableRow]:
    """The owner's variables with `key`, in the environment scope `scope` only when given
    (the instance has no scopes: `scope` must be None there); oldest first."""
    values: dict[str, Any] = {"key": key}
    if _OWNERS[level] is not None:
        values["owner_id"] = owner_id
    if scope is not None:
        values["scope"] = scope
    rows = run(db, _by_key_statement(level, scope is not None), values)
    return [VariableRow._make(row) for row in rows]


@cache
def _pipeline_statement(level: Level, protected_ref: bool, any_scope: bool) -> Select[Any]:
    """Variables a pipeline may be given at one level: protected ones only on a protected ref;
    only `*`-scoped ones when the pipeline deploys to no environment (`any_scope` off)."""
    table = _TABLES[level]
    stmt = select(*_selected(level))
    if level == "groups":
        stmt = stmt.where(table.c.namespace_id.in_(bindparam("owner_ids", expanding=True)))
    elif level == "projects":
        stmt = stmt.where(table.c.project_id == bindparam("owner_id"))
    if not protected_ref:
        stmt = stmt.where(table.c.protected == false())
    if level != "instance" and not any_scope:
        stmt = stmt.where(table.c.environment_scope == "*")
    return stmt.order_by(table.c.id)


def for_pipeline(
    db: Session,
    *,
    project_id: int,
    namespace_ids: Sequence[int],
    protected_ref: bool,
    any_scope: bool,
) -> tuple[list[VariableRow], list[VariableRow], list[VariableRow]]:
    """The instance's, the groups' and the project's variables a pipeline may be given, one
    statement each (none for the groups when there are none), each oldest first."""
    instance = run(db, _pipeline_statement("instance", protected_ref, any_scope), {})
    groups: list[Any] = []
    if namespace_ids:
        groups = run(
            db, _pipeline_statement("groups", protected_ref, any_scope), {"owner_ids": list(namespace_ids)}
        ).all()
    project = run(db, _pipeline_statement("projects", protected_ref, any_scope), {"owner_id": project_id})
    return (
        [VariableRow._make(r) for r in instance],
        [VariableRow._make(r) for r in groups],
        [VariableRow._make(r) for r in project],
    )
