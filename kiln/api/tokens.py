"""Personal access tokens and impersonation tokens."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.params import FromPath

from kiln.api._deps import Authenticated, Db, in_thread, int_id, runtime
from kiln.api._pagination import page_of, paginated
from kiln.api._params import params
from kiln.api._render import no_content, render
from kiln.api._routes import delete, get, post
from kiln.auth.tokens import PAT_SCOPES
from kiln.entities.tokens import personal_access_token
from kiln.policy import Action
from kiln.schemas.tokens import (
    ImpersonationTokenCreate,
    ImpersonationTokenList,
    TokenCreate,
    TokenList,
    TokenRotate,
)
from kiln.services import tokens as service

Req = Request[Any, Any, Any]
# A token may always look at, rotate and revoke itself, whatever its scopes.
ANY_SCOPE = PAT_SCOPES


@get("/personal_access_tokens", params=TokenList)
async def list_tokens(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    q: TokenList = await params(request)
    page = page_of(q)
    result = service.list_tokens(db, actor, q, page)
    return paginated(request, [personal_access_token(t) for t in result.items], page, result)


@get("/personal_access_tokens/self", scopes=ANY_SCOPE)
async def current_token(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    return render(personal_access_token(service.current_token(db, actor)))


@delete("/personal_access_tokens/self", scopes=ANY_SCOPE)
async def revoke_current(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    await in_thread(service.revoke_current, db, actor)
    return no_content()


@post("/personal_access_tokens/self/rotate", params=TokenRotate, status=200)
async def rotate_current(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    p: TokenRotate = await params(request)
    new, secret = await in_thread(service.rotate_current, db, actor, p.expires_at, runtime(request).settings)
    return render(personal_access_token(new, secret), status=200)


@get("/personal_access_tokens/{token_id:str}")
async def get_token(request: Req, db: Db, actor: Authenticated, token_id: FromPath[str]) -> Response[bytes]:
    return render(personal_access_token(service.get_token(db, actor, int_id(token_id))))


@delete("/personal_access_tokens/{token_id:str}")
async def revoke_token(
    request: Req, db: Db, actor: Authenticated, token_id: FromPath[str]
) -> Response[bytes]:
    await in_thread(service.revoke, db, actor, int_id(token_id))
    return no_content()


@post("/personal_access_tokens/{token_id:str}/rotate", params=TokenRotate, status=200)
async def rotate_token(
    request: Req, db: Db, actor: Authenticated, token_id: FromPath[str]
) -> Response[bytes]:
    p: TokenRotate = await params(request)
    new, secret = await in_thread(
        service.rotate_by_id, db, actor, int_id(token_id), p.expires_at, runtime(request).settings
    )
    return render(personal_access_token(new, secret), status=200)


@post("/users/{id:str}/personal_access_tokens", params=TokenCreate, requires=Action.ADMIN_TOKENS)
async def create_token(request: Req, db: Db, actor: Authenticated, id: FromPath[str]) -> Response[bytes]:
    p: TokenCreate = await params(request)
    token, secret = await in_thread(
        service.create_for_user, db, actor, int_id(id), p, runtime(request).settings
    )
    return render(personal_access_token(token, secret), status=201)


@get("/users/{id:str}/impersonation_tokens", params=ImpersonationTokenList, requires=Action.ADMIN_TOKENS)
async def list_impersonation_tokens(
    request: Req, db: Db, actor: Authenticated, id: FromPath[str]
) -> Response[bytes]:
    q: ImpersonationTokenList = await params(request)
    page = page_of(q)
    result = service.list_impersonation(db, actor, int_id(id), q, page)
    return paginated(request, [personal_access_token(t) for t in result.items], page, result)


@post("/users/{id:str}/impersonation_tokens", params=ImpersonationTokenCreate, requires=Action.ADMIN_TOKENS)
async def create_impersonation_token(
    request: Req, db: Db, actor: Authenticated, id: FromPath[str]
) -> Response[bytes]:
    p: ImpersonationTokenCreate = await params(request)
    token, secret = await in_thread(
        service.create_impersonation, db, actor, int_id(id), p, runtime(request).settings
    )
    return render(personal_access_token(token, secret), status=201)


@get("/users/{id:str}/impersonation_tokens/{token_id:str}", requires=Action.ADMIN_TOKENS)
async def get_impersonation_token(
    request: Req, db: Db, actor: Authenticated, id: FromPath[str], token_id: FromPath[str]
) -> Response[bytes]:
    return render(personal_access_token(service.get_impersonation(db, actor, int_id(id), int_id(token_id))))


@delete("/users/{id:str}/impersonation_tokens/{token_id:str}", requires=Action.ADMIN_TOKENS)
async def revoke_impersonation_token(
    request: Req, db: Db, actor: Authenticated, id: FromPath[str], token_id: FromPath[str]
) -> Response[bytes]:
    await in_thread(service.revoke_impersonation, db, actor, int_id(id), int_id(token_id))
    return no_content()
