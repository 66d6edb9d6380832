"""Merge requests (GitLab's Merge Requests API): the three lists, one merge request, opening,
changing and deleting merge requests, subscriptions, participants, reviewers, commits,
changes and diffs, and a commit's merge requests."""

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
from kiln.entities.compare import diff_entry
from kiln.entities.issues import issues
from kiln.entities.merge_requests import diff_commit, merge_requests, reviewer, single, with_changes
from kiln.entities.users import user_basic
from kiln.schemas.merge_requests import (
    CommitMergeRequests,
    MergeRequestChanges,
    MergeRequestCreate,
    MergeRequestDiffs,
    MergeRequestFilters,
    MergeRequestGet,
    MergeRequestList,
    MergeRequestPage,
    MergeRequestUpdate,
)
from kiln.services import merge_requests as service
from kiln.services.merge_requests import ListKind, OneMergeRequest

Req = Request[Any, Any, Any]
PROJECT_MR = "/projects/{id:str}/merge_requests/{merge_request_iid:str}"


def _single(request: Req, one: OneMergeRequest) -> dict[str, Any]:
    return single(one.row, one.related, base_url(request), one.single, context=one.context)


def render_one(request: Req, one: OneMergeRequest, status: int = 200) -> Response[bytes]:
    """The single view of a merge request (other merge request routes answer with it too)."""
    return render(_single(request, one), status=status)


def _list_of(
    request: Req, db: Db, viewer: Actor | None, kind: ListKind, q: MergeRequestFilters
) -> Response[bytes]:
    page = page_of(q)
    found = service.list_merge_requests(db, viewer, kind, q, page)
    views = merge_requests(
        found.page.items,
        found.related,
        base_url(request),
        context=found.context,
        with_labels_details=q.with_labels_details,
        simple=q.view == "simple",
    )
    return paginated(request, views, page, found.page)


