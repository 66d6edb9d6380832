"""A plain ASGI wrapper around the Litestar app, for what must happen before routing:

- route on the raw path, so `%2F` inside a segment stays one parameter
  (`/projects/group%2Fproject`); every other escape is decoded;
- answer HEAD on every GET route (headers of the GET, no body);
- refuse oversized bodies (Content-Length) and non-UTF-8 paths before any work.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

Scope = dict[str, Any]
_ESCAPE = re.compile(rb"%([0-9A-Fa-f]{2})")
_KEEP = {b"2F", b"2f", b"25"}  # '/' and '%' stay escaped; the dependency decodes them


def decode_path(raw: bytes) -> str | None:
    def repl(m: re.Match[bytes]) -> bytes:
        if m.group(1) in _KEEP:
            return m.group(0)
        return bytes([int(m.group(1), 16)])

    try:
        return _ESCAPE.sub(repl, raw).decode("utf-8")
    except UnicodeDecodeError:
        return None


class KilnASGI:
    def __init__(self, app: Any, max_body: int) -> None:
        self.app = app
        self.max_body = max_body

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
            scope = {**scope, "path": path}
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    too_big = int(value) > self.max_body
                except ValueError:
                    await _reply(send, 400, {"error": "Content-Length is invalid"})
                    return
                if too_big:
                    await _reply(send, 413, {"message": "413 Request Entity Too Large"})
                    return
        if scope["method"] == "HEAD":
            scope = {**scope, "method": "GET", "kiln_head": True}
            send = _without_body(send)
        await self.app(scope, receive, send)


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
