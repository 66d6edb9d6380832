"""Users (spec part 3 "Users"): /users, /user, status, identities, the user states (block,
ban, deactivate, approve and their reverses) and memberships."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from litestar import Request, Response
from litestar.params import FromPath

from kiln import storage
from kiln.api._deps import Authenticated, Db, Viewer, base_url, in_thread, int_id, runtime
from kiln.api._pagination import page_of, paginated
from kiln.api._params import params
from kiln.api._render import no_content, render
from kiln.api._routes import delete, get, post, put
from kiln.auth.tokens import API, READ_API, READ_USER
from kiln.entities.memberships import membership
from kiln.entities.users import moderated, user_detail, user_detail_json, user_status
from kiln.preconditions import parse_http_date
from kiln.schemas.users import (
    MembershipList,
    StatusUpdate,
    UserCreate,
    UserDelete,
    UserGet,
    UserList,
    UserUpdate,
)
from kiln.services import memberships
from kiln.services import users as service

if TYPE_CHECKING:
    from kiln.models import User

# read_user reaches every read of this module (GitLab's users API).
READ = (API, READ_API, READ_USER)
Req = Request[Any, Any, Any]


def _storage(request: Req) -> storage.Storage:
    return storage.uploads(runtime(request).settings)


@get("/users", auth="optional", params=UserList, scopes=READ)
async def list_users(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
    q: UserList = await params(request)
    page = page_of(q, keyset_allowed=True, order_by=q.order_by)
    listing = service.list_users(db, viewer, q, page)
    base = base_url(request)
    return paginated(request, [_listed(d, base) for d in listing.details], page, listing.page)


@get("/users/{id:str}", auth="optional", params=UserGet, scopes=READ)
async def get_user(request: Req, db: Db, viewer: Viewer, id: FromPath[str]) -> Response[bytes]:
    q: UserGet = await params(request)
    user = service.get_user(db, viewer, int_id(id))
    return render(_detail(request, db, viewer, user, custom_attributes=q.with_custom_attributes))


@post("/users", params=UserCreate)
async def create_user(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    p: UserCreate = await params(request)
    # In a thread: hashing the password takes a fifth of a second of CPU.
    user = await in_thread(service.create_user, db, actor, p, runtime(request).settings, _storage(request))
    return render(_detail(request, db, actor, user), status=201)


@put("/users/{id:str}", params=UserUpdate)
async def update_user(request: Req, db: Db, actor: Authenticated, id: FromPath[str]) -> Response[bytes]:
    p: UserUpdate = await params(request)
    # In a thread: hashing a new password takes a fifth of a second of CPU.
    user = await in_thread(
        service.update_user, db, actor, int_id(id), p, runtime(request).settings, _storage(request)
    )
    return render(_detail(request, db, actor, user))


@delete("/users/{id:str}/identities/{provider:str}")
async def delete_identity(
    request: Req, db: Db, actor: Authenticated, id: FromPath[str], provider: FromPath[str]
) -> Response[bytes]:
    await in_thread(service.delete_identity, db, actor, int_id(id), provider)
    return no_content()


@delete("/users/{id:str}", params=UserDelete)
async def delete_user(request: Req, db: Db, actor: Authenticated, id: FromPath[str]) -> Response[bytes]:
    q: UserDelete = await params(request)
    await in_thread(
        service.delete_user,
        db,
        actor,
        int_id(id),
        hard_delete=q.hard_delete,
        storage=_storage(request),
        unmodified_since=parse_http_date(request.headers.get("if-unmodified-since")),
    )
    return no_content()


@post("/users/{id:str}/block")
async def block_user(request: Req, db: Db, actor: Authenticated, id: FromPath[str]) -> Response[bytes]:
    return render(await in_thread(service.block, db, actor, int_id(id)), status=201)


@post("/users/{id:str}/unblock")
async def unblock_user(request: Req, db: Db, actor: Authenticated, id: FromPath[str]) -> Response[bytes]:
    return render(await in_thread(service.unblock, db, actor, int_id(id)), status=201)


@post("/users/{id:str}/ban")
async def ban_user(request: Req, db: Db, actor: Authenticated, id: FromPath[str]) -> Response[bytes]:
    return render(await in_thread(service.ban, db, actor, int_id(id)), status=201)


@post("/users/{id:str}/unban")
async def unban_user(request: Req, db: Db, actor: Authenticated, id: FromPath[str]) -> Response[bytes]:
    return render(await in_thread(service.unban, db, actor, int_id(id)), status=201)


@post("/users/{id:str}/activate")
async def activate_user(request: Req, db: Db, actor: Authenticated, id: FromPath[str]) -> Response[bytes]:
    return render(await in_thread(service.activate, db, actor, int_id(id)), status=201)


@post("/users/{id:str}/deactivate")
async def deactivate_user(request: Req, db: Db, actor: Authenticated, id: FromPath[str]) -> Response[bytes]:
    return render(await in_thread(service.deactivate, db, actor, int_id(id)), status=201)


@post("/users/{id:str}/approve")
async def approve_user(request: Req, db: Db, actor: Authenticated, id: FromPath[str]) -> Response[bytes]:
    await in_thread(service.approve, db, actor, int_id(id))
    return render(moderated(), status=201)


@post("/users/{id:str}/reject", status=200)
async def reject_user(request: Req, db: Db, actor: Authenticated, id: FromPath[str]) -> Response[bytes]:
    await in_thread(service.reject, db, actor, int_id(id), _storage(request))
    return render(moderated(), status=200)


@get("/users/{id:str}/memberships", params=MembershipList, scopes=READ)
async def list_memberships(request: Req, db: Db, actor: Authenticated, id: FromPath[str]) -> Response[bytes]:
    q: MembershipList = await params(request)
    page = page_of(q)
    result = memberships.of_user(db, actor, int_id(id), q, page)
    return paginated(request, [membership(row) for row in result.items], page, result)


@get("/user", scopes=READ)
async def current_user(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    return render(_detail(request, db, actor, actor.user))


@get("/user/status", scopes=READ)
async def current_status(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    return render(user_status(service.current_status(db, actor)))


@put("/user/status", params=StatusUpdate)
async def set_status(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    p: StatusUpdate = await params(request)
    return render(user_status(await in_thread(service.set_status, db, actor, p)))


@get("/users/{id:str}/status", auth="optional", scopes=READ)
async def status_of_user(request: Req, db: Db, viewer: Viewer, id: FromPath[str]) -> Response[bytes]:
    return render(user_status(service.status_of(db, viewer, id)))


def _detail(
    request: Req, db: Db, viewer: Viewer, user: User, *, custom_attributes: bool = False
) -> dict[str, Any]:
    """The richest view of `user` the viewer is entitled to (the service decides which)."""
    return _view(service.detail(db, viewer, user, custom_attributes=custom_attributes), base_url(request))


def _listed(d: service.UserDetail, base: str) -> Any:
    if d.custom_attributes is not None:
        return _view(d, base)
    identities = d.identities or ()
    return user_detail_json(d.user, d.view, base, identities, can_create_project=d.can_create_project)


def _view(d: service.UserDetail, base: str) -> dict[str, Any]:
    return user_detail(
        d.user, d.view, base, d.identities or (), d.custom_attributes, can_create_project=d.can_create_project
    )


# The user states and memberships (the other routes are listed one by one in kiln.api).
ROUTES = [
    ban_user,
    unban_user,
    activate_user,
    deactivate_user,
    approve_user,
    reject_user,
    list_memberships,
]
