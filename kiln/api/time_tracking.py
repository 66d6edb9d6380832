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
from kiln.schemas._types import Params
from kiln.schemas.time_tracking import (
    EstimateSet,
    IssueTime,
    MergeRequestEstimateSet,
    MergeRequestSpentAdd,
    MergeRequestTime,
    SpentAdd,
)
from kiln.services import time_tracking as service
from kiln.services.subjects import ISSUES, MERGE_REQUESTS, Kind

Req = Request[Any, Any, Any]


def _routes(
    kind: Kind,
    ref: str,
    one: str,
    infix: str,
    schemas: tuple[type[Params], type[Params], type[Params]],
) -> list[HTTPRouteHandler]:
    """The five endpoints on `one` ("an issue") of a kind, named `ref` in its path; `infix`
    goes into the route names (`set_{infix}time_estimate`) as they were first published;
    `schemas`: the contracts of reading, setting the estimate and adding time spent."""
    base = f"/{kind.parent}/{{id:str}}/{kind.path}/{{{ref}:str}}"
    noteable, owner = kind.noteable_type, f"{one}'s"
    time, estimate, spent = schemas

    async def set_time_estimate(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        p: Any = await params(request)
        stats = await in_thread(
            service.set_estimate_of, db, actor, p.id, getattr(p, ref), p.duration, kind=noteable
        )
        return render(time_stats(stats))

    async def reset_time_estimate(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        p: Any = await params(request)
        stats = await in_thread(service.reset_estimate_of, db, actor, p.id, getattr(p, ref), kind=noteable)
        return render(time_stats(stats))

    async def add_spent_time(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        p: Any = await params(request)
        stats = await in_thread(
            service.add_spent_of, db, actor, p.id, getattr(p, ref), p.duration, p.summary, kind=noteable
        )
        return render(time_stats(stats), status=201)

    async def reset_spent_time(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        p: Any = await params(request)
        stats = await in_thread(service.reset_spent_of, db, actor, p.id, getattr(p, ref), kind=noteable)
        return render(time_stats(stats))

    async def get_time_stats(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
        p: Any = await params(request)
        return render(time_stats(service.time_stats_of(db, viewer, p.id, getattr(p, ref), kind=noteable)))

    for fn, doc in (
        (set_time_estimate, f"Set {owner} time estimate."),
        (reset_time_estimate, f"Reset {owner} time estimate to none."),
        (add_spent_time, f"Add (or, negative, subtract) time spent on {one}."),
        (reset_spent_time, f"Reset the time spent on {one} to none."),
        (get_time_stats, f"{owner[0].upper()}{owner[1:]} time estimate and time spent."),
    ):
        verb, rest = fn.__name__.split("_", 1)
        fn.__name__ = fn.__qualname__ = f"{verb}_{infix}{rest}"
        fn.__doc__ = doc
    return [
        post(f"{base}/time_estimate", params=estimate, status=200)(set_time_estimate),
        post(f"{base}/reset_time_estimate", params=time, status=200)(reset_time_estimate),
        post(f"{base}/add_spent_time", params=spent)(add_spent_time),
        post(f"{base}/reset_spent_time", params=time, status=200)(reset_spent_time),
        get(f"{base}/time_stats", auth="optional", params=time)(get_time_stats),
    ]


ROUTES: list[HTTPRouteHandler] = [
    *_routes(ISSUES, "issue_iid", "an issue", "", (IssueTime, EstimateSet, SpentAdd)),
    *_routes(
        MERGE_REQUESTS,
        "merge_request_iid",
        "a merge request",
        "merge_request_",
        (MergeRequestTime, MergeRequestEstimateSet, MergeRequestSpentAdd),
    ),
]
