"""SSH keys: everyone's own under /user, another user's as the public sees them (reads) or
as administrators manage them, and the administrators' look-ups by id and by fingerprint.

A key is checked as GitLab checks it: its text must parse as an OpenSSH public key whose
inner type matches, its type must be allowed by the instance (`<type>_key_restriction`: 0
any size, -1 forbidden, otherwise a minimum number of bits), and no one may already have it."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import delete
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from kiln import policy, ssh_keys
from kiln.auth.actor import Actor
from kiln.db import transaction
from kiln.errors import BadRequest, NotFound, ValidationFailed
from kiln.models import SSHKey
from kiln.pagination import Page, PageResult
from kiln.policy import Action
from kiln.queries import keys as finder
from kiln.queries import users as users_finder
from kiln.queries.keys import KeyRow
from kiln.queries.users import IdentityRow, UserRow
from kiln.schemas.keys import KeyCreate
from kiln.services import instance_settings, subjects

FORBIDDEN = -1
MAX_KEY_LENGTH = 5000
MAX_TITLE_LENGTH = 255
# GitLab answers a key id that names no key through ActiveRecord's RecordNotFound.
KEY_ID_NOT_FOUND = "404 Not found"
LOOKUP_FAILED = "Failed to return the key"
_MD5 = re.compile(r"^([0-9a-fA-F]{2}:){15}[0-9a-fA-F]{2}$")


@dataclass(slots=True)
class OwnedKey:
    """A key with its owner as the key-with-user view shows them."""

    key: KeyRow
    owner: UserRow
    identities: list[IdentityRow]
    can_create_project: bool


@dataclass(slots=True)
class UserKeys:
    user: UserRow
    page: PageResult  # items are KeyRow records


# ----------------------------------------------------------------------------- checking


def allowed_types_sentence(settings: Mapping[str, Any]) -> str:
    """The allowed types, upper-case, joined as GitLab's exclusive sentence: "A, B, or C"."""
    allowed = [t.upper() for t in ssh_keys.TECHNOLOGIES if _restriction(settings, t) != FORBIDDEN]
    if len(allowed) <= 2:
        return " or ".join(allowed)
    return ", ".join(allowed[:-1]) + ", or " + allowed[-1]


def _restriction(settings: Mapping[str, Any], technology: str | None) -> int:
    if technology is None:
        return FORBIDDEN
    try:
        return int(settings.get(f"{technology}_key_restriction", FORBIDDEN))
    except (TypeError, ValueError):
        return FORBIDDEN


def _key_errors(text: str, parsed: ssh_keys.PublicKey | None, settings: Mapping[str, Any]) -> list[str]:
    errors: list[str] = []
    if not text.strip():
        errors.append("can't be blank")
    restriction = _restriction(settings, parsed.technology if parsed else None)
    if restriction == FORBIDDEN:
        errors.append(f"type is forbidden. Must be {allowed_types_sentence(settings)}")
    elif parsed is not None and parsed.bits < restriction:
        errors.append(f"must be at least {restriction} bits")
    if len(text) > MAX_KEY_LENGTH:
        errors.append(f"is too long (maximum is {MAX_KEY_LENGTH} characters)")
    if not any(text.startswith(algorithm) for algorithm in ssh_keys.ALGORITHMS):
        errors.append("is invalid")
    return errors


def _checked(db: Session, p: KeyCreate) -> tuple[str, ssh_keys.PublicKey]:
    """The text to keep and the parsed key; 400 with every fault GitLab reports otherwise."""
    text = p.key.strip()
    try:
        parsed: ssh_keys.PublicKey | None = ssh_keys.parse(text)
    except ssh_keys.InvalidKey:
        parsed = None
    if parsed is not None:
        text = parsed.text
    errors: dict[str, list[str]] = {}
    if not p.title.strip():
        errors["title"] = ["can't be blank"]
    elif len(p.title) > MAX_TITLE_LENGTH:
        errors["title"] = [f"is too long (maximum is {MAX_TITLE_LENGTH} characters)"]
    key_errors = _key_errors(text, parsed, instance_settings.current(db))
    if key_errors:
        errors["key"] = key_errors
    if parsed is None:
        errors["fingerprint_sha256"] = ["cannot be generated"]
    elif finder.fingerprint_taken(db, parsed.fingerprint_sha256):
        errors["fingerprint_sha256"] = ["has already been taken"]
    if p.expires_at is not None and p.expires_at < datetime.now(UTC):
        errors.setdefault("key", []).append("has expired")
    if errors:
        raise ValidationFailed(errors)
    assert parsed is not None
    return text, parsed


# ----------------------------------------------------------------------------- own keys


