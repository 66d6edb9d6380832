"""Badges (GitLab's Badges API): the same routes under /groups/:id and /projects/:id."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler

from kiln.api._deps import Authenticated, Db, Viewer, in_thread, runtime
from kiln.api._pagination import page_of, paginated
from kiln.api._params import params
from kiln.api._render import no_content, render
from kiln.api._routes import delete, get, post, put
from kiln.entities.badges import badge, badge_preview
from kiln.schemas.badges import BadgeCreate, BadgeGet, BadgeList, BadgeRender, BadgeUpdate
from kiln.services import badges as service
from kiln.services.badges import Kind

Req = Request[Any, Any, Any]


def _routes(kind: Kind, singular: str) -> list[HTTPRouteHandler]:
    base = f"/{kind}/{{id:str}}/badges"
    # A single group badge is shown without its name, as GitLab documents it.
    named = kind == "projects"

    async def list_badges(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
        q: BadgeList = await params(request)
        page = page_of(q)
        found = service.list_badges(db, viewer, kind, q, page, runtime(request).settings)
        return paginated(request, [badge(r, found.values) for r in found.page.items], page, found.page)

    async def render_badge(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        p: BadgeRender = await params(request)
        preview = service.render(db, actor, kind, p, runtime(request).settings)
        return render(badge_preview(preview.link_url, preview.image_url, preview.values))

    async def get_badge(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
        q: BadgeGet = await params(request)
        one = service.get_badge(db, viewer, kind, q.id, q.badge_id, runtime(request).settings)
        return render(badge(one.row, one.values, with_name=named))

    async def add_badge(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        p: BadgeCreate = await params(request)
        one = await in_thread(service.create_badge, db, actor, kind, p, runtime(request).settings)
        return render(badge(one.row, one.values, with_name=named), status=201)

    async def update_badge(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        p: BadgeUpdate = await params(request)
        one = await in_thread(service.update_badge, db, actor, kind, p, runtime(request).settings)
        return render(badge(one.row, one.values, with_name=named))

    async def remove_badge(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        p: BadgeGet = await params(request)
        await in_thread(service.delete_badge, db, actor, kind, p.id, p.badge_id)
        return no_content()

    # Distinct names keep the OpenAPI operation ids unique.
    for fn, doc in (
        (list_badges, f"Badges of a {singular}."),
        (render_badge, f"Preview a badge of a {singular} with its placeholders filled."),
        (get_badge, f"A badge of a {singular}."),
        (add_badge, f"Add a badge to a {singular}."),
        (update_badge, f"Change a badge of a {singular}."),
        (remove_badge, f"Remove a badge from a {singular}."),
    ):
        fn.__name__ = fn.__qualname__ = f"{fn.__name__}_of_{singular}"
        fn.__doc__ = doc
    one = f"{base}/{{badge_id:str}}"
    return [
        get(base, auth="optional", params=BadgeList)(list_badges),
        get(f"{base}/render", params=BadgeRender)(render_badge),
        get(one, auth="optional", params=BadgeGet)(get_badge),
        post(base, params=BadgeCreate)(add_badge),
        put(one, params=BadgeUpdate)(update_badge),
        delete(one, params=BadgeGet)(remove_badge),
    ]


ROUTES: list[HTTPRouteHandler] = [*_routes("groups", "group"), *_routes("projects", "project")]
