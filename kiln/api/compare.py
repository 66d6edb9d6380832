"""Compare, merge bases, contributors and archives of a project's repository (GitLab's
lib/api/repositories.rb); ROUTES is mounted under /api/v4 by kiln.api."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath
from litestar.response import Stream

from kiln.api import _user_content
from kiln.api._deps import Db, Viewer, in_thread, runtime
from kiln.api._pagination import page_of, paginated
from kiln.api._params import params
from kiln.api._render import render
from kiln.api._routes import get
from kiln.auth.actor import Actor
from kiln.config import Settings
from kiln.entities.commits import commit_view
from kiln.entities.compare import compare_view, contributor
from kiln.entities.projects import project_web_url
from kiln.schemas.compare import ArchiveParams, CompareParams, ContributorList, MergeBaseParams
from kiln.services import compare as service

Req = Request[Any, Any, Any]


@get("/projects/{id:str}/repository/compare", auth="optional", params=CompareParams)
async def compare(request: Req, db: Db, viewer: Viewer, id: FromPath[str]) -> Response[bytes]:
    q: CompareParams = await params(request)
    return await in_thread(_compared, db, viewer, id, q, runtime(request).settings)


def _compared(
    db: Db, viewer: Actor | None, ident: str, q: CompareParams, settings: Settings
) -> Response[bytes]:
    """The comparison with its JSON, both made in the caller's thread: its commits grow with
    the histories compared."""
    result = service.compare(db, viewer, ident, q, settings)
    web = project_web_url(result.full_path, settings.external_url)
    return render(compare_view(result.comparison, web, unidiff=q.unidiff))


@get("/projects/{id:str}/repository/merge_base", auth="optional", params=MergeBaseParams)
async def merge_base(request: Req, db: Db, viewer: Viewer, id: FromPath[str]) -> Response[bytes]:
    q: MergeBaseParams = await params(request)
    settings = runtime(request).settings
    found = await in_thread(service.merge_base, db, viewer, id, q, settings)
    return render(commit_view(found.commit, project_web_url(found.full_path, settings.external_url)))


@get("/projects/{id:str}/repository/contributors", auth="optional", params=ContributorList)
async def contributors(request: Req, db: Db, viewer: Viewer, id: FromPath[str]) -> Response[bytes]:
    q: ContributorList = await params(request)
    page = page_of(q)
    result = await in_thread(service.contributors, db, viewer, id, q, page, runtime(request).settings)
    return paginated(request, [contributor(c) for c in result.items], page, result)


def _archive_route(suffix: str | None) -> HTTPRouteHandler:
    """One static route per format: Litestar has no parameters inside a segment, and a
    catch-all `/repository/{name}` would shadow the other repository routes' 404s."""
    path = "/projects/{id:str}/repository/archive" + (f".{suffix}" if suffix else "")

    async def archive(request: Req, db: Db, viewer: Viewer, id: FromPath[str]) -> Stream:
        q: ArchiveParams = await params(request)
        result = await service.started(service.archive(db, viewer, id, q, suffix, runtime(request).settings))
        served = _user_content.ServedAs.download(result.media_type)
        headers = {"Content-Transfer-Encoding": "binary", "Cache-Control": "private"}
        return _user_content.stream(result.body, result.filename, served, headers)

    archive.__name__ = f"archive_{(suffix or 'default').replace('.', '_')}"
    register: Callable[[Callable[..., Any]], HTTPRouteHandler] = get(
        path, auth="optional", params=ArchiveParams, summary="Get an archive of the repository"
    )
    return register(archive)


ARCHIVE_ROUTES = [_archive_route(None), *(_archive_route(fmt) for fmt in service.ARCHIVE_FORMATS)]

ROUTES: list[HTTPRouteHandler] = [compare, merge_base, contributors, *ARCHIVE_ROUTES]
