"""SSH keys (GitLab's Users API "SSH keys" and Keys API): /user/keys, /users/:id/keys and
the administrators' /keys look-ups. ROUTES is mounted under /api/v4 by kiln.api."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath

from kiln.api._deps import Authenticated, Db, Viewer, in_thread, int_id, runtime
from kiln.api._pagination import page_of, paginated
from kiln.api._params import params
from kiln.api._render import no_content, render
from kiln.api._routes import delete, get, post
from kiln.auth.tokens import API, READ_API, READ_USER
from kiln.entities.keys import instance_host, ssh_key, ssh_key_with_user
from kiln.entities.users import user_self
from kiln.schemas.keys import KeyCreate, KeyList, KeyLookup, UserKeyCreate, UserKeyList
from kiln.services import keys as service

Req = Request[Any, Any, Any]
# read_user reaches the reads, as it does every read of GitLab's users API.
READ = (API, READ_API, READ_USER)


def _host(request: Req) -> str:
    return instance_host(runtime(request).settings.external_url)


def _with_user(request: Req, found: service.OwnedKey) -> dict[str, Any]:
    base = runtime(request).settings.external_url
    owner = user_self(found.owner, base, found.identities, can_create_project=found.can_create_project)
    return ssh_key_with_user(found.key, _host(request), owner)


# ----------------------------------------------------------------------------- /user/keys


@get("/user/keys", params=KeyList, scopes=READ)
async def list_own_keys(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    q: KeyList = await params(request)
    page = page_of(q)
    result = service.list_own(db, actor, page)
    host = _host(request)
    return paginated(request, [ssh_key(k, actor.user.name, host) for k in result.items], page, result)


@get("/user/keys/{key_id:str}", scopes=READ)
async def get_own_key(request: Req, db: Db, actor: Authenticated, key_id: FromPath[str]) -> Response[bytes]:
    key = service.get_own(db, actor, int_id(key_id))
    return render(ssh_key(key, actor.user.name, _host(request)))


@post("/user/keys", params=KeyCreate)
async def create_own_key(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    p: KeyCreate = await params(request)
    key = await in_thread(service.create_own, db, actor, p)
    return render(ssh_key(key, actor.user.name, _host(request)), status=201)


@delete("/user/keys/{key_id:str}")
async def delete_own_key(db: Db, actor: Authenticated, key_id: FromPath[str]) -> Response[bytes]:
    await in_thread(service.delete_own, db, actor, int_id(key_id))
    return no_content()


# ----------------------------------------------------------------------------- /users/:id/keys


@get("/users/{id:str}/keys", auth="optional", params=UserKeyList, scopes=READ)
async def list_user_keys(request: Req, db: Db, viewer: Viewer, id: FromPath[str]) -> Response[bytes]:
    q: UserKeyList = await params(request)
    page = page_of(q)
    found = service.list_of_user(db, viewer, id, page)
    host = _host(request)
    items = [ssh_key(k, found.user.name, host) for k in found.page.items]
    return paginated(request, items, page, found.page)


@get("/users/{id:str}/keys/{key_id:str}", auth="optional", scopes=READ)
async def get_user_key(
    request: Req, db: Db, viewer: Viewer, id: FromPath[str], key_id: FromPath[str]
) -> Response[bytes]:
    user, key = service.get_of_user(db, viewer, id, int_id(key_id))
    return render(ssh_key(key, user.name, _host(request)))


@post("/users/{id:str}/keys", params=UserKeyCreate)
async def create_user_key(request: Req, db: Db, actor: Authenticated, id: FromPath[str]) -> Response[bytes]:
    p: UserKeyCreate = await params(request)
    user, key = await in_thread(service.create_for_user, db, actor, int_id(id), p)
    return render(ssh_key(key, user.name, _host(request)), status=201)


@delete("/users/{id:str}/keys/{key_id:str}")
async def delete_user_key(
    db: Db, actor: Authenticated, id: FromPath[str], key_id: FromPath[str]
) -> Response[bytes]:
    await in_thread(service.delete_for_user, db, actor, int_id(id), int_id(key_id))
    return no_content()


# ----------------------------------------------------------------------------- /keys


@get("/keys", params=KeyLookup)
async def find_key(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    q: KeyLookup = await params(request)
    return render(_with_user(request, service.find_by_fingerprint(db, actor, q.fingerprint)))


@get("/keys/{key_id:str}")
async def get_key(request: Req, db: Db, actor: Authenticated, key_id: FromPath[str]) -> Response[bytes]:
    return render(_with_user(request, service.get_any(db, actor, int_id(key_id))))


ROUTES: list[HTTPRouteHandler] = [
    list_own_keys,
    get_own_key,
    create_own_key,
    delete_own_key,
    list_user_keys,
    get_user_key,
    create_user_key,
    delete_user_key,
    find_key,
    get_key,
]
