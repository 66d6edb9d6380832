"""Personal access tokens and impersonation tokens: create, list, rotate, revoke."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

from kiln import policy
from kiln.auth.actor import Actor
from kiln.auth.tokens import IMPERSONATION_SCOPES, PAT_SCOPES, PREFIX_PAT, digest, new_secret
from kiln.config import Settings
from kiln.db import transaction
from kiln.errors import (
    BadRequest,
    NotAllowed,
    NotFound,
    Unauthorized,
    Unprocessable,
    ValidationFailed,
)
from kiln.models import PersonalAccessToken, User
from kiln.pagination import Page, PageResult
from kiln.policy import Action
from kiln.queries.paging import offset_page
from kiln.schemas.tokens import (
    ImpersonationTokenCreate,
    ImpersonationTokenList,
    TokenCreate,
    TokenList,
)

NOT_A_PAT = "This endpoint requires token type to be a personal access token"
ROTATED_LIFETIME = timedelta(days=7)


def list_tokens(db: Session, actor: Actor, q: TokenList, page: Page) -> PageResult:
    stmt = select(PersonalAccessToken)
    if policy.is_admin(actor):
        if q.user_id is not None:
            if db.get(User, q.user_id) is None:
                raise NotFound()
            stmt = stmt.where(PersonalAccessToken.user_id == q.user_id)
    else:
        # Non-admins see only their own tokens, and never impersonation tokens made for them.
        if q.user_id is not None and q.user_id != actor.user.id:
            raise Unauthorized()
        stmt = stmt.where(
            PersonalAccessToken.user_id == actor.user.id, PersonalAccessToken.impersonation.is_(False)
        )
    stmt = _filter(stmt, q)
    return offset_page(db, stmt.order_by(*_ordering(q.sort)), page)


def get_token(db: Session, actor: Actor, token_id: int) -> PersonalAccessToken:
    token = db.get(PersonalAccessToken, token_id)
    if token is None or not _may_read(db, actor, token):
        # Non-admins are never told whether a token exists.
        raise NotFound() if policy.is_admin(actor) else Unauthorized()
    return token


def current_token(db: Session, actor: Actor) -> PersonalAccessToken:
    if actor.via not in ("personal_access_token", "impersonation_token") or actor.token_id is None:
        raise BadRequest(NOT_A_PAT)
    token = db.get(PersonalAccessToken, actor.token_id)
    if token is None:
        raise Unauthorized()
    return token


def revoke(db: Session, actor: Actor, token_id: int) -> None:
    token = db.get(PersonalAccessToken, token_id)
    if token is None:
        raise NotFound(message="404 Not found")
    if not _may_read(db, actor, token):
        raise BadRequest("400 Bad request", raw=True)
    with transaction(db):
        token.revoked = True


def current_token_for_rotation(db: Session, actor: Actor) -> PersonalAccessToken:
    """Only a personal access token rotates itself; GitLab answers anything else with 405."""
    if actor.via not in ("personal_access_token", "impersonation_token"):
        raise NotAllowed()
    return current_token(db, actor)


def revoke_current(db: Session, actor: Actor) -> None:
    token = current_token(db, actor)
    with transaction(db):
        token.revoked = True


def rotate(
    db: Session, actor: Actor, token: PersonalAccessToken, expires_at: date | None, settings: Settings
) -> tuple[PersonalAccessToken, str]:
    if token.revoked:
        raise BadRequest("Token already revoked")
    today = datetime.now(UTC).date()
    expires = expires_at or today + ROTATED_LIFETIME
    _check_expiry(expires, settings)
    with transaction(db):
        token.revoked = True
        new, secret = _issue(
            db,
            user_id=token.user_id,
            name=token.name,
            description=token.description,
            scopes=list(token.scopes),
            expires_at=expires,
            impersonation=token.impersonation,
        )
    return new, secret


def rotate_by_id(
    db: Session, actor: Actor, token_id: int, expires_at: date | None, settings: Settings
) -> tuple[PersonalAccessToken, str]:
    return rotate(db, actor, get_token(db, actor, token_id), expires_at, settings)


def create_for_user(
    db: Session, actor: Actor, user_ident: int, p: TokenCreate, settings: Settings
) -> tuple[PersonalAccessToken, str]:
    policy.require(actor, Action.ADMIN_TOKENS)
    user = _user(db, user_ident)
    blank = [
        f"{what} can't be blank"
        for what, value in (("Name", p.name.strip()), ("Scopes", p.scopes))
        if not value
    ]
    if blank:
        # CreateService's failure: the model's full messages as one sentence, 422.
        raise Unprocessable(" and ".join(blank))
    return _issue_for(db, user, p, settings, impersonation=False)


def list_impersonation(
    db: Session, actor: Actor, user_ident: int, q: ImpersonationTokenList, page: Page
) -> PageResult:
    policy.require(actor, Action.ADMIN_TOKENS)
    user = _user(db, user_ident)
    stmt = select(PersonalAccessToken).where(
        PersonalAccessToken.user_id == user.id, PersonalAccessToken.impersonation.is_(True)
    )
    if q.state != "all":
        stmt = _state(stmt, q.state)
    return offset_page(db, stmt.order_by(*_ordering(None)), page)


def get_impersonation(db: Session, actor: Actor, user_ident: int, token_id: int) -> PersonalAccessToken:
    policy.require(actor, Action.ADMIN_TOKENS)
    user = _user(db, user_ident)
    token = db.get(PersonalAccessToken, token_id)
    if token is None or token.user_id != user.id or not token.impersonation:
        raise NotFound("Impersonation Token")
    return token


def create_impersonation(
    db: Session, actor: Actor, user_ident: int, p: ImpersonationTokenCreate, settings: Settings
) -> tuple[PersonalAccessToken, str]:
    policy.require(actor, Action.ADMIN_TOKENS)
    user = _user(db, user_ident)
    _validate_impersonation(p)
    return _issue_for(db, user, p, settings, impersonation=True)


def _issue_for(
    db: Session,
    user: User,
    p: TokenCreate | ImpersonationTokenCreate,
    settings: Settings,
    *,
    impersonation: bool,
) -> tuple[PersonalAccessToken, str]:
    """A requested token: expiry defaults to the longest lifetime allowed, and is checked."""
    expires = p.expires_at or datetime.now(UTC).date() + timedelta(days=settings.max_token_lifetime_days)
    _check_expiry(expires, settings)
    with transaction(db):
        return _issue(
            db,
            user_id=user.id,
            name=p.name,
            description=p.description,
            scopes=list(dict.fromkeys(p.scopes)),
            expires_at=expires,
            impersonation=impersonation,
        )


def _validate_impersonation(p: ImpersonationTokenCreate) -> None:
    """Model validation as GitLab's impersonation path reports it: 400 with a field hash."""
    errors: dict[str, list[str]] = {}
    if not p.name.strip():
        errors["name"] = ["can't be blank"]
    if not p.scopes:
        errors["scopes"] = ["can't be blank"]
    elif any(scope not in IMPERSONATION_SCOPES for scope in p.scopes):
        errors["scopes"] = ["can only contain available scopes"]
    if errors:
        raise ValidationFailed(errors)


