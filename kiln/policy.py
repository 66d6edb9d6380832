"""Every permission decision in kiln: "may this actor do X to that subject".

Access levels follow GitLab: Guest 10, Reporter 20, Developer 30, Maintainer 40, Owner 50.
A private subject the actor can't see is a 404, never a 403; callers get that from
`require_visible`, and `require` answers 403 for things the actor can see but not change.
"""

from __future__ import annotations

from enum import Enum, auto

from kiln.auth.actor import Actor
from kiln.errors import Forbidden, NotFound
from kiln.models import User


class Action(Enum):
    ADMIN_USERS = auto()  # create, update, delete, block users; see admin-only fields
    READ_USER = auto()  # see a user at all (public profile)
    READ_USER_PROFILE = auto()  # see a user's profile fields (private_profile hides them)
    READ_USER_EMAIL = auto()  # see e-mail and sign-in fields of a user
    UPDATE_USER_STATUS = auto()
    READ_USER_TOKENS = auto()  # list and see a user's personal access tokens
    REVOKE_TOKEN = auto()
    ADMIN_TOKENS = auto()  # create tokens for others, impersonation tokens


def is_admin(actor: Actor | None) -> bool:
    return actor is not None and actor.is_admin


def may(actor: Actor | None, action: Action, subject: object = None) -> bool:
    if action is Action.ADMIN_USERS or action is Action.ADMIN_TOKENS:
        return is_admin(actor)
    if isinstance(subject, User):
        return _may_user(actor, action, subject)
    return False


def _may_user(actor: Actor | None, action: Action, user: User) -> bool:
    is_self = actor is not None and actor.user.id == user.id
    if action is Action.READ_USER:
        return not user.is_ghost or is_admin(actor)
    if action is Action.READ_USER_PROFILE:
        return is_self or is_admin(actor) or not user.private_profile
    if action in (Action.READ_USER_EMAIL, Action.UPDATE_USER_STATUS, Action.READ_USER_TOKENS):
        return is_self or is_admin(actor)
    if action is Action.REVOKE_TOKEN:
        return is_self or is_admin(actor)
    return False


def require(actor: Actor | None, action: Action, subject: object = None) -> None:
    if not may(actor, action, subject):
        raise Forbidden()


def require_visible(actor: Actor | None, action: Action, subject: object, what: str) -> None:
    """Like require, but the subject is hidden: refusal is its 404."""
    if not may(actor, action, subject):
        raise NotFound(what)
