"""Notes (GitLab's Notes API) on issues (/projects/:id/issues/:issue_iid/notes), merge requests
(/projects/:id/merge_requests/:merge_request_iid/notes) and epics (/groups/:id/epics/:epic_id/notes,
the epic's global id as clients send it)."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler

from kiln.api._deps import Authenticated, Db, Viewer, base_url, in_thread, runtime
from kiln.api._pagination import page_of, paginated
from kiln.api._params import params
from kiln.api._render import no_content, render
from kiln.api._routes import delete, get, post, put
from kiln.entities.notes import note
from kiln.schemas.notes import NoteCreate, NoteGet, NoteList, NoteUpdate, for_noteable
from kiln.services import notes as service
from kiln.services.notes import OneNote
from kiln.services.subjects import EPICS, ISSUES, MERGE_REQUESTS, Kind

Req = Request[Any, Any, Any]


def _view(request: Req, found: OneNote) -> dict[str, Any]:
    return note(found.row, found.users, found.noteable.iid, runtime(request).settings.external_url)


def _routes(kind: Kind, ref: str, singular: str, *, by_id: bool) -> list[HTTPRouteHandler]:
    base = f"/{kind.parent}/{{id:str}}/{kind.path}/{{{ref}:str}}/notes"
    one = f"{base}/{{note_id:str}}"
    prefix = kind.noteable_type
    listing = for_noteable(NoteList, ref, prefix)
    getting = for_noteable(NoteGet, ref, prefix)
    creating = for_noteable(NoteCreate, ref, prefix)
    updating = for_noteable(NoteUpdate, ref, prefix)

    async def list_notes(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
        q: NoteList = await params(request)
        page = page_of(q)
        found = service.list_notes(db, viewer, kind, q, page, by_id=by_id)
        base = base_url(request)
        items = [note(r, found.users, found.noteable.iid, base) for r in found.page.items]
        return paginated(request, items, page, found.page)

    async def get_note(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
        q: NoteGet = await params(request)
        return render(_view(request, service.get_note(db, viewer, kind, q.id, q.ref, q.note_id, by_id=by_id)))

    async def create_note(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        p: NoteCreate = await params(request)
        found = await in_thread(service.create_note, db, actor, kind, p, by_id=by_id)
        return render(_view(request, found), status=201)

    async def update_note(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        p: NoteUpdate = await params(request)
        found = await in_thread(service.update_note, db, actor, kind, p, by_id=by_id)
        return render(_view(request, found))

    async def delete_note(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        p: NoteGet = await params(request)
        await in_thread(service.delete_note, db, actor, kind, p.id, p.ref, p.note_id, by_id=by_id)
        return no_content()

    for fn, doc in (
        (list_notes, f"Notes on {singular}."),
        (get_note, f"A note on {singular}."),
        (create_note, f"Comment on {singular}."),
        (update_note, f"Change a note on {singular}."),
        (delete_note, f"Delete a note on {singular}."),
    ):
        fn.__name__ = fn.__qualname__ = f"{fn.__name__}_of_{kind.path}"
        fn.__doc__ = doc
    return [
        get(base, auth="optional", params=listing)(list_notes),
        get(one, auth="optional", params=getting)(get_note),
        post(base, params=creating)(create_note),
        put(one, params=updating)(update_note),
        delete(one, params=getting)(delete_note),
    ]


ROUTES: list[HTTPRouteHandler] = [
    *_routes(ISSUES, "issue_iid", "an issue", by_id=False),
    *_routes(EPICS, "epic_id", "an epic", by_id=True),
    *_routes(MERGE_REQUESTS, "merge_request_iid", "a merge request", by_id=False),
]
