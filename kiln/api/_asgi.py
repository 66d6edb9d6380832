"""A plain ASGI wrapper around the Litestar app, for what must happen before routing:

- route on the raw path, so `%2F` inside a segment stays one parameter
  (`/projects/group%2Fproject`); every other escape is decoded;
- route a project's uploads at their project-relative URL, whose project path has slashes;
- answer HEAD on every GET route (headers of the GET, no body);
- refuse oversized bodies (Content-Length up front, chunked bodies as they stream) and
  non-UTF-8 paths before any work.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from kiln.api._deps import SESSION_SCOPE_KEY
from kiln.errors import PayloadTooLarge
from kiln.services import git_http as transport

Scope = dict[str, Any]
_ESCAPE = re.compile(rb"%([0-9A-Fa-f]{2})")
_KEEP = {b"2F", b"2f", b"25"}  # '/' and '%' stay escaped; the dependency decodes them
# A project's upload at its project-relative URL: /<namespace>/<project>/uploads/<secret>/<name>.
_PROJECT_UPLOAD = re.compile(r"^/(?!api/|-/)(.+)/uploads/([0-9a-f]{32})/([^/]+)$")


def decode_path(raw: bytes) -> str | None:
    """The routing path: every escape decoded except `%2F` and `%25`; None if not UTF-8."""

    def repl(m: re.Match[bytes]) -> bytes:
        if m.group(1) in _KEEP:
            return m.group(0)
        return bytes([int(m.group(1), 16)])

    try:
        return _ESCAPE.sub(repl, raw).decode("utf-8")
    except UnicodeDecodeError:
        return None


# git's smart HTTP requests: their paths and body types.
_GIT_RPC_PATHS = tuple(f"/{service}" for service in transport.SERVICES)
_GIT_PACK_REQUESTS = tuple(
    transport.content_type(service, "request").encode() for service in transport.SERVICES
)


class KilnASGI:
    def __init__(self, app: Any, max_body: int) -> None:
        self.app = app
        self.max_body = max_body

    def body_limit(self) -> int:
        """Read per request from the runtime's settings, so a reconfigured limit applies at once."""
        runtime = getattr(getattr(self.app, "state", None), "kiln", None)
        settings = getattr(runtime, "settings", None)
        return int(getattr(settings, "max_request_body_bytes", self.max_body))

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        raw = scope.get("raw_path")
        if raw:
            path = decode_path(raw.split(b"?", 1)[0])
            if path is None:
                await _reply(send, 400, {"error": "path is not valid UTF-8"})
                return
            upload = _PROJECT_UPLOAD.match(path)
            if upload is not None:
                project = upload.group(1).replace("%", "%25").replace("/", "%2F")
                path = f"/-/project-uploads/{project}/{upload.group(2)}/{upload.group(3)}"
            scope = {**scope, "path": path}
        headers = scope.get("headers", ())
        if scope["path"].endswith(_GIT_RPC_PATHS) and any(
            name == b"content-type" and value in _GIT_PACK_REQUESTS for name, value in headers
        ):
            # Streamed to git as it arrives; its own limit is max_push_bytes.
            await self._forward(scope, receive, send)
            return
        limit = self.body_limit()
        for name, value in headers:
            if name == b"content-length":
                try:
                    too_big = int(value) > limit
                except ValueError:
                    await _reply(send, 400, {"error": "Content-Length is invalid"})
                    return
                if too_big:
                    await _reply(send, 413, {"message": "413 Request Entity Too Large"})
                    return
        await self._forward(scope, _limited(receive, limit), send)

    async def _forward(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["method"] == "HEAD":
            scope = {**scope, "method": "GET", "kiln_head": True}
            send = _without_body(send)
        try:
            await self.app(scope, receive, send)
        finally:
            db = scope.get(SESSION_SCOPE_KEY)
            if db is not None:
                db.close()


def _limited(receive: Any, limit: int) -> Any:
    """A body without Content-Length is counted as it arrives; whoever reads past the limit
    gets PayloadTooLarge, which the error handlers answer with 413."""
    received = 0

    async def wrapped() -> dict[str, Any]:
        nonlocal received
        message: dict[str, Any] = await receive()
        if message["type"] == "http.request":
            received += len(message.get("body", b""))
            if received > limit:
                raise PayloadTooLarge()
        return message

    return wrapped


def _without_body(send: Any) -> Any:
    async def wrapped(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            if message.get("more_body"):
                return
            message = {"type": "http.response.body", "body": b"", "more_body": False}
        await send(message)

    return wrapped


async def _reply(send: Any, status: int, body: dict[str, Any]) -> None:
    payload = orjson.dumps(body)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})
