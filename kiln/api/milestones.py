"""Milestones (GitLab's project and group milestones APIs): the same routes under
/projects/:id and /groups/:id, and a project milestone's promotion to its group."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler

from kiln.api._deps import Authenticated, Db, base_url, in_thread
from kiln.api._pagination import page_of, paginated
from kiln.api._params import params
from kiln.api._render import no_content, render
from kiln.api._routes import delete, get, post, put
from kiln.entities.issues import Context, issues
from kiln.entities.merge_requests import merge_requests
from kiln.entities.milestones import burndown_event, milestone
from kiln.schemas.milestones import (
    MilestoneCreate,
    MilestoneGet,
    MilestoneList,
    MilestonePage,
    MilestoneUpdate,
)
from kiln.services import milestones as service
from kiln.services.milestones import Kind

Req = Request[Any, Any, Any]


def _routes(kind: Kind, singular: str) -> list[HTTPRouteHandler]:
    base = f"/{kind}/{{id:str}}/milestones"
    one = f"{base}/{{milestone_id:str}}"

    async def list_milestones(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        q: MilestoneList = await params(request)
        page = page_of(q)
        found = service.list_milestones(db, actor, kind, q, page)
        url = base_url(request)
        return paginated(request, [milestone(r, url) for r in found.items], page, found)

    async def get_milestone(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        q: MilestoneGet = await params(request)
        return render(
            milestone(service.get_milestone(db, actor, kind, q.id, q.milestone_id), base_url(request))
        )

    async def create_milestone(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        p: MilestoneCreate = await params(request)
        row = await in_thread(service.create_milestone, db, actor, kind, p)
        return render(milestone(row, base_url(request)), status=201)

    async def update_milestone(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        p: MilestoneUpdate = await params(request)
        row = await in_thread(service.update_milestone, db, actor, kind, p)
        return render(milestone(row, base_url(request)))

    async def delete_milestone(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        p: MilestoneGet = await params(request)
        await in_thread(service.delete_milestone, db, actor, kind, p.id, p.milestone_id)
        return no_content()

    async def milestone_issues(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        q: MilestonePage = await params(request)
        page = page_of(q)
        found = service.milestone_issues(db, actor, kind, q.id, q.milestone_id, page)
        context = Context(project_id=found.project_id, namespace_id=found.namespace_id)
        views = issues(found.page.items, found.related, base_url(request), context=context)
        return paginated(request, views, page, found.page)

    async def milestone_merge_requests(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        q: MilestonePage = await params(request)
        page = page_of(q)
        found = service.milestone_merge_requests(db, actor, kind, q.id, q.milestone_id, page)
        context = Context(project_id=found.project_id, namespace_id=found.namespace_id)
        views = merge_requests(found.page.items, found.related, base_url(request), context=context)
        return paginated(request, views, page, found.page)

    async def milestone_burndown_events(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        q: MilestoneGet = await params(request)
        found = service.burndown_events(db, actor, kind, q.id, q.milestone_id)
        return render([burndown_event(e.created_at, e.weight, e.action) for e in found])

    # Distinct names keep the OpenAPI operation ids unique.
    for fn, doc in (
        (list_milestones, f"Milestones of a {singular}."),
        (get_milestone, f"A milestone of a {singular}."),
        (create_milestone, f"Add a milestone to a {singular}."),
        (update_milestone, f"Change, close or reopen a milestone of a {singular}."),
        (delete_milestone, f"Delete a milestone of a {singular}; its issues and merge requests lose it."),
        (milestone_issues, f"The issues planned against a milestone of a {singular}."),
        (milestone_merge_requests, f"The merge requests planned against a milestone of a {singular}."),
        (milestone_burndown_events, f"The burndown chart events of a milestone of a {singular}."),
    ):
        fn.__name__ = fn.__qualname__ = f"{fn.__name__}_of_{singular}"
        fn.__doc__ = doc
    return [
        get(base, params=MilestoneList)(list_milestones),
        get(one, params=MilestoneGet)(get_milestone),
        post(base, params=MilestoneCreate)(create_milestone),
        put(one, params=MilestoneUpdate)(update_milestone),
        delete(one, params=MilestoneGet)(delete_milestone),
        get(f"{one}/issues", params=MilestonePage)(milestone_issues),
        get(f"{one}/merge_requests", params=MilestonePage)(milestone_merge_requests),
        get(f"{one}/burndown_events", params=MilestoneGet)(milestone_burndown_events),
    ]


async def promote_milestone(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Promote a project milestone to a milestone of the project's group."""
    p: MilestoneGet = await params(request)
    row = await in_thread(service.promote_milestone, db, actor, p.id, p.milestone_id)
    return render(milestone(row, base_url(request)), status=200)


ROUTES: list[HTTPRouteHandler] = [
    *_routes("groups", "group"),
    *_routes("projects", "project"),
    post("/projects/{id:str}/milestones/{milestone_id:str}/promote", params=MilestoneGet, status=200)(
        promote_milestone
    ),
]
