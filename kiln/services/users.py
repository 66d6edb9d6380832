"""Users: listing, profiles, administration, status, blocking and deletion."""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import PurePosixPath
from typing import Any, Literal

from sqlalchemy import Column, delete, exists, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from kiln import policy
from kiln.auth.actor import Actor
from kiln.auth.passwords import MIN_PASSWORD_LENGTH, hash_password, random_password
from kiln.config import Settings
from kiln.db import transaction, try_transaction
from kiln.errors import BadRequest, Conflict, Forbidden, NotFound, ParamError, ValidationFailed
from kiln.kept import Kept, text_size
from kiln.models import Base, Identity, Namespace, User
from kiln.models.namespaces import KIND_USER
from kiln.models.users import USER_TYPE_GHOST
from kiln.pagination import Page, PageResult
from kiln.policy import Action
from kiln.preconditions import require_unmodified_since
from kiln.queries import custom_attributes as attributes
from kiln.queries import users as finder
from kiln.queries.paging import keyset_page, offset_page
from kiln.queries.shapes import bounds_params
from kiln.queries.users import IdentityRow, UserRow
from kiln.schemas._types import Upload
from kiln.schemas.users import StatusUpdate, UserCreate, UserList, UserUpdate
from kiln.services import avatars, instance_settings, project_lifecycle, project_stars, subjects, uploads
from kiln.services import tokens as token_service
from kiln.services.namespaces import place, reserved_message, reserved_top_level
from kiln.storage import Storage, user_avatar_key

_USERNAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")
# Matched whole (fullmatch): with `$` alone `a@corp.com\n` would pass.
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
log = logging.getLogger(__name__)
THEME_IDS = range(1, 12)
COLOR_SCHEME_IDS = range(1, 7)
GHOST_USERNAME = "ghost"
STATUS_MESSAGE_MAX = 100
STATUS_EMOJI_MAX = 255
STATUS_CLEAR_AFTER = {
    "30_minutes": timedelta(minutes=30),
    "3_hours": timedelta(hours=3),
    "8_hours": timedelta(hours=8),
    "1_day": timedelta(days=1),
    "3_days": timedelta(days=3),
    "7_days": timedelta(days=7),
    "30_days": timedelta(days=30),
}


UserView = Literal["admin", "self", "public", "private", "basic"]


@dataclass(slots=True)
class UserListing:
    page: PageResult  # items are UserRow records
    details: list[UserDetail]  # the view of each, in page order


def list_users(db: Session, viewer: Actor | None, q: UserList, page: Page) -> UserListing:
    admin = policy.is_admin(viewer)
    if (q.extern_uid is None) != (q.provider is None):
        raise ParamError("extern_uid, provider provide all or none of parameters")
    if q.extern_uid is not None and not admin:
        raise Forbidden()
    if viewer is None and not q.username:
        # Anonymous callers may only look a user up by username (GitLab).
        raise Forbidden("Not authorized to access /api/v4/users")
    stmt = finder.listing(q, admin=admin)
    bounds = bounds_params(q)
    if admin and q.without_projects:
        bounds[finder.TODAY] = date.today()
    if page.keyset:
        result = keyset_page(db, stmt, page, User.id, q.id_after, q.id_before, core=True, params=bounds)
    else:
        result = offset_page(db, stmt, page, core=True, params=bounds)
    result.items = _kept_rows(db, [(row[0], row[1]) for row in result.items])
    if not admin:
        return UserListing(result, [UserDetail(u, "basic") for u in result.items])
    ids = [u.id for u in result.items]
    attrs = attributes.of_owners(db, "users", ids) if q.with_custom_attributes else None
    details = [
        UserDetail(
            u,
            "admin",
            finder.identities_in(u),
            attrs.get(u.id, []) if attrs is not None else None,
            can_create_project=policy.may_create_projects(u),
        )
        for u in result.items
    ]
    return UserListing(result, details)


# Users' rows as lists read them, kept across requests by their version (models RowVersion).
KEPT: Kept[UserRow] = Kept(limit=2048, budget=4 << 20, size=text_size)


def _kept_rows(db: Session, versions: list[tuple[int, int]]) -> list[UserRow]:
    """The rows of (id, row_version) pairs, in order: kept by version (Kept.many), the rest
    read in one statement."""

    def read(missing: list[int]) -> Iterable[tuple[int, UserRow, tuple[int, int]]]:
        return ((row.id, row, (row.id, row.row_version)) for row in finder.rows_by_ids(db, missing))

    found = KEPT.many({uid: (uid, version) for uid, version in versions}, read)
    return [found[uid] for uid, _ in versions if uid in found]


