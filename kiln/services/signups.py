"""Sign-up (GitLab's web registration): a new user creates their own account, as the
instance's settings allow: sign-up switched on, e-mail domains allowed, an address the
administrator's `email_restrictions` pattern does not refuse, and, where an administrator
must approve new users, the account waits blocked until they do. With
`email_confirmation_setting` "soft" or "hard" the address stays unconfirmed
(`confirmed_at` null): kiln sends no confirmation mail."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from kiln.config import Settings
from kiln.errors import NotFound, ParamError
from kiln.models import User
from kiln.schemas.signups import SignUp
from kiln.schemas.users import UserCreate
from kiln.services import instance_settings
from kiln.services import users as user_service

SIGNED_UP = "Welcome! You have signed up successfully."
AWAITING_APPROVAL = (
    "You have signed up successfully. However, we could not sign you in because your account "
    "is awaiting approval from your GitLab administrator."
)


@dataclass(slots=True)
class SignedUp:
    user: User
    message: str


def sign_up(db: Session, settings: Settings, form: SignUp) -> SignedUp:
    """Refused as no page at all while sign-up is off."""
    if not instance_settings.current(db)["signup_enabled"]:
        raise NotFound()
    fields = form.user
    if fields is None:
        raise ParamError("user is missing")
    name = fields.name
    if not (name or "").strip():
        name = f"{fields.first_name or ''} {fields.last_name or ''}".strip()
    p = UserCreate(
        username=fields.username or "",
        email=fields.email or "",
        name=name or "",
        password=fields.password or "",
    )
    user = user_service.register(db, p, settings)
    pending = user.state == user_service.PENDING_APPROVAL
    return SignedUp(user=user, message=AWAITING_APPROVAL if pending else SIGNED_UP)
