"""Issue boards (GitLab's Boards and Group Boards APIs): the same routes under /projects/:id
and /groups/:id, every one for signed-in callers."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler

from kiln.api._deps import Authenticated, Db, base_url, in_thread
from kiln.api._pagination import page_of, paginated
from kiln.api._params import params
from kiln.api._render import no_content, render
from kiln.api._routes import delete, get, post, put
from kiln.entities.boards import board, board_list, group_view, project_view
from kiln.policy import GroupSubject
from kiln.schemas.boards import (
    BoardCreate,
    BoardGet,
    BoardList,
    BoardUpdate,
    ListCreate,
    ListGet,
    ListMove,
    ListOfBoard,
)
from kiln.services import boards as service
from kiln.services.boards import Kind, OneBoard, OneList, Subject

Req = Request[Any, Any, Any]


def _owners(s: Subject, base: str) -> dict[str, Any]:
    """The `project` and `group` of a board view: the one it belongs to, the other null."""
    if isinstance(s, GroupSubject):
        return {"project": None, "group": group_view(s.group, base)}
    return {"project": project_view(s.project, s.namespace, base), "group": None}


def _board(one: OneBoard, base: str) -> dict[str, Any]:
    return board(one.row, one.lists, one.named, base, **_owners(one.subject, base))


def _list(one: OneList, base: str) -> dict[str, Any]:
    return board_list(one.row, one.named, base)


def _routes(kind: Kind, singular: str) -> list[HTTPRouteHandler]:
    boards = f"/{kind}/{{id:str}}/boards"
    one_board = f"{boards}/{{board_id:str}}"
    lists = f"{one_board}/lists"
    one_list = f"{lists}/{{list_id:str}}"

    async def list_boards(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        q: BoardList = await params(request)
        page = page_of(q)
        found = service.list_boards(db, actor, kind, q.id, page)
        base = base_url(request)
        owners = _owners(found.subject, base)
        items = [board(r, found.lists.get(r.id, []), found.named, base, **owners) for r in found.page.items]
        return paginated(request, items, page, found.page)

    async def get_board(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        q: BoardGet = await params(request)
        return render(_board(service.get_board(db, actor, kind, q.id, q.board_id), base_url(request)))

    async def add_board(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        p: BoardCreate = await params(request)
        one = await in_thread(service.create_board, db, actor, kind, p)
        return render(_board(one, base_url(request)), status=201)

    async def update_board(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        p: BoardUpdate = await params(request)
        one = await in_thread(service.update_board, db, actor, kind, p)
        return render(_board(one, base_url(request)))

    async def remove_board(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        p: BoardGet = await params(request)
        await in_thread(service.delete_board, db, actor, kind, p.id, p.board_id)
        return no_content()

    async def list_board_lists(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        q: ListOfBoard = await params(request)
        page = page_of(q)
        found = service.list_lists(db, actor, kind, q.id, q.board_id, page)
        base = base_url(request)
        return paginated(
            request, [board_list(r, found.named, base) for r in found.page.items], page, found.page
        )

    async def get_board_list(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        q: ListGet = await params(request)
        return render(
            _list(service.get_list(db, actor, kind, q.id, q.board_id, q.list_id), base_url(request))
        )

    async def add_board_list(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        p: ListCreate = await params(request)
        one = await in_thread(service.create_list, db, actor, kind, p)
        return render(_list(one, base_url(request)), status=201)

    async def move_board_list(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        p: ListMove = await params(request)
        one = await in_thread(service.move_list, db, actor, kind, p)
        return render(_list(one, base_url(request)))

    async def remove_board_list(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        p: ListGet = await params(request)
        await in_thread(service.delete_list, db, actor, kind, p.id, p.board_id, p.list_id)
        return no_content()

    # Distinct names keep the OpenAPI operation ids unique.
    for fn, doc in (
        (list_boards, f"Issue boards of a {singular}."),
        (get_board, f"An issue board of a {singular}."),
        (add_board, f"Create an issue board of a {singular}."),
        (update_board, f"Change an issue board of a {singular}: name, hidden lists, scope."),
        (remove_board, f"Delete an issue board of a {singular} with its lists."),
        (list_board_lists, f"The label, assignee and milestone lists of a {singular}'s board."),
        (get_board_list, f"A list of a {singular}'s board."),
        (add_board_list, f"Add a list to a {singular}'s board."),
        (move_board_list, f"Move a list of a {singular}'s board to another position."),
        (remove_board_list, f"Remove a list from a {singular}'s board."),
    ):
        fn.__name__ = fn.__qualname__ = f"{fn.__name__}_of_{singular}"
        fn.__doc__ = doc
    return [
        get(boards, params=BoardList)(list_boards),
        get(one_board, params=BoardGet)(get_board),
        post(boards, params=BoardCreate)(add_board),
        put(one_board, params=BoardUpdate)(update_board),
        delete(one_board, params=BoardGet)(remove_board),
        get(lists, params=ListOfBoard)(list_board_lists),
        get(one_list, params=ListGet)(get_board_list),
        post(lists, params=ListCreate)(add_board_list),
        put(one_list, params=ListMove)(move_board_list),
        delete(one_list, params=ListGet)(remove_board_list),
    ]


ROUTES: list[HTTPRouteHandler] = [*_routes("groups", "group"), *_routes("projects", "project")]
