"""Sign-in reads: the user a login (username or e-mail, any case) names, as a UserRow."""

from __future__ import annotations

from functools import cache
from typing import Any

from sqlalchemy import Select, bindparam, func, or_, select
from sqlalchemy.orm import Session

from kiln.models import User
from kiln.queries.reads import run
from kiln.queries.users import USER_COLUMNS, UserRow

_USERS = User.__table__


@cache
def _by_login_statement() -> Select[Any]:
    login = bindparam("login")
    return (
        select(*USER_COLUMNS)
        .where(or_(func.lower(_USERS.c.username) == login, func.lower(_USERS.c.email) == login))
        .limit(1)
    )


def user_by_login(db: Session, login: str) -> UserRow | None:
    row = run(db, _by_login_statement(), {"login": login.lower()}).first()
    return None if row is None else UserRow._make(row)
