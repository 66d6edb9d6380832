"""Personal access tokens and impersonation tokens: create, list, rotate, revoke."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from sqlalchemy import select, update
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import set_committed_value

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
from kiln.queries import tokens as finder
from kiln.queries import users
from kiln.queries.paging import offset_page
from kiln.queries.tokens import TokenRow
from kiln.queries.users import UserRow
from kiln.schemas.tokens import (
    ImpersonationTokenCreate,
    ImpersonationTokenList,
    TokenCreate,
    TokenList,
)

NOT_A_PAT = "This endpoint requires token type to be a personal access token"
ROTATED_LIFETIME = timedelta(days=7)


def list_tokens(db: Session, actor: Actor, q: TokenList, page: Page) -> PageResult:
    """Items are TokenRow records: the page's ids by the filters, then their rows."""
    if policy.is_admin(actor):
        if q.user_id is not None and users.row_by_id(db, q.user_id) is None:
            raise NotFound()
        user_id = q.user_id
        stmt = finder.listing(q, by_user=user_id is not None, personal_only=False)
    else:
        # Non-admins see only their own tokens, and never impersonation tokens made for them.
        if q.user_id is not None and q.user_id != actor.user.id:
            raise Unauthorized()
        user_id = actor.user.id
        stmt = finder.listing(q, by_user=True, personal_only=True)
    return _rows_of(db, offset_page(db, stmt, page, core=True, params=finder.listing_params(user_id)))


def get_token(db: Session, actor: Actor, token_id: int) -> TokenRow:
    found = finder.row_with_owner(db, token_id)
    if found is None or not _may_read(actor, *found):
        # Non-admins are never told whether a token exists.
        raise NotFound() if policy.is_admin(actor) else Unauthorized()
    return found[0]


def current_token(db: Session, actor: Actor) -> TokenRow:
    token = finder.row_by_id(db, _current_id(actor))
    if token is None:
        raise Unauthorized()
    return token


def _current_id(actor: Actor) -> int:
    if actor.via not in ("personal_access_token", "impersonation_token") or actor.token_id is None:
        raise BadRequest(NOT_A_PAT)
    return actor.token_id


def _current_model(db: Session, actor: Actor) -> PersonalAccessToken:
    token = db.get(PersonalAccessToken, _current_id(actor))
    if token is None:
        raise Unauthorized()
    return token


def _rows_of(db: Session, result: PageResult) -> PageResult:
    result.items = finder.rows_by_ids(db, [row[0] for row in result.items])
    return result


def revoke(db: Session, actor: Actor, token_id: int) -> None:
    found = finder.row_with_owner(db, token_id)
    if found is None:
        raise NotFound(message="404 Not found")
    if not _may_read(actor, *found):
        raise BadRequest("400 Bad request", raw=True)
    with transaction(db):
        _model(db, token_id).revoked = True


def revoke_current(db: Session, actor: Actor) -> None:
    token = _current_model(db, actor)
    with transaction(db):
        token.revoked = True


def rotate(
    db: Session, actor: Actor, token: PersonalAccessToken, expires_at: date | None, settings: Settings
) -> tuple[TokenRow, str]:
    if token.revoked:
        raise BadRequest("Token already revoked")
    today = datetime.now(UTC).date()
    expires = expires_at or today + ROTATED_LIFETIME
    _check_expiry(expires, settings)
    with transaction(db):
        # The token was read before the write: another rotation (a thread, a process) may
        # have revoked it since. Only the one that revokes it issues a successor.
        if not _revoke_if_live(db, token.id):
            raise BadRequest("Token already revoked")
        set_committed_value(token, "revoked", True)
        new, secret = _issue(
            db,
            user_id=token.user_id,
            name=token.name,
            description=token.description,
            scopes=list(token.scopes),
            expires_at=expires,
            impersonation=token.impersonation,
        )
    return _saved(db, new.id, secret)


def _revoke_if_live(db: Session, token_id: int) -> bool:
    """Revokes the token unless it is revoked already; whether this call revoked it."""
    revoked = db.execute(
        update(PersonalAccessToken)
        .where(PersonalAccessToken.id == token_id, PersonalAccessToken.revoked.is_(False))
        .values(revoked=True)
        .execution_options(synchronize_session=False)
    )
    return revoked.rowcount == 1


