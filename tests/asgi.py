"""One request handed to the app as a server would hand it: the body given only as the app
asks for it, and every message the app sends kept, so a test sees how much of a body kiln
read and whether an answer ended whole or was cut off."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson


@dataclass
class Exchange:
    status: int = 0
    headers: dict[bytes, bytes] = field(default_factory=dict)
    body: bytes = b""
    read: int = 0  # bytes of the request body the app asked for
    ended: bool = False  # the app sent its last body message
    raised: BaseException | None = None  # what the app raised, as a server would see it

    def json(self) -> Any:
        return orjson.loads(self.body)


def exchange(
    client: Any,
    method: str,
    path: str,
    headers: list[tuple[bytes, bytes]] | None = None,
    *,
    query: bytes = b"",
    body: Callable[[int], bytes | None] | None = None,
) -> Exchange:
    """`body(read_so_far)` gives the next chunk of the request body, or None at its end."""
    seen = Exchange()

    async def call() -> None:
        finished = False
        connected = asyncio.Event()  # the client stays until the answer has ended

        async def receive() -> dict[str, Any]:
            nonlocal finished
            if finished:
                await connected.wait()
                return {"type": "http.disconnect"}
            chunk = body(seen.read) if body is not None else None
            if chunk is None:
                finished = True
                return {"type": "http.request", "body": b"", "more_body": False}
            seen.read += len(chunk)
            return {"type": "http.request", "body": chunk, "more_body": True}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                seen.status = message["status"]
                seen.headers = dict(message.get("headers", []))
            elif message["type"] == "http.response.body":
                seen.body += message.get("body", b"")
                seen.ended = not message.get("more_body", False)
                if seen.ended:
                    connected.set()  # a server tells the app the exchange is over

        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": query,
            "root_path": "",
            "headers": [(b"host", b"kiln.test"), *(headers or [])],
            "client": ("127.0.0.1", 40000),
            "server": ("kiln.test", 80),
        }
        try:
            await client.app(scope, receive, send)
        except Exception as exc:  # a server would log it and cut the connection
            seen.raised = exc
        finally:
            connected.set()

    client.blocking_portal.call(call)
    return seen
