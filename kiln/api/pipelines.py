"""Pipelines (GitLab's Pipelines API): list, get, latest, variables, test report, create,
retry, cancel, rename, delete."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler

from kiln.api._deps import Authenticated, Db, Viewer, base_url, in_thread, runtime
from kiln.api._pagination import page_of, paginated
from kiln.api._params import params
from kiln.api._render import no_content, render
from kiln.api._routes import delete, get, post, put
from kiln.entities import pipelines as views
from kiln.schemas.pipelines import PipelineCreate, PipelineGet, PipelineLatest, PipelineList, PipelineMetadata
from kiln.services import pipelines as service
from kiln.services.pipelines import Detail

Req = Request[Any, Any, Any]
BASE = "/projects/{id:str}/pipelines"
ONE = BASE + "/{pipeline_id:str}"


def _detail(request: Req, found: Detail, status: int = 200) -> Response[bytes]:
    view = views.pipeline(found.row, base_url(request), found.user, found.coverage, warnings=found.warnings)
    return render(view, status=status)


@get(BASE, auth="optional", params=PipelineList)
async def list_pipelines(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
    """A project's pipelines."""
    q: PipelineList = await params(request)
    page = page_of(q)
    found = service.list_pipelines(db, viewer, q, page, runtime(request).settings)
    base = base_url(request)
    return paginated(request, [views.pipeline_basic(r, base) for r in found.items], page, found)


@get(BASE + "/latest", auth="optional", params=PipelineLatest)
async def latest_pipeline(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
    """The newest pipeline of a ref's current commit."""
    q: PipelineLatest = await params(request)
    return _detail(request, service.latest_pipeline(db, viewer, q.id, q.ref, runtime(request).settings))


@get(ONE, auth="optional", params=PipelineGet)
async def get_pipeline(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
    """One pipeline."""
    q: PipelineGet = await params(request)
    return _detail(request, service.get_pipeline(db, viewer, q.id, q.pipeline_id))


@get(ONE + "/variables", auth="optional", params=PipelineGet)
async def pipeline_variables(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
    """The variables a pipeline was given."""
    q: PipelineGet = await params(request)
    found = service.variables(db, viewer, q.id, q.pipeline_id, runtime(request).settings)
    return render([views.variable(row, value) for row, value in found])


@get(ONE + "/test_report", auth="optional", params=PipelineGet)
async def pipeline_test_report(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
    """A pipeline's test report (kiln reads no test reports yet: an empty one)."""
    q: PipelineGet = await params(request)
    service.test_report(db, viewer, q.id, q.pipeline_id)
    return render(views.empty_test_report())


@get(ONE + "/test_report_summary", auth="optional", params=PipelineGet)
async def pipeline_test_report_summary(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
    """The summary of a pipeline's test report (empty, as the report)."""
    q: PipelineGet = await params(request)
    service.test_report(db, viewer, q.id, q.pipeline_id)
    return render(views.empty_test_report_summary())


@post("/projects/{id:str}/pipeline", params=PipelineCreate)
async def create_pipeline(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Run a pipeline for a ref."""
    p: PipelineCreate = await params(request)
    found = await in_thread(service.create_pipeline, db, actor, p, runtime(request).settings)
    return _detail(request, found, status=201)


@post(ONE + "/retry", params=PipelineGet)
async def retry_pipeline(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Run a pipeline's failed and canceled jobs again."""
    p: PipelineGet = await params(request)
    found = await in_thread(service.retry, db, actor, p.id, p.pipeline_id)
    return _detail(request, found, status=201)


@post(ONE + "/cancel", params=PipelineGet, status=200)
async def cancel_pipeline(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Cancel a pipeline's unfinished jobs."""
    p: PipelineGet = await params(request)
    found = await in_thread(service.cancel, db, actor, p.id, p.pipeline_id)
    return _detail(request, found)


@put(ONE + "/metadata", params=PipelineMetadata)
async def update_pipeline_metadata(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Rename a pipeline."""
    p: PipelineMetadata = await params(request)
    found = await in_thread(service.update_metadata, db, actor, p.id, p.pipeline_id, p.name)
    return _detail(request, found)


@delete(ONE, params=PipelineGet)
async def delete_pipeline(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Delete a pipeline with its jobs, logs and artifacts."""
    p: PipelineGet = await params(request)
    await in_thread(service.delete_pipeline, db, actor, p.id, p.pipeline_id, runtime(request).settings)
    return no_content()


ROUTES: list[HTTPRouteHandler] = [
    list_pipelines,
    latest_pipeline,
    get_pipeline,
    pipeline_variables,
    pipeline_test_report,
    pipeline_test_report_summary,
    create_pipeline,
    retry_pipeline,
    cancel_pipeline,
    update_pipeline_metadata,
    delete_pipeline,
]