def revoke_impersonation(db: Session, actor: Actor, user_ident: int, token_id: int) -> None:
    token = get_impersonation(db, actor, user_ident, token_id)
    with transaction(db):
        token.revoked = True


def ensure_root_token(db: Session, root: User, secret: str) -> None:
    """KILN_ROOT_TOKEN: root's all-scope token with exactly that value (no expiry)."""
    existing = db.scalars(
        select(PersonalAccessToken).where(PersonalAccessToken.digest == digest(secret))
    ).first()
    if existing is not None:
        return
    db.add(
        PersonalAccessToken(
            user_id=root.id,
            name="KILN_ROOT_TOKEN",
            digest=digest(secret),
            scopes=list(PAT_SCOPES),
            expires_at=None,
        )
    )
    db.flush()


def issue_for_cli(db: Session, user: User, name: str, scopes: list[str], expires_at: date | None) -> str:
    with transaction(db):
        _token, secret = _issue(
            db,
            user_id=user.id,
            name=name,
            description=None,
            scopes=scopes,
            expires_at=expires_at,
            impersonation=False,
        )
    return secret


def _issue(
    db: Session,
    *,
    user_id: int,
    name: str,
    description: str | None,
    scopes: list[str],
    expires_at: date | None,
    impersonation: bool,
) -> tuple[PersonalAccessToken, str]:
    secret = new_secret(PREFIX_PAT)
    token = PersonalAccessToken(
        user_id=user_id,
        name=name,
        description=description,
        digest=digest(secret),
        scopes=scopes,
        expires_at=expires_at,
        impersonation=impersonation,
    )
    db.add(token)
    db.flush()
    return token, secret


