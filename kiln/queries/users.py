"""User reads: the row every user view renders, the list filters of GET /users, and lookups
by id or username. Reads select columns into `UserRow` records; the ORM `User` is for writes."""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Iterable
from functools import cache
from typing import Any

import orjson
from sqlalchemy import ColumnElement, Select, String, and_, bindparam, exists, func, or_, select
from sqlalchemy.dialects.postgresql import aggregate_order_by
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.orm import Session, aliased
from sqlalchemy.sql.functions import FunctionElement

from kiln.models import Email, Identity, Member, Namespace, Project, User
from kiln.models.base import is_numeric, numeric_id
from kiln.models.namespaces import KIND_GROUP, OWNER
from kiln.models.users import USER_TYPE_GHOST, USER_TYPE_HUMAN
from kiln.queries import access, custom_attributes
from kiln.queries.reads import row_columns, run
from kiln.queries.shapes import Shapes, bound, parameters_key
from kiln.queries.text import ESCAPE, contains
from kiln.schemas.users import UserList

_USERS = User.__table__


class identities_json(FunctionElement[str]):  # noqa: N801 - named as the SQL it stands for
    """A user's identities as one JSON text, `[[provider, extern_uid, saml_provider_id], ...]`
    in the order they were added (NULL or `[]` for none). The self and admin views show them:
    as a column of the user's row they cost an index probe, where a statement of their own
    cost a round trip (on PostgreSQL a fifth of GET /user)."""

    type = String()
    inherit_cache = True
    name = "identities_json"


# Its own alias: a statement that joins identities itself (the extern_uid filter) must not
# have the subquery correlate to that join.
_IDENTITIES = Identity.__table__.alias("user_identities")


@compiles(identities_json, "sqlite")
def _identities_json_sqlite(element: identities_json, compiler: Any, **kw: Any) -> str:
    (user_id,) = element.clauses.clauses
    i = _IDENTITIES.c
    rows = select(i.provider, i.extern_uid, i.saml_provider_id).where(i.user_id == user_id).order_by(i.id)
    rows = rows.correlate(user_id.table)
    values = func.json_array(*rows.subquery().c)
    return compiler.process(select(func.json_group_array(values)).scalar_subquery(), **kw)


@compiles(identities_json, "postgresql")
def _identities_json_postgresql(element: identities_json, compiler: Any, **kw: Any) -> str:
    (user_id,) = element.clauses.clauses
    i = _IDENTITIES.c
    values = func.json_build_array(i.provider, i.extern_uid, i.saml_provider_id)
    aggregated = func.json_agg(aggregate_order_by(values, i.id)).cast(String)
    rows = select(aggregated).where(i.user_id == user_id)
    return compiler.process(rows.scalar_subquery(), **kw)


def _row_columns() -> list[ColumnElement[Any]]:
    """Every column of `users`, then the user's own namespace id (one indexed subquery) and
    identities (identities_json)."""
    own_namespace = (
        select(Namespace.id).where(Namespace.owner_id == _USERS.c.id).correlate(_USERS).scalar_subquery()
    )
    return [
        *row_columns(_USERS),
        own_namespace.label("namespace_id"),
        identities_json(_USERS.c.id).label("identities_json"),
    ]


_ROW_FIELDS = [c.key for c in _USERS.c] + ["namespace_id", "identities_json"]


class UserRow(namedtuple("UserRow", _ROW_FIELDS)):  # type: ignore[misc]
    """A user as every read sees it: immutable, built from one row, no session attached."""

    __slots__ = ()

    @property
    def is_active(self) -> bool:
        return bool(self.state == "active")

    @property
    def is_ghost(self) -> bool:
        return bool(self.user_type == USER_TYPE_GHOST)


IdentityRow = namedtuple("IdentityRow", ["user_id", "provider", "extern_uid", "saml_provider_id"])

# Selected after the columns of another table: statements that join users (the token lookup)
# put these last and cut the row at USER_WIDTH from the end.
USER_COLUMNS: tuple[ColumnElement[Any], ...] = tuple(_row_columns())
USER_WIDTH = len(USER_COLUMNS)


def user_row(values: Iterable[Any]) -> UserRow:
    return UserRow._make(values)


@cache
def _by_id_statement() -> Select[Any]:
    return select(*USER_COLUMNS).where(_USERS.c.id == bindparam("id"))


@cache
def _by_username_statement() -> Select[Any]:
    return select(*USER_COLUMNS).where(func.lower(_USERS.c.username) == bindparam("username"))


@cache
def _by_ids_statement() -> Select[Any]:
    return select(*USER_COLUMNS).where(_USERS.c.id.in_(bindparam("ids", expanding=True)))


