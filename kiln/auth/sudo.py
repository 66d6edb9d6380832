"""Sudo: an administrator's token acting as another user, in GitLab's order of checks."""

from __future__ import annotations

from dataclasses import replace

from sqlalchemy.orm import Session

from kiln.auth.actor import Actor
from kiln.auth.tokens import SUDO
from kiln.errors import Forbidden, InsufficientScope, NotFound, Unauthorized
from kiln.queries.users import row_by_id_or_username


def apply_sudo(db: Session, actor: Actor | None, target: str) -> Actor:
    if actor is None:
        raise Unauthorized()
    if not actor.is_admin:
        raise Forbidden("Must be admin to use sudo")
    if actor.via not in ("personal_access_token", "impersonation_token", "oauth"):
        raise Forbidden("Must be authenticated using an OAuth or personal access token to use sudo")
    if actor.scopes is not None and SUDO not in actor.scopes:
        raise InsufficientScope([SUDO])
    user = row_by_id_or_username(db, target)
    if user is None or user.is_ghost:
        raise NotFound(f"User with ID or username '{target}'")
    return replace(actor, user=user, sudo_by=actor.user)