def _check_expiry(expires: date, settings: Settings) -> None:
    today = datetime.now(UTC).date()
    if expires < today:
        raise ValidationFailed({"expires_at": ["must not be in the past"]})
    limit = today + timedelta(days=settings.max_token_lifetime_days)
    if expires > limit:
        raise Unprocessable(f"Expiration date must be before {limit.isoformat()}")


def _user(db: Session, user_id: int) -> User:
    user = db.get(User, user_id)
    if user is None or user.is_ghost:
        raise NotFound("User")
    return user


def _may_read(db: Session, actor: Actor, token: PersonalAccessToken) -> bool:
    owner = db.get(User, token.user_id)
    return (
        owner is not None
        and policy.may(actor, Action.READ_USER_TOKENS, owner)
        and (policy.is_admin(actor) or not token.impersonation)
    )


def _state(stmt: Select[Any], state: str) -> Select[Any]:
    today = datetime.now(UTC).date()
    live = (PersonalAccessToken.revoked.is_(False)) & (
        PersonalAccessToken.expires_at.is_(None) | (PersonalAccessToken.expires_at > today)
    )
    return stmt.where(live) if state == "active" else stmt.where(~live)


def _filter(stmt: Select[Any], q: TokenList) -> Select[Any]:
    # Bounds as GitLab's token scopes: inclusive, except expires_before.
    t = PersonalAccessToken
    if q.revoked is not None:
        stmt = stmt.where(t.revoked.is_(q.revoked))
    if q.state is not None:
        stmt = _state(stmt, q.state)
    if q.search:
        stmt = stmt.where(func.lower(t.name).contains(q.search.lower(), autoescape=True))
    if q.created_before:
        stmt = stmt.where(t.created_at <= q.created_before)
    if q.created_after:
        stmt = stmt.where(t.created_at >= q.created_after)
    if q.last_used_before:
        stmt = stmt.where(t.last_used_at <= q.last_used_before)
    if q.last_used_after:
        stmt = stmt.where(t.last_used_at >= q.last_used_after)
    if q.expires_before:
        stmt = stmt.where(t.expires_at < q.expires_before)
    if q.expires_after:
        stmt = stmt.where(t.expires_at >= q.expires_after)
    return stmt


_T = PersonalAccessToken
# GitLab's PersonalAccessToken.simple_sorts; anything else keeps the default.
_SORTS: dict[str, tuple[Any, ...]] = {
    "id_asc": (_T.id.asc(),),
    "id_desc": (_T.id.desc(),),
    "created_asc": (_T.created_at.asc(), _T.id.asc()),
    "created_at_asc": (_T.created_at.asc(), _T.id.asc()),
    "created_desc": (_T.created_at.desc(), _T.id.desc()),
    "created_at_desc": (_T.created_at.desc(), _T.id.desc()),
    "created_date": (_T.created_at.desc(), _T.id.desc()),
    "updated_asc": (_T.updated_at.asc(), _T.id.asc()),
    "updated_at_asc": (_T.updated_at.asc(), _T.id.asc()),
    "updated_desc": (_T.updated_at.desc(), _T.id.desc()),
    "updated_at_desc": (_T.updated_at.desc(), _T.id.desc()),
    "name_asc": (_T.name.asc(), _T.id.asc()),
    "name_desc": (_T.name.desc(), _T.id.desc()),
    "expires_asc": (_T.expires_at.asc().nulls_last(), _T.id.desc()),
    "expires_desc": (_T.expires_at.desc().nulls_last(), _T.id.desc()),
    "last_used_asc": (_T.last_used_at.asc().nulls_last(), _T.id.desc()),
    "last_used_desc": (_T.last_used_at.desc().nulls_last(), _T.id.desc()),
}


def _ordering(sort: str | None) -> tuple[Any, ...]:
    """Unsorted lists come in id order, as GitLab's pagination adds ORDER BY id."""
    return _SORTS.get(sort or "", (_T.id.asc(),))
