"""To-dos (GitLab's To-do list API): the caller's own to-dos, marking them done, and the
to-do a caller sets on an issue (/projects/:id/issues/:issue_iid/todo) or a merge request
(/projects/:id/merge_requests/:merge_request_iid/todo)."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler

from kiln.api._deps import Authenticated, Db, base_url, in_thread
from kiln.api._pagination import page_of, paginated
from kiln.api._params import params
from kiln.api._render import no_content, not_modified, render
from kiln.api._routes import get, post
from kiln.entities.todos import todo, todos
from kiln.schemas.todos import IssueTodo, MergeRequestTodo, TodoGet, TodoList
from kiln.services import todos as service

Req = Request[Any, Any, Any]


def _one(request: Req, found: service.TodoSet | None) -> Response[bytes]:
    """The to-do marked or set (201); None: the caller had a pending one there already (304)."""
    if found is None:
        return not_modified()
    return render(todo(found.todos[0], found, base_url(request)), status=201)


@get("/todos", params=TodoList)
async def list_todos(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """The caller's to-dos, pending ones unless asked otherwise, newest first."""
    q: TodoList = await params(request)
    page = page_of(q)
    found = service.list_todos(db, actor, q, page)
    assert found.page is not None
    return paginated(request, todos(found, base_url(request)), page, found.page)


@post("/todos/{id:str}/mark_as_done", params=TodoGet)
async def mark_todo_done(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Mark one of the caller's to-dos done."""
    p: TodoGet = await params(request)
    return _one(request, await in_thread(service.mark_done, db, actor, p.id))


@post("/todos/mark_as_done", status=204)
async def mark_all_todos_done(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Mark every pending to-do of the caller's done."""
    await in_thread(service.mark_all_done, db, actor)
    return no_content()


@post("/projects/{id:str}/issues/{issue_iid:str}/todo", params=IssueTodo)
async def create_issue_todo(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Add a to-do for the caller on an issue; 304 when they have a pending one there."""
    p: IssueTodo = await params(request)
    return _one(request, await in_thread(service.mark_issue, db, actor, p.id, p.issue_iid))


@post("/projects/{id:str}/merge_requests/{merge_request_iid:str}/todo", params=MergeRequestTodo)
async def create_merge_request_todo(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Add a to-do for the caller on a merge request; 304 when they have a pending one there."""
    p: MergeRequestTodo = await params(request)
    return _one(request, await in_thread(service.mark_merge_request, db, actor, p.id, p.merge_request_iid))


ROUTES: list[HTTPRouteHandler] = [
    list_todos,
    mark_all_todos_done,
    mark_todo_done,
    create_issue_todo,
    create_merge_request_todo,
]
