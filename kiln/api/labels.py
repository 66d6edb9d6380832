"""Labels (GitLab's Labels and Group Labels APIs): the same routes under /projects/:id and
/groups/:id, a label named by its id or its URL-encoded title; a project label is promoted
to its group's. The older forms naming the label in the parameters are served too."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler

from kiln.api._deps import Authenticated, Db, in_thread
from kiln.api._pagination import page_of, paginated
from kiln.api._params import params
from kiln.api._render import no_content, not_modified, render
from kiln.api._routes import delete, get, post, put
from kiln.entities.labels import label
from kiln.schemas.labels import (
    GroupLabelUpdate,
    GroupLabelUpdateOneOf,
    LabelCreate,
    LabelGet,
    LabelList,
    LabelRef,
    LabelRefByName,
    LabelRefOneOf,
    LabelUpdate,
    LabelUpdateOneOf,
)
from kiln.services import labels as service
from kiln.services.labels import Kind, OneLabel

Req = Request[Any, Any, Any]


def _view(one: OneLabel) -> dict[str, Any]:
    return label(one.row, subscribed=one.subscribed, in_project=one.in_project)


def _not_modified() -> Response[bytes]:
    return not_modified()


def _routes(kind: Kind, singular: str) -> list[HTTPRouteHandler]:
    base = f"/{kind}/{{id:str}}/labels"
    one = f"{base}/{{label_id:str}}"
    update_params = LabelUpdate if kind == "projects" else GroupLabelUpdate
    update_one_of = LabelUpdateOneOf if kind == "projects" else GroupLabelUpdateOneOf
    # GitLab's group route takes `name` alone; the project's `label_id` or `name`.
    delete_one_of = LabelRefOneOf if kind == "projects" else LabelRefByName

    async def list_labels(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        q: LabelList = await params(request)
        page = page_of(q)
        found = service.list_labels(db, actor, kind, q, page)
        views = [
            label(
                row,
                subscribed=row.id in found.subscribed,
                counts=None if found.counts is None else found.counts.get(row.id, service.finder.NO_COUNTS),
                in_project=found.in_project,
            )
            for row in found.page.items
        ]
        return paginated(request, views, page, found.page)

    async def get_label(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        q: LabelGet = await params(request)
        return render(_view(service.get_label(db, actor, kind, q)))

    async def create_label(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        p: LabelCreate = await params(request)
        return render(_view(await in_thread(service.create_label, db, actor, kind, p)), status=201)

    async def update_label(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        p: LabelUpdate = await params(request)
        return render(_view(await in_thread(service.update_label, db, actor, kind, p)))

    async def delete_label(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        p: LabelRef = await params(request)
        await in_thread(service.delete_label, db, actor, kind, p.id, p.ident())
        return no_content()

    async def subscribe_label(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        p: LabelRef = await params(request)
        one = await in_thread(service.set_subscribed, db, actor, kind, p.id, p.ident(), True)
        return _not_modified() if one is None else render(_view(one), status=201)

    async def unsubscribe_label(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        p: LabelRef = await params(request)
        one = await in_thread(service.set_subscribed, db, actor, kind, p.id, p.ident(), False)
        return _not_modified() if one is None else render(_view(one), status=201)

    async def update_label_by_name(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        p: LabelUpdate = await params(request)
        return render(_view(await in_thread(service.update_label, db, actor, kind, p)))

    async def delete_label_by_name(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        p: LabelRef = await params(request)
        await in_thread(service.delete_label, db, actor, kind, p.id, p.ident())
        return no_content()

    handlers = [
        (list_labels, f"Labels a {singular} sees."),
        (get_label, f"A label a {singular} sees, by id or title."),
        (create_label, f"Add a label to a {singular}."),
        (update_label, f"Change a label of a {singular}."),
        (delete_label, f"Delete a label of a {singular}."),
        (subscribe_label, f"Subscribe to a label a {singular} sees."),
        (unsubscribe_label, f"Unsubscribe from a label a {singular} sees."),
        (update_label_by_name, f"Change a label of a {singular} named in the parameters (deprecated)."),
        (delete_label_by_name, f"Delete a label of a {singular} named in the parameters (deprecated)."),
    ]
    # Distinct names keep the OpenAPI operation ids unique.
    for fn, doc in handlers:
        fn.__name__ = fn.__qualname__ = f"{fn.__name__}_of_{singular}"
        fn.__doc__ = doc
    return [
        get(base, params=LabelList)(list_labels),
        get(one, params=LabelGet)(get_label),
        post(base, params=LabelCreate)(create_label),
        put(base, params=update_one_of)(update_label_by_name),
        delete(base, params=delete_one_of)(delete_label_by_name),
        put(one, params=update_params)(update_label),
        delete(one, params=LabelRef)(delete_label),
        post(f"{one}/subscribe", params=LabelRef)(subscribe_label),
        post(f"{one}/unsubscribe", params=LabelRef)(unsubscribe_label),
    ]


async def promote_label(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Make a project's label a label of the project's group (GitLab answers the group label)."""
    p: LabelRef = await params(request)
    return render(_view(await in_thread(service.promote_label, db, actor, p.id, p.ident())))


async def promote_label_by_name(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """The deprecated form of promote, the label named by `name`."""
    p: LabelRefByName = await params(request)
    return render(_view(await in_thread(service.promote_label, db, actor, p.id, p.ident())))


ROUTES: list[HTTPRouteHandler] = [
    put("/projects/{id:str}/labels/promote", params=LabelRefByName)(promote_label_by_name),
    put("/projects/{id:str}/labels/{label_id:str}/promote", params=LabelRef)(promote_label),
    *_routes("projects", "project"),
    *_routes("groups", "group"),
]
"""Labels of projects and groups. Every route takes authentication (GitLab's before
authenticate!); reading takes sight of the project or group, changing labels a Reporter."""
