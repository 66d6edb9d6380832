"""The outermost ASGI layer: one JSON access-log line and the HTTP metrics per request, and
the request id (`X-Request-Id`: the client's if sane, else a new one) on every answer and on
every log record written while answering.

The access line (logger `kiln.access`) holds no secret: the query string is logged with the
values of token, password and secret parameters replaced, headers and bodies never."""

from __future__ import annotations

import logging
import os
import re
import time
from time import perf_counter
from typing import Any
from urllib.parse import unquote_plus

import orjson

from kiln import metrics
from kiln.metrics import CURRENT, RequestContext
from kiln.observability import ACCESS_LOGGER, instrument, join_serving, tag_log_records
from kiln.runtime import Runtime

Scope = dict[str, Any]
access_log = logging.getLogger(ACCESS_LOGGER)

REQUEST_ID_HEADER = b"x-request-id"
MAX_REQUEST_ID = 128
FILTERED = "[FILTERED]"
# Query parameters whose values are never logged: any name holding one of these words
# (private_token, access_token, job_token, user[password], client_secret…), and OAuth's code.
_SECRET_WORDS = ("token", "password", "secret", "passwd")
_SECRET_NAMES = frozenset({"code", "key", "signature"})
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
# The version (4) and variant (RFC 4122) bits of a random UUID.
_UUID4_CLEAR = ~((0xF000 << 64) | (0xC000 << 48))
_UUID4_SET = (0x4000 << 64) | (0x8000 << 48)
UNMATCHED = "unmatched"  # the route label of a request no route took (404s, early refusals)
# Where the layer keeps what it learns of a request, in the scope every layer below shares.
_SCOPE_KEY = "kiln_observe"


def observe(app: Any, rt: Runtime) -> Observe:
    """Wrap kiln's ASGI app. KilnASGI hands Litestar a copy of the scope, so what Litestar
    and the dependencies write there (the route, the caller) is picked up by a tap just
    above Litestar."""
    instrument(rt.engine)
    tag_log_records()
    join_serving()
    app.app = _Tap(app.app)
    return Observe(app)


class _Answer:
    __slots__ = ("bytes", "inner", "status")

    def __init__(self) -> None:
        self.status = 0
        self.bytes = 0
        self.inner: Scope | None = None


def answered_as(scope: Scope, route: str | None, actor: Any) -> None:
    """A request answered before Litestar saw it (a kept answer): its route and caller, for
    the access log and the metrics."""
    answer = scope.get(_SCOPE_KEY)
    if answer is not None:
        answer.inner = {"path_template": route, "kiln_actor": actor}


class _Tap:
    """Keeps a reference to the scope Litestar sees; otherwise the Litestar app itself."""

    def __init__(self, app: Any) -> None:
        self.app = app

    def __getattr__(self, name: str) -> Any:
        return getattr(self.app, name)

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        answer = scope.get(_SCOPE_KEY)
        if answer is not None:
            answer.inner = scope
        await self.app(scope, receive, send)


