"""Member reads: who is a member of a group or project and through which row (their own, an
ancestor group's, a group the project is shared with), access requests, and the records
their views render. Statements are built once per shape with bind parameters; users come as
UserRow records (queries.users), the ORM `Member` is for writes."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from functools import cache
from typing import Any

from sqlalchemy import Date, Select, bindparam, cast, func, literal_column, null, or_, select, union_all
from sqlalchemy.orm import Session, aliased

from kiln.models import Member, Namespace, Project, ProjectGroupLink, User
from kiln.models.namespaces import OWNER
from kiln.queries import access
from kiln.queries.projects import OwnerRow
from kiln.queries.reads import row_column, run, utc_iso
from kiln.queries.text import ESCAPE, contains
from kiln.queries.users import USER_COLUMNS, UserRow, rows_by_ids

# Which row of a user shows in /members/all when levels tie: the project's own, then a group's.
_DIRECT, _INHERITED, _SHARED = 0, 1, 2
_USERS = User.__table__
_CREATOR = User.__table__.alias("creator")
_U = len(USER_COLUMNS)


@dataclass(slots=True)
class MemberRecord:
    """What the member and access-requester views show, loaded in a fixed number of statements.
    Times are the API's strings when read, the values just written after a write."""

    user: UserRow
    access_level: int
    created_at: str | datetime
    expires_at: date | None
    created_by: UserRow | OwnerRow | None = None
    requested_at: str | datetime | None = None


def _member_columns(level: Any, rank: int) -> list[Any]:
    return [
        Member.id.label("member_id"),
        Member.user_id.label("user_id"),
        level.label("level"),
        Member.created_at.label("created_at"),
        Member.expires_at.label("expires_at"),
        Member.created_by_id.label("created_by_id"),
        literal_column(str(rank)).label("rank"),
    ]


def _own_rows(on_project: bool) -> Any:
    if on_project:
        return Member.project_id == bindparam("project_id")
    return Member.namespace_id == bindparam("namespace_id")


@cache
def _reach(on_project: bool, deep: bool) -> Any:
    """One row per user: every (row, level) through which a user is a member of the source,
    reduced to the highest level, then the project's own row, then the oldest. Parameters:
    `project_id` or `namespace_id`, `today`, and with `deep` the `chain` of groups the source
    inherits from."""
    today = bindparam("today", type_=Date())
    active = access.active_membership(today)
    parts: list[Any] = [
        select(*_member_columns(Member.access_level, _DIRECT)).where(_own_rows(on_project), active)
    ]
    if on_project:
        # The holder of a personal namespace is its projects' Owner; sorted before real rows.
        parts.append(
            access.personal_projects(
                literal_column("0").label("member_id"),
                Namespace.owner_id.label("user_id"),
                literal_column(str(OWNER)).label("level"),
                Project.created_at.label("created_at"),
                cast(null(), Date).label("expires_at"),
                Project.creator_id.label("created_by_id"),
                literal_column(str(_DIRECT)).label("rank"),
            ).where(Project.id == bindparam("project_id"), Namespace.owner_id.is_not(None))
        )
    if deep:
        parts.append(
            select(*_member_columns(Member.access_level, _INHERITED)).where(
                Member.namespace_id.in_(bindparam("chain", expanding=True)), active
            )
        )
    if deep and on_project:
        # Members of a group the project is shared with (or of its ancestors), capped at the share.
        member_ns = aliased(Namespace, name="share_member_ns")
        shared_ns = aliased(Namespace, name="share_ns")
        parts.append(
            access.through_shares(
                select(*_member_columns(access.share_level(), _SHARED)), member_ns, shared_ns
            ).where(
                ProjectGroupLink.project_id == bindparam("project_id"), access.share_active(today), active
            )
        )
    rows = union_all(*parts).subquery("reach")
    rank = (
        func.row_number()
        .over(partition_by=rows.c.user_id, order_by=(rows.c.level.desc(), rows.c.rank, rows.c.member_id))
        .label("position")
    )
    return select(rows, rank).subquery("members_of_source")


def _columns(m: Any) -> list[Any]:
    return [
        m.c.member_id,
        m.c.user_id,
        m.c.level,
        utc_iso(m.c.created_at).label("created_at"),
        m.c.expires_at,
        m.c.created_by_id,
    ]


def source_params(
    *, project_id: int | None, namespace_id: int | None, chain: list[int] | None
) -> dict[str, Any]:
    """The parameters of a member statement for a project (or else a group) and, for the
    inherited members, the groups it inherits from."""
    params: dict[str, Any] = {"today": date.today()}
    if project_id is not None:
        params["project_id"] = project_id
    else:
        params["namespace_id"] = namespace_id
    if chain is not None:
        params["chain"] = chain
    return params


