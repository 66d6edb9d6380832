"""Sudo: an administrator's token acting as another user, in GitLab's order of checks."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from kiln.auth.actor import Actor
from kiln.auth.tokens import SUDO
from kiln.errors import Forbidden, InsufficientScope, NotFound, Unauthorized
from kiln.models import User


def apply_sudo(db: Session, actor: Actor | None, target: str) -> Actor:
    if actor is None:
        raise Unauthorized()
    if not actor.is_admin:
        raise Forbidden("Must be admin to use sudo")
    if actor.via not in ("personal_access_token", "impersonation_token", "oauth"):
        raise Forbidden("Must be authenticated using an OAuth or personal access token to use sudo")
    if actor.scopes is not None and SUDO not in actor.scopes:
        raise InsufficientScope([SUDO])
    user = find_user(db, target)
    if user is None or user.is_ghost:
        raise NotFound(f"User with ID or username '{target}'")
    return Actor(
        user=user,
        via=actor.via,
        scopes=actor.scopes,
        token_id=actor.token_id,
        admin_mode=actor.admin_mode,
        sudo_by=actor.user,
    )


def find_user(db: Session, id_or_username: str) -> User | None:
    if id_or_username.isdigit():
        user = db.get(User, int(id_or_username))
        if user is not None:
            return user
    return db.scalars(select(User).where(func.lower(User.username) == id_or_username.lower())).first()