def rotate_current(
    db: Session, actor: Actor, expires_at: date | None, settings: Settings
) -> tuple[TokenRow, str]:
    """Only a personal access token rotates itself; GitLab answers anything else with 405."""
    if actor.via not in ("personal_access_token", "impersonation_token"):
        raise NotAllowed()
    return rotate(db, actor, _current_model(db, actor), expires_at, settings)


def rotate_by_id(
    db: Session, actor: Actor, token_id: int, expires_at: date | None, settings: Settings
) -> tuple[TokenRow, str]:
    get_token(db, actor, token_id)
    return rotate(db, actor, _model(db, token_id), expires_at, settings)


def create_for_user(
    db: Session, actor: Actor, user_ident: int, p: TokenCreate, settings: Settings
) -> tuple[TokenRow, str]:
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
    """Items are TokenRow records, as list_tokens."""
    policy.require(actor, Action.ADMIN_TOKENS)
    user = _user(db, user_ident)
    stmt, params = finder.impersonation_listing(q.state), finder.listing_params(user.id)
    return _rows_of(db, offset_page(db, stmt, page, core=True, params=params))


def get_impersonation(db: Session, actor: Actor, user_ident: int, token_id: int) -> TokenRow:
    """The token and its owner in one statement; the user is looked up on its own only to
    tell a missing user (404 User) from a missing token."""
    policy.require(actor, Action.ADMIN_TOKENS)
    found = finder.row_with_owner(db, token_id)
    if found is None or found[0].user_id != user_ident:
        _user(db, user_ident)
        raise NotFound("Impersonation Token")
    token, owner = found
    if owner.is_ghost:
        raise NotFound("User")
    if not token.impersonation:
        raise NotFound("Impersonation Token")
    return token


def create_impersonation(
    db: Session, actor: Actor, user_ident: int, p: ImpersonationTokenCreate, settings: Settings
) -> tuple[TokenRow, str]:
    policy.require(actor, Action.ADMIN_TOKENS)
    user = _user(db, user_ident)
    _validate_impersonation(p)
    return _issue_for(db, user, p, settings, impersonation=True)


def _issue_for(
    db: Session,
    user: UserRow,
    p: TokenCreate | ImpersonationTokenCreate,
    settings: Settings,
    *,
    impersonation: bool,
) -> tuple[TokenRow, str]:
    """A requested token: expiry defaults to the longest lifetime allowed, and is checked."""
    expires = p.expires_at or datetime.now(UTC).date() + timedelta(days=settings.max_token_lifetime_days)
    _check_expiry(expires, settings)
    with transaction(db):
        token, secret = _issue(
            db,
            user_id=user.id,
            name=p.name,
            description=p.description,
            scopes=list(dict.fromkeys(p.scopes)),
            expires_at=expires,
            impersonation=impersonation,
        )
    return _saved(db, token.id, secret)


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
    get_impersonation(db, actor, user_ident, token_id)
    with transaction(db):
        _model(db, token_id).revoked = True


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


def _saved(db: Session, token_id: int, secret: str) -> tuple[TokenRow, str]:
    """The token a write just issued, read again as every read sees it, beside its secret:
    the one answer that shows the secret, which the row does not hold."""
    token = finder.row_by_id(db, token_id)
    if token is None:  # its owner was removed since
        raise NotFound(message="404 Not found")
    return token, secret


def _check_expiry(expires: date, settings: Settings) -> None:
    today = datetime.now(UTC).date()
    if expires < today:
        raise ValidationFailed({"expires_at": ["must not be in the past"]})
    limit = today + timedelta(days=settings.max_token_lifetime_days)
    if expires > limit:
        raise Unprocessable(f"Expiration date must be before {limit.isoformat()}")


def _user(db: Session, user_id: int) -> UserRow:
    user = users.row_by_id(db, user_id)
    if user is None or user.is_ghost:
        raise NotFound("User")
    return user


def _model(db: Session, token_id: int) -> PersonalAccessToken:
    """The token a write changes, after a read has decided the caller may."""
    token = db.get(PersonalAccessToken, token_id)
    if token is None:  # removed since it was read
        raise NotFound(message="404 Not found")
    return token


def _may_read(actor: Actor, token: TokenRow, owner: UserRow) -> bool:
    return policy.may(actor, Action.READ_USER_TOKENS, owner) and (
        policy.is_admin(actor) or not token.impersonation
    )
