"""The repository tree and blobs by id: GET /projects/:id/repository/tree, .../blobs/:sha
and .../blobs/:sha/raw."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler

from kiln.api import _user_content
from kiln.api._deps import Db, Viewer, runtime
from kiln.api._pagination import page_of, paginated
from kiln.api._params import params
from kiln.api._render import render
from kiln.api._routes import get
from kiln.api.files import NO_CACHE, READ_SCOPES
from kiln.entities.tree import blob, tree_entry
from kiln.schemas.tree import BlobGet, TreeList
from kiln.services import tree as service

Req = Request[Any, Any, Any]


@get("/projects/{id:str}/repository/tree", auth="optional", params=TreeList, scopes=READ_SCOPES)
async def list_tree(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
    q: TreeList = await params(request)
    page = page_of(q, keyset_allowed=True)
    listing = service.list_tree(db, viewer, q.id, q, page, runtime(request).settings)
    items = [tree_entry(item) for item in listing.page.items]
    if listing.unpaginated:
        return render(items)
    return paginated(request, items, page, listing.page)


@get("/projects/{id:str}/repository/blobs/{sha:str}", auth="optional", params=BlobGet, scopes=READ_SCOPES)
async def get_blob(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
    q: BlobGet = await params(request)
    return render(blob(service.get_blob(db, viewer, q.id, q.sha, runtime(request).settings)))


@get("/projects/{id:str}/repository/blobs/{sha:str}/raw", auth="optional", params=BlobGet, scopes=READ_SCOPES)
async def get_raw_blob(request: Req, db: Db, viewer: Viewer) -> Response[Any]:
    q: BlobGet = await params(request)
    content = service.raw_blob(db, viewer, q.id, q.sha, runtime(request).settings)
    # A blob by id has no name (GitLab's disposition is a bare "inline"): its type is its content's.
    served = _user_content.served_as(None, text=not content.binary)
    headers = {**NO_CACHE, "Content-Length": str(len(content.data))}
    return _user_content.stream(content.chunks(), None, served, headers)


ROUTES: list[HTTPRouteHandler] = [list_tree, get_blob, get_raw_blob]
