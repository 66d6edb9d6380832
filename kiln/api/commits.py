"""Commits (spec part 1 "Commits"): history, single commits, refs, diffs, comments, commits
from file actions, cherry-picks and reverts. ROUTES is mounted under /api/v4 by kiln.api."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath

from kiln.api._deps import Authenticated, Db, Viewer, in_thread, project_web, runtime
from kiln.api._pagination import page_of, paginated
from kiln.api._params import params
from kiln.api._render import render
from kiln.api._routes import get, post
from kiln.entities.commits import commit_detail, commit_note, commit_ref, commit_view, commit_with_stats
from kiln.entities.compare import diff_entry
from kiln.schemas.commits import (
    CherryPick,
    CommitCommentCreate,
    CommitCommentList,
    CommitCreate,
    CommitDiffList,
    CommitGet,
    CommitList,
    CommitRefList,
    CommitSequence,
    Revert,
)
from kiln.services import commits as service

Req = Request[Any, Any, Any]
BASE = "/projects/{id:str}/repository/commits"


def _detail(request: Req, d: service.CommitDetail, status: int = 200) -> Response[bytes]:
    web = project_web(request, d.where.full_path)
    return render(commit_detail(d.commit, web, d.where.project_id, d.stats, d.pipeline), status=status)


def _picked(request: Req, p: service.Picked) -> Response[bytes]:
    if p.commit is None:
        return render({"dry_run": "success"}, status=200)
    return render(commit_view(p.commit, project_web(request, p.where.full_path)), status=201)


@get(BASE, auth="optional", params=CommitList)
async def list_commits(request: Req, db: Db, viewer: Viewer, id: FromPath[str]) -> Response[bytes]:
    q: CommitList = await params(request)
    page = page_of(q)
    listing = await in_thread(service.list_commits, db, viewer, id, q, page, runtime(request).settings)
    web = project_web(request, listing.where.full_path)
    items = [
        commit_view(c.commit, web, c.trailers)
        if c.stats is None
        else commit_with_stats(c.commit, web, c.stats, c.trailers)
        for c in listing.commits
    ]
    return paginated(request, items, page, listing.page)


@post(BASE, params=CommitCreate)
async def create_commit(request: Req, db: Db, actor: Authenticated, id: FromPath[str]) -> Response[bytes]:
    p: CommitCreate = await params(request)
    return _detail(
        request,
        await in_thread(service.create_commit, db, actor, id, p, runtime(request).settings),
        status=201,
    )


@get(BASE + "/{sha:str}", auth="optional", params=CommitGet)
async def get_commit(
    request: Req, db: Db, viewer: Viewer, id: FromPath[str], sha: FromPath[str]
) -> Response[bytes]:
    q: CommitGet = await params(request)
    return _detail(
        request,
        await in_thread(service.get_commit, db, viewer, id, unquote(sha), q.stats, runtime(request).settings),
    )


@get(BASE + "/{sha:str}/refs", auth="optional", params=CommitRefList)
async def commit_refs(
    request: Req, db: Db, viewer: Viewer, id: FromPath[str], sha: FromPath[str]
) -> Response[bytes]:
    q: CommitRefList = await params(request)
    page = page_of(q)
    result = await in_thread(
        service.commit_refs, db, viewer, id, unquote(sha), q.type, page, runtime(request).settings
    )
    return paginated(request, [commit_ref(kind, name) for kind, name in result.items], page, result)


@get(BASE + "/{sha:str}/sequence", auth="optional", params=CommitSequence)
async def commit_sequence(
    request: Req, db: Db, viewer: Viewer, id: FromPath[str], sha: FromPath[str]
) -> Response[bytes]:
    q: CommitSequence = await params(request)
    count = await in_thread(
        service.commit_sequence, db, viewer, id, unquote(sha), q.first_parent, runtime(request).settings
    )
    return render({"count": count})


@get(BASE + "/{sha:str}/diff", auth="optional", params=CommitDiffList)
async def commit_diff(
    request: Req, db: Db, viewer: Viewer, id: FromPath[str], sha: FromPath[str]
) -> Response[bytes]:
    q: CommitDiffList = await params(request)
    page = page_of(q)
    result = await in_thread(
        service.commit_diff, db, viewer, id, unquote(sha), page, runtime(request).settings
    )
    return paginated(request, [diff_entry(d, unidiff=q.unidiff) for d in result.items], page, result)


@get(BASE + "/{sha:str}/comments", auth="optional", params=CommitCommentList)
async def list_comments(
    request: Req, db: Db, viewer: Viewer, id: FromPath[str], sha: FromPath[str]
) -> Response[bytes]:
    q: CommitCommentList = await params(request)
    page = page_of(q)
    settings = runtime(request).settings
    notes, result = await in_thread(service.list_comments, db, viewer, id, unquote(sha), page, settings)
    items = [commit_note(n.note, n.author, settings.external_url) for n in notes]
    return paginated(request, items, page, result)


@post(BASE + "/{sha:str}/comments", params=CommitCommentCreate)
async def create_comment(
    request: Req, db: Db, actor: Authenticated, id: FromPath[str], sha: FromPath[str]
) -> Response[bytes]:
    p: CommitCommentCreate = await params(request)
    settings = runtime(request).settings
    n = await in_thread(service.create_comment, db, actor, id, unquote(sha), p, settings)
    return render(commit_note(n.note, n.author, settings.external_url), status=201)


@post(BASE + "/{sha:str}/cherry_pick", params=CherryPick)
async def cherry_pick(
    request: Req, db: Db, actor: Authenticated, id: FromPath[str], sha: FromPath[str]
) -> Response[bytes]:
    p: CherryPick = await params(request)
    return _picked(
        request,
        await in_thread(service.cherry_pick, db, actor, id, unquote(sha), p, runtime(request).settings),
    )


@post(BASE + "/{sha:str}/revert", params=Revert)
async def revert_commit(
    request: Req, db: Db, actor: Authenticated, id: FromPath[str], sha: FromPath[str]
) -> Response[bytes]:
    p: Revert = await params(request)
    return _picked(
        request, await in_thread(service.revert, db, actor, id, unquote(sha), p, runtime(request).settings)
    )


ROUTES: list[HTTPRouteHandler] = [
    list_commits,
    create_commit,
    get_commit,
    commit_refs,
    commit_sequence,
    commit_diff,
    list_comments,
    create_comment,
    cherry_pick,
    revert_commit,
]