def list_own(db: Session, actor: Actor, page: Page) -> PageResult:
    return finder.page_of_user(db, actor.id, page)


def get_own(db: Session, actor: Actor, key_id: int) -> KeyRow:
    return _key_of(db, actor.id, key_id)


def create_own(db: Session, actor: Actor, p: KeyCreate) -> SSHKey:
    return _create(db, actor.id, p)


def delete_own(db: Session, actor: Actor, key_id: int) -> None:
    _delete(db, actor.id, key_id)


# ----------------------------------------------------------------------------- a user's keys


def list_of_user(db: Session, viewer: Actor | None, ident: str, page: Page) -> UserKeys:
    """`ident`: an id or a username. Anyone who may see the user sees their keys."""
    user = _visible_user(db, viewer, ident)
    return UserKeys(user, finder.page_of_user(db, user.id, page))


def get_of_user(db: Session, viewer: Actor | None, ident: str, key_id: int) -> tuple[UserRow, KeyRow]:
    user = _visible_user(db, viewer, ident)
    return user, _key_of(db, user.id, key_id)


def create_for_user(db: Session, actor: Actor, user_id: int, p: KeyCreate) -> tuple[UserRow, SSHKey]:
    policy.require(actor, Action.ADMIN_USER_KEYS)
    user = subjects.user(db, user_id)
    return user, _create(db, user.id, p)


def delete_for_user(db: Session, actor: Actor, user_id: int, key_id: int) -> None:
    policy.require(actor, Action.ADMIN_USER_KEYS)
    user = subjects.user(db, user_id)
    _delete(db, user.id, key_id)


# ----------------------------------------------------------------------------- any key


def get_any(db: Session, actor: Actor, key_id: int) -> OwnedKey:
    policy.require(actor, Action.ADMIN_USER_KEYS)
    found = finder.key_with_owner(db, "id", key_id)
    if found is None:
        raise NotFound(message=KEY_ID_NOT_FOUND)
    return _owned(*found)


def find_by_fingerprint(db: Session, actor: Actor, fingerprint: str) -> OwnedKey:
    """MD5 (`aa:bb:…`, sixteen pairs) or SHA256 (`SHA256:` and unpadded base64 of 32 bytes)."""
    policy.require(actor, Action.ADMIN_USER_KEYS)
    if fingerprint[:7].lower() == "sha256:":
        digest = fingerprint.rsplit(":", maxsplit=1)[-1]
        if _digest_size(digest) != 32:
            raise BadRequest(LOOKUP_FAILED, raw=True)
        found = finder.key_with_owner(db, "fingerprint_sha256", "SHA256:" + digest.rstrip("="))
    else:
        if not _MD5.match(fingerprint):
            raise BadRequest(LOOKUP_FAILED, raw=True)
        found = finder.key_with_owner(db, "fingerprint", fingerprint.lower())
    if found is None:
        raise NotFound("Key")
    return _owned(*found)


def _digest_size(text: str) -> int:
    padded = text.rstrip("=") + "=" * (-len(text.rstrip("=")) % 4)
    try:
        return len(base64.b64decode(padded, validate=True))
    except (binascii.Error, ValueError):
        return -1


# ----------------------------------------------------------------------------- shared


def _owned(key: KeyRow, owner: UserRow) -> OwnedKey:
    return OwnedKey(key, owner, users_finder.identities_in(owner), policy.may_create_projects(owner))


def _visible_user(db: Session, viewer: Actor | None, ident: str) -> UserRow:
    user = users_finder.row_by_id_or_username(db, ident)
    if user is None:
        raise NotFound("User")
    policy.require_visible(viewer, Action.READ_USER, user, "User")
    return user


def _key_of(db: Session, user_id: int, key_id: int) -> KeyRow:
    key = finder.key_of_user(db, user_id, key_id)
    if key is None:
        raise NotFound("Key")
    return key


def _create(db: Session, user_id: int, p: KeyCreate) -> SSHKey:
    with transaction(db):
        text, parsed = _checked(db, p)
        key = SSHKey(
            user_id=user_id,
            title=p.title,
            key=text,
            fingerprint=parsed.fingerprint_md5,
            fingerprint_sha256=parsed.fingerprint_sha256,
            usage_type=p.usage_type,
            expires_at=p.expires_at,
        )
        db.add(key)
        try:
            db.flush()
        except IntegrityError:  # a twin request registered the same key first
            raise ValidationFailed({"fingerprint_sha256": ["has already been taken"]}) from None
    return key


def _delete(db: Session, user_id: int, key_id: int) -> None:
    with transaction(db):
        gone = db.execute(delete(SSHKey).where(SSHKey.user_id == user_id, SSHKey.id == key_id))
        if not gone.rowcount:
            raise NotFound("Key")
