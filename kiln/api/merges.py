"""Merging merge requests (GitLab's Merge Requests API): merge (now, or when the pipeline
succeeds), cancel an automatic merge, the merge ref, rebase."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler

from kiln.api._deps import Authenticated, Db, Viewer, in_thread, runtime
from kiln.api._params import params
from kiln.api._render import render
from kiln.api._routes import get, post, put
from kiln.api.merge_requests import PROJECT_MR, render_one
from kiln.schemas.merges import MergeParams, MergeTarget, RebaseParams
from kiln.services import merges as service

Req = Request[Any, Any, Any]


@put(f"{PROJECT_MR}/merge", params=MergeParams)
async def merge_merge_request(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Merge now, or (merge_when_pipeline_succeeds / auto_merge) once the head pipeline succeeds."""
    p: MergeParams = await params(request)
    return render_one(request, await in_thread(service.merge, db, actor, p, runtime(request).settings))


@post(f"{PROJECT_MR}/cancel_merge_when_pipeline_succeeds", params=MergeTarget, status=201)
async def cancel_merge_when_pipeline_succeeds(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Turn an automatic merge off."""
    p: MergeTarget = await params(request)
    await in_thread(service.cancel, db, actor, p.id, p.merge_request_iid)
    return render({"status": "success"}, status=201)


@get(f"{PROJECT_MR}/merge_ref", auth="optional", params=MergeTarget)
async def merge_ref(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
    """The commit a merge would make now (refs/merge-requests/<iid>/merge)."""
    p: MergeTarget = await params(request)
    settings = runtime(request).settings
    sha = await in_thread(service.merge_ref_head, db, viewer, p.id, p.merge_request_iid, settings)
    return render({"commit_id": sha})


@put(f"{PROJECT_MR}/rebase", params=RebaseParams, status=202)
async def rebase_merge_request(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Rebase the source branch onto the target branch (skip_ci: no pipeline for it)."""
    p: RebaseParams = await params(request)
    busy = await in_thread(service.rebase, db, actor, p, runtime(request).settings)
    return render({"rebase_in_progress": busy}, status=202)


ROUTES: list[HTTPRouteHandler] = [
    merge_merge_request,
    cancel_merge_when_pipeline_succeeds,
    merge_ref,
    rebase_merge_request,
]
