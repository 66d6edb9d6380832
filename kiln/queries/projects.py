"""Project finders: lookup by id or full path, and the filters of every project list."""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from functools import cache
from typing import Any, NamedTuple
from urllib.parse import unquote

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Date,
    Select,
    String,
    and_,
    bindparam,
    case,
    cast,
    exists,
    false,
    func,
    literal,
    null,
    or_,
    select,
    true,
)
from sqlalchemy.orm import Session

from kiln import policy
from kiln.auth.actor import Actor
from kiln.models import (
    Member,
    Namespace,
    Project,
    ProjectGroupLink,
    ProjectStar,
    ProjectStatistics,
    ProjectTopic,
    ProjectVisibilityCount,
    User,
)
from kiln.models.base import is_numeric, numeric_id
from kiln.models.namespaces import KIND_GROUP, OWNER, ancestor_ids
from kiln.models.projects import DISABLED, storage_size
from kiln.queries import access, custom_attributes
from kiln.queries.paging import capped_count
from kiln.queries.reads import reusable, row_column, row_columns, run, unindexed
from kiln.queries.shapes import Shapes, bound, parameters_key
from kiln.queries.text import ESCAPE, contains, escape_like
from kiln.schemas.projects import ProjectList


def _project_id(by_path: bool) -> Any:
    """The project a route names: a bind parameter, or the id found by its full path."""
    if not by_path:
        return bindparam("id")
    return (
        select(Project.id)
        .join(Namespace, Namespace.id == Project.namespace_id)
        .where(
            func.lower(Namespace.full_path) == bindparam("namespace_path"),
            func.lower(Project.path) == bindparam("path"),
        )
        .scalar_subquery()
    )


def _level_of(project_id: Any) -> Any:
    return access.project_level_of(bindparam("user_id"), project_id, bindparam("today", type_=Date()))


@cache
def _subject_statement(by_path: bool, signed_in: bool, orm: bool) -> Select[Any]:
    """Project, namespace and the caller's level in one round trip, built once per shape:
    every project route starts here. `orm`: model objects, for a route that changes them;
    otherwise row records."""
    project_id = _project_id(by_path)
    level: Any = _level_of(project_id) if signed_in else null()
    selected: list[Any] = (
        [Project, Namespace] if orm else [*row_columns(_PROJECTS), *row_columns(_NAMESPACES)]
    )
    stmt = (
        select(*selected, level.label("level"))
        .join(Namespace, Namespace.id == Project.namespace_id)
        .where(Project.id == project_id)
    )
    return stmt if orm else reusable(stmt)


def _ident_params(ident: str, user_id: int | None) -> dict[str, Any] | None:
    """A project's numeric id or full path (case-insensitive; `%2F` decoded here) as the
    parameters of a statement built on _project_id; None for what names no project."""
    ident = unquote(ident)
    params: dict[str, Any] = {}
    if is_numeric(ident):
        found = numeric_id(ident)
        if found is None:
            return None
        params["id"] = found
    elif "/" in ident:
        ns_path, _, path = ident.rpartition("/")
        params["namespace_path"], params["path"] = ns_path.lower(), path.lower()
    else:
        return None
    if user_id is not None:
        params["user_id"], params["today"] = user_id, date.today()
    return params


def subject_row(
    db: Session, ident: str, user_id: int | None, *, orm: bool = True
) -> tuple[Any, Any, int | None] | None:
    """The project by id or full path, its namespace, and `user_id`'s effective access level
    on it: model objects with `orm`, else ProjectRow and NamespaceRow records."""
    params = _ident_params(ident, user_id)
    if params is None:
        return None
    stmt = _subject_statement("id" not in params, user_id is not None, orm)
    if orm:
        found = db.execute(stmt, params).first()
        return None if found is None else (found[0], found[1], found[2])
    row = run(db, stmt, params).first()
    if row is None:
        return None
    return ProjectRow(*row[:_P]), NamespaceRow._make(row[_P : _P + _N]), row[_P + _N]


