"""Application statistics (GitLab's Application statistics API, administrators only)."""

from __future__ import annotations

from litestar import Response
from litestar.handlers import HTTPRouteHandler

from kiln.api._deps import Authenticated, Db
from kiln.api._render import render
from kiln.api._routes import get
from kiln.entities.application_statistics import application_statistics
from kiln.policy import Action
from kiln.services import application_statistics as service


@get("/application/statistics", requires=Action.ADMIN_SETTINGS)
async def get_application_statistics(db: Db, actor: Authenticated) -> Response[bytes]:
    return render(application_statistics(service.read(db, actor)))


ROUTES: list[HTTPRouteHandler] = [get_application_statistics]
