"""Namespace reads (a user's namespace or a group): the lookup writes use, the filters of
GET /namespaces, the view statement its records are built from, and the counts those who
administer a group see. Reads select columns into NamespaceRow records (queries.projects)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from functools import cache
from typing import Any

from sqlalchemy import Date, Select, bindparam, func, literal, null, or_, select, union_all
from sqlalchemy.orm import Session, aliased

from kiln.models import Member, Namespace, Project, ProjectStatistics, User
from kiln.models.namespaces import OWNER
from kiln.queries import access
from kiln.queries.groups import ident_params
from kiln.queries.projects import NamespaceRow, OwnerRow
from kiln.queries.reads import row_column, row_columns, run
from kiln.queries.shapes import Shapes
from kiln.queries.text import ESCAPE, contains, escape_like

_NAMESPACES = Namespace.__table__
_OWNER = User.__table__.alias("owner")
_N, _O = len(_NAMESPACES.c), len(OwnerRow._fields)


def by_ident(db: Session, ident: str) -> Namespace | None:
    """The model of a namespace by numeric id or full path, for a write: named as every
    namespace read names it (groups.ident_params), so an id no row can have names nothing."""
    params = ident_params(ident, None)
    if params is None:
        return None
    if "id" in params:
        return db.get(Namespace, params["id"])
    return db.scalars(_by_path_statement(), params).first()


@cache
def _by_path_statement() -> Select[Any]:
    return select(Namespace).where(func.lower(Namespace.full_path) == bindparam("path"))


@dataclass(slots=True)
class NamespaceRecord:
    """A namespace with the counts its view shows to those who administer it."""

    namespace: NamespaceRow
    owner: OwnerRow | None = None
    can_admin: bool = False
    admin_view: bool = False
    members_count: int = 0
    billable_members_count: int = 0
    projects_count: int = 0
    root_repository_size: int = 0


@dataclass(slots=True)
class NamespaceViewRow:
    """What the view statement read for one namespace, before the policy has looked at it."""

    namespace: NamespaceRow
    owner: OwnerRow | None
    level: int | None
    related: bool


# ---------------------------------------------------------------------------- lists


_LISTINGS: Shapes[Select[Any]] = Shapes()


def listing(
    *,
    every: bool,
    search: str | None,
    owned_only: bool,
    top_level_only: bool,
    full_path_search: bool = False,
) -> Select[Any]:
    """Ids for GET /namespaces: the user's own namespace and the groups a membership reaches
    (all of them with `every`, for administrators); `full_path_search` matches full paths.
    Built once per shape; the user and the date come from listing_params."""
    key = (every, search, owned_only, top_level_only, full_path_search)
    return _LISTINGS.get(key, lambda: _listing(every, search, owned_only, top_level_only, full_path_search))


def listing_params(user_id: int) -> dict[str, Any]:
    """The values of a listing's bind parameters."""
    return {"user_id": user_id, "today": date.today()}


def _listing(
    every: bool, search: str | None, owned_only: bool, top_level_only: bool, full_path_search: bool
) -> Select[Any]:
    stmt = select(Namespace.id)
    if not every or owned_only:
        user_id = bindparam("user_id")
        levels = access.group_levels(user_id, today=bindparam("today", type_=Date()))
        member_of = select(levels.c.namespace_id)
        if owned_only:
            member_of = member_of.where(levels.c.level >= OWNER)
        stmt = stmt.where(or_(Namespace.owner_id == user_id, Namespace.id.in_(member_of)))
    if search:
        term = contains(search)
        if full_path_search:
            stmt = stmt.where(func.lower(Namespace.full_path).like(term, escape=ESCAPE))
        else:
            stmt = stmt.where(
                or_(
                    func.lower(Namespace.path).like(term, escape=ESCAPE),
                    func.lower(Namespace.name).like(term, escape=ESCAPE),
                )
            )
    if top_level_only:
        stmt = stmt.where(Namespace.parent_id.is_(None))
    return stmt.order_by(Namespace.id.asc())


# ---------------------------------------------------------------------------- views


@cache
def _view_statement(shape: str) -> Select[Any]:
    """Built once per shape: "page" (`ids`), "id" or "path" (one namespace named by a route):
    the namespace, its owner, and the caller's level on it and, for one namespace (whose
    reading it decides), relation to it."""
    user_id, today = bindparam("user_id"), bindparam("today", type_=Date())
    related = null() if shape == "page" else access.related_column(_NAMESPACES, user_id, today)
    stmt = (
        select(
            *row_columns(_NAMESPACES),
            *(row_column(_OWNER.c[name]) for name in OwnerRow._fields),
            access.group_level_column(_NAMESPACES, user_id, today).label("level"),
            related.label("related"),
        )
        .select_from(_NAMESPACES)
        .outerjoin(_OWNER, _OWNER.c.id == _NAMESPACES.c.owner_id)
    )
    if shape == "page":
        return stmt.where(_NAMESPACES.c.id.in_(bindparam("ids", expanding=True)))
    if shape == "path":
        return stmt.where(func.lower(_NAMESPACES.c.full_path) == bindparam("path"))
    return stmt.where(_NAMESPACES.c.id == bindparam("id"))


