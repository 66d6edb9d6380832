"""Turn presented credentials into an Actor, or refuse them. No HTTP here: the API layer
extracts the strings, this module decides whether they are good."""

from __future__ import annotations

import hmac
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any

from sqlalchemy import Select, Table, bindparam, select, update
from sqlalchemy.orm import Session

from kiln.auth.actor import Actor
from kiln.auth.tokens import API, READ_API, digest
from kiln.config import Settings
from kiln.db import try_transaction
from kiln.errors import Forbidden, InsufficientScope, InvalidToken, Unauthorized
from kiln.models import OAuthAccessToken, PersonalAccessToken, User, WebSession
from kiln.queries.reads import reusable, run
from kiln.queries.users import USER_COLUMNS, UserRow, user_row

# Resolves a CI job token (the CI issue plugs its lookup in here).
JobTokenResolver = Callable[[Session, str], Actor | None]

EXPIRED = "Token is expired. You can either do re-authorization or token refresh."
REVOKED = "Token was revoked. You have to re-authorize from the user."

# Scopes GitLab registers on every API route, after the route's own.
GLOBAL_SCOPES = (API, READ_API)

# Refresh last_used_at at most this often, so reads don't turn into writes.
LAST_USED_GRANULARITY = timedelta(minutes=10)


@dataclass(slots=True, frozen=True)
class Credentials:
    private_token: str | None = None
    bearer: str | None = None  # Authorization: Bearer or ?access_token=: OAuth first, then PAT
    job_token: str | None = None
    session: str | None = None
    # A cookie counts for unsafe methods only with the session's CSRF token (as GitLab).
    safe_method: bool = True
    csrf_token: str | None = None


def authenticate(
    db: Session,
    settings: Settings,
    creds: Credentials,
    *,
    scopes: tuple[str, ...] | None = None,
    job_token_resolver: JobTokenResolver | None = None,
) -> Actor | None:
    """The caller behind the credentials; None when none were presented.

    `scopes`: a token must carry one of these (None: any token will do, as under sudo)."""
    if creds.private_token is not None:
        return _personal_token(db, settings, creds.private_token, scopes)
    if creds.bearer is not None:
        return _oauth_token(db, settings, creds.bearer, scopes) or _personal_token(
            db, settings, creds.bearer, scopes
        )
    if creds.job_token is not None:
        actor = job_token_resolver(db, creds.job_token) if job_token_resolver else None
        if actor is None:
            raise Unauthorized()
        return actor
    if creds.session is not None:
        return _session(db, settings, creds)
    return None


_PAT = PersonalAccessToken.__table__
_OAUTH = OAuthAccessToken.__table__
_SESSIONS = WebSession.__table__
_USERS = User.__table__


@cache
def _credential_statement(table: Table, *columns: str) -> Select[Any]:
    """A credential's columns, then its user's row (USER_COLUMNS last), by digest. Built once
    per table: every authenticated request runs one, and building costs more than running."""
    return reusable(
        select(*(table.c[name] for name in columns), *USER_COLUMNS)
        .join(_USERS, _USERS.c.id == table.c.user_id)
        .where(table.c.digest == bindparam("digest"))
    )


_PAT_COLUMNS = ("id", "expires_at", "revoked", "scopes", "impersonation", "last_used_at")
_OAUTH_COLUMNS = ("id", "created_at", "expires_in", "revoked_at", "scopes")
_SESSION_COLUMNS = ("expires_at", "csrf_token")


def _lookup(db: Session, table: Table, columns: tuple[str, ...], secret: str) -> tuple[Any, UserRow] | None:
    row = run(db, _credential_statement(table, *columns), {"digest": digest(secret)}).first()
    if row is None:
        return None
    return row[: len(columns)], user_row(row[len(columns) :])


def _personal_token(db: Session, settings: Settings, secret: str, scopes: tuple[str, ...] | None) -> Actor:
    found = _lookup(db, _PAT, _PAT_COLUMNS, secret)
    if found is None:
        raise Unauthorized()
    (token_id, expires_at, revoked, held, impersonation, last_used_at), user = found
    # GitLab's order: expired, revoked, scope, impersonation switched off.
    if expires_at is not None and expires_at <= datetime.now(UTC).date():
        raise InvalidToken(EXPIRED)
    if revoked:
        raise InvalidToken(REVOKED)
    _require_scope(held, scopes)
    if impersonation and not settings.impersonation_enabled:
        raise InvalidToken("Token is an impersonation token but impersonation was disabled.")
    _require_usable(user)
    _touch(db, token_id, last_used_at)
    # Looked at again once its use is due to be recorded, or on the day it expires.
    good_until = None if last_used_at is None else last_used_at + LAST_USED_GRANULARITY
    if good_until is not None and expires_at is not None:
        good_until = min(good_until, datetime.combine(expires_at, datetime.min.time(), UTC))
    return Actor(
        user=user,
        via="impersonation_token" if impersonation else "personal_access_token",
        scopes=frozenset(held),
        token_id=token_id,
        admin_mode=settings.admin_mode,
        good_until=good_until,
    )


def _oauth_token(
    db: Session, settings: Settings, secret: str, scopes: tuple[str, ...] | None
) -> Actor | None:
    found = _lookup(db, _OAUTH, _OAUTH_COLUMNS, secret)
    if found is None:
        return None
    (token_id, created_at, expires_in, revoked_at, held), user = found
    if created_at + timedelta(seconds=expires_in) <= datetime.now(UTC):
        raise InvalidToken(EXPIRED)
    if revoked_at is not None:
        raise InvalidToken(REVOKED)
    _require_scope(held, scopes)
    _require_usable(user)
    return Actor(
        user=user,
        via="oauth",
        scopes=frozenset(held),
        token_id=token_id,
        admin_mode=settings.admin_mode,
        good_until=created_at + timedelta(seconds=expires_in),
    )


def _session(db: Session, settings: Settings, creds: Credentials) -> Actor | None:
    found = _lookup(db, _SESSIONS, _SESSION_COLUMNS, creds.session or "")
    if found is None:
        return None
    (expires_at, csrf_token), user = found
    if expires_at <= datetime.now(UTC) or not user.is_active:
        return None
    if not creds.safe_method and not (creds.csrf_token and hmac.compare_digest(creds.csrf_token, csrf_token)):
        return None
    return Actor(user=user, via="session", scopes=None, admin_mode=settings.admin_mode, good_until=expires_at)


def _require_scope(held: list[str], wanted: tuple[str, ...] | None) -> None:
    if wanted is not None and not set(held).intersection(wanted):
        raise InsufficientScope(registered_scopes(wanted))


def registered_scopes(wanted: tuple[str, ...]) -> list[str]:
    """The `scope` GitLab reports: the route's own scopes, then the API-wide `api read_api`,
    which it lists even where read_api is refused (writes)."""
    own = [s for s in wanted if s not in GLOBAL_SCOPES]
    return own + list(GLOBAL_SCOPES) if API in wanted else list(wanted)


def _require_usable(user: UserRow) -> None:
    if user.state == "blocked":
        raise Forbidden("Your account has been blocked.")
    if user.is_ghost:
        raise Forbidden("This action cannot be performed by internal users")


def _touch(db: Session, token_id: int, last: datetime | None) -> None:
    now = datetime.now(UTC)
    if last is not None and now - last < LAST_USED_GRANULARITY:
        return
    # On the event loop, before the request's own work: when the writer is busy (a job, a
    # push, another process), the next use of the token records it instead.
    with try_transaction(db) as free:
        if free:
            db.execute(update(_PAT).where(_PAT.c.id == token_id).values(last_used_at=now))
