"""GPG keys (GitLab's Users API "GPG keys"): /user/gpg_keys and /users/:id/gpg_keys, with
revocation. ROUTES is mounted under /api/v4 by kiln.api."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath

from kiln.api._deps import Authenticated, Db, Viewer, in_thread, int_id
from kiln.api._pagination import page_of, paginated
from kiln.api._params import params
from kiln.api._render import no_content, render
from kiln.api._routes import delete, get, post
from kiln.auth.tokens import API, READ_API, READ_USER
from kiln.entities.gpg_keys import gpg_key
from kiln.schemas.gpg_keys import GPGKeyCreate, GPGKeyList
from kiln.services import gpg_keys as service

Req = Request[Any, Any, Any]
# read_user reaches the reads, as it does every read of GitLab's users API.
READ = (API, READ_API, READ_USER)


def _accepted() -> Response[bytes]:
    """GitLab answers a revocation 202 Accepted, with nothing to show."""
    return Response(content=b"", status_code=202, media_type="application/json")


# ----------------------------------------------------------------------------- /user/gpg_keys


@get("/user/gpg_keys", params=GPGKeyList, scopes=READ)
async def list_own_gpg_keys(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    q: GPGKeyList = await params(request)
    page = page_of(q)
    result = service.list_own(db, actor, page)
    return paginated(request, [gpg_key(k) for k in result.items], page, result)


@get("/user/gpg_keys/{key_id:str}", scopes=READ)
async def get_own_gpg_key(db: Db, actor: Authenticated, key_id: FromPath[str]) -> Response[bytes]:
    return render(gpg_key(service.get_own(db, actor, int_id(key_id))))


@post("/user/gpg_keys", params=GPGKeyCreate)
async def create_own_gpg_key(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    p: GPGKeyCreate = await params(request)
    return render(gpg_key(await in_thread(service.create_own, db, actor, p)), status=201)


@post("/user/gpg_keys/{key_id:str}/revoke", status=202)
async def revoke_own_gpg_key(db: Db, actor: Authenticated, key_id: FromPath[str]) -> Response[bytes]:
    await in_thread(service.revoke_own, db, actor, int_id(key_id))
    return _accepted()


@delete("/user/gpg_keys/{key_id:str}")
async def delete_own_gpg_key(db: Db, actor: Authenticated, key_id: FromPath[str]) -> Response[bytes]:
    await in_thread(service.delete_own, db, actor, int_id(key_id))
    return no_content()


# ----------------------------------------------------------------------------- /users/:id/gpg_keys


@get("/users/{id:str}/gpg_keys", auth="optional", params=GPGKeyList, scopes=READ)
async def list_user_gpg_keys(request: Req, db: Db, viewer: Viewer, id: FromPath[str]) -> Response[bytes]:
    q: GPGKeyList = await params(request)
    page = page_of(q)
    result = service.list_of_user(db, viewer, int_id(id), page)
    return paginated(request, [gpg_key(k) for k in result.items], page, result)


@get("/users/{id:str}/gpg_keys/{key_id:str}", auth="optional", scopes=READ)
async def get_user_gpg_key(
    db: Db, viewer: Viewer, id: FromPath[str], key_id: FromPath[str]
) -> Response[bytes]:
    return render(gpg_key(service.get_of_user(db, viewer, int_id(id), int_id(key_id))))


@post("/users/{id:str}/gpg_keys", params=GPGKeyCreate)
async def create_user_gpg_key(
    request: Req, db: Db, actor: Authenticated, id: FromPath[str]
) -> Response[bytes]:
    p: GPGKeyCreate = await params(request)
    return render(gpg_key(await in_thread(service.create_for_user, db, actor, int_id(id), p)), status=201)


@post("/users/{id:str}/gpg_keys/{key_id:str}/revoke", status=202)
async def revoke_user_gpg_key(
    db: Db, actor: Authenticated, id: FromPath[str], key_id: FromPath[str]
) -> Response[bytes]:
    await in_thread(service.revoke_for_user, db, actor, int_id(id), int_id(key_id))
    return _accepted()


@delete("/users/{id:str}/gpg_keys/{key_id:str}")
async def delete_user_gpg_key(
    db: Db, actor: Authenticated, id: FromPath[str], key_id: FromPath[str]
) -> Response[bytes]:
    await in_thread(service.delete_for_user, db, actor, int_id(id), int_id(key_id))
    return no_content()


ROUTES: list[HTTPRouteHandler] = [
    list_own_gpg_keys,
    get_own_gpg_key,
    create_own_gpg_key,
    revoke_own_gpg_key,
    delete_own_gpg_key,
    list_user_gpg_keys,
    get_user_gpg_key,
    create_user_gpg_key,
    revoke_user_gpg_key,
    delete_user_gpg_key,
]