def rows_by_ids(db: Session, user_ids: list[int]) -> list[UserRow]:
    """The users `user_ids`, in that order."""
    if not user_ids:
        return []
    found = {row[0]: UserRow._make(row) for row in run(db, _by_ids_statement(), {"ids": user_ids})}
    return [found[uid] for uid in user_ids if uid in found]


def row_by_id(db: Session, user_id: int) -> UserRow | None:
    row = run(db, _by_id_statement(), {"id": user_id}).first()
    return None if row is None else UserRow._make(row)


def ident_id(ident: str) -> int | None:
    """The id a user ident names, as GitLab's UserFinder reads one: digits are an id, never
    a username (not even a username made of digits); anything else is a username (None).
    Digits past the ids name no one: 0."""
    if not is_numeric(ident):
        return None
    return numeric_id(ident) or 0


def row_by_id_or_username(db: Session, ident: str) -> UserRow | None:
    """The user an ident names (ident_id), or None."""
    user_id = ident_id(ident)
    if user_id is not None:
        return row_by_id(db, user_id) if user_id else None
    row = run(db, _by_username_statement(), {"username": ident.lower()}).first()
    return None if row is None else UserRow._make(row)


@cache
def _identities_statement() -> Select[Any]:
    return (
        select(Identity.user_id, Identity.provider, Identity.extern_uid, Identity.saml_provider_id)
        .where(Identity.user_id.in_(bindparam("ids", expanding=True)))
        .order_by(Identity.id)
    )


def identities_in(user: UserRow) -> list[IdentityRow]:
    """The identities a user's row carries (identities_json)."""
    if not user.identities_json:
        return []
    return [IdentityRow(user.id, *values) for values in orjson.loads(user.identities_json)]


def identities_of(db: Session, user_ids: list[int]) -> dict[int, list[IdentityRow]]:
    """Every listed user's identities in one statement (ORM users, who carry none)."""
    out: dict[int, list[IdentityRow]] = {uid: [] for uid in user_ids}
    if user_ids:
        for row in run(db, _identities_statement(), {"ids": user_ids}):
            out[row[0]].append(IdentityRow._make(row))
    return out


def by_id_or_username(db: Session, ident: str) -> User | None:
    """The ORM user an ident names (ident_id), for writes."""
    user_id = ident_id(ident)
    if user_id is not None:
        return db.get(User, user_id) if user_id else None
    return db.scalars(select(User).where(func.lower(User.username) == ident.lower())).first()


def username_taken(db: Session, username: str, *, except_user: int | None = None) -> bool:
    """A username is taken by a user or by any top-level namespace path (groups included)."""
    lowered = username.lower()
    user_q = select(User.id).where(func.lower(User.username) == lowered)
    ns_q = select(Namespace.id).where(Namespace.parent_id.is_(None), func.lower(Namespace.path) == lowered)
    if except_user is not None:
        user_q = user_q.where(User.id != except_user)
        ns_q = ns_q.where(or_(Namespace.owner_id.is_(None), Namespace.owner_id != except_user))
    return db.execute(select(or_(exists(user_q), exists(ns_q)))).scalar_one()


def email_taken(db: Session, email: str, *, except_user: int | None = None) -> bool:
    q = select(User.id).where(func.lower(User.email) == email.lower())
    if except_user is not None:
        q = q.where(User.id != except_user)
    return db.execute(select(exists(q))).scalar_one()


_LISTINGS: Shapes[Select[Any]] = Shapes()


def listing(q: UserList, *, admin: bool) -> Select[Any]:
    """Non-admins' date, order, two-factor and project filters are dropped, as GitLab does.
    Built once per shape (the caller's kind and every parameter)."""
    return _LISTINGS.get((admin, parameters_key(q)), lambda: _listing(q, admin))


