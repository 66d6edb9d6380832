"""Emoji reactions (GitLab's Emoji reactions API, formerly award emoji) on issues
(/projects/:id/issues/:issue_iid/award_emoji), merge requests
(/projects/:id/merge_requests/:merge_request_iid/award_emoji), epics (/groups/:id/epics/:epic_iid/award_emoji)
and their notes (…/notes/:note_id/award_emoji). Epics are named by iid here, as GitLab names them."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler

from kiln.api._deps import Authenticated, Db, Viewer, base_url, in_thread, runtime
from kiln.api._pagination import page_of, paginated
from kiln.api._params import params
from kiln.api._render import no_content, render
from kiln.api._routes import delete, get, post
from kiln.entities.award_emoji import award
from kiln.schemas.award_emoji import AwardCreate, AwardGet, AwardList
from kiln.schemas.notes import for_noteable
from kiln.services import award_emoji as service
from kiln.services.award_emoji import OneAward
from kiln.services.subjects import EPICS, ISSUES, MERGE_REQUESTS, Kind

Req = Request[Any, Any, Any]


def _view(request: Req, found: OneAward) -> dict[str, Any]:
    return award(found.row, found.users, runtime(request).settings.external_url)


def _routes(kind: Kind, ref: str, singular: str, *, on_note: bool) -> list[HTTPRouteHandler]:
    noteable = f"/{kind.parent}/{{id:str}}/{kind.path}/{{{ref}:str}}"
    base = f"{noteable}/notes/{{note_id:str}}/award_emoji" if on_note else f"{noteable}/award_emoji"
    one = f"{base}/{{award_id:str}}"
    prefix = kind.noteable_type
    listing = for_noteable(AwardList, ref, prefix, on_note=on_note)
    getting = for_noteable(AwardGet, ref, prefix, on_note=on_note)
    creating = for_noteable(AwardCreate, ref, prefix, on_note=on_note)
    what = f"a note on {singular}" if on_note else singular

    async def list_awards(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
        q: AwardList = await params(request)
        page = page_of(q)
        found = service.list_awards(db, viewer, kind, q, page)
        base = base_url(request)
        return paginated(request, [award(r, found.users, base) for r in found.page.items], page, found.page)

    async def get_award(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
        q: AwardGet = await params(request)
        return render(_view(request, service.get_award(db, viewer, kind, q, q.award_id)))

    async def create_award(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        p: AwardCreate = await params(request)
        return render(_view(request, await in_thread(service.create_award, db, actor, kind, p)), status=201)

    async def delete_award(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        p: AwardGet = await params(request)
        await in_thread(service.delete_award, db, actor, kind, p, p.award_id)
        return no_content()

    suffix = f"{kind.path}_{'note' if on_note else 'itself'}"
    for fn, doc in (
        (list_awards, f"Emoji reactions on {what}."),
        (get_award, f"An emoji reaction on {what}."),
        (create_award, f"React to {what} with an emoji."),
        (delete_award, f"Take back an emoji reaction on {what}."),
    ):
        fn.__name__ = fn.__qualname__ = f"{fn.__name__}_of_{suffix}"
        fn.__doc__ = doc
    return [
        get(base, auth="optional", params=listing)(list_awards),
        get(one, auth="optional", params=getting)(get_award),
        post(base, params=creating)(create_award),
        delete(one, params=getting)(delete_award),
    ]


ROUTES: list[HTTPRouteHandler] = [
    *_routes(ISSUES, "issue_iid", "an issue", on_note=False),
    *_routes(ISSUES, "issue_iid", "an issue", on_note=True),
    *_routes(EPICS, "epic_iid", "an epic", on_note=False),
    *_routes(EPICS, "epic_iid", "an epic", on_note=True),
    *_routes(MERGE_REQUESTS, "merge_request_iid", "a merge request", on_note=False),
    *_routes(MERGE_REQUESTS, "merge_request_iid", "a merge request", on_note=True),
]
