"""Resource events (GitLab's resource label, milestone, state and weight events APIs) of an
issue (/projects/:id/issues/:issue_iid/…), the label, milestone and state events of a merge
request (/projects/:id/merge_requests/:merge_request_iid/…) and the label events of an epic
(/groups/:id/epics/:epic_id/…, the epic's global id)."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler

from kiln.api._deps import Db, Viewer, runtime
from kiln.api._pagination import page_of, paginated
from kiln.api._params import params
from kiln.api._render import render
from kiln.api._routes import get
from kiln.entities.resource_events import VIEWS
from kiln.schemas._types import PageParams, Params
from kiln.schemas.resource_events import (
    EpicEventGet,
    EpicEventList,
    IssueEventGet,
    IssueEventList,
    MergeRequestEventGet,
    MergeRequestEventList,
)
from kiln.services import resource_events as service
from kiln.services.resource_events import Kind

Req = Request[Any, Any, Any]
_CONTRACTS: dict[str, tuple[type[PageParams], type[Params]]] = {
    "issues": (IssueEventList, IssueEventGet),
    "merge_requests": (MergeRequestEventList, MergeRequestEventGet),
    "epics": (EpicEventList, EpicEventGet),
}


def _routes(kind: Kind, parent: str, resources: str, ref: str, singular: str) -> list[HTTPRouteHandler]:
    base = f"/{parent}/{{id:str}}/{resources}/{{{ref}:str}}/resource_{kind}_events"
    view = VIEWS[kind]
    listing, getting = _CONTRACTS[resources]

    async def list_events(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
        q: Any = await params(request)
        page = page_of(q)
        found = service.list_events(db, viewer, kind, resources, q.id, getattr(q, ref), page)
        url = runtime(request).settings.external_url
        assert found.page is not None
        return paginated(request, [view(r, found, url) for r in found.items], page, found.page)

    async def get_event(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
        q: Any = await params(request)
        found = service.get_event(db, viewer, kind, resources, q.id, getattr(q, ref), q.event_id)
        return render(view(found.items[0], found, runtime(request).settings.external_url))

    for fn, doc in (
        (list_events, f"The {kind} events of {singular}, oldest first."),
        (get_event, f"One {kind} event of {singular}."),
    ):
        fn.__name__ = fn.__qualname__ = f"{fn.__name__}_{kind}_of_{resources}"
        fn.__doc__ = doc
    return [
        get(base, auth="optional", params=listing)(list_events),
        get(f"{base}/{{event_id:str}}", auth="optional", params=getting)(get_event),
    ]


ROUTES: list[HTTPRouteHandler] = [
    *(
        route
        for kind in ("label", "milestone", "state", "weight")
        for route in _routes(kind, "projects", "issues", "issue_iid", "an issue")
    ),
    *(
        route
        for kind in ("label", "milestone", "state")
        for route in _routes(kind, "projects", "merge_requests", "merge_request_iid", "a merge request")
    ),
    *_routes("label", "groups", "epics", "epic_id", "an epic"),
]
