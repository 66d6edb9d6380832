"""Who has which access level where, computed in SQL so that lists and single lookups use
the same rules: direct project membership, membership of the project's group or any of its
ancestors, groups the project is shared with (capped at the share's level), and the owner
of a personal namespace. Expired memberships and access requests grant nothing."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date
from functools import cache
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Date,
    Select,
    and_,
    bindparam,
    case,
    func,
    literal,
    or_,
    select,
    union_all,
)
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.orm import Session, aliased
from sqlalchemy.sql.elements import BindParameter
from sqlalchemy.sql.functions import FunctionElement
from sqlalchemy.types import Boolean

from kiln.models import Member, Namespace, Project, ProjectGroupLink
from kiln.models.namespaces import OWNER
from kiln.queries.reads import run

# Built once: aliasing a table copies its columns, which cost more per request than the query.
_MEMBER_NS = aliased(Namespace, name="member_ns")
_INNER_NS = aliased(Namespace, name="inner_ns")
_SHARED_NS = aliased(Namespace, name="shared_ns")
_OUTER_NS = aliased(Namespace, name="outer_ns")


def member_namespace() -> Any:
    """The alias under which a membership's own namespace joins (built once)."""
    return _MEMBER_NS


def opened_by(visibility: Any, visibilities: tuple[str, ...]) -> ColumnElement[bool]:
    """`visibility` is one the policy opens (policy.open_visibilities): a plain equality for
    one value, so the SQL stays what an index on the column answers best."""
    if len(visibilities) == 1:
        return visibility == visibilities[0]  # type: ignore[no-any-return]
    return visibility.in_(visibilities)  # type: ignore[no-any-return]


def within(inner: Any, outer: Any) -> ColumnElement[bool]:
    """`inner` is `outer` or below it: its traversal starts with outer's. Written as a range
    ("1/5/" <= t < "1/5/~"; traversals hold only digits and slashes) so the traversal index
    answers it, where `LIKE outer || '%'` would read every row."""
    return within_range(inner, outer.traversal, outer.traversal + "~")


class below_estimate(FunctionElement[bool]):  # noqa: N801 - named as what it tells the planner
    """within, said again so that PostgreSQL estimates it: it takes a traversal range whose
    bounds come from another row for two independent inequalities (a ninth of all
    namespaces), and so hashes every project to join a group's few; `LIKE outer || '%'`
    (always true where within holds: traversals hold only digits and slashes) is estimated
    at 0.5%, and the plan walks the indexes instead. A member's project count 1.97 -> 1.0 ms.
    SQLite's planner needs no telling: it is left out there."""

    type = Boolean()
    inherit_cache = True
    name = "below_estimate"


@compiles(below_estimate, "postgresql")
def _below_estimate_postgresql(element: below_estimate, compiler: Any, **kw: Any) -> str:
    inner, outer = element.clauses.clauses
    return f"({compiler.process(inner, **kw)} LIKE {compiler.process(outer, **kw)} || '%%')"


@compiles(below_estimate)
def _below_estimate_default(element: below_estimate, compiler: Any, **kw: Any) -> str:
    return "1 = 1"


def within_range(inner: Any, traversal: Any, end: Any) -> ColumnElement[bool]:
    """within, for an outer namespace given by its traversal and that traversal's end
    (within_bounds): both may be bind parameters, for a statement kept across namespaces."""
    return and_(inner.traversal >= traversal, inner.traversal < end)


def within_bounds(traversal: str) -> tuple[str, str]:
    """The values within_range compares a traversal with."""
    return traversal, traversal + "~"


def active_membership(today: Any) -> ColumnElement[bool]:
    """Memberships that grant access: not an access request, not expired."""
    return and_(Member.requested_at.is_(None), or_(Member.expires_at.is_(None), Member.expires_at > today))


def share_level() -> ColumnElement[int]:
    """A member's level through a share: their own, capped at the level the project was
    shared at."""
    return case(
        (Member.access_level < ProjectGroupLink.group_access, Member.access_level),
        else_=ProjectGroupLink.group_access,
    )


