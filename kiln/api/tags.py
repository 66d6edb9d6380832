"""Repository tags (GitLab's Tags API): list, show, create (annotated when a message is
given) and delete. Tag names with `/` arrive URL-encoded in one path segment."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath

from kiln.api._deps import Authenticated, Db, Viewer, in_thread, project_web, runtime
from kiln.api._pagination import page_of, paginated
from kiln.api._params import params
from kiln.api._render import no_content, render
from kiln.api._routes import delete, get, post
from kiln.entities.tags import tag as tag_view
from kiln.preconditions import parse_http_date
from kiln.schemas.tags import TagCreate, TagGet, TagList
from kiln.services import tags as service

Req = Request[Any, Any, Any]
BASE = "/projects/{id:str}/repository/tags"


@get(BASE, auth="optional", params=TagList)
async def list_tags(request: Req, db: Db, viewer: Viewer, id: FromPath[str]) -> Response[bytes]:
    q: TagList = await params(request)
    page = page_of(q)
    found = service.list_tags(db, viewer, id, runtime(request).settings, q, page)
    web = project_web(request, found.full_path)
    return paginated(request, [tag_view(t, web) for t in found.page.items], page, found.page)


@get(f"{BASE}/{{tag_name:str}}", auth="optional", params=TagGet)
async def get_tag(
    request: Req, db: Db, viewer: Viewer, id: FromPath[str], tag_name: FromPath[str]
) -> Response[bytes]:
    found = service.get_tag(db, viewer, id, runtime(request).settings, unquote(tag_name))
    return render(tag_view(found.tag, project_web(request, found.full_path)))


@post(BASE, params=TagCreate)
async def create_tag(request: Req, db: Db, actor: Authenticated, id: FromPath[str]) -> Response[bytes]:
    p: TagCreate = await params(request)
    found = await in_thread(service.create_tag, db, actor, id, runtime(request).settings, p)
    return render(tag_view(found.tag, project_web(request, found.full_path)), status=201)


@delete(f"{BASE}/{{tag_name:str}}", params=TagGet)
async def delete_tag(
    request: Req, db: Db, actor: Authenticated, id: FromPath[str], tag_name: FromPath[str]
) -> Response[bytes]:
    since = parse_http_date(request.headers.get("if-unmodified-since"))
    await in_thread(service.delete_tag, db, actor, id, runtime(request).settings, unquote(tag_name), since)
    return no_content()


ROUTES: list[HTTPRouteHandler] = [list_tags, get_tag, create_tag, delete_tag]
