"""GitLab's Markdown API: `POST /markdown` renders a text as kiln renders `*_html` fields."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler

from kiln.api._deps import Authenticated, Db, in_thread, runtime
from kiln.api._params import params
from kiln.api._render import render
from kiln.api._routes import post
from kiln.schemas.markdown import MarkdownRender
from kiln.services import markdown as service

Req = Request[Any, Any, Any]


@post("/markdown", params=MarkdownRender)
async def render_markdown(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Render Markdown (GitLab Flavored with `gfm`, references read from `project`)."""
    p: MarkdownRender = await params(request)
    html = await in_thread(service.render, db, actor, p, runtime(request).settings.external_url)
    return render({"html": html}, status=201)


ROUTES: list[HTTPRouteHandler] = [render_markdown]
