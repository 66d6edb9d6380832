"""Further e-mail address reads: a user's addresses as `EmailRow` records, whether an address
is anyone's (primary or further, whatever its case), and a user's confirmed addresses."""

from __future__ import annotations

from functools import cache
from typing import Any

from sqlalchemy import Select, bindparam, exists, func, or_, select
from sqlalchemy.orm import Session

from kiln.models import Email, User
from kiln.pagination import Page, PageResult
from kiln.queries._owned import OwnedRows
from kiln.queries.reads import run

_EMAILS = Email.__table__

_OWNED = OwnedRows(_EMAILS, "EmailRow", __name__)
EmailRow = _OWNED.Row


@cache
def _confirmed_statement() -> Select[Any]:
    return select(_EMAILS.c.email).where(
        _EMAILS.c.user_id == bindparam("user_id"), _EMAILS.c.confirmed_at.is_not(None)
    )


def page_of_user(db: Session, user_id: int, page: Page) -> PageResult:
    """One page of a user's further addresses, oldest first; items are EmailRow records."""
    return _OWNED.page_of_user(db, user_id, page)


def email_of_user(db: Session, user_id: int, email_id: int) -> EmailRow | None:
    return _OWNED.one_of_user(db, user_id, email_id)


def confirmed_of(db: Session, user_id: int) -> list[str]:
    """The user's confirmed further addresses (the primary one is on the user's row)."""
    return [row[0] for row in run(db, _confirmed_statement(), {"user_id": user_id})]


def address_taken(db: Session, email: str) -> bool:
    """Whether anyone has the address, as primary or further address, in any case."""
    lowered = email.lower()
    primary = select(User.id).where(func.lower(User.email) == lowered)
    further = select(Email.id).where(func.lower(Email.email) == lowered)
    return bool(db.execute(select(or_(exists(primary), exists(further)))).scalar_one())