def get_user(db: Session, viewer: Actor | None, user_id: int) -> UserRow:
    if viewer is None:
        raise Forbidden("Not authorized!")
    user = subjects.user(db, user_id)
    policy.require_visible(viewer, Action.READ_USER, user, "User")
    return user


@dataclass(slots=True)
class UserDetail:
    user: UserRow | User
    view: UserView
    identities: list[IdentityRow] | None = None  # in the admin and self views
    custom_attributes: list[tuple[str, str]] | None = None
    can_create_project: bool = False  # in the admin and self views


def detail(
    db: Session, viewer: Actor | None, user: UserRow | User, *, custom_attributes: bool = False
) -> UserDetail:
    """Which view of `user` the viewer is entitled to: admin, self, public or private profile."""
    if policy.is_admin(viewer):
        attrs = attributes.of_owners(db, "users", [user.id])[user.id] if custom_attributes else None
        return UserDetail(
            user, "admin", _identities(db, user), attrs, can_create_project=policy.may_create_projects(user)
        )
    if viewer is not None and viewer.id == user.id:
        return UserDetail(
            user, "self", _identities(db, user), can_create_project=policy.may_create_projects(user)
        )
    return UserDetail(user, "public" if policy.may(viewer, Action.READ_USER_PROFILE, user) else "private")


def _identities(db: Session, user: UserRow | User) -> list[IdentityRow]:
    if isinstance(user, UserRow):
        return finder.identities_in(user)
    return finder.identities_of(db, [user.id])[user.id]


def create_user(db: Session, actor: Actor, p: UserCreate, settings: Settings, storage: Storage) -> User:
    policy.require(actor, Action.ADMIN_USERS)
    try:
        user = _create(db, p, settings, storage)
    except IntegrityError:
        # A concurrent request took the e-mail or username between check and insert.
        if finder.email_taken(db, p.email):
            raise Conflict("Email has already been taken") from None
        if finder.username_taken(db, p.username):
            raise Conflict("Username has already been taken") from None
        raise
    return user


def _create(db: Session, p: UserCreate, settings: Settings, storage: Storage) -> User:
    password = random_password() if _random_password(p) else p.password
    # Hashed before the write transaction: a fifth of a second nobody else should wait for.
    password_hash = _hash(password, settings)
    with transaction(db):
        # GitLab answers a taken e-mail or username before any other validation error.
        if finder.email_taken(db, p.email):
            raise Conflict("Email has already been taken")
        if finder.username_taken(db, p.username):
            raise Conflict("Username has already been taken")
        errors = _field_errors(p, password=None if _random_password(p) else p.password)
        errors.update(_identity_errors(db, p, None))
        if errors:
            raise ValidationFailed(errors)
        avatar_key = _check_avatar(p.avatar)
        assert password_hash is not None
        now = datetime.now(UTC)
        user = User(
            username=p.username,
            email=p.email,
            name=p.name,
            password_hash=password_hash,
            password_automatically_set=_random_password(p),
            confirmed_at=now,
        )
        _apply_profile(user, p, admin_fields=True)
        _apply_defaults(user, p, instance_settings.current(db))
        if p.admin is not None:
            user.admin = p.admin
        db.add(user)
        db.flush()
        user_namespace(db, user)
        if p.extern_uid is not None and p.provider is not None:
            db.add(Identity(user_id=user.id, provider=p.provider, extern_uid=p.extern_uid))
        if avatar_key is not None:
            user.avatar_path = _store_avatar(storage, user.id, p.avatar)
        db.flush()
    return user


def _apply_defaults(user: User, p: UserCreate, inst: Mapping[str, Any]) -> None:
    """A new user's projects limit and group creation: as given, else the instance's
    defaults; an external user gets neither (GitLab's ensure_user_rights_and_limits)."""
    if p.projects_limit is None:
        user.projects_limit = int(inst["default_projects_limit"])
    if p.can_create_group is None:
        user.can_create_group = bool(inst["can_create_group"])
    if user.external:
        user.projects_limit = 0
        user.can_create_group = False


