"""The issues of an epic (GitLab's Epic Issues API) under /groups/:id/epics/:epic_iid/issues."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler

from kiln.api._deps import Authenticated, Db, base_url, in_thread
from kiln.api._pagination import page_of, paginated
from kiln.api._params import params
from kiln.api._render import render
from kiln.api._routes import delete, get, post, put
from kiln.entities.epic_issues import epic_issue, epic_issue_link
from kiln.entities.epics import epic
from kiln.entities.issues import issue
from kiln.pagination import Page
from kiln.schemas.epic_issues import EpicIssueAssign, EpicIssueList, EpicIssueMove, EpicIssueRef
from kiln.services import epic_issues as service
from kiln.services.epic_issues import EpicIssues, OneLink

Req = Request[Any, Any, Any]
ISSUES = "/groups/{id:str}/epics/{epic_iid:str}/issues"


def _listed(request: Req, found: EpicIssues, page: Page) -> Response[bytes]:
    base = base_url(request)
    views = [
        epic_issue(issue(row, found.related, base), link.id, link.relative_position)
        for link, row in found.page.items
    ]
    return paginated(request, views, page, found.page)


def _link(request: Req, one: OneLink, status: int = 200) -> Response[bytes]:
    base = base_url(request)
    epic_view = epic(one.epic.row, one.epic.related, base, seen=one.epic.seen)
    return render(
        epic_issue_link(one.id, one.relative_position, epic_view, issue(one.issue, one.related, base)), status
    )


@get(ISSUES, params=EpicIssueList)
async def list_epic_issues(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """The issues of an epic the caller may see, in the epic's order."""
    q: EpicIssueList = await params(request)
    page = page_of(q)
    return _listed(request, service.list_issues(db, actor, q, page), page)


@post(ISSUES + "/{issue_id:str}", params=EpicIssueAssign)
async def assign_epic_issue(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Put an issue (by global id) into the epic; it leaves any other epic."""
    p: EpicIssueAssign = await params(request)
    return _link(request, await in_thread(service.assign_issue, db, actor, p), 201)


@put(ISSUES + "/{epic_issue_id:str}", params=EpicIssueMove)
async def move_epic_issue(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Move an issue among the epic's others; answers the epic's issues."""
    p: EpicIssueMove = await params(request)
    page = page_of(p)
    return _listed(request, await in_thread(service.move_issue, db, actor, p, page), page)


@delete(ISSUES + "/{epic_issue_id:str}", params=EpicIssueRef, status=200)
async def remove_epic_issue(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Take an issue out of the epic; answers the link as it was."""
    p: EpicIssueRef = await params(request)
    return _link(request, await in_thread(service.remove_issue, db, actor, p))


ROUTES: list[HTTPRouteHandler] = [list_epic_issues, assign_epic_issue, move_epic_issue, remove_epic_issue]