# Who reads, as far as what a statement says depends on it (statements are kept per kind,
# the viewer's id and day are values, viewer_params): None (anonymous), "admin", or the
# visibilities open to a signed-in viewer (policy.open_visibilities).
Viewer = None | str | tuple[str, ...]


def viewer_of(actor: Actor | None) -> Viewer:
    if actor is None:
        return None
    return "admin" if actor.is_admin else policy.open_visibilities(actor)


def visible_to(actor: Actor | None) -> ColumnElement[bool]:
    """Projects the actor may see: public ones, internal ones when signed in (not external),
    and private ones some membership reaches. Admins see everything. A signed-in caller's
    condition is built once per set of open visibilities; its values come from viewer_params."""
    return visible_for(viewer_of(actor))


def visible_for(viewer: Viewer) -> ColumnElement[bool]:
    """visible_to, for a kind of viewer (viewer_of)."""
    if viewer is None:
        return access.opened_by(Project.visibility, policy.open_visibilities(None))
    if viewer == "admin":
        return true()
    assert isinstance(viewer, tuple)
    return _visible_through(viewer)


@cache
def _visible_through(open_levels: tuple[str, ...]) -> ColumnElement[bool]:
    return or_(unindexed(Project.visibility).in_(open_levels), Project.id.in_(reachable(None)))


@cache
def reachable(min_level: int | None, *, estimated: bool = False) -> Select[Any]:
    """Ids of the projects the viewer's memberships reach (at `min_level` or more);
    `estimated`: see access.project_level_rows. Each way in counts, unreduced: a project is
    reached at a level when some way reaches it there, and `IN` ignores repeats; reducing
    them to one level per project first (project_levels) cost a third of the statement."""
    today = bindparam("viewer_today", type_=Date())
    ways = access.project_level_rows(bindparam("viewer_id"), None, today, estimated=estimated).subquery(
        "reach"
    )
    ids = select(ways.c.project_id)
    return ids if min_level is None else ids.where(ways.c.level >= min_level)


def viewer_params(actor: Actor | None) -> dict[str, Any]:
    """The values of the viewer's bind parameters in a listing's statement."""
    return {} if actor is None else {"viewer_id": actor.id, "viewer_today": date.today()}


class Listing(NamedTuple):
    """A list's statements: the ids it shows, in order, and, where counting that statement
    itself is slow, a statement that counts the same rows (at most TOTAL_LIMIT + 1 in each
    part)."""

    ids: Select[Any]
    count: Select[Any] | None


_LISTINGS: Shapes[Listing] = Shapes()


def listing(
    actor: Actor | None,
    q: ProjectList,
    *,
    namespace_ids: list[int] | None = None,
    group: GroupScope | None = None,
    shared_with_group: int | None = None,
    owner_user_id: int | None = None,
    starred_by: int | None = None,
    forked_from: int | None = None,
) -> Listing:
    """The projects a list shows, filtered and ordered, built once per shape (the viewer's
    kind, every parameter, and which scope it is of). The viewer's id and the date come from
    viewer_params, the scope's values from scope_params."""
    scope = (namespace_ids, shared_with_group, owner_user_id, starred_by, forked_from)
    group_shape = None if group is None else group.shape

    def build() -> Listing:
        return _listing(actor, q, group_shape, *(value is not None for value in scope))

    viewer = None if actor is None else ("admin" if actor.is_admin else policy.open_visibilities(actor))
    key = (viewer, parameters_key(q), group_shape, *(value is not None for value in scope))
    return _LISTINGS.get(key, build)


@dataclass(frozen=True, slots=True)
class GroupScope:
    """A group's projects (GET /groups/:id/projects): those in its namespace, with its
    subgroups' and its ancestors' as asked, and those shared with it. Which of these is the
    statement's shape (`shape`); the group's id, traversal and ancestors are its values
    (scope_params)."""

    group_id: int
    traversal: str
    ancestor_ids: tuple[int, ...]
    subgroups: bool
    ancestors: bool
    shared: bool

    @property
    def shape(self) -> tuple[bool, bool, bool]:
        return self.subgroups, self.ancestors, self.shared

    def params(self) -> dict[str, Any]:
        start, end = access.within_bounds(self.traversal)
        return {
            "scope_group_id": self.group_id,
            "scope_traversal": start,
            "scope_traversal_end": end,
            "scope_ancestor_ids": list(self.ancestor_ids) if self.ancestors else [],
        }


