"""Web sign-in: password check, the session behind the `_service_session` cookie, sign-out."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import delete
from sqlalchemy.orm import Session

from kiln.auth.passwords import MIN_PASSWORD_LENGTH, hash_password, verify_password
from kiln.auth.tokens import PREFIX_SESSION, digest, new_secret
from kiln.config import Settings
from kiln.db import transaction
from kiln.errors import Forbidden, Unauthorized, ValidationFailed
from kiln.models import User, WebSession
from kiln.queries import sessions as session_reads
from kiln.queries.users import UserRow
from kiln.schemas.tokens import SignInFields

INVALID_LOGIN = "Invalid login or password."
PASSWORD_EXPIRED = "Your password expired. Sign in again with `new_password` to set a new one."


@dataclass(slots=True)
class SignedIn:
    user: User
    cookie: str
    csrf_token: str
    max_age: int


def check_password(db: Session, login: str, password: str, settings: Settings) -> UserRow | None:
    """The active user with that username or e-mail and password, else None: a row record,
    for callers that only read the user (git over HTTP, OAuth's password grant). `settings`
    give the cost an unknown login pays."""
    user = session_reads.user_by_login(db, login)
    return user if _verified(user, password, settings) else None


def _verified(user: UserRow | User | None, password: str, settings: Settings) -> bool:
    """Whether the user may sign in with that password. One password verification whatever
    the answer: an unknown login, a user without a password, a blocked or internal one take
    as long as a wrong password does, so timing tells nobody which logins exist."""
    password_hash = user.password_hash if user is not None else None
    matches = verify_password(
        password_hash,
        password,
        time_cost=settings.password_time_cost,
        memory_cost=settings.password_memory_cost,
    )
    return matches and user is not None and user.is_active and not user.is_ghost


def sign_in(db: Session, settings: Settings, fields: SignInFields, ip: str | None) -> SignedIn:
    # The model: signing in writes the user's sign-in times (and a changed password).
    user = session_reads.user_by_login(db, fields.login, orm=True)
    if not _verified(user, fields.password, settings) or user is None:
        raise Unauthorized(INVALID_LOGIN)
    now = datetime.now(UTC)
    if user.password_expires_at is not None and user.password_expires_at <= now:
        if not fields.new_password:
            raise Forbidden(PASSWORD_EXPIRED)
        if len(fields.new_password) < MIN_PASSWORD_LENGTH:
            raise ValidationFailed(
                {"new_password": [f"is too short (minimum is {MIN_PASSWORD_LENGTH} characters)"]}
            )
        # Hashed before the write transaction: a fifth of a second nobody else should wait for.
        new_hash = hash_password(
            fields.new_password,
            time_cost=settings.password_time_cost,
            memory_cost=settings.password_memory_cost,
        )
    else:
        new_hash = None
    with transaction(db):
        if new_hash is not None:
            user.password_hash = new_hash
            user.password_expires_at = None
        user.last_sign_in_at = user.current_sign_in_at
        user.last_sign_in_ip = user.current_sign_in_ip
        user.current_sign_in_at = now
        user.current_sign_in_ip = ip
        user.last_activity_on = now.date()
        cookie = new_secret(PREFIX_SESSION)
        csrf = secrets.token_urlsafe(32)
        db.add(
            WebSession(
                user_id=user.id,
                digest=digest(cookie),
                csrf_token=csrf,
                ip_address=ip,
                expires_at=now + timedelta(seconds=settings.session_ttl),
            )
        )
    return SignedIn(user=user, cookie=cookie, csrf_token=csrf, max_age=settings.session_ttl)


def sign_out(db: Session, cookie: str | None) -> None:
    if not cookie:
        return
    with transaction(db):
        db.execute(delete(WebSession).where(WebSession.digest == digest(cookie)))
