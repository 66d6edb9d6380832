"""A merge request's pipelines (GitLab's `GET`/`POST /projects/:id/merge_requests/:iid/
pipelines`): the list of its merge request and branch pipelines, and running a merge request
pipeline now."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler

from kiln.api._deps import Authenticated, Db, Viewer, base_url, in_thread, runtime
from kiln.api._pagination import page_of, paginated
from kiln.api._params import params
from kiln.api._render import render
from kiln.api._routes import get, post
from kiln.entities import pipelines as views
from kiln.schemas.merge_request_pipelines import MergeRequestPipelineCreate, MergeRequestPipelineList
from kiln.services import merge_request_pipelines as service

Req = Request[Any, Any, Any]
PIPELINES = "/projects/{id:str}/merge_requests/{merge_request_iid:str}/pipelines"


@get(PIPELINES, auth="optional", params=MergeRequestPipelineList)
async def list_merge_request_pipelines(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
    """The merge request's pipelines, newest first."""
    q: MergeRequestPipelineList = await params(request)
    page = page_of(q)
    found = service.list_pipelines(db, viewer, q.id, q.merge_request_iid, page)
    base = base_url(request)
    return paginated(request, [views.pipeline_basic(r, base) for r in found.items], page, found)


@post(PIPELINES, params=MergeRequestPipelineCreate, status=201)
async def create_merge_request_pipeline(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Run a merge request pipeline for the merge request's head."""
    p: MergeRequestPipelineCreate = await params(request)
    settings = runtime(request).settings
    found = await in_thread(service.create_pipeline, db, settings, actor, p.id, p.merge_request_iid)
    view = views.pipeline(found.row, base_url(request), found.user, found.coverage, warnings=found.warnings)
    return render(view, status=201)


ROUTES: list[HTTPRouteHandler] = [list_merge_request_pipelines, create_merge_request_pipeline]
