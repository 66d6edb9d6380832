"""Further e-mail addresses: everyone's own under /user, and administrators' for any user
(who may add them confirmed at once). No address may be anyone's already, as primary or
further address, in any case. kiln sends no confirmation mail: an address a user adds for
themself stays unconfirmed, so only the primary address and those an administrator added
confirmed count as the user's verified addresses (commit signatures)."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from sqlalchemy import delete
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from kiln import policy
from kiln.auth.actor import Actor
from kiln.db import transaction
from kiln.errors import NotFound, ValidationFailed
from kiln.models import Email
from kiln.pagination import Page, PageResult
from kiln.policy import Action
from kiln.queries import emails as finder
from kiln.queries.emails import EmailRow
from kiln.schemas.emails import EmailCreate, UserEmailCreate
from kiln.services import subjects

MAX_LENGTH = 255
_ADDRESS = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_TAKEN = ["has already been taken"]


def list_own(db: Session, actor: Actor, page: Page) -> PageResult:
    return finder.page_of_user(db, actor.id, page)


def get_own(db: Session, actor: Actor, email_id: int) -> EmailRow:
    return _email_of(db, actor.id, email_id)


def create_own(db: Session, actor: Actor, p: EmailCreate) -> Email:
    return _create(db, actor.id, p.email, confirmed=False)


def delete_own(db: Session, actor: Actor, email_id: int) -> None:
    _delete(db, actor.id, email_id)


def list_of_user(db: Session, actor: Actor, user_id: int, page: Page) -> PageResult:
    policy.require(actor, Action.ADMIN_USER_KEYS)
    return finder.page_of_user(db, subjects.user(db, user_id).id, page)


def create_for_user(db: Session, actor: Actor, user_id: int, p: UserEmailCreate) -> Email:
    policy.require(actor, Action.ADMIN_USER_KEYS)
    return _create(db, subjects.user(db, user_id).id, p.email, confirmed=p.skip_confirmation)


def delete_for_user(db: Session, actor: Actor, user_id: int, email_id: int) -> None:
    policy.require(actor, Action.ADMIN_USER_KEYS)
    _delete(db, subjects.user(db, user_id).id, email_id)


def _email_of(db: Session, user_id: int, email_id: int) -> EmailRow:
    found = finder.email_of_user(db, user_id, email_id)
    if found is None:
        raise NotFound("Email")
    return found


def _create(db: Session, user_id: int, address: str, *, confirmed: bool) -> Email:
    address = address.strip()
    with transaction(db):
        errors: list[str] = []
        if not address:
            errors.append("can't be blank")
        elif finder.address_taken(db, address):
            errors += _TAKEN
        if len(address) > MAX_LENGTH:
            errors.append(f"is too long (maximum is {MAX_LENGTH} characters)")
        if address and not _ADDRESS.match(address):
            errors.append("is invalid")
        if errors:
            raise ValidationFailed({"email": errors})
        email = Email(user_id=user_id, email=address, confirmed_at=datetime.now(UTC) if confirmed else None)
        db.add(email)
        try:
            db.flush()
        except IntegrityError:  # a twin request took the address first
            raise ValidationFailed({"email": _TAKEN}) from None
    return email


def _delete(db: Session, user_id: int, email_id: int) -> None:
    with transaction(db):
        gone = db.execute(delete(Email).where(Email.user_id == user_id, Email.id == email_id))
        if not gone.rowcount:
            raise NotFound("Email")
