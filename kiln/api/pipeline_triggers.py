"""Pipeline trigger tokens (GitLab's Pipeline trigger tokens API) and the pipelines a token
starts (`/trigger/pipeline`, also as `/ref/:ref/trigger/pipeline`)."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler

from kiln.api._deps import Authenticated, Db, base_url, in_thread, runtime
from kiln.api._pagination import page_of, paginated
from kiln.api._params import params
from kiln.api._render import no_content, render
from kiln.api._routes import delete, get, post, put
from kiln.entities.pipeline_triggers import trigger
from kiln.entities.pipelines import pipeline
from kiln.schemas.pipeline_triggers import (
    TriggerCreate,
    TriggerGet,
    TriggerList,
    TriggerPipeline,
    TriggerUpdate,
)
from kiln.services import pipeline_triggers as service

Req = Request[Any, Any, Any]
BASE = "/projects/{id:str}/triggers"
ONE = BASE + "/{trigger_id:str}"


def _one(request: Req, t: service.ShownTrigger, status: int = 200) -> Response[bytes]:
    return render(trigger(t.row, t.token, t.owner, base_url(request)), status=status)


@get(BASE, params=TriggerList)
async def list_triggers(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """A project's trigger tokens."""
    q: TriggerList = await params(request)
    page = page_of(q)
    found = service.list_triggers(db, actor, q.id, page, runtime(request).settings)
    base = base_url(request)
    return paginated(request, [trigger(t.row, t.token, t.owner, base) for t in found.shown], page, found.page)


@get(ONE, params=TriggerGet)
async def get_trigger(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """A trigger token."""
    q: TriggerGet = await params(request)
    return _one(request, service.get_trigger(db, actor, q.id, q.trigger_id, runtime(request).settings))


@post(BASE, params=TriggerCreate)
async def create_trigger(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Create a trigger token owned by the caller."""
    p: TriggerCreate = await params(request)
    t = await in_thread(service.create_trigger, db, actor, p.id, p.description, runtime(request).settings)
    return _one(request, t, status=201)


@put(ONE, params=TriggerUpdate)
async def update_trigger(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Change a trigger token's description (its owner)."""
    p: TriggerUpdate = await params(request)
    t = await in_thread(
        service.update_trigger, db, actor, p.id, p.trigger_id, p.description, runtime(request).settings
    )
    return _one(request, t)


@delete(ONE, params=TriggerGet)
async def delete_trigger(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Delete a trigger token."""
    p: TriggerGet = await params(request)
    await in_thread(service.delete_trigger, db, actor, p.id, p.trigger_id)
    return no_content()


async def _trigger(request: Req, db: Db) -> Response[bytes]:
    p: TriggerPipeline = await params(request)
    rt = runtime(request)
    done = await in_thread(
        service.trigger_pipeline, db, rt.settings, p.id, p.token, p.ref, p.variables, rt.job_token_resolver
    )
    return render(pipeline(done.pipeline, base_url(request), done.user, done.coverage), status=201)


@post("/projects/{id:str}/trigger/pipeline", auth="none", params=TriggerPipeline)
async def trigger_pipeline(request: Req, db: Db) -> Response[bytes]:
    """Start a pipeline with a trigger token (or a CI job token); no user session needed."""
    return await _trigger(request, db)


@post("/projects/{id:str}/ref/{ref:str}/trigger/pipeline", auth="none", params=TriggerPipeline)
async def trigger_pipeline_for_ref(request: Req, db: Db) -> Response[bytes]:
    """The same, with the ref in the path."""
    return await _trigger(request, db)


ROUTES: list[HTTPRouteHandler] = [
    list_triggers,
    get_trigger,
    create_trigger,
    update_trigger,
    delete_trigger,
    trigger_pipeline,
    trigger_pipeline_for_ref,
]
