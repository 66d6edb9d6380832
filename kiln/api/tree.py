"""The repository tree and blobs by id: GET /projects/:id/repository/tree, .../blobs/:sha
and .../blobs/:sha/raw."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler
from litestar.response import Stream

from kiln.api import _user_content
from kiln.api._deps import Db, Viewer, in_thread, is_head, runtime, streamed
from kiln.api._pagination import page_of, paginated
from kiln.api._params import params
from kiln.api._render import JSON, render
from kiln.api._routes import get
from kiln.api.files import NO_CACHE, READ_SCOPES
from kiln.entities.tree import blob, blob_length, blob_pieces, tree_entry, tree_json_pieces
from kiln.schemas.tree import BlobGet, TreeList
from kiln.services import files as files_service
from kiln.services import tree as service

if TYPE_CHECKING:
    from kiln.git.files import BlobRef

Req = Request[Any, Any, Any]


@get("/projects/{id:str}/repository/tree", auth="optional", params=TreeList, scopes=READ_SCOPES)
async def list_tree(request: Req, db: Db, viewer: Viewer) -> Response[Any]:
    q: TreeList = await params(request)
    page = page_of(q, keyset_allowed=True)
    listing = await in_thread(service.list_tree, db, viewer, q.id, q, page, runtime(request).settings)
    if listing.everything is not None:
        return Stream(streamed(tree_json_pieces(listing.everything)), media_type=JSON)
    return paginated(request, [tree_entry(item) for item in listing.page.items], page, listing.page)


@get("/projects/{id:str}/repository/blobs/{sha:str}", auth="optional", params=BlobGet, scopes=READ_SCOPES)
async def get_blob(request: Req, db: Db, viewer: Viewer) -> Response[Any]:
    q: BlobGet = await params(request)
    settings = runtime(request).settings
    found = service.get_blob(db, viewer, q.id, q.sha, settings)
    if not files_service.is_large(found.size, settings):
        return render(blob(found))
    # Read and encoded off the event loop as it streams out, never whole in memory.
    pieces = await in_thread(service.large_blob, found, settings)
    headers = {"Content-Length": str(blob_length(found))}
    return Stream(streamed(blob_pieces(found, pieces)), media_type=JSON, headers=headers)


@get("/projects/{id:str}/repository/blobs/{sha:str}/raw", auth="optional", params=BlobGet, scopes=READ_SCOPES)
async def get_raw_blob(request: Req, db: Db, viewer: Viewer) -> Response[Any]:
    q: BlobGet = await params(request)
    found = service.get_blob(db, viewer, q.id, q.sha, runtime(request).settings)
    if files_service.streams_raw(found.size):
        return await _large_raw_blob(request, found)
    content = service.raw_blob(found)
    # A blob by id has no name (GitLab's disposition is a bare "inline"): its type is its content's.
    served = _user_content.served_as(None, text=not content.binary)
    headers = {**NO_CACHE, "Content-Length": str(len(content.data))}
    return _user_content.stream(content.chunks(), None, served, headers)


async def _large_raw_blob(request: Req, found: BlobRef) -> Response[Any]:
    """A large blob's raw bytes, as a small one's go out: its first piece is read off the
    event loop, and every further piece as it streams out. Its length is its header's."""
    content = await in_thread(service.large_raw_blob, found, head=is_head(request))
    served = _user_content.served_as(None, text=not content.binary)
    headers = {**NO_CACHE, "Content-Length": str(found.size)}
    return _user_content.stream(streamed(content.pieces), None, served, headers)


ROUTES: list[HTTPRouteHandler] = [list_tree, get_blob, get_raw_blob]