def _view_row(row: Any) -> NamespaceViewRow:
    at = _N + _O
    owner = OwnerRow._make(row[_N:at]) if row[_N] is not None else None
    return NamespaceViewRow(NamespaceRow._make(row[:_N]), owner, row[at], bool(row[at + 1]))


def view_rows(db: Session, user_id: int, ids: list[int]) -> dict[int, NamespaceViewRow]:
    """View rows of the namespaces `ids` (in no order), keyed by id."""
    if not ids:
        return {}
    params = {"ids": ids, "user_id": user_id, "today": date.today()}
    return {view.namespace.id: view for view in map(_view_row, run(db, _view_statement("page"), params))}


def view_by_ident(db: Session, user_id: int, ident: str) -> NamespaceViewRow | None:
    params = ident_params(ident, user_id)
    if params is None:
        return None
    row = run(db, _view_statement("id" if "id" in params else "path"), params).first()
    return None if row is None else _view_row(row)


# ---------------------------------------------------------------------------- counts

NamespaceCounts = tuple[int, int, int, int]  # members, billable members, projects, root repository size


@cache
def _counts_statement() -> Select[Any]:
    """For each group of `ids`, over it and its descendants: distinct members of its groups,
    distinct members of its groups and projects (billable), its projects, and the repository
    bytes of its whole top-level group."""
    outer = _NAMESPACES
    inner = aliased(Namespace, name="counted_ns")
    root = aliased(Namespace, name="root_ns")
    root_inner = aliased(Namespace, name="root_inner_ns")
    active = access.active_membership(bindparam("today", type_=Date()))
    inside = select(inner.id).where(access.within(inner, outer.c)).correlate(outer)
    projects_inside = select(Project.id).where(Project.namespace_id.in_(inside))
    members = (
        select(func.count(func.distinct(Member.user_id)))
        .where(Member.namespace_id.in_(inside), active)
        .correlate(outer)
        .scalar_subquery()
    )
    billable = (
        select(func.count(func.distinct(Member.user_id)))
        .where(or_(Member.namespace_id.in_(inside), Member.project_id.in_(projects_inside)), active)
        .correlate(outer)
        .scalar_subquery()
    )
    projects = select(func.count(Project.id)).where(Project.namespace_id.in_(inside)).correlate(outer)
    root_size = (
        select(func.coalesce(func.sum(ProjectStatistics.repository_size), 0))
        .select_from(root)
        .join(root_inner, access.within(root_inner, root))
        .join(Project, Project.namespace_id == root_inner.id)
        .join(ProjectStatistics, ProjectStatistics.project_id == Project.id)
        .where(root.parent_id.is_(None), access.within(outer.c, root))
        .correlate(outer)
        .scalar_subquery()
    )
    return select(
        outer.c.id,
        members.label("members"),
        billable.label("billable"),
        projects.scalar_subquery().label("projects"),
        root_size.label("root_size"),
    ).where(outer.c.id.in_(bindparam("ids", expanding=True)))


def counts_of(db: Session, group_ids: list[int]) -> dict[int, NamespaceCounts]:
    """What the namespace view shows those who administer each group, in one statement."""
    if not group_ids:
        return {}
    rows = run(db, _counts_statement(), {"ids": group_ids, "today": date.today()})
    return {row[0]: (int(row[1]), int(row[2]), int(row[3]), int(row[4] or 0)) for row in rows}


# ---------------------------------------------------------------------------- free paths


@cache
def _paths_statement(top_level: bool) -> Select[Any]:
    """Lower-cased paths starting with `prefix` in a parent, each with whether a namespace
    holds it: namespaces, and beside them usernames at the top level or projects in a group."""
    prefix = bindparam("prefix")
    in_parent = Namespace.parent_id.is_(None) if top_level else Namespace.parent_id == bindparam("parent_id")
    namespaces = select(func.lower(Namespace.path).label("path"), literal(True).label("namespace")).where(
        in_parent, func.lower(Namespace.path).like(prefix, escape=ESCAPE)
    )
    if top_level:
        others = select(func.lower(User.username), literal(False)).where(
            func.lower(User.username).like(prefix, escape=ESCAPE)
        )
    else:
        others = select(func.lower(Project.path), literal(False)).where(
            Project.namespace_id == bindparam("parent_id"),
            func.lower(Project.path).like(prefix, escape=ESCAPE),
        )
    return union_all(namespaces, others)  # type: ignore[return-value]


def paths_like(db: Session, parent_id: int | None, path: str) -> tuple[set[str], set[str]]:
    """Taken paths that start with `path` (lower-cased) in a parent: those namespaces hold,
    and every one (usernames or projects beside them), in one statement."""
    params: dict[str, Any] = {"prefix": escape_like(path.lower()) + "%"}
    if parent_id is not None:
        params["parent_id"] = parent_id
    held: set[str] = set()
    taken: set[str] = set()
    for found, by_namespace in run(db, _paths_statement(parent_id is None), params):
        taken.add(found)
        if by_namespace:
            held.add(found)
    return held, taken
