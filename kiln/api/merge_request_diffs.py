"""Merge request diff versions (GitLab's merge_request_diffs.rb): a merge request's versions,
one per push that moved its source branch, and one version with its commits and diffs."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler

from kiln.api._deps import Db, Viewer, in_thread, runtime
from kiln.api._pagination import page_of, paginated
from kiln.api._params import params
from kiln.api._render import render
from kiln.api._routes import get
from kiln.entities.merge_request_diffs import version_full, version_view
from kiln.schemas.merge_request_diffs import VersionGet, VersionList
from kiln.services import merge_request_diffs as service

Req = Request[Any, Any, Any]
VERSIONS = "/projects/{id:str}/merge_requests/{merge_request_iid:str}/versions"


@get(VERSIONS, auth="optional", params=VersionList)
async def list_versions(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
    """The merge request's diff versions, newest first."""
    q: VersionList = await params(request)
    page = page_of(q)
    found = service.list_versions(db, viewer, q.id, q.merge_request_iid, page)
    return paginated(request, [version_view(v) for v in found.items], page, found)


@get(VERSIONS + "/{version_id:str}", auth="optional", params=VersionGet)
async def get_version(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
    """One version with its commits and its diff (read from the repository)."""
    p: VersionGet = await params(request)
    settings = runtime(request).settings
    found = await in_thread(
        service.get_version, db, settings, viewer, p.id, p.merge_request_iid, p.version_id
    )
    return render(version_full(found, settings.external_url))


ROUTES: list[HTTPRouteHandler] = [list_versions, get_version]
