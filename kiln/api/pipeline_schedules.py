"""Pipeline schedules (GitLab's Pipeline schedules API): a project's schedules, their
pipelines and variables; running one now; taking one over."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler

from kiln.api._deps import Authenticated, Db, base_url, in_thread, project_web, runtime
from kiln.api._pagination import page_of, paginated
from kiln.api._params import params
from kiln.api._render import no_content, render
from kiln.api._routes import delete, get, post, put
from kiln.entities.pipeline_schedules import schedule, schedule_detail, schedule_variable
from kiln.entities.pipelines import pipeline_basic_at
from kiln.schemas.pipeline_schedules import (
    ScheduleCreate,
    ScheduleGet,
    ScheduleList,
    SchedulePipelines,
    ScheduleUpdate,
    ScheduleVariableCreate,
    ScheduleVariableGet,
    ScheduleVariableUpdate,
)
from kiln.services import pipeline_schedules as service

Req = Request[Any, Any, Any]
BASE = "/projects/{id:str}/pipeline_schedules"
ONE = BASE + "/{pipeline_schedule_id:str}"
VARIABLE = ONE + "/variables/{key:str}"


def _detail(request: Req, d: service.ScheduleDetail, status: int = 200) -> Response[bytes]:
    view = schedule_detail(
        d.row, d.owner, d.last_pipeline, d.variables, base_url(request), project_web(request, d.full_path)
    )
    return render(view, status=status)


def _variable(v: service.Variable, status: int = 200) -> Response[bytes]:
    return render(schedule_variable(v.key, v.value, v.variable_type, v.raw), status=status)


@get(BASE, params=ScheduleList)
async def list_pipeline_schedules(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """A project's pipeline schedules."""
    q: ScheduleList = await params(request)
    page = page_of(q)
    found = service.list_schedules(db, actor, q.id, q.scope, page)
    base = base_url(request)
    items = [schedule(r, found.owners.get(r.owner_id), base) for r in found.page.items]
    return paginated(request, items, page, found.page)


@get(ONE, params=ScheduleGet)
async def get_pipeline_schedule(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """A pipeline schedule with its last pipeline and (for those who may) its variables."""
    q: ScheduleGet = await params(request)
    return _detail(
        request, service.get_schedule(db, actor, q.id, q.pipeline_schedule_id, runtime(request).settings)
    )


@get(ONE + "/pipelines", params=SchedulePipelines)
async def list_pipeline_schedule_pipelines(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """The pipelines a schedule made."""
    q: SchedulePipelines = await params(request)
    page = page_of(q)
    result, full_path = service.schedule_pipelines(
        db, actor, q.id, q.pipeline_schedule_id, q.sort == "desc", page
    )
    web = project_web(request, full_path)
    return paginated(request, [pipeline_basic_at(r, web) for r in result.items], page, result)


@post(BASE, params=ScheduleCreate)
async def create_pipeline_schedule(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Create a pipeline schedule owned by the caller."""
    p: ScheduleCreate = await params(request)
    d = await in_thread(service.create_schedule, db, actor, p, runtime(request).settings)
    return _detail(request, d, status=201)


@put(ONE, params=ScheduleUpdate)
async def update_pipeline_schedule(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Change a pipeline schedule (its owner); its next run is planned afresh."""
    p: ScheduleUpdate = await params(request)
    return _detail(request, await in_thread(service.update_schedule, db, actor, p, runtime(request).settings))


@post(ONE + "/take_ownership", params=ScheduleGet)
async def take_pipeline_schedule_ownership(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Become the owner of a pipeline schedule."""
    p: ScheduleGet = await params(request)
    d, changed = await in_thread(
        service.take_ownership, db, actor, p.id, p.pipeline_schedule_id, runtime(request).settings
    )
    return _detail(request, d, status=201 if changed else 200)


@delete(ONE, params=ScheduleGet)
async def delete_pipeline_schedule(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Delete a pipeline schedule."""
    p: ScheduleGet = await params(request)
    await in_thread(service.delete_schedule, db, actor, p.id, p.pipeline_schedule_id)
    return no_content()


@post(ONE + "/play", params=ScheduleGet)
async def play_pipeline_schedule(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Run a pipeline schedule now (through the job queue)."""
    p: ScheduleGet = await params(request)
    await in_thread(service.play, db, actor, p.id, p.pipeline_schedule_id)
    return render({"message": "201 Created"}, status=201)


@post(ONE + "/variables", params=ScheduleVariableCreate)
async def create_pipeline_schedule_variable(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Add a variable to a pipeline schedule."""
    p: ScheduleVariableCreate = await params(request)
    return _variable(await in_thread(service.create_variable, db, actor, p, runtime(request).settings), 201)


@get(VARIABLE, params=ScheduleVariableGet)
async def get_pipeline_schedule_variable(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """A variable of a pipeline schedule."""
    q: ScheduleVariableGet = await params(request)
    return _variable(
        service.get_variable(db, actor, q.id, q.pipeline_schedule_id, q.key, runtime(request).settings)
    )


@put(VARIABLE, params=ScheduleVariableUpdate)
async def update_pipeline_schedule_variable(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Change a variable of a pipeline schedule."""
    p: ScheduleVariableUpdate = await params(request)
    return _variable(await in_thread(service.update_variable, db, actor, p, runtime(request).settings))


@delete(VARIABLE, params=ScheduleVariableGet, status=202)
async def delete_pipeline_schedule_variable(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Remove a variable from a pipeline schedule; the answer shows what it was (202)."""
    p: ScheduleVariableGet = await params(request)
    v = await in_thread(
        service.delete_variable, db, actor, p.id, p.pipeline_schedule_id, p.key, runtime(request).settings
    )
    return _variable(v, 202)


ROUTES: list[HTTPRouteHandler] = [
    list_pipeline_schedules,
    get_pipeline_schedule,
    list_pipeline_schedule_pipelines,
    create_pipeline_schedule,
    update_pipeline_schedule,
    take_pipeline_schedule_ownership,
    delete_pipeline_schedule,
    play_pipeline_schedule,
    create_pipeline_schedule_variable,
    get_pipeline_schedule_variable,
    update_pipeline_schedule_variable,
    delete_pipeline_schedule_variable,
]
