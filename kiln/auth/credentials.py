"""Turn presented credentials into an Actor, or refuse them. No HTTP here: the API layer
extracts the strings, this module decides whether they are good."""

from __future__ import annotations

import hmac
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any

from sqlalchemy import ColumnElement, Select, Table, bindparam, func, select, update
from sqlalchemy.orm import Session

from kiln.auth.actor import Actor
from kiln.auth.tokens import API, READ_API, digest
from kiln.config import Settings
from kiln.db import try_transaction
from kiln.errors import Forbidden, InsufficientScope, InvalidToken, Unauthorized
from kiln.models import OAuthAccessToken, PersonalAccessToken, Term, User, WebSession
from kiln.models.users import USER_TYPE_HUMAN
from kiln.queries.reads import reusable, run
from kiln.queries.users import USER_COLUMNS, UserRow, user_row
from kiln.services import instance_settings

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
    terms: bool = True,
) -> Actor | None:
    """The caller behind the credentials; None when none were presented.

    `scopes`: a token must carry one of these (None: any token will do, as under sudo).
    `terms`: refuse a user who has not accepted the terms of service the instance enforces
    (off only where the terms are accepted)."""
    if creds.private_token is not None:
        return _personal_token(db, settings, creds.private_token, scopes, terms)
    if creds.bearer is not None:
        return _oauth_token(db, settings, creds.bearer, scopes, terms) or _personal_token(
            db, settings, creds.bearer, scopes, terms
        )
    if creds.job_token is not None:
        actor = job_token_resolver(db, creds.job_token) if job_token_resolver else None
        if actor is None:
            raise Unauthorized()
        return actor
    if creds.session is not None:
        return _session(db, settings, creds, terms)
    return None


_PAT = PersonalAccessToken.__table__
_OAUTH = OAuthAccessToken.__table__
_SESSIONS = WebSession.__table__
_USERS = User.__table__


def _latest_term_column() -> ColumnElement[Any]:
    """The latest version of the terms of service, read with the credential: a user who
    accepted it (or any user, while there are no terms) costs no look at the settings."""
    return select(func.max(Term.__table__.c.id)).scalar_subquery().label("latest_term_id")


@cache
def _credential_statement(table: Table, *columns: str) -> Select[Any]:
    """A credential's columns, the latest terms' id (_latest_term_column), then its user's
    row (USER_COLUMNS last), by digest. Built once per table: every authenticated request
    runs one, and building costs more than running."""
    return reusable(
        select(*(table.c[name] for name in columns), _latest_term_column(), *USER_COLUMNS)
        .join(_USERS, _USERS.c.id == table.c.user_id)
        .where(table.c.digest == bindparam("digest"))
    )


@cache
def _terms_statement() -> Select[Any]:
    return reusable(select(_latest_term_column()))


_PAT_COLUMNS = ("id", "expires_at", "revoked", "scopes", "impersonation", "last_used_at")
_OAUTH_COLUMNS = ("id", "created_at", "expires_in", "revoked_at", "scopes")
_SESSION_COLUMNS = ("expires_at", "csrf_token")


@dataclass(slots=True, frozen=True)
class Terms:
    """The terms of service as authentication sees them: the latest version's id, and the
    session that reads whether the instance enforces them, when that matters."""

    latest_id: int | None
    db: Session

    def unaccepted_by(self, user: UserRow) -> bool:
        """GitLab's required_terms_not_accepted: enforced terms whose latest version the user
        has not accepted. Bots are never asked; administrators are, like everyone. The
        settings are read only for a user who has not accepted (instance_settings: no
        statement while they are unchanged)."""
        if self.latest_id is None or user.user_type != USER_TYPE_HUMAN:
            return False
        if user.accepted_term_id == self.latest_id:
            return False
        return bool(instance_settings.current(self.db)["enforce_terms"])


def _lookup(
    db: Session, table: Table, columns: tuple[str, ...], secret: str
) -> tuple[Any, Terms, UserRow] | None:
    row = run(db, _credential_statement(table, *columns), {"digest": digest(secret)}).first()
    if row is None:
        return None
    n = len(columns)
    return row[:n], Terms(row[n], db), user_row(row[n + 1 :])


def current_terms(db: Session) -> Terms:
    """The terms' state on its own, for a user authenticated otherwise (a password)."""
    return Terms(run(db, _terms_statement()).scalar_one(), db)