def email_domain_error(inst: Mapping[str, Any], email: str) -> str | None:
    """The instance's sign-up domain rules (GitLab's signup_domain_valid?): a denied domain,
    or one outside a non-empty allowlist. `*` in a listed domain stands for any characters."""
    domain = email.rpartition("@")[2]
    error = None
    if inst["domain_blacklist_enabled"] and _domain_matches(inst["domain_blacklist"] or [], domain):
        error = "is not from an allowed domain."
    allowed = inst["domain_whitelist"] or []
    if allowed:
        error = None if _domain_matches(allowed, domain) else "domain is not authorized for sign-up"
    return error


def _domain_matches(patterns: Iterable[str] | str, domain: str) -> bool:
    if isinstance(patterns, str):
        patterns = re.split(r"[\s,;]+", patterns)
    for pattern in filter(None, patterns):
        regex = "^" + re.escape(pattern).replace(r"\*", ".*?") + "$"
        if re.match(regex, domain, re.IGNORECASE):
            return True
    return False


EMAIL_RESTRICTED = "is not allowed. Try again with a different email address, or contact your GitLab admin."
# How long the administrator's `email_restrictions` pattern may take on one address.
EMAIL_RESTRICTIONS_TIMEOUT_S = 2.0
# The pattern runs in a child process: Python's `re` backtracks and cannot be interrupted,
# so a pattern that runs away costs a killed child, never a server thread.
_RESTRICTION_SEARCH = (
    "import json,re,sys\n"
    "pattern,email=json.load(sys.stdin)\n"
    "sys.stdout.write('1' if re.search(pattern,email) else '0')\n"
)


def email_restriction_error(inst: Mapping[str, Any], email: str) -> str | None:
    """GitLab's check_email_restrictions, at sign-up only: with `email_restrictions_enabled`,
    an address the administrator's regular expression `email_restrictions` finds anywhere
    in is refused. A pattern that does not compile refuses nothing (and is logged); one that
    cannot be evaluated in time refuses (and is logged), so a crafted address cannot slip
    past the restriction by making the pattern backtrack."""
    if not inst["email_restrictions_enabled"]:
        return None
    pattern = inst["email_restrictions"]
    if not isinstance(pattern, str) or not pattern.strip():
        return None
    try:
        re.compile(pattern)
    except (re.error, RecursionError, OverflowError) as exc:
        log.warning("email_restrictions does not compile (%s): sign-up addresses are not restricted", exc)
        return None
    return EMAIL_RESTRICTED if _restricted(pattern, email) else None


def _restricted(pattern: str, email: str) -> bool:
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-S", "-c", _RESTRICTION_SEARCH],
            input=json.dumps([pattern, email]),
            capture_output=True,
            text=True,
            timeout=EMAIL_RESTRICTIONS_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        log.warning(
            "email_restrictions took over %ss on a sign-up address: refused", EMAIL_RESTRICTIONS_TIMEOUT_S
        )
        return True
    except OSError as exc:
        log.error("email_restrictions could not be evaluated (%s): sign-up refused", exc)
        return True
    if done.returncode != 0 or done.stdout not in ("0", "1"):
        log.error("email_restrictions could not be evaluated (exit %s): sign-up refused", done.returncode)
        return True
    return done.stdout == "1"


