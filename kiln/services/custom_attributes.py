"""Custom attributes: key/value pairs an administrator attaches to users, groups and projects,
so other tools can tag them and filter lists by them (`custom_attributes[key]=value`)."""

from __future__ import annotations

from typing import Literal, cast

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from kiln import policy
from kiln.auth.actor import Actor
from kiln.db import transaction
from kiln.errors import NotFound, ValidationFailed
from kiln.models import GroupCustomAttribute, ProjectCustomAttribute, User, UserCustomAttribute
from kiln.policy import Action
from kiln.services import subjects

Kind = Literal["users", "groups", "projects"]
Attribute = UserCustomAttribute | GroupCustomAttribute | ProjectCustomAttribute
_MODELS: dict[str, tuple[type[Attribute], str]] = {
    "users": (UserCustomAttribute, "user_id"),
    "groups": (GroupCustomAttribute, "namespace_id"),
    "projects": (ProjectCustomAttribute, "project_id"),
}
MAX_KEY = 255
NOT_FOUND = "Custom Attribute"


def _owner_id(db: Session, actor: Actor, kind: Kind, ident: str) -> int:
    """The id of the user, group or project the attributes hang on; its 404 when absent."""
    policy.require(actor, Action.ADMIN_CUSTOM_ATTRIBUTES)
    if kind == "users":
        user = db.get(User, int(ident)) if ident.isdigit() else None
        if user is None:
            raise NotFound("User")
        return user.id
    if kind == "groups":
        group = subjects.group(db, actor, ident).group
        return group.id
    return subjects.project(db, actor, ident).project.id


def _find(db: Session, kind: Kind, owner_id: int, key: str) -> Attribute | None:
    model, column = _MODELS[kind]
    row = db.scalars(select(model).where(getattr(model, column) == owner_id, model.key == key)).first()
    return cast("Attribute | None", row)


def list_attributes(db: Session, actor: Actor, kind: Kind, ident: str) -> list[tuple[str, str]]:
    owner = _owner_id(db, actor, kind, ident)
    model, column = _MODELS[kind]
    rows = db.execute(
        select(model.key, model.value).where(getattr(model, column) == owner).order_by(model.key)
    )
    return [(key, value) for key, value in rows]


def get_attribute(db: Session, actor: Actor, kind: Kind, ident: str, key: str) -> tuple[str, str]:
    row = _find(db, kind, _owner_id(db, actor, kind, ident), key)
    if row is None:
        raise NotFound(NOT_FOUND)
    return row.key, row.value


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
    model, column = _MODELS[kind]
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