def _personal_token(
    db: Session, settings: Settings, secret: str, scopes: tuple[str, ...] | None, terms: bool
) -> Actor:
    found = _lookup(db, _PAT, _PAT_COLUMNS, secret)
    if found is None:
        raise Unauthorized()
    (token_id, expires_at, revoked, held, impersonation, last_used_at), state, user = found
    # GitLab's order: expired, revoked, scope, impersonation switched off.
    if expires_at is not None and expires_at <= datetime.now(UTC).date():
        raise InvalidToken(EXPIRED)
    if revoked:
        raise InvalidToken(REVOKED)
    _require_scope(held, scopes)
    if impersonation and not settings.impersonation_enabled:
        raise InvalidToken("Token is an impersonation token but impersonation was disabled.")
    require_usable(user, settings, state if terms else None)
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
    db: Session, settings: Settings, secret: str, scopes: tuple[str, ...] | None, terms: bool
) -> Actor | None:
    found = _lookup(db, _OAUTH, _OAUTH_COLUMNS, secret)
    if found is None:
        return None
    (token_id, created_at, expires_in, revoked_at, held), state, user = found
    if created_at + timedelta(seconds=expires_in) <= datetime.now(UTC):
        raise InvalidToken(EXPIRED)
    if revoked_at is not None:
        raise InvalidToken(REVOKED)
    _require_scope(held, scopes)
    require_usable(user, settings, state if terms else None)
    return Actor(
        user=user,
        via="oauth",
        scopes=frozenset(held),
        token_id=token_id,
        admin_mode=settings.admin_mode,
        good_until=created_at + timedelta(seconds=expires_in),
    )


def _session(db: Session, settings: Settings, creds: Credentials, terms: bool) -> Actor | None:
    found = _lookup(db, _SESSIONS, _SESSION_COLUMNS, creds.session or "")
    if found is None:
        return None
    (expires_at, csrf_token), state, user = found
    # A session of a user no longer active is over (GitLab signs them out).
    if expires_at <= datetime.now(UTC) or not user.is_active:
        return None
    if not creds.safe_method and not (creds.csrf_token and hmac.compare_digest(creds.csrf_token, csrf_token)):
        return None
    # An active user's other refusals (the terms of service), as for a token.
    require_usable(user, settings, state if terms else None)
    return Actor(user=user, via="session", scopes=None, admin_mode=settings.admin_mode, good_until=expires_at)


def _require_scope(held: list[str], wanted: tuple[str, ...] | None) -> None:
    if wanted is not None and not set(held).intersection(wanted):
        raise InsufficientScope(registered_scopes(wanted))


def registered_scopes(wanted: tuple[str, ...]) -> list[str]:
    """The `scope` GitLab reports: the route's own scopes, then the API-wide `api read_api`,
    which it lists even where read_api is refused (writes)."""
    own = [s for s in wanted if s not in GLOBAL_SCOPES]
    return own + list(GLOBAL_SCOPES) if API in wanted else list(wanted)


def require_usable(user: UserRow, settings: Settings, terms: Terms | None) -> None:
    """Whether the user behind a good credential may use the API and git: GitLab's
    UserAccessDeniedReason, in its order (internal, pending approval, terms of service,
    deactivated, any other state). `terms`: None where they are not judged."""
    reason = refusal(user, settings, terms)
    if reason is not None:
        raise Forbidden(reason)


def refusal(user: UserRow, settings: Settings, terms: Terms | None) -> str | None:
    """Why the user may not use the API or git, or None."""
    if user.is_ghost:
        return "This action cannot be performed by internal users"
    if user.state == "blocked_pending_approval":
        return "Your account is pending approval from your administrator and hence blocked."
    if terms is not None and terms.unaccepted_by(user):
        return terms_message(user, settings)
    if user.state == "deactivated":
        return (
            "Your account has been deactivated by your administrator. Please log back in from a web "
            f"browser to reactivate your account at {settings.external_url}"
        )
    if not user.is_active:
        return "Your account has been blocked."
    return None


def terms_message(user: UserRow, settings: Settings) -> str:
    return (
        f"You (@{user.username}) must accept the Terms of Service in order to perform this action. "
        f"To accept these terms, please access GitLab from a web browser at {settings.external_url}."
    )


def require_usable_for_git(db: Session, settings: Settings, user: UserRow) -> None:
    """require_usable for a user who gave git a password (a token was judged as it was
    read): one more statement reads the terms' state; the refusal is the plain text git
    shows its user."""
    reason = refusal(user, settings, current_terms(db))
    if reason is not None:
        raise Forbidden(message=reason)


def _touch(db: Session, token_id: int, last: datetime | None) -> None:
    now = datetime.now(UTC)
    if last is not None and now - last < LAST_USED_GRANULARITY:
        return
    # On the event loop, before the request's own work: when the writer is busy (a job, a
    # push, another process), the next use of the token records it instead.
    with try_transaction(db) as free:
        if free:
            db.execute(update(_PAT).where(_PAT.c.id == token_id).values(last_used_at=now))