def through_shares(stmt: Select[Any], member_ns: Any, shared_ns: Any) -> Select[Any]:
    """`stmt` over memberships of a group a project is shared with, or of its ancestors
    (`member_ns`, `shared_ns`: the caller's aliases of namespaces); share_active narrows it
    to the shares that count."""
    return (
        stmt.select_from(Member)
        .join(member_ns, member_ns.id == Member.namespace_id)
        .join(shared_ns, within(shared_ns, member_ns))
        .join(ProjectGroupLink, ProjectGroupLink.group_id == shared_ns.id)
    )


def share_active(today: Any) -> ColumnElement[bool]:
    """Shares that grant access: not expired."""
    return or_(ProjectGroupLink.expires_at.is_(None), ProjectGroupLink.expires_at > today)


def personal_projects(*columns: Any) -> Select[Any]:
    """`columns` of projects with their namespace: `Namespace.owner_id` is the holder of a
    personal namespace, its projects' Owner."""
    return select(*columns).select_from(Project).join(Namespace, Namespace.id == Project.namespace_id)


def project_level_rows(
    user_id: Any,
    project_ids: Iterable[int] | BindParameter[Any] | None = None,
    today: Any = None,
    *,
    estimated: bool = False,
) -> Select[Any]:
    """(project_id, level) rows, one per way the user reaches a project; not yet reduced.
    Arguments may be bind parameters. `estimated`: the group ranges carry below_estimate, for
    statements over every project the user reaches (with a page's ids, PostgreSQL's plan is
    better without it)."""
    today = date.today() if today is None else today
    ids: Any = None
    if isinstance(project_ids, BindParameter):
        ids = project_ids
    elif project_ids is not None:
        ids = list(project_ids)
    member_ns, inner_ns, shared_ns = _MEMBER_NS, _INNER_NS, _SHARED_NS

    direct = select(Member.project_id.label("project_id"), Member.access_level.label("level")).where(
        Member.user_id == user_id, Member.project_id.is_not(None), active_membership(today)
    )
    inherited = (
        select(Project.id.label("project_id"), Member.access_level.label("level"))
        .select_from(Member)
        .join(member_ns, member_ns.id == Member.namespace_id)
        .join(inner_ns, within(inner_ns, member_ns))
        .join(Project, Project.namespace_id == inner_ns.id)
        .where(Member.user_id == user_id, active_membership(today))
    )
    if estimated:
        inherited = inherited.where(below_estimate(inner_ns.traversal, member_ns.traversal))
    shared = through_shares(
        select(ProjectGroupLink.project_id.label("project_id"), share_level().label("level")),
        member_ns,
        shared_ns,
    ).where(Member.user_id == user_id, active_membership(today), share_active(today))
    if estimated:
        shared = shared.where(below_estimate(shared_ns.traversal, member_ns.traversal))
    personal = personal_projects(Project.id.label("project_id"), literal(OWNER).label("level")).where(
        Namespace.owner_id == user_id
    )
    if ids is not None:
        direct = direct.where(Member.project_id.in_(ids))
        inherited = inherited.where(Project.id.in_(ids))
        shared = shared.where(ProjectGroupLink.project_id.in_(ids))
        personal = personal.where(Project.id.in_(ids))
    return union_all(direct, inherited, shared, personal)  # type: ignore[return-value]


def project_levels(
    user_id: Any,
    project_ids: Iterable[int] | BindParameter[Any] | None = None,
    today: Any = None,
    *,
    estimated: bool = False,
) -> Any:
    """A subquery of (project_id, level): the user's effective level per reachable project."""
    rows = project_level_rows(user_id, project_ids, today, estimated=estimated).subquery("reach")
    return (
        select(rows.c.project_id.label("project_id"), func.max(rows.c.level).label("level"))
        .group_by(rows.c.project_id)
        .subquery("project_levels")
    )


def project_level_of(user_id: Any, project_id: Any, today: Any) -> Any:
    """A scalar subquery: the user's effective level on one project (NULL when none).
    `project_id` may be a bind parameter or an uncorrelated scalar subquery."""
    rows = project_level_rows(user_id, [project_id], today).subquery("reach")
    return select(func.max(rows.c.level)).scalar_subquery()


