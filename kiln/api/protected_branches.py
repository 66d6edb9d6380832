"""Protected branches (GitLab's Protected Branches API): rules for a branch name or a
wildcard pattern such as `release/*`, which arrives URL-encoded in one path segment."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath

from kiln.api._deps import Authenticated, Db, Viewer, in_thread
from kiln.api._pagination import page_of, paginated
from kiln.api._params import params
from kiln.api._render import no_content, render
from kiln.api._routes import delete, get, patch, post
from kiln.entities.protected_branches import protected_branch
from kiln.preconditions import parse_http_date
from kiln.schemas.protected_branches import (
    ProtectedBranchCreate,
    ProtectedBranchGet,
    ProtectedBranchList,
    ProtectedBranchUpdate,
)
from kiln.services import protected_branches as service

Req = Request[Any, Any, Any]
BASE = "/projects/{id:str}/protected_branches"


@get(BASE, auth="optional", params=ProtectedBranchList)
async def list_protected_branches(request: Req, db: Db, viewer: Viewer, id: FromPath[str]) -> Response[bytes]:
    q: ProtectedBranchList = await params(request)
    page = page_of(q)
    result = service.list_rules(db, viewer, id, q, page)
    return paginated(request, [protected_branch(r) for r in result.items], page, result)


@get(f"{BASE}/{{name:str}}", auth="optional", params=ProtectedBranchGet)
async def get_protected_branch(
    db: Db, viewer: Viewer, id: FromPath[str], name: FromPath[str]
) -> Response[bytes]:
    return render(protected_branch(service.get_rule(db, viewer, id, unquote(name))))


@post(BASE, params=ProtectedBranchCreate)
async def protect_branch(request: Req, db: Db, actor: Authenticated, id: FromPath[str]) -> Response[bytes]:
    p: ProtectedBranchCreate = await params(request)
    return render(protected_branch(await in_thread(service.create_rule, db, actor, id, p)), status=201)


@patch(f"{BASE}/{{name:str}}", params=ProtectedBranchUpdate)
async def update_protected_branch(
    request: Req, db: Db, actor: Authenticated, id: FromPath[str], name: FromPath[str]
) -> Response[bytes]:
    p: ProtectedBranchUpdate = await params(request)
    return render(protected_branch(await in_thread(service.update_rule, db, actor, id, p.name, p)))


@delete(f"{BASE}/{{name:str}}", params=ProtectedBranchGet)
async def unprotect_branch(
    request: Req, db: Db, actor: Authenticated, id: FromPath[str], name: FromPath[str]
) -> Response[bytes]:
    since = parse_http_date(request.headers.get("if-unmodified-since"))
    await in_thread(service.delete_rule, db, actor, id, unquote(name), since)
    return no_content()


ROUTES: list[HTTPRouteHandler] = [
    list_protected_branches,
    get_protected_branch,
    protect_branch,
    update_protected_branch,
    unprotect_branch,
]
