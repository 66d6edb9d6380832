"""Time tracking of issues and merge requests (GitLab's TimeTrackingEndpoints): the estimate,
the time spent, and both read back as time stats."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler

from kiln.api._deps import Authenticated, Db, Viewer, in_thread
from kiln.api._params import params
from kiln.api._render import render
from kiln.api._routes import get, post
from kiln.entities.time_tracking import time_stats
from kiln.schemas.time_tracking import (
    EstimateSet,
    IssueTime,
    MergeRequestEstimateSet,
    MergeRequestSpentAdd,
    MergeRequestTime,
    SpentAdd,
)
from kiln.services import time_tracking as service

Req = Request[Any, Any, Any]
BASE = "/projects/{id:str}/issues/{issue_iid:str}"
MR_BASE = "/projects/{id:str}/merge_requests/{merge_request_iid:str}"


@post(f"{BASE}/time_estimate", params=EstimateSet, status=200)
async def set_time_estimate(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Set an issue's time estimate."""
    p: EstimateSet = await params(request)
    stats = await in_thread(service.set_issue_estimate, db, actor, p.id, p.issue_iid, p.duration)
    return render(time_stats(stats))


@post(f"{BASE}/reset_time_estimate", params=IssueTime, status=200)
async def reset_time_estimate(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Reset an issue's time estimate to none."""
    p: IssueTime = await params(request)
    stats = await in_thread(service.reset_issue_estimate, db, actor, p.id, p.issue_iid)
    return render(time_stats(stats))


@post(f"{BASE}/add_spent_time", params=SpentAdd)
async def add_spent_time(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Add (or, negative, subtract) time spent on an issue."""
    p: SpentAdd = await params(request)
    stats = await in_thread(service.add_issue_spent, db, actor, p.id, p.issue_iid, p.duration, p.summary)
    return render(time_stats(stats), status=201)


@post(f"{BASE}/reset_spent_time", params=IssueTime, status=200)
async def reset_spent_time(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Reset the time spent on an issue to none."""
    p: IssueTime = await params(request)
    stats = await in_thread(service.reset_issue_spent, db, actor, p.id, p.issue_iid)
    return render(time_stats(stats))


@get(f"{BASE}/time_stats", auth="optional", params=IssueTime)
async def get_time_stats(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
    """An issue's time estimate and time spent."""
    p: IssueTime = await params(request)
    return render(time_stats(service.issue_time_stats(db, viewer, p.id, p.issue_iid)))


@post(f"{MR_BASE}/time_estimate", params=MergeRequestEstimateSet, status=200)
async def set_merge_request_time_estimate(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Set a merge request's time estimate."""
    p: MergeRequestEstimateSet = await params(request)
    stats = await in_thread(
        service.set_merge_request_estimate, db, actor, p.id, p.merge_request_iid, p.duration
    )
    return render(time_stats(stats))


@post(f"{MR_BASE}/reset_time_estimate", params=MergeRequestTime, status=200)
async def reset_merge_request_time_estimate(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Reset a merge request's time estimate to none."""
    p: MergeRequestTime = await params(request)
    stats = await in_thread(service.reset_merge_request_estimate, db, actor, p.id, p.merge_request_iid)
    return render(time_stats(stats))


@post(f"{MR_BASE}/add_spent_time", params=MergeRequestSpentAdd)
async def add_merge_request_spent_time(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Add (or, negative, subtract) time spent on a merge request."""
    p: MergeRequestSpentAdd = await params(request)
    stats = await in_thread(
        service.add_merge_request_spent, db, actor, p.id, p.merge_request_iid, p.duration, p.summary
    )
    return render(time_stats(stats), status=201)


@post(f"{MR_BASE}/reset_spent_time", params=MergeRequestTime, status=200)
async def reset_merge_request_spent_time(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Reset the time spent on a merge request to none."""
    p: MergeRequestTime = await params(request)
    stats = await in_thread(service.reset_merge_request_spent, db, actor, p.id, p.merge_request_iid)
    return render(time_stats(stats))


@get(f"{MR_BASE}/time_stats", auth="optional", params=MergeRequestTime)
async def get_merge_request_time_stats(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
    """A merge request's time estimate and time spent."""
    p: MergeRequestTime = await params(request)
    return render(time_stats(service.merge_request_time_stats(db, viewer, p.id, p.merge_request_iid)))


ROUTES: list[HTTPRouteHandler] = [
    set_time_estimate,
    reset_time_estimate,
    add_spent_time,
    reset_spent_time,
    get_time_stats,
    set_merge_request_time_estimate,
    reset_merge_request_time_estimate,
    add_merge_request_spent_time,
    reset_merge_request_spent_time,
    get_merge_request_time_stats,
]