def _group_scope(shape: tuple[bool, bool, bool]) -> ColumnElement[bool]:
    subgroups, ancestors, shared_with = shape
    group_id = bindparam("scope_group_id")
    if subgroups:
        own: ColumnElement[bool] = access.within_range(
            Namespace, bindparam("scope_traversal"), bindparam("scope_traversal_end")
        )
    else:
        own = Namespace.id == group_id
    if ancestors:
        own = or_(own, Namespace.id.in_(bindparam("scope_ancestor_ids", expanding=True)))
    in_scope = Project.namespace_id.in_(select(Namespace.id).where(own))
    if not shared_with:
        return in_scope
    shared = select(ProjectGroupLink.project_id).where(ProjectGroupLink.group_id == group_id)
    return or_(in_scope, Project.id.in_(shared))


def scope_params(
    *,
    group: GroupScope | None = None,
    namespace_ids: list[int] | None = None,
    shared_with_group: int | None = None,
    owner_user_id: int | None = None,
    starred_by: int | None = None,
    forked_from: int | None = None,
    **_: Any,
) -> dict[str, Any]:
    """The values of a list's scope (listing's arguments), for its statement's execution."""
    given: dict[str, Any] = {
        "scope_namespace_ids": namespace_ids,
        "scope_shared_with": shared_with_group,
        "scope_owner_id": owner_user_id,
        "scope_starred_by": starred_by,
        "scope_forked_from": forked_from,
    }
    values = {name: value for name, value in given.items() if value is not None}
    return values if group is None else {**values, **group.params()}


