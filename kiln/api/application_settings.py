"""Application settings (GitLab's Application settings API): administrators read and change
the instance's settings."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler

from kiln.api._deps import Authenticated, Db, in_thread
from kiln.api._params import params
from kiln.api._render import render
from kiln.api._routes import get, put
from kiln.entities.application_settings import application_settings
from kiln.policy import Action
from kiln.schemas.application_settings import settings_update
from kiln.services import application_settings as service

Req = Request[Any, Any, Any]
ADMIN = Action.ADMIN_SETTINGS
SettingsUpdate = settings_update(service.update_kinds())


@get("/application/settings", requires=ADMIN)
async def get_application_settings(db: Db, actor: Authenticated) -> Response[bytes]:
    settings = service.read(db, actor)
    return render(application_settings(settings, settings))


@put("/application/settings", params=SettingsUpdate, requires=ADMIN)
async def update_application_settings(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    p = await params(request)
    settings = await in_thread(service.change, db, actor, p)
    return render(application_settings(settings, settings))


ROUTES: list[HTTPRouteHandler] = [get_application_settings, update_application_settings]
