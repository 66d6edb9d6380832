"""Plan limits (GitLab's Plan limits API, administrators only)."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler

from kiln.api._deps import Authenticated, Db, in_thread
from kiln.api._params import params
from kiln.api._render import render
from kiln.api._routes import get, put
from kiln.entities.plan_limits import plan_limits
from kiln.policy import Action
from kiln.schemas.plan_limits import PlanLimitsGet, plan_limits_update
from kiln.services import plan_limits as service

Req = Request[Any, Any, Any]
ADMIN = Action.ADMIN_SETTINGS
PlanLimitsUpdate = plan_limits_update(service.NAMES)


@get("/application/plan_limits", params=PlanLimitsGet, requires=ADMIN)
async def get_plan_limits(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    q: PlanLimitsGet = await params(request)
    return render(plan_limits(service.read(db, actor, q.plan_name)))


@put("/application/plan_limits", params=PlanLimitsUpdate, requires=ADMIN)
async def update_plan_limits(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    p = await params(request)
    return render(plan_limits(await in_thread(service.change, db, actor, p)))


ROUTES: list[HTTPRouteHandler] = [get_plan_limits, update_plan_limits]