def register(db: Session, p: UserCreate, settings: Settings) -> User:
    """A user who signs up: the instance's sign-up rules, then the same validation as an
    administrator's creation, every problem in one answer; nothing is written on refusal.
    With admin approval required the user waits, blocked, until approved.

    `email_confirmation_setting` other than "off" ("soft", "hard") leaves the address
    unconfirmed: GitLab confirms it when the user follows the mail it sends, and kiln sends
    none, so it stays unconfirmed until an administrator confirms it."""
    password_hash = _hash(p.password, settings)
    # The administrator's pattern is evaluated before the write transaction: a child
    # process nobody else should wait for.
    restriction = None
    if len(p.email) <= 255 and _EMAIL.fullmatch(p.email):
        restriction = email_restriction_error(instance_settings.current(db), p.email)
    try:
        with transaction(db):
            inst = instance_settings.current(db)
            errors = _field_errors(p, password=p.password)
            if not p.password:
                errors["password"] = ["can't be blank"]
            if "email" not in errors:
                # GitLab's order: the domain rules, then the administrator's restriction.
                problems = [m for m in (email_domain_error(inst, p.email), restriction) if m]
                if problems:
                    errors["email"] = problems
            if finder.email_taken(db, p.email):
                errors.setdefault("email", []).append("has already been taken")
            if p.username and finder.username_taken(db, p.username):
                errors.setdefault("username", []).append("has already been taken")
            if errors:
                raise ValidationFailed(errors)
            assert password_hash is not None
            pending = bool(inst["require_admin_approval_after_user_signup"])
            user = User(
                username=p.username,
                email=p.email,
                name=p.name,
                password_hash=password_hash,
                state=PENDING_APPROVAL if pending else ACTIVE,
                confirmed_at=datetime.now(UTC) if inst["email_confirmation_setting"] == "off" else None,
            )
            _apply_defaults(user, p, inst)
            db.add(user)
            db.flush()
            user_namespace(db, user)
    except IntegrityError:
        # A concurrent sign-up took the e-mail or username between check and insert.
        taken: dict[str, list[str]] = {}
        if finder.email_taken(db, p.email):
            taken["email"] = ["has already been taken"]
        if finder.username_taken(db, p.username):
            taken["username"] = ["has already been taken"]
        if not taken:
            raise
        raise ValidationFailed(taken) from None
    return user


def update_user(
    db: Session, actor: Actor, user_id: int, p: UserUpdate, settings: Settings, storage: Storage
) -> User:
    policy.require(actor, Action.ADMIN_USERS)
    user = _find(db, user_id)
    password_hash = _hash(p.password, settings)
    with transaction(db):
        # The spec: update answers 404 where 409 would fit (e-mail or username taken).
        if p.email is not None and finder.email_taken(db, p.email, except_user=user.id):
            raise NotFound(message="404 Email has already been taken")
        if p.username is not None and finder.username_taken(db, p.username, except_user=user.id):
            raise NotFound(message="404 Username has already been taken")
        errors = _field_errors(p, password=p.password)
        errors.update(_identity_errors(db, p, user.id))
        if errors:
            raise ValidationFailed(errors)
        _check_avatar(p.avatar)
        if p.email is not None:
            user.email = p.email
        if p.name is not None and p.name != user.name:
            user.name = p.name
            db.execute(
                update(Namespace).where(Namespace.owner_id == user.id).values(name=p.name, full_name=p.name)
            )
        if p.username is not None and p.username != user.username:
            user.username = p.username
            db.execute(
                update(Namespace)
                .where(Namespace.owner_id == user.id)
                .values(path=p.username, full_path=p.username)
            )
        if password_hash is not None:
            user.password_hash = password_hash
            user.password_automatically_set = False
            # Someone else set it: the owner must change it at next sign-in.
            if actor.user.id != user.id:
                user.password_expires_at = datetime.now(UTC)
        _apply_profile(user, p, admin_fields=True)
        if p.admin is not None:
            user.admin = p.admin
        if "note" in p.given():
            user.note = p.note
        if p.extern_uid is not None and p.provider is not None:
            identity = next((i for i in user.identities if i.provider == p.provider), None)
            if identity is None:
                user.identities.append(Identity(provider=p.provider, extern_uid=p.extern_uid))
            else:
                identity.extern_uid = p.extern_uid
        if isinstance(p.avatar, Upload):
            user.avatar_path = _store_avatar(storage, user.id, p.avatar)
        elif p.avatar == "" and "avatar" in p.given():
            if user.avatar_path:
                storage.delete(user.avatar_path)
            user.avatar_path = None
        db.flush()
    return user


def delete_identity(db: Session, actor: Actor, user_id: int, provider: str) -> None:
    policy.require(actor, Action.ADMIN_USERS)
    user = _find(db, user_id)
    with transaction(db):
        identity = db.scalars(
            select(Identity).where(Identity.user_id == user.id, Identity.provider == provider)
        ).first()
        if identity is None:
            raise NotFound("Identity")
        db.delete(identity)