def _listing(
    actor: Actor | None,
    q: ProjectList,
    group_shape: tuple[bool, bool, bool] | None,
    in_namespaces: bool,
    shared_with_group: bool,
    owner: bool,
    starred: bool,
    forked: bool,
) -> Listing:
    # Only ids are read: the page's views come from view_rows. The filters come first, the
    # viewer's visibility last (below), so that the count may split on it.
    stmt = select(Project.id)
    user_id = actor.user.id if actor is not None else None
    if group_shape is not None:
        stmt = stmt.where(_group_scope(group_shape))
    if in_namespaces:
        in_scope = Project.namespace_id.in_(bindparam("scope_namespace_ids", expanding=True))
        if shared_with_group:
            shared_with = ProjectGroupLink.group_id == bindparam("scope_shared_with")
            shared = select(ProjectGroupLink.project_id).where(shared_with)
            stmt = stmt.where(or_(in_scope, Project.id.in_(shared)))
        else:
            stmt = stmt.where(in_scope)
    if owner:
        owned = select(Namespace.id).where(Namespace.owner_id == bindparam("scope_owner_id"))
        stmt = stmt.where(Project.namespace_id.in_(owned))
    if starred:
        stars = select(ProjectStar.project_id).where(ProjectStar.user_id == bindparam("scope_starred_by"))
        stmt = stmt.where(Project.id.in_(stars))
    if forked:
        stmt = stmt.where(Project.forked_from_id == bindparam("scope_forked_from"))
    if q.archived is not None:
        stmt = stmt.where(Project.archived == q.archived)
    if q.active is not None:
        stmt = stmt.where(
            and_(Project.archived.is_(False), Project.marked_for_deletion_on.is_(None))
            if q.active
            else or_(Project.archived.is_(True), Project.marked_for_deletion_on.is_not(None))
        )
    if q.visibility is not None:
        stmt = stmt.where(Project.visibility == q.visibility)
    if q.search:
        term = contains(q.search)
        matches = [
            func.lower(Project.name).like(term, escape=ESCAPE),
            func.lower(Project.path).like(term, escape=ESCAPE),
            func.lower(Project.description).like(term, escape=ESCAPE),
        ]
        if q.search_namespaces:
            full = select(Namespace.id).where(func.lower(Namespace.full_path).like(term, escape=ESCAPE))
            matches.append(Project.namespace_id.in_(full))
            if "/" in q.search:
                ns_part, _, name_part = q.search.lower().rpartition("/")
                nested = select(Namespace.id).where(
                    func.lower(Namespace.full_path).like(f"%{escape_like(ns_part)}", escape=ESCAPE)
                )
                matches.append(
                    and_(
                        Project.namespace_id.in_(nested),
                        func.lower(Project.path).like(f"{escape_like(name_part)}%", escape=ESCAPE),
                    )
                )
        stmt = stmt.where(or_(*matches))
    if q.owned:
        stmt = stmt.where(_reached(user_id, OWNER))
    if q.membership:
        stmt = stmt.where(_reached(user_id, None))
    if q.min_access_level is not None:
        stmt = stmt.where(_reached(user_id, q.min_access_level))
    if q.starred:
        stmt = stmt.where(
            Project.id.in_(
                select(ProjectStar.project_id).where(ProjectStar.user_id == bindparam("viewer_id"))
            )
            if user_id is not None
            else false()
        )
    if q.with_issues_enabled:
        stmt = stmt.where(Project.issues_access_level != DISABLED)
    if q.with_merge_requests_enabled:
        stmt = stmt.where(Project.merge_requests_access_level != DISABLED)
    if q.with_programming_language:
        stmt = stmt.where(func.lower(Project.primary_language) == q.with_programming_language.lower())
    if q.wiki_checksum_failed or q.repository_checksum_failed:
        # Checksums are verified on write and never fail afterwards: nothing to list.
        stmt = stmt.where(false())
    if q.imported:
        stmt = stmt.where(Project.import_url.is_not(None))
    if q.id_after is not None:
        stmt = stmt.where(Project.id > bound("id_after"))
    if q.id_before is not None:
        stmt = stmt.where(Project.id < bound("id_before"))
    if q.last_activity_after is not None:
        stmt = stmt.where(Project.last_activity_at > q.last_activity_after)
    if q.last_activity_before is not None:
        stmt = stmt.where(Project.last_activity_at < q.last_activity_before)
    if q.updated_after is not None:
        stmt = stmt.where(Project.updated_at > q.updated_after)
    if q.updated_before is not None:
        stmt = stmt.where(Project.updated_at < q.updated_before)
    if q.marked_for_deletion_on is not None:
        stmt = stmt.where(Project.marked_for_deletion_on == q.marked_for_deletion_on)
    if q.repository_storage:
        stmt = stmt.where(Project.repository_storage == q.repository_storage)
    for name in q.topic or []:
        stmt = stmt.where(
            exists(
                select(ProjectTopic.id).where(
                    ProjectTopic.project_id == Project.id, func.lower(ProjectTopic.name) == name.lower()
                )
            )
        )
    if actor is not None and actor.is_admin:
        stmt = stmt.where(*custom_attributes.matching("projects", Project.id, q.custom_attributes or {}))
    filters = stmt.whereclause
    if actor is not None and actor.is_admin:
        # Administrators see everything: no condition at all, and unfiltered, the kept counts.
        return Listing(_ordered(stmt, q), select(_kept_count(None)) if filters is None else None)
    count = _visible_count(policy.open_visibilities(actor), filters, signed_in=actor is not None)
    return Listing(_ordered(stmt.where(visible_to(actor)), q), count)


