"""Git smart HTTP at `<full path>[.git]/info/refs`, `/git-upload-pack` and `/git-receive-pack`,
streamed from the git processes kiln.services.git_http starts.

A project's path has slashes, so these routes are one root route `/{full:path}` that takes
whatever no other route matched (Litestar's router tries static segments first and never
backs off into it); paths that aren't git's answer the router's own 404, for every method."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath
from litestar.response import Stream

from kiln.api._deps import DATABASE_WHILE_STREAMING, in_thread, runtime
from kiln.api._routes import route
from kiln.errors import KilnError, RouteNotFound, Unauthorized
from kiln.services import git_http as service
from kiln.services.git_http import RECEIVE_PACK, UPLOAD_PACK

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

Req = Request[Any, Any, Any]

PATH = "/{full:path}"
# git-http-backend's hdr_nocache: git's answers are never cached on the way.
NO_CACHE = {
    "Expires": "Fri, 01 Jan 1980 00:00:00 GMT",
    "Pragma": "no-cache",
    "Cache-Control": "no-cache, max-age=0, must-revalidate",
}
CHALLENGE = {"WWW-Authenticate": 'Basic realm="GitLab"'}


@route("GET", PATH, auth="none", summary="Git smart HTTP: ref advertisement (info/refs)")
async def info_refs(request: Req, full: FromPath[str]) -> Response[Any]:
    target = service.route(full)
    if target is None or target.action != "info/refs":
        raise RouteNotFound()
    try:
        access, db = await _open(request, target.project, request.query_params.get("service"))
    except KilnError as refused:
        return git_error(refused)
    db.close()
    return Stream(
        await service.advertise(access, request.headers.get("git-protocol")),
        media_type=service.content_type(access.service, "advertisement"),
        headers=NO_CACHE,
    )


@route("POST", PATH, auth="none", summary="Git smart HTTP: git-upload-pack / git-receive-pack")
async def rpc(request: Req, full: FromPath[str]) -> Response[Any]:
    target = service.route(full)
    if target is None or target.action == "info/refs":
        raise RouteNotFound()
    if request.headers.get("content-type") != service.content_type(target.action, "request"):
        return _text(415, "Unsupported Media Type")
    try:
        access, db = await _open(request, target.project, target.action)
        body = service.inflate(request.stream(), request.headers.get("content-encoding"))
        if access.service == UPLOAD_PACK:
            db.close()
            return await _upload_pack(request, access, body)
        return await _receive_pack(request, access, db, body)
    except KilnError as refused:
        return git_error(refused)
    except service.MalformedRequest as bad:
        return _text(400, str(bad))


async def _not_a_route(full: FromPath[str]) -> Response[Any]:
    raise RouteNotFound()


# Every other method on the catch-all path is no route either (not a 405). OPTIONS comes
# first: a path registered without it gets Litestar's automatic OPTIONS handler.
UNROUTED = [
    route(method, PATH, auth="none", summary="No route: unknown paths answer 404")(_not_a_route)
    for method in ("OPTIONS", "PUT", "PATCH", "DELETE")
]

ROOT_ROUTES: list[HTTPRouteHandler] = [*UNROUTED, info_refs, rpc]


async def _open(request: Req, project: str, wanted: str | None) -> tuple[service.GitAccess, Session]:
    """The caller cleared for `wanted` on the project, and the session that found them (kept
    open for the bookkeeping of a push). Refusals leave as git's plain-text answers."""
    rt = runtime(request)
    db = rt.sessions()
    try:
        access = await in_thread(
            service.open_repository,
            db,
            rt.settings,
            authorization=request.headers.get("authorization"),
            project_path=project,
            service=wanted,
            job_token_resolver=rt.job_token_resolver,
        )
        # The read transaction ends here; a push's bookkeeping opens its own.
        db.commit()
    except BaseException:
        db.close()
        raise
    return access, db


async def _upload_pack(request: Req, access: service.GitAccess, body: AsyncIterator[bytes]) -> Response[Any]:
    result = await service.upload_pack(access, body, request.headers.get("git-protocol"))
    return Stream(result, media_type=service.content_type(UPLOAD_PACK, "result"), headers=NO_CACHE)


async def _receive_pack(
    request: Req, access: service.GitAccess, db: Session, body: AsyncIterator[bytes]
) -> Response[Any]:
    rt = runtime(request)
    request.scope[DATABASE_WHILE_STREAMING] = True  # type: ignore[literal-required]
    media = service.content_type(RECEIVE_PACK, "result")
    answer = await service.receive_pack(
        db, rt.settings, access, body, request.headers.get("git-protocol"), in_thread
    )
    if isinstance(answer, bytes):
        return Response(answer, media_type=media, headers=NO_CACHE)
    return Stream(answer, media_type=media, headers=NO_CACHE)


def _text(status: int, message: str, headers: dict[str, str] | None = None) -> Response[bytes]:
    return Response(f"{message}\n".encode(), status_code=status, media_type="text/plain", headers=headers)


def git_error(exc: KilnError) -> Response[bytes]:
    """Refusals as git shows them: plain text; a 401 challenges for Basic credentials."""
    headers = CHALLENGE if isinstance(exc, Unauthorized) else None
    return _text(exc.status, str(exc), headers)