class Observe:
    def __init__(self, inner: Any) -> None:
        self.inner = inner
        # Label children per (route, method, status): a dict lookup instead of
        # prometheus_client's label resolution on every request.
        self._children: dict[tuple[str, str, int], tuple[Any, Any, Any]] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.inner(scope, receive, send)
            return
        started = perf_counter()
        request_id = request_id_of(scope["headers"])
        context = RequestContext(request_id)
        answer = _Answer()
        scope[_SCOPE_KEY] = answer
        header = (REQUEST_ID_HEADER, request_id.encode())

        async def observed(message: dict[str, Any]) -> None:
            kind = message["type"]
            if kind == "http.response.body":
                answer.bytes += len(message.get("body", b""))
            elif kind == "http.response.start":
                answer.status = message["status"]
                message = {**message, "headers": [*message.get("headers", ()), header]}
            await send(message)

        token = CURRENT.set(context)
        try:
            await self.inner(scope, receive, observed)
        except BaseException:
            if not answer.status:
                answer.status = 500
            raise
        finally:
            CURRENT.reset(token)
            self.record(scope, answer, context, perf_counter() - started)

    def record(self, scope: Scope, answer: _Answer, context: RequestContext, elapsed: float) -> None:
        inner = answer.inner or {}
        route = inner.get("path_template") or UNMATCHED
        method = scope["method"]
        if method not in _METHODS:
            method = "OTHER"
        key = (route, method, answer.status)
        children = self._children.get(key)
        if children is None:
            children = (
                metrics.HTTP_REQUESTS.labels(route, method, str(answer.status)),
                metrics.HTTP_LATENCY.labels(route, method),
                metrics.HTTP_STATEMENTS.labels(route),
            )
            self._children[key] = children
        children[0].inc()
        children[1].observe(elapsed)
        if context.statements:
            children[2].inc(context.statements)
        if not access_log.isEnabledFor(logging.INFO):
            return
        actor = inner.get("kiln_actor")
        client = scope.get("client")
        line = {
            "time": utc_ms(time.time()),
            "request_id": context.request_id,
            "method": scope["method"],
            "path": logged_path(scope),
            "route": route,
            "status": answer.status,
            "duration_ms": round(elapsed * 1000, 2),
            "user_id": actor.id if actor is not None else None,
            "statements": context.statements,
            "db_ms": round(context.db_seconds * 1000, 2),
            "bytes": answer.bytes,
            "remote_ip": client[0] if client else None,
        }
        # Past Logger.info: the caller's frame (file, line) says nothing here and costs a walk.
        text = orjson.dumps(line).decode()
        access_log.handle(access_log.makeRecord(ACCESS_LOGGER, logging.INFO, "", 0, text, None, None))


def request_id_of(headers: Any) -> str:
    """The client's X-Request-Id when it is printable ASCII without spaces and at most 128
    characters; otherwise a new one (uuid4, hex)."""
    for name, value in headers:
        if name == REQUEST_ID_HEADER:
            if 0 < len(value) <= MAX_REQUEST_ID and value.isascii():
                text: str = value.decode("ascii")
                if text.isprintable() and " " not in text:
                    return text
            break
    return new_request_id()


def new_request_id() -> str:
    """A random (version 4) UUID as 32 hex digits, without building a uuid.UUID."""
    n = int.from_bytes(os.urandom(16), "big") & _UUID4_CLEAR | _UUID4_SET
    return f"{n:032x}"


def logged_path(scope: Scope) -> str:
    """The path as the client sent it, with the query string's secrets masked."""
    raw = scope.get("raw_path")
    path = raw.split(b"?", 1)[0].decode("utf-8", "backslashreplace") if raw else scope["path"]
    if "/uploads/" in path:
        # An upload's URL holds its secret, the only thing that guards the file.
        path = _UPLOAD_SECRET.sub(rf"/uploads/{FILTERED}/", path)
    query = scope.get("query_string")
    if query:
        return f"{path}?{masked_query(query.decode('utf-8', 'backslashreplace'))}"
    return path


_UPLOAD_SECRET = re.compile(r"/uploads/[0-9a-fA-F]{32}/")


def masked_query(query: str) -> str:
    parts = query.split("&")
    for i, part in enumerate(parts):
        name, eq, _value = part.partition("=")
        if eq and is_secret(name):
            parts[i] = f"{name}={FILTERED}"
    return "&".join(parts)


def is_secret(name: str) -> bool:
    low = (unquote_plus(name) if "%" in name or "+" in name else name).lower()
    return low in _SECRET_NAMES or any(word in low for word in _SECRET_WORDS)


_second: list[Any] = [-1, ""]  # the last second formatted, and its text


def utc_ms(t: float) -> str:
    """UTC ISO 8601 with milliseconds and Z, as every time kiln writes."""
    seconds = int(t)
    if _second[0] != seconds:
        _second[:] = [seconds, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))]
    return f"{_second[1]}.{int((t - seconds) * 1000):03d}Z"