def _visible_count(
    open_levels: tuple[str, ...], filters: ColumnElement[bool] | None, *, signed_in: bool
) -> Select[Any] | None:
    """How many projects a viewer's list holds, as the open ones plus the closed ones a
    membership reaches: disjoint parts, each counted from an index (at most TOTAL_LIMIT + 1),
    where `open OR reached` tests every project against the viewer's memberships (SQLite
    0.95 -> 0.7 ms at 10,000 projects; PostgreSQL 1.97 -> 1.0 ms, with the reach estimated
    as access.below_estimate says). Unfiltered, the open ones are the kept counts."""

    def part(condition: ColumnElement[bool]) -> Any:
        rows = select(literal(1)).select_from(Project).where(condition)
        if filters is not None:
            rows = rows.where(filters)
        return capped_count(rows, Project.id)

    opened = _kept_count(open_levels) if filters is None else part(Project.visibility.in_(open_levels))
    if not signed_in:
        return select(opened) if filters is None else None
    reached = reachable(None, estimated=True)
    reached_closed = and_(Project.id.in_(reached), unindexed(Project.visibility).not_in(open_levels))
    return select(opened + part(reached_closed))


def _kept_count(visibilities: tuple[str, ...] | None) -> Any:
    """How many projects of these visibilities there are (all: None), as the triggers behind
    ProjectVisibilityCount keep them: two rows read instead of thousands counted."""
    counts = ProjectVisibilityCount
    total = select(cast(func.coalesce(func.sum(counts.projects), 0), BigInteger))
    if visibilities is not None:
        total = total.where(counts.visibility.in_(visibilities))
    return total.scalar_subquery()


def _reached(
    user_id: int | None, min_level: int | None, *, personal_only: bool = False
) -> ColumnElement[bool]:
    """Projects a membership of the viewer (`user_id`) reaches (at `min_level` or more); owned =
    in the user's namespace or owned through a group, as GitLab's `owned` filter."""
    if user_id is None:
        return false()
    if personal_only:
        own_ns = select(Namespace.id).where(Namespace.owner_id == user_id)
        return Project.namespace_id.in_(own_ns)
    return Project.id.in_(reachable(min_level))


def _ordered(stmt: Select[Any], q: ProjectList) -> Select[Any]:
    order = q.order_by if q.order_by not in ("similarity", "storage_size") else "id"
    column = getattr(Project, order)
    asc = (q.sort or "desc").lower() == "asc"
    primary = column.asc() if asc else column.desc()
    if column is Project.id:
        return stmt.order_by(primary)
    return stmt.order_by(primary, Project.id.asc() if asc else Project.id.desc())


def topics_of(db: Session, project_ids: list[int]) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {pid: [] for pid in project_ids}
    if project_ids:
        rows = db.execute(
            select(ProjectTopic.project_id, ProjectTopic.name)
            .where(ProjectTopic.project_id.in_(project_ids))
            .order_by(ProjectTopic.project_id, ProjectTopic.position, ProjectTopic.id)
        )
        for pid, name in rows:
            out[pid].append(name)
    return out


# ---------------------------------------------------------------------------- views
#
# A project's views render row records: one statement reads, for a page of projects (or one),
# the project, its namespace, the namespace's owner, statistics, topics, and the caller's
# levels; shared groups and fork parents only when some project on the page has them.

_PROJECTS = Project.__table__
_NAMESPACES = Namespace.__table__
_STATS = ProjectStatistics.__table__
_OWNER = User.__table__.alias("owner")
_TOPIC_SEPARATOR = "\x1f"


class ProjectRow(namedtuple("ProjectRow", [*_PROJECTS.c.keys(), "runners_token"], defaults=[None])):  # type: ignore[misc]
    """The project's columns; `runners_token` is no column but the registration token derived
    from the row's nonce, filled in by a service holding the server key for callers who may
    see it (None otherwise)."""

    __slots__ = ()


class NamespaceRow(namedtuple("NamespaceRow", [c.key for c in _NAMESPACES.c])):  # type: ignore[misc]
    __slots__ = ()

    @property
    def is_group(self) -> bool:
        return bool(self.kind == KIND_GROUP)

    @property
    def ancestor_ids(self) -> list[int]:
        return ancestor_ids(self.traversal)


