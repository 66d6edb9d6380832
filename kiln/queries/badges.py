"""Badge reads: a group's badges, a project's own with those of its groups, and the project
whose values fill a group badge's placeholders. The ORM `Badge` is for writes."""

from __future__ import annotations

from collections import namedtuple
from functools import cache
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, bindparam, or_, select
from sqlalchemy.orm import Session

from kiln.auth.actor import Actor
from kiln.models import Badge, Namespace, Project
from kiln.pagination import Page, PageResult
from kiln.queries import projects as project_finder
from kiln.queries.paging import offset_page
from kiln.queries.reads import run

_BADGES = Badge.__table__
_COLUMNS = ("id", "project_id", "group_id", "name", "link_url", "image_url")

BadgeRow = namedtuple("BadgeRow", _COLUMNS)  # type: ignore[misc]
# What a badge's placeholders read of the project it is shown for (`namespace_path`: the full
# path of the project's namespace; `group_path`: the same when that namespace is a group).
PlaceholderProject = namedtuple(  # type: ignore[misc]
    "PlaceholderProject", ["id", "name", "path", "default_branch", "namespace_path", "group_path"]
)


def _selected() -> list[Any]:
    return [_BADGES.c[name] for name in _COLUMNS]


@cache
def _statement(scope: str, named: bool) -> Select[Any]:
    """Badges of one group (`group`), or of one project and the groups above it (`project`),
    oldest first as GitLab orders them; `named` keeps those with exactly that name."""
    if scope == "group":
        where: ColumnElement[bool] = _BADGES.c.group_id == bindparam("group_id")
    else:
        where = or_(
            _BADGES.c.project_id == bindparam("project_id"),
            _BADGES.c.group_id.in_(bindparam("group_ids", expanding=True)),
        )
    stmt = select(*_selected()).where(where)
    if named:
        stmt = stmt.where(_BADGES.c.name == bindparam("name"))
    return stmt.order_by(_BADGES.c.created_at, _BADGES.c.id)


def _page(db: Session, stmt: Select[Any], values: dict[str, Any], page: Page) -> PageResult:
    result = offset_page(db, stmt, page, core=True, params=values)
    result.items = [BadgeRow._make(row) for row in result.items]
    return result


def page_of_group(db: Session, group_id: int, name: str | None, page: Page) -> PageResult:
    values: dict[str, Any] = {"group_id": group_id}
    if name is not None:
        values["name"] = name
    return _page(db, _statement("group", name is not None), values, page)


def page_of_project(
    db: Session, project_id: int, group_ids: list[int], name: str | None, page: Page
) -> PageResult:
    """The project's own badges and those of `group_ids` (its group and that group's
    ancestors), in one statement whatever their number."""
    values: dict[str, Any] = {"project_id": project_id, "group_ids": group_ids}
    if name is not None:
        values["name"] = name
    return _page(db, _statement("project", name is not None), values, page)


@cache
def _by_id_statement(scope: str) -> Select[Any]:
    owner = _BADGES.c.group_id if scope == "group" else _BADGES.c.project_id
    return select(*_selected()).where(_BADGES.c.id == bindparam("badge_id"), owner == bindparam("owner_id"))


def badge_of(
    db: Session, badge_id: int, *, group_id: int | None = None, project_id: int | None = None
) -> BadgeRow | None:
    """A badge by id, only if it is the given group's or project's own."""
    scope = "group" if group_id is not None else "project"
    owner = group_id if group_id is not None else project_id
    row = run(db, _by_id_statement(scope), {"badge_id": badge_id, "owner_id": owner}).first()
    return None if row is None else BadgeRow._make(row)


def first_project_of_group(db: Session, actor: Actor | None, group_id: int) -> PlaceholderProject | None:
    """The group's oldest project among those the actor may see: the one whose values fill
    the placeholders of the group's badges."""
    stmt = (
        select(
            Project.id,
            Project.name,
            Project.path,
            Project.default_branch,
            Namespace.full_path,
        )
        .join(Namespace, Namespace.id == Project.namespace_id)
        .where(and_(Project.namespace_id == bindparam("group_id"), project_finder.visible_to(actor)))
        .order_by(Project.created_at, Project.id)
        .limit(1)
    )
    row = db.execute(stmt, {"group_id": group_id, **project_finder.viewer_params(actor)}).first()
    if row is None:
        return None
    return PlaceholderProject(row[0], row[1], row[2], row[3], namespace_path=row[4], group_path=row[4])