@get("/merge_requests", params=MergeRequestList)
async def list_all_merge_requests(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Merge requests the caller sees across projects (their own unless `scope=all`)."""
    return _list_of(request, db, actor, "all", await params(request))


@get("/groups/{id:str}/merge_requests", auth="optional", params=MergeRequestList)
async def list_group_merge_requests(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
    """Merge requests of a group's projects, its subgroups' included."""
    return _list_of(request, db, viewer, "groups", await params(request))


@get("/projects/{id:str}/merge_requests", auth="optional", params=MergeRequestList)
async def list_project_merge_requests(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
    """Merge requests of a project."""
    return _list_of(request, db, viewer, "projects", await params(request))


@get(PROJECT_MR, auth="optional", params=MergeRequestGet)
async def get_merge_request(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
    """One merge request of a project."""
    p: MergeRequestGet = await params(request)
    settings = runtime(request).settings
    return render_one(
        request, service.get_merge_request(db, viewer, p.id, p.merge_request_iid, settings=settings)
    )


@post("/projects/{id:str}/merge_requests", params=MergeRequestCreate, status=201)
async def create_merge_request(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Open a merge request (from a fork: the route's project is the source)."""
    p: MergeRequestCreate = await params(request)
    one = await in_thread(service.create_merge_request, db, actor, runtime(request).settings, p)
    return render_one(request, one, 201)


@put(PROJECT_MR, params=MergeRequestUpdate)
async def update_merge_request(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Change, close or reopen a merge request."""
    p: MergeRequestUpdate = await params(request)
    return render_one(
        request, await in_thread(service.update_merge_request, db, actor, runtime(request).settings, p)
    )


@delete(PROJECT_MR, params=MergeRequestGet, status=204)
async def delete_merge_request(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Delete a merge request (Owners, administrators)."""
    p: MergeRequestGet = await params(request)
    await in_thread(
        service.delete_merge_request, db, actor, runtime(request).settings, p.id, p.merge_request_iid
    )
    return no_content()


@post(f"{PROJECT_MR}/subscribe", params=MergeRequestGet, status=201)
async def subscribe_to_merge_request(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Subscribe to a merge request; 304 when subscribed already."""
    p: MergeRequestGet = await params(request)
    settings = runtime(request).settings
    one = await in_thread(service.set_subscription, db, actor, settings, p.id, p.merge_request_iid, True)
    return not_modified() if one is None else render_one(request, one, 201)


@post(f"{PROJECT_MR}/unsubscribe", params=MergeRequestGet, status=201)
async def unsubscribe_from_merge_request(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Unsubscribe from a merge request; 304 when not subscribed."""
    p: MergeRequestGet = await params(request)
    settings = runtime(request).settings
    one = await in_thread(service.set_subscription, db, actor, settings, p.id, p.merge_request_iid, False)
    return not_modified() if one is None else render_one(request, one, 201)


@get(f"{PROJECT_MR}/participants", auth="optional", params=MergeRequestPage)
async def merge_request_participants(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
    """Who takes part in a merge request: its author, assignees, reviewers and commenters."""
    p: MergeRequestPage = await params(request)
    page = page_of(p)
    found = service.participants(db, viewer, p.id, p.merge_request_iid, page)
    base = base_url(request)
    return paginated(request, [user_basic(u, base) for u in found.items], page, found)


@get(f"{PROJECT_MR}/reviewers", auth="optional", params=MergeRequestGet)
async def merge_request_reviewers(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
    """The reviewers of a merge request and where their review stands."""
    p: MergeRequestGet = await params(request)
    base = base_url(request)
    found = service.reviewers(db, viewer, p.id, p.merge_request_iid)
    return render([reviewer(user, state, created_at, base) for user, state, created_at in found])


@get(f"{PROJECT_MR}/commits", auth="optional", params=MergeRequestPage)
async def merge_request_commits(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
    """The commits of the latest version, newest first."""
    p: MergeRequestPage = await params(request)
    page = page_of(p)
    found = service.commits(db, viewer, p.id, p.merge_request_iid, page)
    web = f"{base_url(request)}/{found.project_path}"
    return paginated(request, [diff_commit(c, web) for c in found.page.items], page, found.page)


@get(f"{PROJECT_MR}/changes", auth="optional", params=MergeRequestChanges)
async def merge_request_changes(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
    """The merge request with the files its latest version changes."""
    p: MergeRequestChanges = await params(request)
    settings = runtime(request).settings
    one, found = service.changes(db, viewer, settings, p.id, p.merge_request_iid, raw=p.access_raw_diffs)
    return render(with_changes(_single(request, one), found, unidiff=p.unidiff))


@get(f"{PROJECT_MR}/diffs", auth="optional", params=MergeRequestDiffs)
async def merge_request_diffs(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
    """The files the latest version changes, a page at a time."""
    p: MergeRequestDiffs = await params(request)
    page = page_of(p)
    found = service.diffs(db, viewer, runtime(request).settings, p.id, p.merge_request_iid, page)
    return paginated(request, [diff_entry(d, unidiff=p.unidiff) for d in found.items], page, found)


def _issues_of(request: Req, found: service.IssuesOf, page: Any) -> Response[bytes]:
    views = issues(found.page.items, found.related, base_url(request), context=found.context)
    return paginated(request, views, page, found.page)


@get(f"{PROJECT_MR}/related_issues", auth="optional", params=MergeRequestPage)
async def merge_request_related_issues(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
    """Issues the merge request's title and description name."""
    p: MergeRequestPage = await params(request)
    page = page_of(p)
    found = service.related_issues(db, viewer, runtime(request).settings, p.id, p.merge_request_iid, page)
    return _issues_of(request, found, page)


@get(f"{PROJECT_MR}/closes_issues", auth="optional", params=MergeRequestPage)
async def merge_request_closes_issues(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
    """Issues merging the merge request closes (GitLab's closing pattern)."""
    p: MergeRequestPage = await params(request)
    page = page_of(p)
    found = service.closes_issues(db, viewer, runtime(request).settings, p.id, p.merge_request_iid, page)
    return _issues_of(request, found, page)


@get(
    "/projects/{id:str}/repository/commits/{sha:str}/merge_requests",
    auth="optional",
    params=CommitMergeRequests,
)
async def commit_merge_requests(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
    """Merge requests that hold a commit, or were merged by it."""
    p: CommitMergeRequests = await params(request)
    page = page_of(p)
    found = service.commit_merge_requests(db, viewer, p.id, p.sha, page)
    views = merge_requests(found.page.items, found.related, base_url(request), context=found.context)
    return paginated(request, views, page, found.page)


ROUTES: list[HTTPRouteHandler] = [
    list_all_merge_requests,
    list_group_merge_requests,
    list_project_merge_requests,
    get_merge_request,
    create_merge_request,
    update_merge_request,
    delete_merge_request,
    subscribe_to_merge_request,
    unsubscribe_from_merge_request,
    merge_request_participants,
    merge_request_reviewers,
    merge_request_commits,
    merge_request_changes,
    merge_request_diffs,
    merge_request_related_issues,
    merge_request_closes_issues,
    commit_merge_requests,
]
