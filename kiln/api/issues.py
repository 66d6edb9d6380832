"""Issues (GitLab's Issues API): the three lists, one issue, opening, changing and deleting
issues, subscriptions, participants, moving, cloning and ordering."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler

from kiln.api._deps import Authenticated, Db, Viewer, base_url, in_thread, runtime
from kiln.api._pagination import page_of, paginated
from kiln.api._params import params
from kiln.api._render import no_content, not_modified, render
from kiln.api._routes import delete, get, post, put
from kiln.auth.actor import Actor
from kiln.entities.issues import issue, issues
from kiln.entities.merge_requests import merge_requests
from kiln.entities.users import user_basic
from kiln.schemas.issues import (
    IssueById,
    IssueClone,
    IssueCreate,
    IssueFilters,
    IssueGet,
    IssueList,
    IssueMove,
    IssueReorder,
    IssueUpdate,
    ParticipantList,
)
from kiln.services import issues as service
from kiln.services.issues import ListKind, OneIssue

Req = Request[Any, Any, Any]
PROJECT_ISSUE = "/projects/{id:str}/issues/{issue_iid:str}"


def _one(request: Req, one: OneIssue, status: int = 200) -> Response[bytes]:
    view = issue(one.row, one.related, base_url(request), context=one.context, subscribed=one.subscribed)
    return render(view, status=status)


def _list_of(request: Req, db: Db, viewer: Actor | None, kind: ListKind, q: IssueFilters) -> Response[bytes]:
    page = page_of(q)
    found = service.list_issues(db, viewer, kind, q, page, settings=runtime(request).settings)
    views = issues(
        found.page.items,
        found.related,
        base_url(request),
        context=found.context,
        with_labels_details=q.with_labels_details,
    )
    return paginated(request, views, page, found.page)


@get("/issues", params=IssueList)
async def list_all_issues(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Issues the caller sees across projects (their own unless `scope=all`)."""
    return _list_of(request, db, actor, "all", await params(request))


@get("/groups/{id:str}/issues", auth="optional", params=IssueList)
async def list_group_issues(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
    """Issues of a group's projects, its subgroups' included."""
    return _list_of(request, db, viewer, "groups", await params(request))


@get("/projects/{id:str}/issues", auth="optional", params=IssueList)
async def list_project_issues(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
    """Issues of a project."""
    return _list_of(request, db, viewer, "projects", await params(request))


@get(PROJECT_ISSUE, auth="optional", params=IssueGet)
async def get_issue(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
    """One issue of a project."""
    p: IssueGet = await params(request)
    return _one(request, service.get_issue(db, viewer, p.id, p.issue_iid, settings=runtime(request).settings))


@get("/issues/{id:str}", params=IssueById)
async def get_issue_by_id(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Any issue by its global id (administrators)."""
    p: IssueById = await params(request)
    return _one(request, service.get_issue_by_id(db, actor, p.id))


@post("/projects/{id:str}/issues", params=IssueCreate, status=201)
async def create_issue(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Open an issue."""
    p: IssueCreate = await params(request)
    one = await in_thread(service.create_issue, db, actor, p)
    return _one(request, one, 201)


@put(PROJECT_ISSUE, params=IssueUpdate)
async def update_issue(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Change, close or reopen an issue."""
    p: IssueUpdate = await params(request)
    return _one(request, await in_thread(service.update_issue, db, actor, p))


@delete(PROJECT_ISSUE, params=IssueGet, status=204)
async def delete_issue(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Delete an issue (Owners, administrators)."""
    p: IssueGet = await params(request)
    await in_thread(service.delete_issue, db, actor, p.id, p.issue_iid)
    return no_content()


@post(f"{PROJECT_ISSUE}/subscribe", params=IssueGet, status=201)
async def subscribe_to_issue(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Subscribe to an issue; 304 when subscribed already."""
    p: IssueGet = await params(request)
    one = await in_thread(service.set_subscription, db, actor, p.id, p.issue_iid, True)
    return not_modified() if one is None else _one(request, one, 201)


@post(f"{PROJECT_ISSUE}/unsubscribe", params=IssueGet, status=201)
async def unsubscribe_from_issue(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Unsubscribe from an issue; 304 when not subscribed."""
    p: IssueGet = await params(request)
    one = await in_thread(service.set_subscription, db, actor, p.id, p.issue_iid, False)
    return not_modified() if one is None else _one(request, one, 201)


@get(f"{PROJECT_ISSUE}/participants", auth="optional", params=ParticipantList)
async def issue_participants(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
    """Who takes part in an issue: its author, assignees and commenters."""
    p: ParticipantList = await params(request)
    page = page_of(p)
    found = service.participants(db, viewer, p.id, p.issue_iid, page)
    base = base_url(request)
    return paginated(request, [user_basic(u, base) for u in found.items], page, found)


@post(f"{PROJECT_ISSUE}/move", params=IssueMove, status=201)
async def move_issue(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Move an issue to another project (closed here, opened there)."""
    p: IssueMove = await params(request)
    return _one(request, await in_thread(service.move_issue, db, actor, p), 201)


@post(f"{PROJECT_ISSUE}/clone", params=IssueClone, status=201)
async def clone_issue(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Copy an issue to another project."""
    p: IssueClone = await params(request)
    return _one(request, await in_thread(service.clone_issue, db, actor, p), 201)


@put(f"{PROJECT_ISSUE}/reorder", params=IssueReorder)
async def reorder_issue(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Place an issue between two others (its relative position)."""
    p: IssueReorder = await params(request)
    return _one(request, await in_thread(service.reorder_issue, db, actor, p))


def _merge_requests_of(request: Req, found: service.MergeRequestsOf, page: Any) -> Response[bytes]:
    views = merge_requests(found.page.items, found.related, base_url(request), context=found.context)
    return paginated(request, views, page, found.page)


@get(f"{PROJECT_ISSUE}/closed_by", auth="optional", params=ParticipantList)
async def issue_closed_by(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
    """The project's merge requests that close the issue when merged."""
    p: ParticipantList = await params(request)
    page = page_of(p)
    found = service.closed_by(db, viewer, runtime(request).settings, p.id, p.issue_iid, page)
    return _merge_requests_of(request, found, page)


@get(f"{PROJECT_ISSUE}/related_merge_requests", auth="optional", params=ParticipantList)
async def issue_related_merge_requests(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
    """Merge requests that name or close the issue."""
    p: ParticipantList = await params(request)
    page = page_of(p)
    found = service.related_merge_requests(db, viewer, runtime(request).settings, p.id, p.issue_iid, page)
    return _merge_requests_of(request, found, page)


ROUTES: list[HTTPRouteHandler] = [
    list_all_issues,
    list_group_issues,
    list_project_issues,
    get_issue,
    get_issue_by_id,
    create_issue,
    update_issue,
    delete_issue,
    subscribe_to_issue,
    unsubscribe_from_issue,
    issue_participants,
    move_issue,
    clone_issue,
    reorder_issue,
    issue_closed_by,
    issue_related_merge_requests,
]
