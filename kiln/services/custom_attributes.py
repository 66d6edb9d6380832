"""Custom attributes: key/value pairs an administrator attaches to users, groups and projects,
so other tools can tag them and filter lists by them (`custom_attributes[key]=value`)."""

from __future__ import annotations

from typing import cast

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from kiln import policy
from kiln.auth.actor import Actor
from kiln.db import transaction
from kiln.errors import NotFound, ValidationFailed
from kiln.models.base import numeric_id
from kiln.policy import Action
from kiln.queries import custom_attributes as finder
from kiln.queries import users
from kiln.queries.custom_attributes import MODELS, Attribute, Kind
from kiln.services import subjects

MAX_KEY = 255
NOT_FOUND = "Custom Attribute"


def _owner_id(db: Session, actor: Actor, kind: Kind, ident: str) -> int:
    """The id of the user, group or project the attributes hang on; its 404 when absent.
    Read as row records: no route here changes the owner itself."""
    policy.require(actor, Action.ADMIN_CUSTOM_ATTRIBUTES)
    if kind == "users":
        user_id = numeric_id(ident)
        user = users.row_by_id(db, user_id) if user_id is not None else None
        if user is None:
            raise NotFound("User")
        return int(user.id)
    if kind == "groups":
        return int(subjects.group(db, actor, ident, rows=True).group.id)
    return int(subjects.project(db, actor, ident, rows=True).project.id)


def _find(db: Session, kind: Kind, owner_id: int, key: str) -> Attribute | None:
    """The attribute a write changes."""
    model, column = MODELS[kind]
    row = db.scalars(select(model).where(getattr(model, column) == owner_id, model.key == key)).first()
    return cast("Attribute | None", row)


def list_attributes(db: Session, actor: Actor, kind: Kind, ident: str) -> list[tuple[str, str]]:
    return finder.pairs_of(db, kind, _owner_id(db, actor, kind, ident))


def get_attribute(db: Session, actor: Actor, kind: Kind, ident: str, key: str) -> tuple[str, str]:
    found = finder.pair(db, kind, _owner_id(db, actor, kind, ident), key)
    if found is None:
        raise NotFound(NOT_FOUND)
    return found


def set_attribute(db: Session, actor: Actor, kind: Kind, ident: str, key: str, value: str) -> tuple[str, str]:
    """Create the attribute or replace its value."""
    owner = _owner_id(db, actor, kind, ident)
    errors: dict[str, list[str]] = {}
    if len(key) > MAX_KEY:
        errors["key"] = [f"is too long (maximum is {MAX_KEY} characters)"]
    if not value:
        errors["value"] = ["can't be blank"]
    if errors:
        raise ValidationFailed(errors)
    model, column = MODELS[kind]
    with transaction(db):
        row = _find(db, kind, owner, key)
        if row is None:
            try:
                with db.begin_nested():
                    db.add(model(**{column: owner, "key": key, "value": value}))
                    db.flush()
            except IntegrityError:
                # Another request created it first: update theirs.
                row = _find(db, kind, owner, key)
                if row is None:
                    raise
        if row is not None:
            row.value = value
            db.flush()
    return key, value


def delete_attribute(db: Session, actor: Actor, kind: Kind, ident: str, key: str) -> None:
    owner = _owner_id(db, actor, kind, ident)
    with transaction(db):
        row = _find(db, kind, owner, key)
        if row is None:
            raise NotFound(NOT_FOUND)
        db.delete(row)