def delete_user(
    db: Session,
    actor: Actor,
    user_id: int,
    *,
    hard_delete: bool,
    storage: Storage,
    unmodified_since: datetime | None = None,
) -> None:
    """Soft deletion hands contributions to the ghost user; hard deletion removes them and
    the groups the user owns alone. Either way in one transaction."""
    policy.require(actor, Action.ADMIN_USERS)
    user = _find(db, user_id)
    if user.is_ghost:
        raise Forbidden("The ghost user cannot be deleted")
    require_unmodified_since(user.updated_at, unmodified_since)
    with transaction(db):
        owned = finder.solely_owned_group_ids(db, user.id)
        if owned and not hard_delete:
            raise Conflict("User cannot be removed while is the sole-owner of a group")
        # Personal projects go with the user (and, on hard deletion, the groups they own alone):
        # their rows now, their repositories and uploads by a queued job.
        gone = [user_namespace_id] if (user_namespace_id := user.namespace_id) is not None else []
        if hard_delete:
            gone += owned
        project_lifecycle.destroy(db, project_lifecycle.ids_in_namespaces(db, gone))
        project_stars.forget_stars(db, user.id)
        if hard_delete:
            for column in _contribution_columns():
                db.execute(delete(column.table).where(column == user.id))
            if owned:
                db.execute(delete(Namespace).where(Namespace.id.in_(owned)))
        else:
            ghost = ghost_user(db)
            for column in _contribution_columns():
                db.execute(update(column.table).where(column == user.id).values({column.name: ghost.id}))
        avatar = user.avatar_path
        db.delete(user)
        db.flush()
    if avatar:
        storage.delete_prefix(str(PurePosixPath(avatar).parent))


def ghost_user(db: Session) -> User:
    """The placeholder that keeps deleted users' contributions (created on first need)."""
    ghost = db.scalars(select(User).where(User.user_type == USER_TYPE_GHOST)).first()
    if ghost is not None:
        return ghost
    username = GHOST_USERNAME
    n = 0
    while finder.username_taken(db, username):
        n += 1
        username = f"{GHOST_USERNAME}{n}"
    ghost = User(
        username=username,
        email=f"{username}@kiln.invalid",
        name="Ghost User",
        user_type=USER_TYPE_GHOST,
        bio='This is a "Ghost User", created to hold all issues authored by users that have '
        "since been deleted. This user cannot be removed.",
        can_create_group=False,
        projects_limit=0,
    )
    try:
        # Two first deletions at once race to create it; the loser uses the winner's.
        with db.begin_nested():
            db.add(ghost)
            db.flush()
            user_namespace(db, ghost)
    except IntegrityError:
        existing = db.scalars(select(User).where(User.user_type == USER_TYPE_GHOST)).first()
        if existing is None:
            raise
        return existing
    return ghost


# User states (GitLab's user state machine). Every state but `active` keeps the user out of
# the API and git (auth.credentials); the blocked ones are those `block` leaves alone.
ACTIVE = "active"
BLOCKED = "blocked"
LDAP_BLOCKED = "ldap_blocked"
BANNED = "banned"
DEACTIVATED = "deactivated"
PENDING_APPROVAL = "blocked_pending_approval"
BLOCKED_STATES = frozenset({BLOCKED, LDAP_BLOCKED, BANNED, PENDING_APPROVAL})


def block(db: Session, actor: Actor, user_id: int) -> bool | None:
    """True when blocked now, None when the user already was blocked in any way (banned and
    pending approval included): GitLab's answers."""
    user = _managed_user(db, actor, user_id)
    if user.state == LDAP_BLOCKED:
        raise Forbidden("LDAP blocked users cannot be modified by the API")
    if user.id == actor.user.id:
        raise Forbidden("The API initiating user cannot be blocked by the API")
    if user.state in BLOCKED_STATES:
        return None
    if user.is_ghost:
        raise Forbidden(message="An internal user cannot be blocked")
    _set_state(db, user, BLOCKED)
    return True


def unblock(db: Session, actor: Actor, user_id: int) -> bool:
    """True when active now (from blocked, banned or pending approval), False when the user
    was active already; a deactivated user is refused."""
    user = _managed_user(db, actor, user_id)
    if user.state == LDAP_BLOCKED:
        raise Forbidden("LDAP blocked users cannot be unblocked by the API")
    if user.state == DEACTIVATED:
        raise Forbidden("Deactivated users cannot be unblocked by the API")
    if user.is_ghost:
        raise Forbidden(message="An internal user cannot be unblocked")
    if user.state not in BLOCKED_STATES:
        return False
    _set_state(db, user, ACTIVE)
    return True


def ban(db: Session, actor: Actor, user_id: int) -> bool:
    """Only an active user can be banned."""
    return _switch(db, actor, user_id, ACTIVE, BANNED, "ban")