def group_levels(
    user_id: Any, group_ids: Iterable[int] | BindParameter[Any] | None = None, today: Any = None
) -> Any:
    """A subquery of (namespace_id, level): membership of a group or of any ancestor.
    `user_id` and `today` may be bind parameters (today's date when None)."""
    member_ns, inner_ns = _MEMBER_NS, _INNER_NS
    stmt = (
        select(inner_ns.id.label("namespace_id"), func.max(Member.access_level).label("level"))
        .select_from(Member)
        .join(member_ns, member_ns.id == Member.namespace_id)
        .join(inner_ns, within(inner_ns, member_ns))
        .where(Member.user_id == user_id, active_membership(date.today() if today is None else today))
        .group_by(inner_ns.id)
    )
    if isinstance(group_ids, BindParameter):
        stmt = stmt.where(inner_ns.id.in_(group_ids))
    elif group_ids is not None:
        stmt = stmt.where(inner_ns.id.in_(list(group_ids)))
    return stmt.subquery("group_levels")


def related_group_ids(user_id: Any, today: Any = None) -> Select[Any]:
    """Groups a user may see because of what is inside them: ancestors of the groups the
    user belongs to and of the projects the user is a member of (GitLab shows their names).
    `user_id` and `today` may be bind parameters (today's date when None)."""
    today = date.today() if today is None else today
    inner, outer = _INNER_NS, _OUTER_NS
    via_groups = (
        select(outer.id)
        .select_from(Member)
        .join(inner, inner.id == Member.namespace_id)
        .join(outer, within(inner, outer))
        .where(Member.user_id == user_id, active_membership(today))
    )
    via_projects = (
        select(outer.id)
        .select_from(Member)
        .join(Project, Project.id == Member.project_id)
        .join(inner, inner.id == Project.namespace_id)
        .join(outer, within(inner, outer))
        .where(Member.user_id == user_id, active_membership(today))
    )
    return union_all(via_groups, via_projects)  # type: ignore[return-value]


def group_level_column(ns: Any, user_id: Any, today: Any) -> Any:
    """A scalar subquery correlated to the namespaces table `ns` (a Table): the user's level
    on that group through a membership of it or of an ancestor (NULL when none)."""
    member_ns = _MEMBER_NS
    return (
        select(func.max(Member.access_level))
        .select_from(Member)
        .join(member_ns, member_ns.id == Member.namespace_id)
        .where(Member.user_id == user_id, active_membership(today), within(ns.c, member_ns))
        .correlate(ns)
        .scalar_subquery()
    )


def related_column(ns: Any, user_id: Any, today: Any) -> Any:
    """EXISTS correlated to the namespaces table `ns`: the user belongs to a group or a
    project inside it (what lets them see its name; see related_group_ids)."""
    inner = _INNER_NS
    via_groups = (
        select(Member.id)
        .join(inner, inner.id == Member.namespace_id)
        .where(Member.user_id == user_id, active_membership(today), within(inner, ns.c))
        .correlate(ns)
    )
    via_projects = (
        select(Member.id)
        .join(Project, Project.id == Member.project_id)
        .join(inner, inner.id == Project.namespace_id)
        .where(Member.user_id == user_id, active_membership(today), within(inner, ns.c))
        .correlate(ns)
    )
    return or_(via_groups.exists(), via_projects.exists())


@cache
def _group_standing_statement() -> Select[Any]:
    ns = Namespace.__table__
    user_id, today = bindparam("user_id"), bindparam("today", type_=Date())
    return select(
        group_level_column(ns, user_id, today).label("level"),
        related_column(ns, user_id, today).label("related"),
    ).where(ns.c.id == bindparam("id"))


def group_standing(db: Session, user_id: int, group_id: int) -> tuple[int | None, bool]:
    """The user's level on a group and whether something inside it relates them to it, in
    one statement (for a group whose row is already loaded)."""
    params = {"user_id": user_id, "id": group_id, "today": date.today()}
    row = run(db, _group_standing_statement(), params).first()
    return (None, False) if row is None else (row[0], bool(row[1]))
