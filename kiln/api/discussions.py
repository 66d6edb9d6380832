"""Threads (GitLab's Discussions API) on issues (/projects/:id/issues/:issue_iid/discussions),
merge requests (/projects/:id/merge_requests/:merge_request_iid/discussions, whose threads
resolve and may sit on a diff position) and epics (/groups/:id/epics/:epic_id/discussions, the epic's global id as clients send it).
Resolving a whole thread is routed only for kinds whose threads resolve, as in GitLab."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler

from kiln.api._deps import Authenticated, Db, Viewer, base_url, in_thread, runtime
from kiln.api._pagination import page_of, paginated
from kiln.api._params import params
from kiln.api._render import no_content, render
from kiln.api._routes import delete, get, post, put
from kiln.entities.notes import discussion, note
from kiln.schemas.discussions import (
    DiscussionCreate,
    DiscussionGet,
    DiscussionList,
    DiscussionNoteGet,
    DiscussionNoteUpdate,
    DiscussionReply,
    DiscussionResolve,
)
from kiln.schemas.notes import for_noteable
from kiln.services import discussions as service
from kiln.services.discussions import OneThread
from kiln.services.notes import OneNote
from kiln.services.subjects import EPICS, ISSUES, MERGE_REQUESTS, Kind

Req = Request[Any, Any, Any]


def _thread_view(request: Req, found: OneThread) -> dict[str, Any]:
    t = found.thread
    return discussion(t.id, t.notes, found.users, found.noteable.iid, base_url(request))


def _note_view(request: Req, found: OneNote) -> dict[str, Any]:
    return note(found.row, found.users, found.noteable.iid, base_url(request))


def _routes(kind: Kind, ref: str, singular: str, *, by_id: bool) -> list[HTTPRouteHandler]:
    base = f"/{kind.parent}/{{id:str}}/{kind.path}/{{{ref}:str}}/discussions"
    one = f"{base}/{{discussion_id:str}}"
    one_note = f"{one}/notes/{{note_id:str}}"
    prefix = kind.noteable_type
    listing = for_noteable(DiscussionList, ref, prefix)
    getting = for_noteable(DiscussionGet, ref, prefix)
    creating = for_noteable(DiscussionCreate, ref, prefix)
    replying = for_noteable(DiscussionReply, ref, prefix)
    getting_note = for_noteable(DiscussionNoteGet, ref, prefix)
    updating_note = for_noteable(DiscussionNoteUpdate, ref, prefix)
    resolving = for_noteable(DiscussionResolve, ref, prefix)

    async def list_discussions(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
        q: DiscussionList = await params(request)
        page = page_of(q)
        found = service.list_discussions(db, viewer, kind, q, page, by_id=by_id)
        iid, base = found.noteable.iid, base_url(request)
        items = [discussion(t.id, t.notes, found.users, iid, base) for t in found.page.items]
        return paginated(request, items, page, found.page)

    async def get_discussion(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
        q: DiscussionGet = await params(request)
        found = service.get_discussion(db, viewer, kind, q.id, q.ref, q.discussion_id, by_id=by_id)
        return render(_thread_view(request, found))

    async def create_discussion(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        p: DiscussionCreate = await params(request)
        found = await in_thread(
            service.create_discussion, db, actor, kind, p, by_id=by_id, settings=runtime(request).settings
        )
        return render(_thread_view(request, found), status=201)

    async def reply_to_discussion(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        p: DiscussionReply = await params(request)
        found = await in_thread(service.reply, db, actor, kind, p, by_id=by_id)
        return render(_note_view(request, found), status=201)

    async def get_discussion_note(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
        q: DiscussionNoteGet = await params(request)
        found = service.get_discussion_note(db, viewer, kind, q.id, q.ref, q.note_id, by_id=by_id)
        return render(_note_view(request, found))

    async def update_discussion_note(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        p: DiscussionNoteUpdate = await params(request)
        found = await in_thread(service.update_discussion_note, db, actor, kind, p, by_id=by_id)
        return render(_note_view(request, found))

    async def delete_discussion_note(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        p: DiscussionNoteGet = await params(request)
        await in_thread(service.delete_discussion_note, db, actor, kind, p.id, p.ref, p.note_id, by_id=by_id)
        return no_content()

    async def resolve_discussion(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        p: DiscussionResolve = await params(request)
        found = await in_thread(service.resolve_discussion, db, actor, kind, p, by_id=by_id)
        return render(_thread_view(request, found))

    for fn, doc in (
        (list_discussions, f"Threads on {singular}."),
        (get_discussion, f"A thread on {singular}."),
        (create_discussion, f"Start a thread on {singular}."),
        (reply_to_discussion, f"Reply in a thread on {singular}."),
        (get_discussion_note, f"A note in a thread on {singular}."),
        (update_discussion_note, f"Change or resolve a note in a thread on {singular}."),
        (delete_discussion_note, f"Delete a note in a thread on {singular}."),
        (resolve_discussion, f"Resolve or reopen a thread on {singular}."),
    ):
        fn.__name__ = fn.__qualname__ = f"{fn.__name__}_of_{kind.path}"
        fn.__doc__ = doc
    routes = [
        get(base, auth="optional", params=listing)(list_discussions),
        get(one, auth="optional", params=getting)(get_discussion),
        post(base, params=creating)(create_discussion),
        post(f"{one}/notes", params=replying)(reply_to_discussion),
        get(one_note, auth="optional", params=getting_note)(get_discussion_note),
        put(one_note, params=updating_note)(update_discussion_note),
        delete(one_note, params=getting_note)(delete_discussion_note),
    ]
    if kind.resolvable:
        routes.append(put(one, params=resolving)(resolve_discussion))
    return routes


ROUTES: list[HTTPRouteHandler] = [
    *_routes(ISSUES, "issue_iid", "an issue", by_id=False),
    *_routes(EPICS, "epic_id", "an epic", by_id=True),
    *_routes(MERGE_REQUESTS, "merge_request_iid", "a merge request", by_id=False),
]
