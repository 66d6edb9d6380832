"""Issue links (GitLab's Issue links API): /projects/:id/issues/:issue_iid/links."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler

from kiln.api._deps import Authenticated, Db, Viewer, base_url, in_thread
from kiln.api._params import params
from kiln.api._render import render
from kiln.api._routes import delete, get, post
from kiln.entities.issue_links import issue_link, linked_issues
from kiln.schemas.issue_links import LinkCreate, LinkGet, LinkList
from kiln.services import issue_links as service

Req = Request[Any, Any, Any]
BASE = "/projects/{id:str}/issues/{issue_iid:str}/links"


@get(BASE, auth="optional", params=LinkList)
async def list_issue_links(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
    """The issues linked to an issue that the caller may see."""
    q: LinkList = await params(request)
    return render(linked_issues(service.list_links(db, viewer, q.id, q.issue_iid), base_url(request)))


@get(f"{BASE}/{{issue_link_id:str}}", auth="optional", params=LinkGet)
async def get_issue_link(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
    """One link of an issue, with both its ends."""
    q: LinkGet = await params(request)
    found = service.get_link(db, viewer, q.id, q.issue_iid, q.issue_link_id)
    return render(issue_link(found, base_url(request)))


@post(BASE, params=LinkCreate)
async def create_issue_link(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Link an issue to another."""
    p: LinkCreate = await params(request)
    found = await in_thread(
        service.create_link,
        db,
        actor,
        p.id,
        p.issue_iid,
        p.target_project_id,
        p.target_issue_iid,
        p.link_type,
    )
    return render(issue_link(found, base_url(request)), status=201)


@delete(f"{BASE}/{{issue_link_id:str}}", params=LinkGet, status=200)
async def delete_issue_link(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Remove a link of an issue; answers the link as it was."""
    p: LinkGet = await params(request)
    found = await in_thread(service.delete_link, db, actor, p.id, p.issue_iid, p.issue_link_id)
    return render(issue_link(found, base_url(request)))


ROUTES: list[HTTPRouteHandler] = [list_issue_links, get_issue_link, create_issue_link, delete_issue_link]
