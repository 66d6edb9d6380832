"""Repository files (spec part 1 "Repository files"): the file record, raw bytes and blame at
a ref (HEAD on each answers with the metadata headers, X-Gitlab-* and X-Service-*), and
one-file commits."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler
from litestar.response import Stream

from kiln.api import _answers, _user_content
from kiln.api._deps import Authenticated, Db, Viewer, in_thread, is_head, runtime, streamed
from kiln.api._params import params
from kiln.api._render import JSON, no_content, render
from kiln.api._routes import delete, get, post, put
from kiln.auth.actor import Actor
from kiln.auth.tokens import API, READ_API, READ_REPOSITORY
from kiln.config import Settings
from kiln.entities.files import (
    blame_json,
    content_length,
    file_headers,
    file_record,
    file_record_length,
    file_record_pieces,
    file_view,
    write_result,
)
from kiln.schemas.files import FileBlame, FileDelete, FileGet, FileRaw, FileWrite
from kiln.services import files as service

if TYPE_CHECKING:
    from kiln.queries.files import FileRecord

Req = Request[Any, Any, Any]
READ_SCOPES = (API, READ_API, READ_REPOSITORY)
FILE = "/projects/{id:str}/repository/files/{file_path:str}"
# Browsers and proxies must not keep a file that may change with its ref (GitLab's no_cache_headers).
NO_CACHE = {
    "Cache-Control": "max-age=0, private, must-revalidate, no-store, no-cache",
    "Pragma": "no-cache",
    "Expires": "Fri, 01 Jan 1990 00:00:00 GMT",
}


@get(FILE, auth="optional", params=FileGet, scopes=READ_SCOPES)
async def get_file(request: Req, db: Db, viewer: Viewer) -> Response[Any]:
    q: FileGet = await params(request)
    settings = runtime(request).settings
    rec = service.read_file(db, viewer, q.id, q.file_path, q.ref, settings)
    if service.is_large(rec.file.size, settings):
        return await _large_file(request, rec, settings)
    if not is_head(request):
        # The same request is answered again with these bytes while nothing changed.
        _answers.keep(request.scope, service.unchanged(settings, rec))  # type: ignore[arg-type]
        return render(file_view(rec), headers=file_headers(rec))
    # HEAD sends no body, but the length GET would.
    response = render(file_record(rec, content=False))
    response.headers.update(
        {**file_headers(rec), "Content-Length": str(len(response.content) + content_length(rec))}
    )
    return response


async def _large_file(request: Req, rec: FileRecord, settings: Settings) -> Response[Any]:
    """A large file's record: its digest and content are read off the event loop, and the
    content is encoded as it streams out (never whole in memory, never kept)."""
    large = await in_thread(service.large_file, rec, settings, head=is_head(request))
    headers = {
        **file_headers(rec, large.digest),
        "Content-Length": str(file_record_length(rec, large.digest)),
    }
    if large.pieces is None:
        response = render(file_record(rec, content=False, digest=large.digest))
        response.headers.update(headers)
        return response
    return Stream(
        streamed(file_record_pieces(rec, large.digest, large.pieces)), media_type=JSON, headers=headers
    )


@get(FILE + "/raw", auth="optional", params=FileRaw, scopes=READ_SCOPES)
async def get_raw_file(request: Req, db: Db, viewer: Viewer) -> Response[Any]:
    q: FileRaw = await params(request)
    rec = service.raw_file(db, viewer, q.id, q.file_path, q.ref, runtime(request).settings)
    if service.streams_raw(rec.file.size):
        return await _large_raw_file(request, rec)
    content = rec.content()
    served = _user_content.served_as(rec.file.name, text=not content.binary)
    headers = {**NO_CACHE, **file_headers(rec), "Content-Length": str(len(content.data))}
    return _user_content.stream(content.chunks(), rec.file.name, served, headers)


async def _large_raw_file(request: Req, rec: FileRecord) -> Response[Any]:
    """A large file's raw bytes, as a small one's go out: its digest and its first piece are
    read off the event loop, and every further piece as it streams out (never whole in
    memory). Its length is its header's."""
    large = await in_thread(service.large_raw, rec, head=is_head(request))
    served = _user_content.served_as(rec.file.name, text=not large.content.binary)
    headers = {**NO_CACHE, **file_headers(rec, large.digest), "Content-Length": str(rec.file.size)}
    return _user_content.stream(streamed(large.content.pieces), rec.file.name, served, headers)


@get(FILE + "/blame", auth="optional", params=FileBlame, scopes=READ_SCOPES)
async def get_blame(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
    q: FileBlame = await params(request)
    return await in_thread(_blame, db, viewer, q, runtime(request).settings, head=is_head(request))


def _blame(db: Db, viewer: Actor | None, q: FileBlame, settings: Settings, *, head: bool) -> Response[bytes]:
    """Blame with its JSON, both made in the caller's thread: a file's ranges may number in
    the hundreds of thousands."""
    lines = (q.range.start, q.range.end) if q.range is not None else None
    blamed = service.blame_file(
        db, viewer, q.id, q.file_path, q.ref, settings, lines=lines, headers_only=head
    )
    return render(blame_json(blamed.ranges), headers=file_headers(blamed.record, blamed.digest))


@post(FILE, params=FileWrite)
async def create_file(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    p: FileWrite = await params(request)
    branch = await in_thread(
        service.write_file, db, actor, p.id, p.file_path, p, runtime(request).settings, "create"
    )
    return render(write_result(p.file_path, branch), status=201)


@put(FILE, params=FileWrite)
async def update_file(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    p: FileWrite = await params(request)
    branch = await in_thread(
        service.write_file, db, actor, p.id, p.file_path, p, runtime(request).settings, "update"
    )
    return render(write_result(p.file_path, branch))


@delete(FILE, params=FileDelete)
async def delete_file(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    p: FileDelete = await params(request)
    await in_thread(service.write_file, db, actor, p.id, p.file_path, p, runtime(request).settings, "delete")
    return no_content()


ROUTES: list[HTTPRouteHandler] = [get_file, get_raw_file, get_blame, create_file, update_file, delete_file]