OwnerRow = namedtuple(
    "OwnerRow", ["id", "username", "name", "state", "avatar_path", "created_at", "row_version"]
)
_STAT_FIELDS = [c.key for c in _STATS.c if c.key != "project_id"]


class StatisticsRow(namedtuple("StatisticsRow", _STAT_FIELDS)):  # type: ignore[misc]
    __slots__ = ()

    @property
    def storage_size(self) -> int:
        return storage_size(self)


SharedGroupRow = namedtuple(
    "SharedGroupRow", ["project_id", "group_access", "expires_at", "id", "name", "full_path"]
)
ZERO_STATISTICS = StatisticsRow(*(0 for _ in _STAT_FIELDS))

_P, _N = len(_PROJECTS.c), len(_NAMESPACES.c)
_O = len(OwnerRow._fields)
_S = len(_STAT_FIELDS)


def _joined(rows: Select[Any], separator: str) -> Any:
    """The one text column of `rows` (correlated to the project, ordered), joined by
    `separator` into one value per project (NULL: no rows)."""
    ordered = rows.correlate(_PROJECTS).subquery()
    return select(func.aggregate_strings(ordered.c[0], separator)).scalar_subquery()


def _topics_column() -> Any:
    return _joined(
        select(ProjectTopic.name)
        .where(ProjectTopic.project_id == _PROJECTS.c.id)
        .order_by(ProjectTopic.position, ProjectTopic.id),
        _TOPIC_SEPARATOR,
    )


def _shared_groups_versions() -> Any:
    """The versions of the groups a project is shared with, in the order its view lists them
    (NULL: none). The shares themselves renew the project's version."""
    return _joined(
        select(cast(Namespace.row_version, String))
        .select_from(ProjectGroupLink)
        .join(Namespace, Namespace.id == ProjectGroupLink.group_id)
        .where(ProjectGroupLink.project_id == _PROJECTS.c.id)
        .order_by(ProjectGroupLink.id),
        ",",
    )


@cache
def _view_statement(shape: str, signed_in: bool, statistics: bool, versions: bool = False) -> Select[Any]:
    """Built once per shape: "page" (`ids` expands to the page's project ids), "id" or
    "path" (one project named by a route, as in _subject_statement). With `versions`, the
    rows' versions in place of the rows (view_versions)."""
    stats = [(_STATS.c[name]) for name in _STAT_FIELDS] if statistics else []
    shared = exists(select(ProjectGroupLink.id).where(ProjectGroupLink.project_id == _PROJECTS.c.id))
    columns: list[Any] = [
        *row_columns(_PROJECTS),
        *row_columns(_NAMESPACES),
        *(row_column(_OWNER.c[name]) for name in OwnerRow._fields),
        *stats,
        _topics_column().label("topics"),
        shared.label("shared"),
    ]
    if versions:
        columns = [
            _PROJECTS.c.id,
            _PROJECTS.c.row_version,
            _NAMESPACES.c.row_version,
            _OWNER.c.row_version,
            _PROJECTS.c.forked_from_id,
            _shared_groups_versions().label("shares"),
        ]
    stmt = (
        select(*columns)
        .select_from(_PROJECTS)
        .join(_NAMESPACES, _NAMESPACES.c.id == _PROJECTS.c.namespace_id)
        .outerjoin(_OWNER, _OWNER.c.id == _NAMESPACES.c.owner_id)
    )
    if statistics:
        stmt = stmt.outerjoin(_STATS, _STATS.c.project_id == _PROJECTS.c.id)
    project_id = None if shape == "page" else _project_id(shape == "path")
    if signed_in:
        today = bindparam("today", type_=Date())
        direct = (
            select(Member.access_level)
            .where(
                Member.project_id == _PROJECTS.c.id,
                Member.user_id == bindparam("user_id"),
                Member.requested_at.is_(None),
            )
            .correlate(_PROJECTS)
            .limit(1)
            .scalar_subquery()
        )
        member_ns = access.member_namespace()
        group_level = (
            select(func.max(Member.access_level))
            .select_from(Member)
            .join(member_ns, member_ns.id == Member.namespace_id)
            .where(
                Member.user_id == bindparam("user_id"),
                access.active_membership(today),
                access.within(_NAMESPACES.c, member_ns),
                _NAMESPACES.c.kind == KIND_GROUP,
            )
            .correlate(_NAMESPACES)
            .scalar_subquery()
        )
        if project_id is None:
            levels = access.project_levels(bindparam("user_id"), bindparam("ids", expanding=True), today)
            stmt = stmt.outerjoin(levels, levels.c.project_id == _PROJECTS.c.id)
            level: Any = levels.c.level
        else:
            level = _level_of(project_id)
        # The holder of a personal namespace is its projects' Owner (GitLab keeps an Owner
        # membership for them), whatever membership row there is.
        project_access = case((_NAMESPACES.c.owner_id == bindparam("user_id"), literal(OWNER)), else_=direct)
        stmt = stmt.add_columns(
            level.label("level"), project_access.label("project_access"), group_level.label("group_access")
        )
    if project_id is None:
        return stmt.where(_PROJECTS.c.id.in_(bindparam("ids", expanding=True)))
    return stmt.where(_PROJECTS.c.id == project_id)