def unban(db: Session, actor: Actor, user_id: int) -> bool:
    return _switch(db, actor, user_id, BANNED, ACTIVE, "unban")


def _switch(db: Session, actor: Actor, user_id: int, from_state: str, to_state: str, verb: str) -> bool:
    """An administrator moves a user from exactly `from_state` to `to_state`."""
    user = _managed_user(db, actor, user_id)
    if user.state != from_state:
        raise Forbidden(message=f"You cannot {verb} {user.state} users.")
    _set_state(db, user, to_state)
    return True


def _managed_user(db: Session, actor: Actor, user_id: int) -> User:
    """The user an administrator changes the state of (administrators only)."""
    policy.require(actor, Action.ADMIN_USERS)
    return _find(db, user_id)


def _set_state(db: Session, user: User, state: str) -> None:
    with transaction(db):
        user.state = state


def activate(db: Session, actor: Actor, user_id: int) -> bool:
    """A deactivated user becomes active; an active one stays so (still true); a blocked one
    must be unblocked instead."""
    user = _managed_user(db, actor, user_id)
    if user.state in BLOCKED_STATES:
        raise Forbidden(message="Error occurred. A blocked user must be unblocked to be activated")
    if user.state != ACTIVE:
        _set_state(db, user, ACTIVE)
    return True


def deactivate(db: Session, actor: Actor, user_id: int) -> bool | None:
    """True when deactivated now, None when the user already was. Only a user without
    activity for the instance's deactivate_dormant_users_period (days) may be deactivated."""
    user = _managed_user(db, actor, user_id)
    if user.state == DEACTIVATED:
        return None
    if user.state in BLOCKED_STATES:
        raise Forbidden(message="Error occurred. A blocked user cannot be deactivated")
    if user.is_ghost:
        raise Forbidden(message="Internal users cannot be deactivated")
    days = int(instance_settings.current(db)["deactivate_dormant_users_period"])
    if _recently_active(user, days):
        raise Forbidden(
            message=f"The user you are trying to deactivate has been active in the past {days} "
            "days and cannot be deactivated"
        )
    _set_state(db, user, DEACTIVATED)
    return True


def _recently_active(user: User, days: int) -> bool:
    """Activity (a day with activity or a sign-in) within the last `days`."""
    since = datetime.now(UTC) - timedelta(days=days)
    moments = []
    if user.last_activity_on is not None:
        moments.append(datetime.combine(user.last_activity_on, datetime.min.time(), UTC))
    if user.current_sign_in_at is not None:
        signed_in = user.current_sign_in_at
        moments.append(signed_in if signed_in.tzinfo else signed_in.replace(tzinfo=UTC))
    return bool(moments) and max(moments) > since


def approve(db: Session, actor: Actor, user_id: int) -> None:
    """A user pending approval becomes active. GitLab hides the user from whoever may not
    see them, then refuses non-administrators with its own words."""
    user = _find(db, user_id)
    if not policy.may(actor, Action.READ_USER, user):
        raise NotFound("User")
    if not policy.may(actor, Action.ADMIN_USERS):
        raise Forbidden(message="You are not allowed to approve a user")
    if user.state != PENDING_APPROVAL:
        raise Conflict("The user you are trying to approve is not pending approval")
    _set_state(db, user, ACTIVE)


def reject(db: Session, actor: Actor, user_id: int, storage: Storage) -> None:
    """A user pending approval is deleted with everything they made."""
    user = _find(db, user_id)
    if not policy.may(actor, Action.ADMIN_USERS):
        raise Forbidden(message="You are not allowed to reject a user")
    if user.state != PENDING_APPROVAL:
        raise Conflict("User does not have a pending request")
    delete_user(db, actor, user.id, hard_delete=True, storage=storage)


def status_of(db: Session, viewer: Actor | None, ident: str) -> UserRow:
    """`ident`: an id or a username (queries.users.ident_id)."""
    user = finder.row_by_id_or_username(db, ident)
    if user is None:
        raise NotFound("User")
    policy.require_visible(viewer, Action.READ_USER, user, "User")
    return _unexpired(db, user)


def current_status(db: Session, actor: Actor) -> UserRow:
    """The caller's status, from the row authentication read."""
    return _unexpired(db, actor.user)


