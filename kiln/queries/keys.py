"""SSH key reads: a user's keys as `KeyRow` records, and one key with its owner's row (the
administrators' look-ups by id and by fingerprint). The ORM `SSHKey` is for writes."""

from __future__ import annotations

from functools import cache
from typing import Any

from sqlalchemy import Select, bindparam, select
from sqlalchemy.orm import Session

from kiln.models import SSHKey, User
from kiln.pagination import Page, PageResult
from kiln.queries._owned import OwnedRows
from kiln.queries.reads import row_columns, run
from kiln.queries.users import USER_COLUMNS, USER_WIDTH, UserRow, user_row

_KEYS = SSHKey.__table__
_USERS = User.__table__

_OWNED = OwnedRows(_KEYS, "KeyRow", __name__)
KeyRow = _OWNED.Row
_KEY_WIDTH = len(_KEYS.c)


@cache
def _with_owner_statement(by: str) -> Select[Any]:
    column = _KEYS.c[by]
    return (
        select(*row_columns(_KEYS), *USER_COLUMNS)
        .join(_USERS, _USERS.c.id == _KEYS.c.user_id)
        .where(column == bindparam("value"))
        .order_by(_KEYS.c.id)
        .limit(1)
    )


def page_of_user(db: Session, user_id: int, page: Page) -> PageResult:
    """One page of a user's keys, oldest first; items are KeyRow records."""
    return _OWNED.page_of_user(db, user_id, page)


def key_of_user(db: Session, user_id: int, key_id: int) -> KeyRow | None:
    return _OWNED.one_of_user(db, user_id, key_id)


def key_with_owner(db: Session, by: str, value: Any) -> tuple[KeyRow, UserRow] | None:
    """The key whose column `by` (id, fingerprint, fingerprint_sha256) is `value`, with its
    owner's row, in one statement."""
    row = run(db, _with_owner_statement(by), {"value": value}).first()
    if row is None:
        return None
    values = list(row)
    return KeyRow._make(values[:_KEY_WIDTH]), user_row(values[_KEY_WIDTH : _KEY_WIDTH + USER_WIDTH])


def fingerprint_taken(db: Session, fingerprint_sha256: str) -> bool:
    found = db.execute(select(_KEYS.c.id).where(_KEYS.c.fingerprint_sha256 == fingerprint_sha256)).first()
    return found is not None
