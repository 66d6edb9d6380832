"""OAuth2 token endpoint (password and refresh grants), revocation and token info."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response

from kiln.api._deps import Db, credentials_of, in_thread, runtime
from kiln.api._params import params
from kiln.api._render import render
from kiln.api._routes import get, post
from kiln.schemas.tokens import OAuthRevoke, OAuthTokenRequest
from kiln.services import oauth as service

Req = Request[Any, Any, Any]
NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}


@post("/oauth/token", auth="none", params=OAuthTokenRequest, status=200)
async def token(request: Req, db: Db) -> Response[bytes]:
    p: OAuthTokenRequest = await params(request)
    # In a thread: the password grant checks a password, a fifth of a second of CPU.
    return render(await in_thread(service.token, db, runtime(request).settings, p), headers=NO_STORE)


@post("/oauth/revoke", auth="none", params=OAuthRevoke, status=200)
async def revoke(request: Req, db: Db) -> Response[bytes]:
    p: OAuthRevoke = await params(request)
    await in_thread(service.revoke, db, p.token)
    return render({})


@get("/oauth/token/info", auth="none")
async def token_info(request: Req, db: Db) -> Response[bytes]:
    creds, _ = credentials_of(request)
    return render(service.info(db, creds.bearer), headers=NO_STORE)