def _unexpired(db: Session, user: UserRow) -> UserRow:
    """The row as read, its status cleared once past its clear time. The read runs on the
    event loop, so the database is cleared only when that needs no wait for the writer;
    otherwise a later read clears it, answering the same meanwhile."""
    clear_at = user.status_clear_at
    now = datetime.now(UTC)
    if clear_at is None or datetime.fromisoformat(clear_at) > now:
        return user
    with try_transaction(db) as free:
        if free:
            # Unless a new status was set since the row was read.
            db.execute(
                update(User).where(User.id == user.id, User.status_clear_at <= now).values(**_NO_STATUS)
            )
    return user._replace(**_NO_STATUS)


_NO_STATUS: dict[str, Any] = dict.fromkeys(
    ("status_emoji", "status_message", "status_availability", "status_clear_at")
)


def set_status(db: Session, actor: Actor, p: StatusUpdate) -> User:
    policy.require(actor, Action.UPDATE_USER_STATUS, actor.user)
    user = _find(db, actor.id)
    errors: dict[str, list[str]] = {}
    if p.emoji is not None and len(p.emoji) > STATUS_EMOJI_MAX:
        errors["emoji"] = [f"is too long (maximum is {STATUS_EMOJI_MAX} characters)"]
    if p.message is not None and len(p.message) > STATUS_MESSAGE_MAX:
        errors["message"] = [f"is too long (maximum is {STATUS_MESSAGE_MAX} characters)"]
    if errors:
        raise ValidationFailed(errors)
    # PUT replaces the whole status: what is omitted is cleared.
    with transaction(db):
        if not p.emoji and not p.message and p.availability in (None, "not_set"):
            user.status_emoji = None
            user.status_message = None
            user.status_availability = None
            user.status_clear_at = None
        else:
            user.status_emoji = p.emoji or "speech_balloon"
            user.status_message = p.message or None
            user.status_availability = p.availability or "not_set"
            after = STATUS_CLEAR_AFTER.get(p.clear_status_after or "")
            user.status_clear_at = datetime.now(UTC) + after if after else None
    return user


def bootstrap_root(db: Session, settings: Settings) -> tuple[User, str | None]:
    """First start: root (id 1, admin). Returns the generated password, if one was made."""
    existing = db.scalars(select(User).where(User.username == "root")).first()
    generated: str | None = None
    with transaction(db):
        if existing is None:
            password = settings.root_password
            if not password:
                password = generated = random_password()
            existing = User(
                username="root",
                email="admin@example.com",
                name="Administrator",
                admin=True,
                password_hash=hash_password(
                    password, time_cost=settings.password_time_cost, memory_cost=settings.password_memory_cost
                ),
                confirmed_at=datetime.now(UTC),
            )
            db.add(existing)
            db.flush()
            user_namespace(db, existing)
        if settings.root_token:
            token_service.ensure_root_token(db, existing, settings.root_token)
    return existing, generated


def user_namespace(db: Session, user: User) -> Namespace:
    """A user's own namespace: its path is the username, it has no parent."""
    ns = Namespace(kind=KIND_USER, name=user.name, path=user.username, owner_id=user.id)
    db.add(ns)
    db.flush()
    place(db, ns, None)
    db.flush()
    return ns


def _find(db: Session, user_id: int) -> User:
    user = db.get(User, user_id)
    if user is None:
        raise NotFound("User")
    return user


def _hash(password: str | None, settings: Settings) -> str | None:
    """The hash of a password long enough to be accepted (validation refuses the others)."""
    if password is None or len(password) < MIN_PASSWORD_LENGTH:
        return None
    return hash_password(
        password, time_cost=settings.password_time_cost, memory_cost=settings.password_memory_cost
    )


def _random_password(p: UserCreate) -> bool:
    return bool(p.reset_password or p.force_random_password)


