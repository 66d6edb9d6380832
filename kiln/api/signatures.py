"""Commit signatures (GitLab's Commits API "Get signature of a commit"). ROUTES is mounted
under /api/v4 by kiln.api."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath

from kiln.api._deps import Db, Viewer, in_thread, runtime
from kiln.api._render import render
from kiln.api._routes import get
from kiln.entities.keys import instance_host
from kiln.entities.signatures import gpg_commit_signature, ssh_commit_signature
from kiln.services import signatures as service

Req = Request[Any, Any, Any]


@get("/projects/{id:str}/repository/commits/{sha:str}/signature", auth="optional")
async def get_commit_signature(
    request: Req, db: Db, viewer: Viewer, id: FromPath[str], sha: FromPath[str]
) -> Response[bytes]:
    # In a thread: checking a signature runs gpgv or ssh-keygen.
    settings = runtime(request).settings
    found = await in_thread(service.get_signature, db, viewer, id, unquote(sha), settings)
    if isinstance(found, service.SSHCommitSignature):
        return render(ssh_commit_signature(found, instance_host(settings.external_url)))
    return render(gpg_commit_signature(found))


ROUTES: list[HTTPRouteHandler] = [get_commit_signature]
