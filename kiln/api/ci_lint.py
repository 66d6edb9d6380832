"""The CI Lint API (GitLab's lib/api/lint.rb): check a configuration sent in, or the
project's own."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler

from kiln.api._deps import Authenticated, Db, Viewer, in_thread, runtime
from kiln.api._params import params
from kiln.api._render import render
from kiln.api._routes import get, post
from kiln.entities.ci_lint import lint_result
from kiln.schemas.ci_lint import LintContent, LintProject
from kiln.services import ci_lint as service

Req = Request[Any, Any, Any]


@get("/projects/{id:str}/ci/lint", auth="optional", params=LintProject)
async def lint_project_config(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
    """Check the project's CI configuration at a commit."""
    q: LintProject = await params(request)
    result = service.lint_project(db, viewer, q, runtime(request).settings)
    return render(lint_result(result, q.include_jobs))


@post("/projects/{id:str}/ci/lint", params=LintContent, status=200)
async def lint_config(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Check a CI configuration in the project's context."""
    p: LintContent = await params(request)
    result = await in_thread(service.lint_content, db, actor, p, runtime(request).settings)
    return render(lint_result(result, p.include_jobs))


ROUTES: list[HTTPRouteHandler] = [lint_project_config, lint_config]