def _field_errors(p: UserCreate | UserUpdate, *, password: str | None) -> dict[str, list[str]]:
    """Model validation of the given fields, as GitLab's User model words it."""
    errors: dict[str, list[str]] = {}
    if password is not None and len(password) < MIN_PASSWORD_LENGTH:
        errors["password"] = [f"is too short (minimum is {MIN_PASSWORD_LENGTH} characters)"]
    if p.email is not None:
        if len(p.email) > 255:
            errors["email"] = ["is too long (maximum is 255 characters)"]
        elif not _EMAIL.fullmatch(p.email):
            errors["email"] = ["is invalid"]
    if p.name is not None:
        if not p.name.strip():
            errors["name"] = ["can't be blank"]
        elif len(p.name) > 255:
            errors["name"] = ["is too long (maximum is 255 characters)"]
    if p.username is not None:
        username = p.username
        problems = []
        if not username:
            problems.append("can't be blank")
        elif len(username) > 255:
            problems.append("is too long (maximum is 255 characters)")
        elif not _USERNAME.match(username) or username.endswith((".", ".git", ".atom")) or ".." in username:
            problems.append(
                "can contain only letters, digits, '_', '-' and '.'. "
                "Cannot start with '-' or end in '.', '.git' or '.atom'."
            )
        elif reserved_top_level(username):
            problems.append(reserved_message(username))
        if problems:
            errors["username"] = problems
    for name, limit in _LENGTH_LIMITS.items():
        value = getattr(p, name)
        if value is not None and len(value) > limit:
            errors[name] = [f"is too long (maximum is {limit} characters)"]
    if p.projects_limit is not None:
        if p.projects_limit < 0:
            errors["projects_limit"] = ["must be greater than or equal to 0"]
        elif p.projects_limit > _MAX_INT:
            errors["projects_limit"] = [f"must be less than or equal to {_MAX_INT}"]
    if p.theme_id is not None and p.theme_id not in THEME_IDS:
        errors["theme_id"] = [f"{p.theme_id} is not a valid theme"]
    if p.color_scheme_id is not None and p.color_scheme_id not in COLOR_SCHEME_IDS:
        errors["color_scheme_id"] = [f"{p.color_scheme_id} is not a valid color scheme"]
    return errors


def _identity_errors(db: Session, p: UserCreate | UserUpdate, user_id: int | None) -> dict[str, list[str]]:
    """An external identity belongs to one user only."""
    if p.extern_uid is None or p.provider is None:
        return {}
    stmt = select(Identity.id).where(
        Identity.provider == p.provider, func.lower(Identity.extern_uid) == p.extern_uid.lower()
    )
    if user_id is not None:
        stmt = stmt.where(Identity.user_id != user_id)
    if db.execute(select(exists(stmt))).scalar_one():
        return {"identities.extern_uid": ["has already been taken"]}
    return {}


_MAX_INT = 2_147_483_647
_LENGTH_LIMITS = {
    "bio": 255,
    "location": 255,
    "organization": 255,
    "job_title": 200,
    "pronouns": 50,
    "skype": 255,
    "linkedin": 255,
    "twitter": 255,
    "discord": 255,
    "website_url": 255,
    "public_email": 255,
    "extern_uid": 255,
    "provider": 255,
}


_PROFILE_FIELDS = (
    "bio",
    "location",
    "public_email",
    "skype",
    "linkedin",
    "twitter",
    "discord",
    "website_url",
    "organization",
    "job_title",
    "pronouns",
)
_ADMIN_FIELDS = (
    "can_create_group",
    "color_scheme_id",
    "external",
    "extra_shared_runners_minutes_limit",
    "private_profile",
    "projects_limit",
    "shared_runners_minutes_limit",
    "theme_id",
)


def _apply_profile(user: User, p: UserCreate | UserUpdate, *, admin_fields: bool) -> None:
    for name in _PROFILE_FIELDS:
        value = getattr(p, name)
        if value is not None:
            setattr(user, name, value)
    if admin_fields:
        for name in _ADMIN_FIELDS:
            value = getattr(p, name)
            if value is not None:
                setattr(user, name, value)


def _check_avatar(avatar: object) -> str | None:
    if not isinstance(avatar, Upload):
        if avatar not in (None, ""):
            raise BadRequest("avatar is invalid", raw=True)
        return None
    problems = avatars.errors(avatar)
    if problems:
        raise ValidationFailed(problems)
    return PurePosixPath(avatar.filename or "").suffix.lower().lstrip(".")


def _store_avatar(storage: Storage, user_id: int, avatar: Upload) -> str:
    key = user_avatar_key(user_id, uploads.sanitize_filename(avatar.filename))
    storage.delete_prefix(user_avatar_key(user_id))
    avatar.file.seek(0)
    storage.put(key, avatar.file)
    return key


def _contribution_columns() -> list[Column[Any]]:
    """User references that other tables mark as contributions (models.base.contribution)."""
    return [
        column
        for table in Base.metadata.sorted_tables
        for column in table.columns
        if column.info.get("contribution")
    ]
