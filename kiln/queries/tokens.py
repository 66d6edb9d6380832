"""Personal access token reads: the row every token view renders, the list filters and orders
of GET /personal_access_tokens and a user's impersonation tokens. Reads select columns into
`TokenRow` records (never the digest); the ORM `PersonalAccessToken` is for writes."""

from __future__ import annotations

from collections import namedtuple
from datetime import UTC, datetime
from functools import cache
from typing import Any

from sqlalchemy import ColumnElement, Date, Select, bindparam, func, select
from sqlalchemy.orm import Session

from kiln.models import PersonalAccessToken, User
from kiln.queries.reads import row_column, run
from kiln.queries.shapes import Shapes, parameters_key
from kiln.queries.users import USER_COLUMNS, USER_WIDTH, UserRow, user_row
from kiln.schemas.tokens import TokenList

_T = PersonalAccessToken
_TOKENS = _T.__table__
_USERS = User.__table__

# Every column a view shows; the digest stays in the table.
_COLUMNS: tuple[ColumnElement[Any], ...] = tuple(
    row_column(column) for column in _TOKENS.c if column.key != "digest"
)


class TokenRow(namedtuple("TokenRow", [c.key for c in _TOKENS.c if c.key != "digest"])):  # type: ignore[misc]
    """A token as every read sees it: immutable, built from one row, no session attached."""

    __slots__ = ()


_WIDTH = len(TokenRow._fields)


@cache
def _by_id_statement() -> Select[Any]:
    return select(*_COLUMNS).where(_TOKENS.c.id == bindparam("id"))


@cache
def _with_owner_statement() -> Select[Any]:
    """The token, then its owner's row (USER_COLUMNS last), for deciding who may read it."""
    return (
        select(*_COLUMNS, *USER_COLUMNS)
        .join(_USERS, _USERS.c.id == _TOKENS.c.user_id)
        .where(_TOKENS.c.id == bindparam("id"))
    )


@cache
def _by_ids_statement() -> Select[Any]:
    return select(*_COLUMNS).where(_TOKENS.c.id.in_(bindparam("ids", expanding=True)))


def row_by_id(db: Session, token_id: int) -> TokenRow | None:
    row = run(db, _by_id_statement(), {"id": token_id}).first()
    return None if row is None else TokenRow._make(row)


def row_with_owner(db: Session, token_id: int) -> tuple[TokenRow, UserRow] | None:
    row = run(db, _with_owner_statement(), {"id": token_id}).first()
    if row is None:
        return None
    return TokenRow._make(row[:_WIDTH]), user_row(row[-USER_WIDTH:])


def rows_by_ids(db: Session, token_ids: list[int]) -> list[TokenRow]:
    """The tokens `token_ids`, in that order."""
    if not token_ids:
        return []
    found = {row[0]: TokenRow._make(row) for row in run(db, _by_ids_statement(), {"ids": token_ids})}
    return [found[tid] for tid in token_ids if tid in found]


_LISTINGS: Shapes[Select[Any]] = Shapes()


def listing(q: TokenList, *, by_user: bool, personal_only: bool) -> Select[Any]:
    """The ids of GET /personal_access_tokens, filtered and ordered; the page's rows come from
    rows_by_ids. Bounds as GitLab's token scopes: inclusive, except expires_before. Built once
    per shape (`by_user`: one user's tokens, whose id, with the date, is in listing_params)."""
    shape = q if q.user_id is None else q.model_copy(update={"user_id": None})
    key = (parameters_key(shape), by_user, personal_only)
    return _LISTINGS.get(key, lambda: _listing(q, by_user, personal_only))


def listing_params(user_id: int | None) -> dict[str, Any]:
    """The values of a listing's bind parameters: the user's id, and the date states are
    decided on."""
    return {"user_id": user_id, "today": datetime.now(UTC).date()}


def _listing(q: TokenList, by_user: bool, personal_only: bool) -> Select[Any]:
    stmt = select(_T.id)
    if by_user:
        stmt = stmt.where(_T.user_id == bindparam("user_id"))
    if personal_only:
        stmt = stmt.where(_T.impersonation.is_(False))
    if q.revoked is not None:
        stmt = stmt.where(_T.revoked.is_(q.revoked))
    if q.state is not None:
        stmt = state(stmt, q.state)
    if q.search:
        stmt = stmt.where(func.lower(_T.name).contains(q.search.lower(), autoescape=True))
    if q.created_before:
        stmt = stmt.where(_T.created_at <= q.created_before)
    if q.created_after:
        stmt = stmt.where(_T.created_at >= q.created_after)
    if q.last_used_before:
        stmt = stmt.where(_T.last_used_at <= q.last_used_before)
    if q.last_used_after:
        stmt = stmt.where(_T.last_used_at >= q.last_used_after)
    if q.expires_before:
        stmt = stmt.where(_T.expires_at < q.expires_before)
    if q.expires_after:
        stmt = stmt.where(_T.expires_at >= q.expires_after)
    return stmt.order_by(*ordering(q.sort))


@cache
def impersonation_listing(state_name: str) -> Select[Any]:
    """The ids of a user's impersonation tokens in id order, `state_name` "all" or a state;
    built once per state (the user's id and the date are in listing_params)."""
    stmt = select(_T.id).where(_T.user_id == bindparam("user_id"), _T.impersonation.is_(True))
    if state_name != "all":
        stmt = state(stmt, state_name)
    return stmt.order_by(*ordering(None))


def state(stmt: Select[Any], state_name: str) -> Select[Any]:
    """ "active": neither revoked nor expired (on the date listing_params gives); anything
    else: the rest."""
    today = bindparam("today", type_=Date())
    live = (_T.revoked.is_(False)) & (_T.expires_at.is_(None) | (_T.expires_at > today))
    return stmt.where(live) if state_name == "active" else stmt.where(~live)


# GitLab's PersonalAccessToken.simple_sorts; anything else keeps the default.
_SORTS: dict[str, tuple[Any, ...]] = {
    "id_asc": (_T.id.asc(),),
    "id_desc": (_T.id.desc(),),
    "created_asc": (_T.created_at.asc(), _T.id.asc()),
    "created_at_asc": (_T.created_at.asc(), _T.id.asc()),
    "created_desc": (_T.created_at.desc(), _T.id.desc()),
    "created_at_desc": (_T.created_at.desc(), _T.id.desc()),
    "created_date": (_T.created_at.desc(), _T.id.desc()),
    "updated_asc": (_T.updated_at.asc(), _T.id.asc()),
    "updated_at_asc": (_T.updated_at.asc(), _T.id.asc()),
    "updated_desc": (_T.updated_at.desc(), _T.id.desc()),
    "updated_at_desc": (_T.updated_at.desc(), _T.id.desc()),
    "name_asc": (_T.name.asc(), _T.id.asc()),
    "name_desc": (_T.name.desc(), _T.id.desc()),
    "expires_asc": (_T.expires_at.asc().nulls_last(), _T.id.desc()),
    "expires_desc": (_T.expires_at.desc().nulls_last(), _T.id.desc()),
    "last_used_asc": (_T.last_used_at.asc().nulls_last(), _T.id.desc()),
    "last_used_desc": (_T.last_used_at.desc().nulls_last(), _T.id.desc()),
}


def ordering(sort: str | None) -> tuple[Any, ...]:
    """Unsorted lists come in id order, as GitLab's pagination adds ORDER BY id."""
    return _SORTS.get(sort or "", (_T.id.asc(),))
