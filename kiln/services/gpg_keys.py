"""GPG keys: everyone's own under /user, another user's as anyone reads them or as
administrators manage them. A key is an armored public key block GnuPG can read: its primary
key id, fingerprint and subkeys are kept with it (subkeys sign most commits). A block of
several primary keys is refused: only one key is recorded for it.

Revoking a key removes it as deleting does: signatures it made then count as made by an
unknown key, and signature views are worked out when asked, so nothing else changes."""

from __future__ import annotations

import re

from sqlalchemy import delete
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from kiln import openpgp, policy
from kiln.auth.actor import Actor
from kiln.db import transaction
from kiln.errors import NotFound, ValidationFailed
from kiln.models import GPGKey, GPGKeySubkey
from kiln.pagination import Page, PageResult
from kiln.policy import Action
from kiln.queries import gpg_keys as finder
from kiln.queries.gpg_keys import GPGKeyRow
from kiln.schemas.gpg_keys import GPGKeyCreate
from kiln.services import subjects

BEGIN, END = openpgp.PUBLIC_KEY_BEGIN, openpgp.PUBLIC_KEY_END
INVALID_FORMAT = f"is invalid. A valid public GPG key begins with '{BEGIN}' and ends with '{END}'"
_FORMAT = re.compile(
    f"{re.escape(BEGIN)}(?:(?!{re.escape(BEGIN)})(?!{re.escape(END)}).)+{re.escape(END)}", re.S
)
ONE_KEY_ONLY = "must contain only one public key"
_BLANK = ["can't be blank"]
_TAKEN = ["has already been taken"]


# ----------------------------------------------------------------------------- own keys


def list_own(db: Session, actor: Actor, page: Page) -> PageResult:
    return finder.page_of_user(db, actor.id, page)


def get_own(db: Session, actor: Actor, key_id: int) -> GPGKeyRow:
    return _key_of(db, actor.id, key_id)


def create_own(db: Session, actor: Actor, p: GPGKeyCreate) -> GPGKey:
    return _create(db, actor.id, p)


def delete_own(db: Session, actor: Actor, key_id: int) -> None:
    _delete(db, actor.id, key_id)


def revoke_own(db: Session, actor: Actor, key_id: int) -> None:
    _delete(db, actor.id, key_id)


# ----------------------------------------------------------------------------- a user's keys


def list_of_user(db: Session, viewer: Actor | None, user_id: int, page: Page) -> PageResult:
    user = subjects.user(db, user_id)
    policy.require_visible(viewer, Action.READ_USER, user, "User")
    return finder.page_of_user(db, user.id, page)


def get_of_user(db: Session, viewer: Actor | None, user_id: int, key_id: int) -> GPGKeyRow:
    user = subjects.user(db, user_id)
    policy.require_visible(viewer, Action.READ_USER, user, "User")
    return _key_of(db, user.id, key_id)


def create_for_user(db: Session, actor: Actor, user_id: int, p: GPGKeyCreate) -> GPGKey:
    policy.require(actor, Action.ADMIN_USER_KEYS)
    return _create(db, subjects.user(db, user_id).id, p)


def delete_for_user(db: Session, actor: Actor, user_id: int, key_id: int) -> None:
    policy.require(actor, Action.ADMIN_USER_KEYS)
    _delete(db, subjects.user(db, user_id).id, key_id)


def revoke_for_user(db: Session, actor: Actor, user_id: int, key_id: int) -> None:
    policy.require(actor, Action.ADMIN_USER_KEYS)
    _delete(db, subjects.user(db, user_id).id, key_id)


# ----------------------------------------------------------------------------- shared


def _key_of(db: Session, user_id: int, key_id: int) -> GPGKeyRow:
    key = finder.key_of_user(db, user_id, key_id)
    if key is None:
        raise NotFound("GPG Key")
    return key


def _create(db: Session, user_id: int, p: GPGKeyCreate) -> GPGKey:
    text = p.key.strip()
    key_errors = ([] if text else list(_BLANK)) + ([] if _FORMAT.fullmatch(text) else [INVALID_FORMAT])
    if key_errors:
        raise ValidationFailed({"key": key_errors})
    # Read before the write transaction: GnuPG runs as a child process.
    parsed = openpgp.read_public_key(text)
    if parsed is None:
        raise ValidationFailed({"fingerprint": _BLANK, "primary_keyid": _BLANK})
    if parsed.primary_keys > 1:  # only the first would be recorded, yet the rest would sign
        raise ValidationFailed({"key": [ONE_KEY_ONLY]})
    with transaction(db):
        taken = finder.taken(db, text, parsed.fingerprint, parsed.keyid)
        if "key" in taken:
            raise ValidationFailed({"key": _TAKEN})
        errors = {name: _TAKEN for name in ("fingerprint", "primary_keyid") if name in taken}
        if errors:
            raise ValidationFailed(errors)
        key = GPGKey(user_id=user_id, key=text, primary_keyid=parsed.keyid, fingerprint=parsed.fingerprint)
        db.add(key)
        try:
            db.flush()
        except IntegrityError:  # a twin request registered the same key first
            raise ValidationFailed({"fingerprint": _TAKEN}) from None
        db.add_all(
            GPGKeySubkey(gpg_key_id=key.id, keyid=sub.keyid, fingerprint=sub.fingerprint)
            for sub in parsed.subkeys
        )
        db.flush()
    return key


def _delete(db: Session, user_id: int, key_id: int) -> None:
    with transaction(db):
        key = finder.key_of_user(db, user_id, key_id)
        if key is None:
            raise NotFound("GPG Key")
        db.execute(delete(GPGKeySubkey).where(GPGKeySubkey.gpg_key_id == key.id))
        db.execute(delete(GPGKey).where(GPGKey.id == key.id))
