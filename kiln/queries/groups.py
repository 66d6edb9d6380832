"""Group reads: the subject of a group route (the group and the caller's standing on it), the
filters of every group list, and the view statement its records are built from. Reads select
columns into NamespaceRow records (queries.projects); the ORM `Namespace` is for writes."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from functools import cache
from typing import Any
from urllib.parse import unquote

from sqlalchemy import (
    JSON,
    ColumnElement,
    Date,
    Select,
    bindparam,
    case,
    false,
    func,
    null,
    or_,
    select,
    true,
    type_coerce,
)
from sqlalchemy.orm import Session

from kiln import policy
from kiln.auth.actor import Actor
from kiln.models import ApplicationSetting, Member, Namespace, Project, ProjectGroupLink, ProjectStatistics
from kiln.models.base import is_numeric, numeric_id
from kiln.models.namespaces import DEVELOPER, KIND_GROUP, MAINTAINER, OWNER
from kiln.models.projects import STORAGE_SIZES
from kiln.queries import access, custom_attributes
from kiln.queries.projects import NamespaceRow, viewer_params
from kiln.queries.reads import reusable, row_columns, run
from kiln.queries.shapes import Shapes, parameters_key
from kiln.queries.text import ESCAPE, contains
from kiln.records import ProjectRecord
from kiln.schemas.groups import GroupList

_NAMESPACES = Namespace.__table__
_N = len(_NAMESPACES.c)
STAT_COLUMNS = STORAGE_SIZES


@dataclass(slots=True)
class GroupRecord:
    """A group with what its views show, loaded in a constant number of statements."""

    group: NamespaceRow
    default_branch_protection: int
    statistics: dict[str, int] | None = None
    custom_attributes: list[tuple[str, str]] | None = None
    projects: list[ProjectRecord] | None = None
    shared_projects: list[ProjectRecord] | None = None


@dataclass(slots=True)
class GroupViewRow:
    """What the view statement read for one namespace, before the policy has looked at it."""

    group: NamespaceRow
    settings: dict[str, Any]
    level: int | None = None
    related: bool = False
    statistics: dict[str, int] | None = None


def ident_params(ident: str, user_id: int | None) -> dict[str, Any] | None:
    """A namespace's numeric id or full path (case-insensitive; `%2F` decoded here) as the
    parameters of a statement built on _where; None for what names nothing."""
    ident = unquote(ident)
    params: dict[str, Any] = {}
    if is_numeric(ident):
        found = numeric_id(ident)
        if found is None:
            return None
        params["id"] = found
    else:
        params["path"] = ident.lower()
    if user_id is not None:
        params["user_id"], params["today"] = user_id, date.today()
    return params


def _where(shape: str) -> Any:
    if shape == "page":
        return _NAMESPACES.c.id.in_(bindparam("ids", expanding=True))
    if shape == "path":
        return func.lower(_NAMESPACES.c.full_path) == bindparam("path")
    return _NAMESPACES.c.id == bindparam("id")


def _standing() -> list[Any]:
    user_id, today = bindparam("user_id"), bindparam("today", type_=Date())
    return [
        access.group_level_column(_NAMESPACES, user_id, today).label("level"),
        access.related_column(_NAMESPACES, user_id, today).label("related"),
    ]


# ---------------------------------------------------------------------------- subjects


@cache
def _subject_statement(by_path: bool, signed_in: bool, orm: bool) -> Select[Any]:
    """A namespace and the caller's standing on it in one round trip, built once per shape:
    every group route starts here. `orm`: the model, for a route that changes it."""
    standing = _standing() if signed_in else [null().label("level"), null().label("related")]
    selected: list[Any] = [Namespace] if orm else row_columns(_NAMESPACES)
    stmt = select(*selected, *standing).where(_where("path" if by_path else "id"))
    return stmt if orm else reusable(stmt)


def subject_row(
    db: Session, ident: str, user_id: int | None, *, orm: bool = True
) -> tuple[Any, int | None, bool] | None:
    """The namespace by id or full path with `user_id`'s level on it and whether something
    inside it relates them to it: the model with `orm`, else a NamespaceRow."""
    params = ident_params(ident, user_id)
    if params is None:
        return None
    stmt = _subject_statement("id" not in params, user_id is not None, orm)
    if orm:
        found = db.execute(stmt, params).first()
        return None if found is None else (found[0], found[1], bool(found[2]))
    row = run(db, stmt, params).first()
    return None if row is None else (NamespaceRow._make(row[:_N]), row[_N], bool(row[_N + 1]))


# ---------------------------------------------------------------------------- views


def _settings_column() -> Any:
    """The stored instance settings, read beside the rows (a group without its own default
    branch protection shows the instance's)."""
    stored = select(ApplicationSetting.values).order_by(ApplicationSetting.id).limit(1).scalar_subquery()
    return type_coerce(stored, JSON).label("settings")


def _statistics_join() -> Any:
    """Sizes summed over the projects directly in each group of the page."""
    sums = [func.coalesce(func.sum(ProjectStatistics.__table__.c[c]), 0).label(c) for c in STAT_COLUMNS]
    return (
        select(Project.namespace_id.label("namespace_id"), *sums)
        .join(ProjectStatistics, ProjectStatistics.project_id == Project.id)
        .where(Project.namespace_id.in_(bindparam("ids", expanding=True)))
        .group_by(Project.namespace_id)
        .subquery("group_statistics")
    )


@cache
def _view_statement(shape: str, signed_in: bool, statistics: bool) -> Select[Any]:
    """Built once per shape: "page" (`ids` expands to the page's group ids), "id" or "path"
    (one namespace named by a route, with the caller's standing)."""
    stmt = select(*row_columns(_NAMESPACES), _settings_column())
    if signed_in:
        stmt = stmt.add_columns(*_standing())
    if statistics:
        stats = _statistics_join()
        stmt = stmt.outerjoin(stats, stats.c.namespace_id == _NAMESPACES.c.id).add_columns(
            *(stats.c[c] for c in STAT_COLUMNS)
        )
    return stmt.where(_where(shape))


def _view_row(row: Any, signed_in: bool, statistics: bool) -> GroupViewRow:
    view = GroupViewRow(group=NamespaceRow._make(row[:_N]), settings=row[_N] or {})
    at = _N + 1
    if signed_in:
        view.level, view.related = row[at], bool(row[at + 1])
        at += 2
    if statistics:
        values = {c: int(v or 0) for c, v in zip(STAT_COLUMNS, row[at : at + len(STAT_COLUMNS)], strict=True)}
        view.statistics = {"storage_size": sum(values.values()), **values}
    return view


def view_rows(db: Session, ids: list[int], *, statistics: bool = False) -> dict[int, GroupViewRow]:
    """View rows of the groups `ids` (in no order), keyed by id."""
    if not ids:
        return {}
    rows = run(db, _view_statement("page", False, statistics), {"ids": ids})
    views = (_view_row(row, False, statistics) for row in rows)
    return {view.group.id: view for view in views}


def view_by_ident(db: Session, user_id: int | None, ident: str) -> GroupViewRow | None:
    """The view row of the namespace a route names by id or full path, with the caller's
    standing (nothing decided yet)."""
    params = ident_params(ident, user_id)
    if params is None:
        return None
    shape = "id" if "id" in params else "path"
    row = run(db, _view_statement(shape, user_id is not None, False), params).first()
    return None if row is None else _view_row(row, user_id is not None, False)


# ---------------------------------------------------------------------------- lists


# A signed-in caller's id and today's date are bind parameters (projects.viewer_params).
_VIEWER = bindparam("viewer_id")
_TODAY = bindparam("viewer_today", type_=Date())


def _member_group_ids(min_level: int | None = None) -> Select[Any]:
    """Groups the viewer's memberships reach: the group itself and everything below it."""
    levels = access.group_levels(_VIEWER, today=_TODAY)
    stmt = select(levels.c.namespace_id)
    if min_level is not None:
        stmt = stmt.where(levels.c.level >= min_level)
    return stmt


def _authorized() -> ColumnElement[bool]:
    """Groups the viewer reaches by membership, and the ancestors of what they belong to."""
    related = access.related_group_ids(_VIEWER, _TODAY).subquery()
    return or_(Namespace.id.in_(_member_group_ids()), Namespace.id.in_(select(related.c.id)))


def _listed(actor: Actor | None, q: GroupList) -> ColumnElement[bool]:
    """GitLab's GroupsFinder: owned / min_access_level narrow to memberships; otherwise
    signed-in users see the groups they are related to, and with `all_available` (the
    default for administrators, and always for anonymous callers) every group they may read."""
    admin = policy.is_admin(actor)
    all_available = q.all_available if q.all_available is not None else admin
    if actor is None:
        return false() if q.owned else access.opened_by(Namespace.visibility, policy.open_visibilities(None))
    if q.owned:
        return Namespace.id.in_(_member_group_ids(OWNER))
    if q.min_access_level is not None:
        return Namespace.id.in_(_member_group_ids(q.min_access_level))
    if admin and all_available:
        return true()
    if all_available:
        return or_(Namespace.visibility.in_(policy.open_visibilities(actor)), _authorized())
    return _authorized()


_LISTINGS: Shapes[Select[Any]] = Shapes()


def listing(
    actor: Actor | None, q: GroupList, *, parent: bool = False, descendants: bool = False
) -> Select[Any]:
    """Ids of the groups a list shows, filtered and ordered; the page's views come from
    view_rows. Built once per shape (the viewer's kind, every parameter, and whether it lists
    a parent's subgroups or descendants); the values come from listing_params."""
    viewer = None if actor is None else ("admin" if actor.is_admin else policy.open_visibilities(actor))
    key = (viewer, parameters_key(q), parent, descendants)
    return _LISTINGS.get(key, lambda: _listing(actor, q, parent, descendants))


def listing_params(actor: Actor | None, parent: NamespaceRow | None = None) -> dict[str, Any]:
    """The values of a listing's bind parameters: the viewer's, and the parent's."""
    params = viewer_params(actor)
    if parent is not None:
        params["parent_id"] = parent.id
        params["parent_traversal"], params["parent_end"] = access.within_bounds(parent.traversal)
    return params


def _listing(actor: Actor | None, q: GroupList, parent: bool, descendants: bool) -> Select[Any]:
    stmt = select(Namespace.id).where(Namespace.kind == KIND_GROUP, _listed(actor, q))
    parent_id = bindparam("parent_id")
    if parent and descendants:
        below = access.within_range(Namespace, bindparam("parent_traversal"), bindparam("parent_end"))
        stmt = stmt.where(below, Namespace.id != parent_id)
    elif parent:
        stmt = stmt.where(Namespace.parent_id == parent_id)
    elif q.top_level_only:
        stmt = stmt.where(Namespace.parent_id.is_(None))
    if q.skip_groups:
        stmt = stmt.where(Namespace.id.not_in(q.skip_groups))
    if q.visibility is not None:
        stmt = stmt.where(Namespace.visibility == q.visibility)
    if q.search:
        term = contains(q.search)
        matches = [
            func.lower(Namespace.name).like(term, escape=ESCAPE),
            func.lower(Namespace.path).like(term, escape=ESCAPE),
        ]
        if not parent:
            matches.append(func.lower(Namespace.full_path).like(term, escape=ESCAPE))
        stmt = stmt.where(or_(*matches))
    if q.archived:
        stmt = stmt.where(false())  # groups are never archived here
    if q.active is not None:
        marked = Namespace.marked_for_deletion_on.is_not(None)
        stmt = stmt.where(~marked if q.active else marked)
    if q.marked_for_deletion_on is not None:
        stmt = stmt.where(Namespace.marked_for_deletion_on == q.marked_for_deletion_on)
    if policy.is_admin(actor):
        stmt = stmt.where(*custom_attributes.matching("groups", Namespace.id, q.custom_attributes or {}))
    order = "name" if q.order_by == "similarity" else q.order_by
    column = getattr(Namespace, order)
    primary = column.desc() if (q.sort or "asc") == "desc" else column.asc()
    return stmt.order_by(primary) if order == "id" else stmt.order_by(primary, Namespace.id.asc())


# ---------------------------------------------------------------------------- a project's groups


def _searched(stmt: Select[Any], search: str | None) -> Select[Any]:
    """GitLab's group search: name or path containing the term, ignoring case."""
    if not search:
        return stmt
    term = contains(search)
    return stmt.where(
        or_(
            func.lower(Namespace.name).like(term, escape=ESCAPE),
            func.lower(Namespace.path).like(term, escape=ESCAPE),
        )
    )


def project_groups(
    actor: Actor | None,
    *,
    ancestor_ids: list[int],
    project_id: int,
    with_shared: bool,
    shared_min_access_level: int | None,
    shared_visible_only: bool,
    skip_groups: list[int] | None,
    search: str | None,
) -> tuple[Select[Any], dict[str, Any]]:
    """GET /projects/:id/groups (GitLab's Projects::GroupsFinder): the project's group and its
    ancestors, and with `with_shared` the groups it is shared with (at `shared_min_access_level`
    or more; with `shared_visible_only` those the caller may see: open to them, or a group they
    belong to directly), newest first. One statement over the page, whatever the filters."""
    chosen: list[ColumnElement[bool]] = []
    params: dict[str, Any] = {}
    if ancestor_ids:
        chosen.append(Namespace.id.in_(bindparam("ancestor_ids", expanding=True)))
        params["ancestor_ids"] = ancestor_ids
    if with_shared:
        links = select(ProjectGroupLink.group_id).where(
            ProjectGroupLink.project_id == bindparam("project_id")
        )
        params["project_id"] = project_id
        if shared_min_access_level is not None:
            links = links.where(ProjectGroupLink.group_access >= bindparam("shared_min"))
            params["shared_min"] = shared_min_access_level
        shared = Namespace.id.in_(links)
        if shared_visible_only:
            seen: ColumnElement[bool] = access.opened_by(
                Namespace.visibility, policy.open_visibilities(actor)
            )
            if actor is not None:
                member = select(Member.namespace_id).where(
                    Member.user_id == bindparam("viewer_id"),
                    Member.namespace_id.is_not(None),
                    access.active_membership(date.today()),
                )
                seen = or_(seen, Namespace.id.in_(member))
                params["viewer_id"] = actor.user.id
            shared = shared & seen
        chosen.append(shared)
    stmt = select(*row_columns(_NAMESPACES)).where(
        Namespace.kind == KIND_GROUP, or_(*chosen) if chosen else false()
    )
    if skip_groups:
        stmt = stmt.where(Namespace.id.not_in(bindparam("skip_groups", expanding=True)))
        params["skip_groups"] = list(skip_groups)
    return _searched(stmt, search).order_by(Namespace.id.desc()), params


def _creation_level(column: Any) -> Any:
    """The level a group asks of those who create projects in it (policy._CREATION_LEVEL);
    NULL where no member may."""
    return case(
        (column.in_(("noone", "administrator")), null()),
        (column == "owner", OWNER),
        (column == "maintainer", MAINTAINER),
        else_=DEVELOPER,
    )


def transfer_locations(
    actor: Actor, exclude_id: int | None, search: str | None
) -> tuple[Select[Any], dict[str, Any]]:
    """The groups `actor` may move projects into (GitLab's transfer_projects: Maintainer or
    more through a membership of the group or an ancestor, and allowed to create projects
    there), by name; `exclude_id`: the project's own group."""
    today = bindparam("today", type_=Date())
    level = access.group_level_column(_NAMESPACES, bindparam("user_id"), today)
    creation = _creation_level(_NAMESPACES.c.project_creation_level)
    stmt = select(*row_columns(_NAMESPACES)).where(
        _NAMESPACES.c.kind == KIND_GROUP,
        level >= MAINTAINER,
        creation.is_not(None),
        level >= creation,
    )
    params: dict[str, Any] = {"user_id": actor.user.id, "today": date.today()}
    if exclude_id is not None:
        stmt = stmt.where(_NAMESPACES.c.id != bindparam("exclude_id"))
        params["exclude_id"] = exclude_id
    return _searched(stmt, search).order_by(_NAMESPACES.c.name.asc(), _NAMESPACES.c.id.asc()), params
