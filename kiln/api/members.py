"""Members and access requests: the same routes under /groups/:id and /projects/:id."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler

from kiln.api._deps import Authenticated, Db, base_url, in_thread
from kiln.api._pagination import page_of, paginated
from kiln.api._params import params
from kiln.api._render import no_content, render
from kiln.api._routes import delete, get, post, put
from kiln.entities.members import access_requester, member
from kiln.schemas.members import (
    AccessRequestApprove,
    AccessRequestCreate,
    AccessRequestDeny,
    AccessRequestList,
    MemberAllList,
    MemberCreate,
    MemberDelete,
    MemberGet,
    MemberList,
    MemberUpdate,
)
from kiln.services import members as service
from kiln.services.members import Kind

Req = Request[Any, Any, Any]


def _routes(kind: Kind, singular: str) -> list[HTTPRouteHandler]:
    base = f"/{kind}/{{id:str}}"

    async def list_members(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        q: MemberList = await params(request)
        page = page_of(q)
        listing = service.list_members(db, actor, kind, q, page, deep=False)
        return paginated(request, [member(r, base_url(request)) for r in listing.records], page, listing.page)

    async def list_all_members(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        q: MemberAllList = await params(request)
        page = page_of(q)
        listing = service.list_members(db, actor, kind, q, page, deep=True)
        return paginated(request, [member(r, base_url(request)) for r in listing.records], page, listing.page)

    async def get_member(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        q: MemberGet = await params(request)
        return render(
            member(service.get_member(db, actor, kind, q.id, q.user_id, deep=False), base_url(request))
        )

    async def get_any_member(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        q: MemberGet = await params(request)
        return render(
            member(service.get_member(db, actor, kind, q.id, q.user_id, deep=True), base_url(request))
        )

    async def add_member(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        p: MemberCreate = await params(request)
        added = await in_thread(service.add_members, db, actor, kind, p)
        if isinstance(added, service.BulkResult):
            return render(added.as_dict(), status=201)
        return render(member(added, base_url(request)), status=201)

    async def update_member(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        p: MemberUpdate = await params(request)
        rec = await in_thread(service.update_member, db, actor, kind, p)
        return render(member(rec, base_url(request)))

    async def remove_member(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        p: MemberDelete = await params(request)
        await in_thread(service.remove_member, db, actor, kind, p)
        return no_content()

    async def list_access_requests(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        q: AccessRequestList = await params(request)
        page = page_of(q)
        listing = service.list_access_requests(db, actor, kind, q.id, page)
        items = [access_requester(r, base_url(request)) for r in listing.records]
        return paginated(request, items, page, listing.page)

    async def request_access(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        p: AccessRequestCreate = await params(request)
        rec = await in_thread(service.request_access, db, actor, kind, p.id)
        return render(access_requester(rec, base_url(request)), status=201)

    async def approve_access_request(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        p: AccessRequestApprove = await params(request)
        # A PUT that answers 201, as GitLab does.
        rec = await in_thread(service.approve_access_request, db, actor, kind, p)
        return render(member(rec, base_url(request)), status=201)

    async def deny_access_request(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        p: AccessRequestDeny = await params(request)
        await in_thread(service.deny_access_request, db, actor, kind, p.id, p.user_id)
        return no_content()

    # Distinct names keep the OpenAPI operation ids unique.
    for fn, doc in (
        (list_members, f"Direct members of a {singular}."),
        (list_all_members, f"Members of a {singular}, direct and inherited."),
        (get_member, f"A direct member of a {singular}."),
        (get_any_member, f"A member of a {singular}, direct or inherited."),
        (add_member, f"Add one or several users to a {singular}."),
        (update_member, f"Change a member's access level or expiry in a {singular}."),
        (remove_member, f"Remove a member from a {singular} (or leave it)."),
        (list_access_requests, f"Pending access requests of a {singular}."),
        (request_access, f"Ask for access to a {singular}."),
        (approve_access_request, f"Approve an access request to a {singular}."),
        (deny_access_request, f"Deny (or withdraw) an access request to a {singular}."),
    ):
        fn.__name__ = fn.__qualname__ = f"{fn.__name__}_of_{singular}"
        fn.__doc__ = doc
    member_path = f"{base}/members/{{user_id:str}}"
    request_path = f"{base}/access_requests/{{user_id:str}}"
    return [
        get(f"{base}/members", params=MemberList)(list_members),
        get(f"{base}/members/all", params=MemberAllList)(list_all_members),
        get(member_path, params=MemberGet)(get_member),
        get(f"{base}/members/all/{{user_id:str}}", params=MemberGet)(get_any_member),
        post(f"{base}/members", params=MemberCreate)(add_member),
        put(member_path, params=MemberUpdate)(update_member),
        delete(member_path, params=MemberDelete)(remove_member),
        get(f"{base}/access_requests", params=AccessRequestList)(list_access_requests),
        post(f"{base}/access_requests", params=AccessRequestCreate)(request_access),
        put(f"{request_path}/approve", params=AccessRequestApprove, status=201)(approve_access_request),
        delete(request_path, params=AccessRequestDeny)(deny_access_request),
    ]


ROUTES: list[HTTPRouteHandler] = [*_routes("groups", "group"), *_routes("projects", "project")]