def _listing(q: UserList, admin: bool) -> Select[Any]:
    # Only ids and versions: the page's rows are kept by version, or come from rows_by_ids.
    stmt = select(User.id, User.row_version)
    search = (q.search or "").removeprefix("@").lower()
    if search:
        term = contains(search)
        # Only admins find users by their private e-mail; others by the public one.
        email = User.email if admin else User.public_email
        stmt = stmt.where(
            or_(
                func.lower(User.name).like(term, escape=ESCAPE),
                func.lower(User.username).like(term, escape=ESCAPE),
                func.lower(email) == search,
            )
        )
    if q.username:
        stmt = stmt.where(func.lower(User.username) == q.username.lower())
    if q.active:
        # GitLab's `active` scope leaves internal users (the ghost) out.
        stmt = stmt.where(User.state == "active", User.user_type == USER_TYPE_HUMAN)
    if q.blocked:
        # GitLab's `blocked` scope: blocked by an administrator or by LDAP, not banned,
        # pending approval or deactivated.
        stmt = stmt.where(User.state.in_(("blocked", "ldap_blocked")))
    if q.external:
        stmt = stmt.where(User.external.is_(True))
    if q.exclude_external:
        stmt = stmt.where(User.external.is_(False))
    if q.exclude_active:
        stmt = stmt.where(User.state != "active")
    if q.exclude_internal or q.humans or q.without_project_bots:
        stmt = stmt.where(User.user_type == USER_TYPE_HUMAN)
    if q.exclude_humans:
        stmt = stmt.where(User.user_type != USER_TYPE_HUMAN)
    if admin:
        if q.created_before:
            stmt = stmt.where(User.created_at < q.created_before)
        if q.created_after:
            stmt = stmt.where(User.created_at > q.created_after)
        if q.extern_uid is not None and q.provider is not None:
            stmt = stmt.where(
                exists(
                    select(Identity.id).where(
                        Identity.user_id == User.id,
                        Identity.extern_uid == q.extern_uid,
                        Identity.provider == q.provider,
                    )
                )
            )
        if q.two_factor == "enabled":
            stmt = stmt.where(User.two_factor_enabled.is_(True))
        elif q.two_factor == "disabled":
            stmt = stmt.where(User.two_factor_enabled.is_(False))
        if q.admins:
            stmt = stmt.where(User.admin.is_(True))
        if q.without_projects:
            stmt = stmt.where(~reaches_a_project(bindparam(TODAY)))
        stmt = stmt.where(*custom_attributes.matching("users", User.id, q.custom_attributes or {}))
    if q.id_after is not None:
        stmt = stmt.where(User.id > bound("id_after"))
    if q.id_before is not None:
        stmt = stmt.where(User.id < bound("id_before"))
    order_col = getattr(User, q.order_by) if admin else User.id
    direction = "asc" if admin and (q.sort or "desc").lower() == "asc" else "desc"
    primary = order_col.asc() if direction == "asc" else order_col.desc()
    tiebreak = User.id.asc() if direction == "asc" else User.id.desc()
    return stmt.order_by(primary, tiebreak) if order_col is not User.id else stmt.order_by(primary)


# The bind parameter of the day memberships are judged on (expired ones grant nothing).
TODAY = "users_today"
_GROUP_NS = aliased(Namespace, name="member_group")
_INNER_NS = aliased(Namespace, name="member_inner")


def reaches_a_project(today: Any) -> ColumnElement[bool]:
    """The user of the row reaches some project (GitLab's project authorizations): a project
    membership, a membership of a group holding a project at any depth or of a group a
    project is shared with, or a personal project of their own."""
    direct = select(Member.id).where(
        Member.user_id == User.id, Member.project_id.is_not(None), access.active_membership(today)
    )
    inherited = (
        select(Member.id)
        .join(_GROUP_NS, _GROUP_NS.id == Member.namespace_id)
        .join(_INNER_NS, access.within(_INNER_NS, _GROUP_NS))
        .join(Project, Project.namespace_id == _INNER_NS.id)
        .where(Member.user_id == User.id, access.active_membership(today))
    )
    shared = access.through_shares(select(Member.id), _GROUP_NS, _INNER_NS).where(
        Member.user_id == User.id, access.active_membership(today), access.share_active(today)
    )
    personal = access.personal_projects(Project.id).where(Namespace.owner_id == User.id)
    return or_(exists(direct), exists(inherited), exists(shared), exists(personal))


def solely_owned_group_ids(db: Session, user_id: int) -> list[int]:
    """Groups where the user is an Owner and nobody else is."""
    other = aliased(Member)
    other_owner = (
        select(other.id)
        .where(
            other.namespace_id == Namespace.id,
            other.access_level >= OWNER,
            other.user_id != user_id,
        )
        .exists()
    )
    stmt = (
        select(Namespace.id)
        .join(Member, and_(Member.namespace_id == Namespace.id, Member.user_id == user_id))
        .where(Namespace.kind == KIND_GROUP, Member.access_level >= OWNER, ~other_owner)
    )
    return list(db.scalars(stmt))


def id_by_email(db: Session, email: str) -> int | None:
    """The user whose primary or confirmed further address `email` is (case aside), as GitLab
    finds a commit's author."""
    address = email.strip().lower()
    if not address:
        return None
    primary = select(User.id).where(func.lower(User.email) == address)
    found = db.scalars(primary.limit(1)).first()
    if found is not None:
        return found
    further = select(Email.user_id).where(func.lower(Email.email) == address, Email.confirmed_at.is_not(None))
    return db.scalars(further.limit(1)).first()
