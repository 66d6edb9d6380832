"""Epics (GitLab's Epics API, and its Epic Links API for child epics) under /groups/:id/epics."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler

from kiln.api._deps import Authenticated, Db, base_url, in_thread
from kiln.api._pagination import page_of, paginated
from kiln.api._params import params
from kiln.api._render import no_content, not_modified, render
from kiln.api._routes import delete, get, post, put
from kiln.entities.epics import epic, epics, linked_epic, todo
from kiln.schemas.epics import (
    ChildEpicCreate,
    ChildEpicMove,
    ChildEpicRef,
    ChildEpics,
    EpicCreate,
    EpicGet,
    EpicList,
    EpicUpdate,
)
from kiln.services import epics as service
from kiln.services.epics import ChildList, OneEpic

Req = Request[Any, Any, Any]
EPICS = "/groups/{id:str}/epics"
EPIC = EPICS + "/{epic_iid:str}"
CHILDREN = EPIC + "/epics"


def _one(request: Req, one: OneEpic, status: int = 200) -> Response[bytes]:
    return render(
        epic(one.row, one.related, base_url(request), seen=one.seen, subscribed=one.subscribed), status
    )


def _children(request: Req, found: ChildList) -> Response[bytes]:
    return render(epics(found.rows, found.related, base_url(request), seen=found.seen))


@get(EPICS, params=EpicList)
async def list_epics(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Epics of a group and its subgroups."""
    q: EpicList = await params(request)
    page = page_of(q)
    found = service.list_epics(db, actor, q, page)
    views = epics(
        found.page.items,
        found.related,
        base_url(request),
        seen=found.seen,
        with_labels_details=q.with_labels_details,
    )
    return paginated(request, views, page, found.page)


@get(EPIC, params=EpicGet)
async def get_epic(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """One epic, with the caller's subscription."""
    p: EpicGet = await params(request)
    return _one(request, service.get_epic(db, actor, p.id, p.epic_iid))


@post(EPICS, params=EpicCreate)
async def create_epic(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Open an epic in a group."""
    p: EpicCreate = await params(request)
    return _one(request, await in_thread(service.create_epic, db, actor, p), 201)


@put(EPIC, params=EpicUpdate)
async def update_epic(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Change, close or reopen an epic."""
    p: EpicUpdate = await params(request)
    return _one(request, await in_thread(service.update_epic, db, actor, p))


@delete(EPIC, params=EpicGet)
async def delete_epic(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Delete an epic (the group's Owner)."""
    p: EpicGet = await params(request)
    await in_thread(service.delete_epic, db, actor, p.id, p.epic_iid)
    return no_content()


@post(EPIC + "/todo", params=EpicGet)
async def mark_epic_todo(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """A to-do for the caller on the epic; 304 when one is pending already."""
    p: EpicGet = await params(request)
    marked = await in_thread(service.mark_todo, db, actor, p.id, p.epic_iid)
    if marked is None:
        return not_modified()
    base = base_url(request)
    target = epic(marked.epic.row, marked.epic.related, base, seen=marked.epic.seen)
    t = marked.todo
    view = todo(
        t.id, t.action, t.state, t.created_at, t.updated_at, marked.group, marked.author, target, base
    )
    return render(view, 201)


@get(CHILDREN, params=ChildEpics)
async def list_child_epics(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """The child epics of an epic, in their order."""
    p: ChildEpics = await params(request)
    return _children(request, service.list_children(db, actor, p))


@post(CHILDREN + "/{child_epic_id:str}", params=ChildEpicRef)
async def assign_child_epic(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Make an epic (by global id) a child of this one."""
    p: ChildEpicRef = await params(request)
    return _one(request, await in_thread(service.assign_child, db, actor, p), 201)


@post(CHILDREN, params=ChildEpicCreate)
async def create_child_epic(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Open an epic under this one."""
    p: ChildEpicCreate = await params(request)
    made = await in_thread(service.create_child, db, actor, p)
    view = linked_epic(
        made.row, made.parent, base_url(request), has_children=made.has_children, has_issues=made.has_issues
    )
    return render(view, 201)


@put(CHILDREN + "/{child_epic_id:str}", params=ChildEpicMove)
async def move_child_epic(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Put a child epic before or after a sibling; answers the children in their new order."""
    p: ChildEpicMove = await params(request)
    return _children(request, await in_thread(service.move_child, db, actor, p))


@delete(CHILDREN + "/{child_epic_id:str}", params=ChildEpicRef, status=200)
async def remove_child_epic(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Take a child epic out of this one; answers the child."""
    p: ChildEpicRef = await params(request)
    return _one(request, await in_thread(service.remove_child, db, actor, p))


ROUTES: list[HTTPRouteHandler] = [
    list_epics,
    get_epic,
    create_epic,
    update_epic,
    delete_epic,
    mark_epic_todo,
    list_child_epics,
    assign_child_epic,
    create_child_epic,
    move_child_epic,
    remove_child_epic,
]