@cache
def _shared_groups_statement() -> Select[Any]:
    return (
        select(
            ProjectGroupLink.project_id,
            ProjectGroupLink.group_access,
            ProjectGroupLink.expires_at,
            Namespace.id,
            Namespace.name,
            Namespace.full_path,
        )
        .join(Namespace, Namespace.id == ProjectGroupLink.group_id)
        .where(ProjectGroupLink.project_id.in_(bindparam("ids", expanding=True)))
        .order_by(ProjectGroupLink.id)
    )


@dataclass(slots=True)
class ViewRow:
    """What the view statement read for one project, before the policy has looked at it."""

    project: ProjectRow
    namespace: NamespaceRow
    owner: OwnerRow | None
    statistics: StatisticsRow | None
    topics: list[str]
    shared: bool
    level: int | None = None
    project_access: int | None = None
    group_access: int | None = None


def view_rows(
    db: Session, user_id: int | None, ids: list[int], *, statistics: bool = False
) -> dict[int, ViewRow]:
    """View rows of the projects `ids` (in no order), keyed by id."""
    if not ids:
        return {}
    params: dict[str, Any] = {"ids": ids}
    if user_id is not None:
        params["user_id"], params["today"] = user_id, date.today()
    rows = run(db, _view_statement("page", user_id is not None, statistics), params)
    views = (_view_row(row, statistics, user_id is not None) for row in rows)
    return {view.project.id: view for view in views}


class VersionRow(NamedTuple):
    """What a project's view is read from, by version: its row's, its namespace's and its
    owner's versions (topics and group shares renew the project's), the versions of the
    groups it is shared with, and the caller's levels. Equal versions read equal rows; what
    this does not cover (a fork's parent) is named so that callers read those views whole."""

    id: int
    versions: tuple[int, int, int | None]
    forked_from_id: int | None
    shares: str | None
    level: int | None
    project_access: int | None
    group_access: int | None


def view_versions(db: Session, user_id: int | None, ids: list[int]) -> dict[int, VersionRow]:
    """Version rows of the projects `ids` (in no order), keyed by id: one statement, the view
    statement's joins and levels without its columns."""
    if not ids:
        return {}
    params: dict[str, Any] = {"ids": ids}
    if user_id is not None:
        params["user_id"], params["today"] = user_id, date.today()
    out = {}
    for row in run(db, _view_statement("page", user_id is not None, False, True), params):
        levels = (row[6], row[7], row[8]) if user_id is not None else (None, None, None)
        out[row[0]] = VersionRow(row[0], (row[1], row[2], row[3]), row[4], row[5], *levels)
    return out


def view_by_ident(
    db: Session, user_id: int | None, ident: str, *, statistics: bool = False
) -> ViewRow | None:
    """The view row of the project a route names by id or full path (nothing decided yet)."""
    params = _ident_params(ident, user_id)
    if params is None:
        return None
    shape = "id" if "id" in params else "path"
    row = run(db, _view_statement(shape, user_id is not None, statistics), params).first()
    return None if row is None else _view_row(row, statistics, user_id is not None)


