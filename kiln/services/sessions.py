"""Web sign-in: password check, the session behind the `_service_session` cookie, sign-out,
and where the web root and sign-out send a visitor.

The instance settings decide (GitLab's application settings): `password_authentication_enabled_for_web`
(off: sign-in with a password is refused with 403, as GitLab's SessionsController does),
`session_expire_delay` (minutes a new session lasts: the one source of its lifetime),
`after_sign_out_path` and `home_page_url`."""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import delete
from sqlalchemy.orm import Session

from kiln.auth.credentials import Credentials, authenticate
from kiln.auth.passwords import MIN_PASSWORD_LENGTH, hash_password, verify_password
from kiln.auth.tokens import PREFIX_SESSION, digest, new_secret
from kiln.config import Settings
from kiln.db import transaction
from kiln.errors import Forbidden, KilnError, Unauthorized, ValidationFailed
from kiln.models import User, WebSession
from kiln.queries import sessions as session_reads
from kiln.queries.users import UserRow
from kiln.schemas.tokens import SignInFields
from kiln.services import instance_settings

SIGN_IN_PATH = "/users/sign_in"
# Where the web root sends a signed-in user: kiln's counterpart of GitLab's projects dashboard.
DASHBOARD_PATH = "/api/v4/projects?membership=true"

INVALID_LOGIN = "Invalid login or password."
UNCONFIRMED = "You have to confirm your email address before continuing."
# GitLab's "soft" e-mail confirmation lets an unconfirmed user in this long after sign-up.
SOFT_CONFIRMATION_GRACE = timedelta(days=3)
PASSWORD_EXPIRED = "Your password expired. Sign in again with `new_password` to set a new one."


@dataclass(slots=True)
class SignedIn:
    user: User
    cookie: str
    csrf_token: str
    max_age: int


DEACTIVATED = "deactivated"
# Who may sign in on the web with a password.
_WEB_STATES = ("active", DEACTIVATED)


def check_password(db: Session, login: str, password: str, settings: Settings) -> UserRow | None:
    """The active user with that username or e-mail and password, else None: a row record,
    for callers that only read the user (OAuth's password grant). `settings` give the cost an
    unknown login pays."""
    user = password_owner(db, login, password, settings)
    return user if user is not None and user.is_active else None


def password_owner(db: Session, login: str, password: str, settings: Settings) -> UserRow | None:
    """The user with that username or e-mail and password whatever their state, else None
    (git over HTTP then tells a user who may not use it why, as GitLab does)."""
    user = session_reads.user_by_login(db, login)
    return user if _verified(user, password, settings) else None


def _verified(user: UserRow | User | None, password: str, settings: Settings) -> bool:
    """Whether the password is the user's (callers judge the user's state). One password
    verification whatever the answer: an unknown login, a user without a password, a blocked
    or internal one take as long as a wrong password does, so timing tells nobody which
    logins exist."""
    password_hash = user.password_hash if user is not None else None
    matches = verify_password(
        password_hash,
        password,
        time_cost=settings.password_time_cost,
        memory_cost=settings.password_memory_cost,
    )
    return matches and user is not None and not user.is_ghost


def sign_in(db: Session, settings: Settings, fields: SignInFields, ip: str | None) -> SignedIn:
    values = instance_settings.current(db)
    if not values["password_authentication_enabled_for_web"]:
        # GitLab refuses before looking at the login: nobody learns whether it exists.
        raise Forbidden()
    lifetime = session_lifetime(values)
    # The model: signing in writes the user's sign-in times (and a changed password).
    user = session_reads.user_by_login(db, fields.login, orm=True)
    # The web also lets a deactivated user in, and reactivates them.
    if not _verified(user, fields.password, settings) or user is None or user.state not in _WEB_STATES:
        raise Unauthorized(INVALID_LOGIN)
    now = datetime.now(UTC)
    if not _confirmed_enough(user, values["email_confirmation_setting"], now):
        raise Unauthorized(UNCONFIRMED)
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
        if user.state == DEACTIVATED:
            # GitLab: signing in on the web is how a deactivated user comes back.
            user.state = "active"
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
                expires_at=now + timedelta(seconds=lifetime),
            )
        )
    return SignedIn(user=user, cookie=cookie, csrf_token=csrf, max_age=lifetime)


def _confirmed_enough(user: User, setting: str, now: datetime) -> bool:
    """GitLab's email_confirmation_setting at sign-in: "hard" wants a confirmed address,
    "soft" only once the grace period after sign-up is over; "off" wants nothing."""
    if user.confirmed_at is not None or setting == "off":
        return True
    return setting == "soft" and now - user.created_at < SOFT_CONFIRMATION_GRACE


def session_lifetime(values: Mapping[str, Any]) -> int:
    """Seconds a new web session lasts: `session_expire_delay` minutes (at least one)."""
    return max(int(values["session_expire_delay"]), 1) * 60


def sign_out(db: Session, settings: Settings, cookie: str | None) -> str:
    """Ends the session; returns where the visitor goes next: `after_sign_out_path` when
    set, else the sign-in page (GitLab's after_sign_out_path_for)."""
    if cookie:
        with transaction(db):
            db.execute(delete(WebSession).where(WebSession.digest == digest(cookie)))
    target = instance_settings.current(db)["after_sign_out_path"]
    return _absolute(settings, target) if target else _absolute(settings, SIGN_IN_PATH)


def root_location(db: Session, settings: Settings, cookie: str | None) -> str:
    """Where `GET /` sends a visitor (GitLab's RootController): a signed-in user to their
    projects; anyone else to `home_page_url` when it is set and is not the root itself (no
    redirect loop), else to the sign-in page."""
    if cookie and _signed_in(db, settings, cookie):
        return _absolute(settings, DASHBOARD_PATH)
    home = instance_settings.current(db)["home_page_url"]
    if home:
        target = _absolute(settings, home)
        if target.rstrip("/") != settings.external_url.rstrip("/"):
            return target
    return _absolute(settings, SIGN_IN_PATH)


def _signed_in(db: Session, settings: Settings, cookie: str) -> bool:
    try:
        return authenticate(db, settings, Credentials(session=cookie, safe_method=True)) is not None
    except KilnError:
        return False


def _absolute(settings: Settings, target: str) -> str:
    """A path is on this instance; a URL is taken as it is."""
    return f"{settings.external_url}{target}" if target.startswith("/") else target
