"""GPG key reads: a user's keys as `GPGKeyRow` records, and the registered key that holds a
key id (as primary key or subkey) with its owner, for checking commit signatures."""

from __future__ import annotations

from collections import namedtuple
from functools import cache
from typing import Any

from sqlalchemy import Select, bindparam, or_, select
from sqlalchemy.orm import Session

from kiln.models import GPGKey, GPGKeySubkey, User
from kiln.pagination import Page, PageResult
from kiln.queries._owned import OwnedRows
from kiln.queries.reads import row_columns, run
from kiln.queries.users import USER_COLUMNS, USER_WIDTH, UserRow, user_row

_KEYS = GPGKey.__table__
_SUBKEYS = GPGKeySubkey.__table__
_USERS = User.__table__

_OWNED = OwnedRows(_KEYS, "GPGKeyRow", __name__)
GPGKeyRow = _OWNED.Row
SubkeyRow = namedtuple("SubkeyRow", [c.key for c in _SUBKEYS.c])  # type: ignore[misc]
_KEY_WIDTH = len(_KEYS.c)
_SUBKEY_WIDTH = len(_SUBKEYS.c)


@cache
def _by_keyid_statement() -> Select[Any]:
    """The key whose primary key or one of whose subkeys has the key id, the subkey if it is
    one (NULLs otherwise), and the owner: one row, the primary key's own match first."""
    sub = _SUBKEYS.alias("matched_subkey")
    return (
        select(*row_columns(_KEYS), *sub.c, *USER_COLUMNS)
        .join(_USERS, _USERS.c.id == _KEYS.c.user_id)
        .outerjoin(sub, (sub.c.gpg_key_id == _KEYS.c.id) & (sub.c.keyid == bindparam("keyid")))
        .where(or_(_KEYS.c.primary_keyid == bindparam("keyid"), sub.c.id.is_not(None)))
        .order_by(sub.c.id.is_not(None), _KEYS.c.id)
        .limit(1)
    )


def page_of_user(db: Session, user_id: int, page: Page) -> PageResult:
    """One page of a user's keys, oldest first; items are GPGKeyRow records."""
    return _OWNED.page_of_user(db, user_id, page)


def key_of_user(db: Session, user_id: int, key_id: int) -> GPGKeyRow | None:
    return _OWNED.one_of_user(db, user_id, key_id)


def key_for_keyid(db: Session, keyid: str) -> tuple[GPGKeyRow, SubkeyRow | None, UserRow] | None:
    row = run(db, _by_keyid_statement(), {"keyid": keyid}).first()
    if row is None:
        return None
    values = list(row)
    key = GPGKeyRow._make(values[:_KEY_WIDTH])
    sub_values = values[_KEY_WIDTH : _KEY_WIDTH + _SUBKEY_WIDTH]
    subkey = SubkeyRow._make(sub_values) if sub_values[0] is not None else None
    owner = user_row(values[_KEY_WIDTH + _SUBKEY_WIDTH : _KEY_WIDTH + _SUBKEY_WIDTH + USER_WIDTH])
    return key, subkey, owner


def taken(db: Session, key: str, fingerprint: str, primary_keyid: str) -> set[str]:
    """Which of the key's text, fingerprint and primary key id another key already has."""
    rows = db.execute(
        select(_KEYS.c.key, _KEYS.c.fingerprint, _KEYS.c.primary_keyid).where(
            or_(
                _KEYS.c.key == key,
                _KEYS.c.fingerprint == fingerprint,
                _KEYS.c.primary_keyid == primary_keyid,
            )
        )
    ).all()
    found: set[str] = set()
    for row in rows:
        if row.key == key:
            found.add("key")
        if row.fingerprint == fingerprint:
            found.add("fingerprint")
        if row.primary_keyid == primary_keyid:
            found.add("primary_keyid")
    return found