def _view_row(row: Any, statistics: bool, signed_in: bool) -> ViewRow:
    at = _P + _N
    owner = OwnerRow._make(row[at : at + _O]) if row[at] is not None else None
    at += _O
    stats = None
    if statistics:
        stats = StatisticsRow._make(0 if v is None else v for v in row[at : at + _S])
        at += _S
    topics = row[at]
    view = ViewRow(
        project=ProjectRow(*row[:_P]),
        namespace=NamespaceRow._make(row[_P : _P + _N]),
        owner=owner,
        statistics=stats,
        topics=topics.split(_TOPIC_SEPARATOR) if topics else [],
        shared=bool(row[at + 1]),
    )
    if signed_in:
        view.level, view.project_access, view.group_access = row[at + 2], row[at + 3], row[at + 4]
    return view


# ---------------------------------------------------------------------------- runner registration tokens


@cache
def _by_runners_token_digest_statement() -> Select[Any]:
    return select(Project.id).where(Project.runners_token_digest == bindparam("digest"))


def project_id_by_runners_token_digest(db: Session, token_digest: str) -> int | None:
    found: int | None = db.execute(_by_runners_token_digest_statement(), {"digest": token_digest}).scalar()
    return found


@cache
def _undigested_runners_tokens_statement() -> Select[Any]:
    return select(Project.id, Project.runners_token_nonce).where(Project.runners_token_digest.is_(None))


def undigested_runners_tokens(db: Session) -> list[tuple[int, str]]:
    """(id, nonce) of the projects whose token's digest is not kept yet."""
    return [(pid, nonce) for pid, nonce in db.execute(_undigested_runners_tokens_statement())]


def shared_groups_of(db: Session, project_ids: list[int]) -> dict[int, list[SharedGroupRow]]:
    out: dict[int, list[SharedGroupRow]] = {pid: [] for pid in project_ids}
    if project_ids:
        for row in run(db, _shared_groups_statement(), {"ids": project_ids}):
            out[row[0]].append(SharedGroupRow._make(row))
    return out


@dataclass(frozen=True, slots=True)
class ProjectAccess:
    """A project with its namespace and a user's level there: what deciding what they may
    see of it takes (policy, through a ProjectSubject)."""

    project: ProjectRow
    namespace: NamespaceRow
    level: int | None


@cache
def _access_statement(signed_in: bool) -> Select[Any]:
    ids = bindparam("ids", expanding=True)
    stmt = select(*row_columns(_PROJECTS), *row_columns(_NAMESPACES)).join(
        _NAMESPACES, _NAMESPACES.c.id == _PROJECTS.c.namespace_id
    )
    if signed_in:
        levels = access.project_levels(bindparam("user_id"), ids, bindparam("today", type_=Date()))
        stmt = stmt.outerjoin(levels, levels.c.project_id == _PROJECTS.c.id).add_columns(levels.c.level)
    else:
        stmt = stmt.add_columns(null().label("level"))
    return stmt.where(_PROJECTS.c.id.in_(ids))


def access_of(db: Session, user_id: int | None, project_ids: Iterable[int]) -> dict[int, ProjectAccess]:
    """The projects by id with `user_id`'s level on each, in one statement whatever their
    number (the projects of issues shown beside another's: links, to-dos, an epic's issues)."""
    ids = sorted(set(project_ids))
    if not ids:
        return {}
    values: dict[str, Any] = {"ids": ids}
    if user_id is not None:
        values.update(user_id=user_id, today=date.today())
    found: dict[int, ProjectAccess] = {}
    for row in run(db, _access_statement(user_id is not None), values):
        project = ProjectRow(*row[:_P])
        found[project.id] = ProjectAccess(project, NamespaceRow._make(row[_P : _P + _N]), row[_P + _N])
    return found
