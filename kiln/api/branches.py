"""Repository branches (GitLab's Branches API): list, show (HEAD too), create, delete, and
delete the branches merged into the default branch. Branch names with `/` arrive
URL-encoded in one path segment; a dot in a name is part of it, never a format suffix."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath

from kiln.api._deps import Authenticated, Db, Viewer, in_thread, is_head, project_web, runtime
from kiln.api._pagination import page_of, paginated
from kiln.api._params import params
from kiln.api._render import no_content, render
from kiln.api._routes import delete, get, post
from kiln.entities.branches import branch as branch_view
from kiln.errors import NotFound
from kiln.preconditions import parse_http_date
from kiln.schemas.branches import BranchCreate, BranchGet, BranchList, MergedBranchesDelete
from kiln.services import branches as service

Req = Request[Any, Any, Any]
BASE = "/projects/{id:str}/repository"


@get(f"{BASE}/branches", auth="optional", params=BranchList)
async def list_branches(request: Req, db: Db, viewer: Viewer, id: FromPath[str]) -> Response[bytes]:
    q: BranchList = await params(request)
    page = page_of(q)
    found = service.list_branches(db, viewer, id, runtime(request).settings, q, page)
    web = project_web(request, found.full_path)
    return paginated(request, [branch_view(b, web) for b in found.page.items], page, found.page)


@get(f"{BASE}/branches/{{branch:str}}", auth="optional", params=BranchGet)
async def get_branch(
    request: Req, db: Db, viewer: Viewer, id: FromPath[str], branch: FromPath[str]
) -> Response[bytes]:
    name, settings = unquote(branch), runtime(request).settings
    if is_head(request):
        # HEAD answers whether the branch exists: 204, or 404.
        if not service.branch_exists(db, viewer, id, settings, name):
            raise NotFound()
        return no_content()
    found = service.get_branch(db, viewer, id, settings, name)
    return render(_view(request, found))


def _view(request: Req, found: service.OneBranch) -> dict[str, Any]:
    return branch_view(found.branch, project_web(request, found.full_path))


@post(f"{BASE}/branches", params=BranchCreate)
async def create_branch(request: Req, db: Db, actor: Authenticated, id: FromPath[str]) -> Response[bytes]:
    p: BranchCreate = await params(request)
    found = await in_thread(service.create_branch, db, actor, id, runtime(request).settings, p)
    return render(_view(request, found), status=201)


@delete(f"{BASE}/branches/{{branch:str}}", params=BranchGet)
async def delete_branch(
    request: Req, db: Db, actor: Authenticated, id: FromPath[str], branch: FromPath[str]
) -> Response[bytes]:
    since = parse_http_date(request.headers.get("if-unmodified-since"))
    await in_thread(service.delete_branch, db, actor, id, runtime(request).settings, unquote(branch), since)
    return no_content()


@delete(f"{BASE}/merged_branches", params=MergedBranchesDelete, status=202)
async def delete_merged_branches(
    request: Req, db: Db, actor: Authenticated, id: FromPath[str]
) -> Response[bytes]:
    await in_thread(service.delete_merged, db, actor, id, runtime(request).settings)
    return render({"message": "202 Accepted"}, status=202)


ROUTES: list[HTTPRouteHandler] = [
    list_branches,
    get_branch,
    create_branch,
    delete_branch,
    delete_merged_branches,
]
