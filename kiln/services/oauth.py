"""OAuth2 tokens: the password grant and refresh tokens (RFC 6749), revocation, token info."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session

from kiln.auth.tokens import OAUTH_SCOPES, PREFIX_OAUTH, PREFIX_REFRESH, digest, new_secret
from kiln.config import Settings
from kiln.db import transaction
from kiln.errors import OAuthError
from kiln.models import OAuthAccessToken, User
from kiln.queries import oauth as oauth_reads
from kiln.queries.users import UserRow
from kiln.schemas.tokens import OAuthTokenRequest
from kiln.services import instance_settings, sessions

INVALID_GRANT = (
    "The provided authorization grant is invalid, expired, revoked, does not match the "
    "redirection URI used in the authorization request, or was issued to another client."
)


def token(db: Session, settings: Settings, p: OAuthTokenRequest) -> dict[str, Any]:
    if not p.grant_type:
        raise OAuthError("invalid_request", "Missing required parameter: grant_type.")
    if p.grant_type == "password":
        return _password_grant(db, settings, p)
    if p.grant_type == "refresh_token":
        return _refresh_grant(db, settings, p)
    raise OAuthError(
        "unsupported_grant_type", "The authorization grant type is not supported by the authorization server."
    )


def revoke(db: Session, secret: str | None) -> None:
    """RFC 7009: answers the same whether or not the token existed."""
    if not secret:
        return
    d = digest(secret)
    with transaction(db):
        db.execute(
            update(OAuthAccessToken)
            .where(or_(OAuthAccessToken.digest == d, OAuthAccessToken.refresh_digest == d))
            .where(OAuthAccessToken.revoked_at.is_(None))
            .values(revoked_at=datetime.now(UTC))
        )


def info(db: Session, secret: str | None) -> dict[str, Any]:
    row = oauth_reads.token_by_digest(db, digest(secret or ""))
    now = datetime.now(UTC)
    # Doorkeeper's wording for each reason a token is not accessible.
    if row is None:
        raise OAuthError("invalid_token", "The access token is invalid", status=401)
    if row.revoked_at is not None:
        raise OAuthError("invalid_token", "The access token was revoked", status=401)
    remaining = int(row.expires_in - (now - row.created_at).total_seconds())
    if remaining <= 0:
        raise OAuthError("invalid_token", "The access token expired", status=401)
    return {
        "resource_owner_id": row.user_id,
        "scope": list(row.scopes),
        "expires_in": remaining,
        "application": {"uid": None},
        "created_at": int(row.created_at.timestamp()),
        "scopes": list(row.scopes),
        "expires_in_seconds": remaining,
    }


def _password_grant(db: Session, settings: Settings, p: OAuthTokenRequest) -> dict[str, Any]:
    if not p.username:
        raise OAuthError("invalid_request", "Missing required parameter: username.")
    if p.password is None:
        raise OAuthError("invalid_request", "Missing required parameter: password.")
    scopes = _scopes(p.scope)
    # GitLab's password grant is a git client's sign-in: with passwords off for git, no
    # password is checked (the answer is a wrong password's).
    allowed = instance_settings.current(db)["password_authentication_enabled_for_git"]
    user = sessions.check_password(db, p.username, p.password, settings) if allowed else None
    if user is None:
        raise OAuthError("invalid_grant", INVALID_GRANT)
    with transaction(db):
        return _issue(db, settings, user, scopes)


def _refresh_grant(db: Session, settings: Settings, p: OAuthTokenRequest) -> dict[str, Any]:
    if not p.refresh_token:
        raise OAuthError("invalid_request", "Missing required parameter: refresh_token.")
    with transaction(db):
        old = db.scalars(
            select(OAuthAccessToken).where(OAuthAccessToken.refresh_digest == digest(p.refresh_token))
        ).first()
        if old is None or old.revoked_at is not None:
            raise OAuthError("invalid_grant", INVALID_GRANT)
        user = db.get(User, old.user_id)
        if user is None or not user.is_active:
            raise OAuthError("invalid_grant", INVALID_GRANT)
        scopes = _scopes(p.scope) if p.scope else list(old.scopes)
        if not set(scopes) <= set(old.scopes):
            raise OAuthError("invalid_scope", "The requested scope is invalid, unknown, or malformed.")
        # Refresh tokens are single-use: the old pair dies with the new one's birth.
        old.revoked_at = datetime.now(UTC)
        return _issue(db, settings, user, scopes)


def _scopes(raw: str | None) -> list[str]:
    scopes = (raw or "api").split()
    if not scopes or any(s not in OAUTH_SCOPES for s in scopes):
        raise OAuthError("invalid_scope", "The requested scope is invalid, unknown, or malformed.")
    return list(dict.fromkeys(scopes))


def _issue(db: Session, settings: Settings, user: UserRow | User, scopes: list[str]) -> dict[str, Any]:
    access = new_secret(PREFIX_OAUTH)
    refresh = new_secret(PREFIX_REFRESH)
    row = OAuthAccessToken(
        user_id=user.id,
        digest=digest(access),
        refresh_digest=digest(refresh),
        scopes=scopes,
        expires_in=settings.oauth_access_token_ttl,
    )
    db.add(row)
    db.flush()
    return {
        "access_token": access,
        "token_type": "Bearer",
        "expires_in": settings.oauth_access_token_ttl,
        "refresh_token": refresh,
        "scope": " ".join(scopes),
        "created_at": int(row.created_at.timestamp()),
    }
