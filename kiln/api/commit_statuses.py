"""Commit statuses (GitLab's Commits API, its statuses part): report a status of a commit
from outside kiln, and list a commit's statuses."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler

from kiln.api._deps import Authenticated, Db, base_url, in_thread, runtime
from kiln.api._pagination import page_of, paginated
from kiln.api._params import params
from kiln.api._render import render
from kiln.api._routes import get, post
from kiln.entities.commit_statuses import commit_status
from kiln.schemas.commit_statuses import StatusCreate, StatusList
from kiln.services import commit_statuses as service

Req = Request[Any, Any, Any]


@get("/projects/{id:str}/repository/commits/{sha:str}/statuses", params=StatusList)
async def list_commit_statuses(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """A commit's statuses: external ones and its pipelines' jobs."""
    q: StatusList = await params(request)
    page = page_of(q)
    found = service.list_statuses(db, actor, q.id, q, page)
    base = base_url(request)
    items = [commit_status(r, found.authors.get(r.user_id), base) for r in found.page.items]
    return paginated(request, items, page, found.page)


@post("/projects/{id:str}/statuses/{sha:str}", params=StatusCreate)
async def create_commit_status(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Report the status of a commit (an external job of its pipeline)."""
    p: StatusCreate = await params(request)
    one = await in_thread(service.create_status, db, actor, p.id, p, runtime(request).settings)
    return render(commit_status(one.row, one.author, base_url(request)), status=201)


ROUTES: list[HTTPRouteHandler] = [list_commit_statuses, create_commit_status]
