"""Sign-in reads: the user a login (username or e-mail, any case) names, as a UserRow."""

from __future__ import annotations

from functools import cache
from typing import Any, Literal, overload

from sqlalchemy import Select, bindparam, func, or_, select
from sqlalchemy.orm import Session

from kiln.models import User
from kiln.queries.reads import run
from kiln.queries.users import USER_COLUMNS, UserRow

_USERS = User.__table__


@cache
def _by_login_statement(orm: bool) -> Select[Any]:
    """The one condition a login names a user by, built once per shape: the model for sign-in,
    which writes the user's sign-in times, else the row record."""
    login = bindparam("login")
    selected: list[Any] = [User] if orm else USER_COLUMNS
    return (
        select(*selected)
        .where(or_(func.lower(_USERS.c.username) == login, func.lower(_USERS.c.email) == login))
        .limit(1)
    )


@overload
def user_by_login(db: Session, login: str, *, orm: Literal[False] = False) -> UserRow | None: ...
@overload
def user_by_login(db: Session, login: str, *, orm: Literal[True]) -> User | None: ...
def user_by_login(db: Session, login: str, *, orm: bool = False) -> UserRow | User | None:
    params = {"login": login.lower()}
    if orm:
        return db.scalars(_by_login_statement(True), params).first()
    row = run(db, _by_login_statement(False), params).first()
    return None if row is None else UserRow._make(row)
