"""OAuth reads: what GET /oauth/token/info tells about an access token, by its digest."""

from __future__ import annotations

from collections import namedtuple
from functools import cache
from typing import Any

from sqlalchemy import Select, bindparam, select
from sqlalchemy.orm import Session

from kiln.models import OAuthAccessToken
from kiln.queries.reads import run

_TOKENS = OAuthAccessToken.__table__
_COLUMNS = ("user_id", "scopes", "expires_in", "revoked_at", "created_at")

# Times stay datetimes here: the answer counts seconds from them.
OAuthTokenRow = namedtuple("OAuthTokenRow", _COLUMNS)


@cache
def _by_digest_statement() -> Select[Any]:
    return select(*(_TOKENS.c[name] for name in _COLUMNS)).where(_TOKENS.c.digest == bindparam("digest"))


def token_by_digest(db: Session, token_digest: str) -> OAuthTokenRow | None:
    row = run(db, _by_digest_statement(), {"digest": token_digest}).first()
    return None if row is None else OAuthTokenRow._make(row)