def listing(
    *,
    on_project: bool,
    deep: bool,
    query: str | None = None,
    user_ids: list[int] | None = None,
    skip_users: list[int] | None = None,
) -> Select[Any]:
    """Member rows (member_id, user_id, level, created_at, expires_at, created_by_id), one per
    user, in the order their rows were created (GitLab's); the users come from records().
    Kept per shape: which filters are given; their values are listing_params'."""
    return _listing(on_project, deep, bool(query), bool(user_ids), bool(skip_users))


def listing_params(
    query: str | None = None, user_ids: list[int] | None = None, skip_users: list[int] | None = None
) -> dict[str, Any]:
    """The values of listing's filters, for its statement's execution."""
    params: dict[str, Any] = {}
    if query:
        params["member_query"], params["member_query_email"] = contains(query), query.lower()
    if user_ids:
        params["member_user_ids"] = user_ids
    if skip_users:
        params["member_skip_users"] = skip_users
    return params


@cache
def _listing(on_project: bool, deep: bool, query: bool, user_ids: bool, skip_users: bool) -> Select[Any]:
    m = _reach(on_project, deep)
    stmt = _plain_listing(on_project, deep)
    if query:
        term = bindparam("member_query")
        stmt = stmt.join(User, User.id == m.c.user_id).where(
            or_(
                func.lower(User.name).like(term, escape=ESCAPE),
                func.lower(User.username).like(term, escape=ESCAPE),
                func.lower(User.public_email) == bindparam("member_query_email"),
            )
        )
    if user_ids:
        stmt = stmt.where(m.c.user_id.in_(bindparam("member_user_ids", expanding=True)))
    if skip_users:
        stmt = stmt.where(m.c.user_id.not_in(bindparam("member_skip_users", expanding=True)))
    return stmt


@cache
def _plain_listing(on_project: bool, deep: bool) -> Select[Any]:
    m = _reach(on_project, deep)
    return select(*_columns(m)).where(m.c.position == 1).order_by(m.c.member_id.asc(), m.c.user_id.asc())


@cache
def _one_statement(on_project: bool, deep: bool) -> Select[Any]:
    """One member with their user and who added them, in one statement."""
    m = _reach(on_project, deep)
    return (
        select(*_columns(m), *USER_COLUMNS, *(row_column(_CREATOR.c[name]) for name in OwnerRow._fields))
        .select_from(m)
        .join(_USERS, _USERS.c.id == m.c.user_id)
        .outerjoin(_CREATOR, _CREATOR.c.id == m.c.created_by_id)
        .where(m.c.position == 1, m.c.user_id == bindparam("member_user_id"))
        .limit(1)
    )


def one(
    db: Session, params: dict[str, Any], user_id: int, *, on_project: bool, deep: bool
) -> MemberRecord | None:
    row = run(db, _one_statement(on_project, deep), {**params, "member_user_id": user_id}).first()
    if row is None:
        return None
    creator = OwnerRow._make(row[6 + _U :]) if row[6 + _U] is not None else None
    return MemberRecord(
        user=UserRow._make(row[6 : 6 + _U]),
        access_level=row[2],
        created_at=row[3],
        expires_at=row[4],
        created_by=creator,
    )


@cache
@cache
def access_requests(on_project: bool) -> Select[Any]:
    """Pending access requests, oldest first: member rows with `requested_at`."""
    return (
        select(
            Member.id.label("member_id"),
            Member.user_id,
            Member.access_level.label("level"),
            row_column(Member.__table__.c.created_at),
            Member.expires_at,
            Member.created_by_id,
            row_column(Member.__table__.c.requested_at),
        )
        .where(_own_rows(on_project), Member.requested_at.is_not(None))
        .order_by(Member.id.asc())
    )


def records(db: Session, rows: list[Any]) -> list[MemberRecord]:
    """Rows of (member_id, user_id, level, created_at, expires_at, created_by_id[, requested_at])
    with their users and who added them, loaded in one statement."""
    ids = list({r.user_id for r in rows} | {r.created_by_id for r in rows if r.created_by_id is not None})
    users = {u.id: u for u in rows_by_ids(db, ids)}
    out = []
    for r in rows:
        user = users.get(r.user_id)
        if user is None:
            continue
        out.append(
            MemberRecord(
                user=user,
                access_level=r.level,
                created_at=r.created_at,
                expires_at=r.expires_at,
                created_by=users.get(r.created_by_id) if r.created_by_id is not None else None,
                requested_at=getattr(r, "requested_at", None),
            )
        )
    return out
