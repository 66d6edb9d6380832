"""Route decorators: every route says who may call it, what parameters it takes, and which
token scopes reach it. The contract tests walk these declarations."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Literal, cast

from litestar.handlers import HTTPRouteHandler
from litestar.types import Method as HttpMethodName

from kiln.auth.tokens import API, READ_API
from kiln.policy import Action
from kiln.schemas._types import Params

Auth = Literal["required", "optional", "none"]


class NoParams(Params):
    pass


def route(
    method: str,
    path: str,
    *,
    auth: Auth = "required",
    params: type[Params] = NoParams,
    scopes: tuple[str, ...] | None = None,
    status: int = 200,
    summary: str | None = None,
    requires: Action | None = None,
) -> Callable[[Callable[..., Any]], HTTPRouteHandler]:
    """`auth`: required (401 without credentials), optional (anonymous gets the public view),
    none (credentials are not looked at: health checks, token endpoints).
    `scopes`: token scopes that reach the route; reads default to api/read_api, writes to api.
    `requires`: a policy action checked before parameters are parsed (GitLab's `before` blocks,
    e.g. admin-only resources answer 403 before any 400)."""
    if scopes is None:
        scopes = (API, READ_API) if method == "GET" else (API,)
    opt = {"auth": auth, "params": params, "scopes": scopes, "summary": summary, "requires": requires}

    def decorate(fn: Callable[..., Any]) -> HTTPRouteHandler:
        # The Response a handler returns carries the real status (204 included); Litestar only
        # needs a code that allows a body here.
        handler = HTTPRouteHandler(
            path=path,
            http_method=cast(HttpMethodName, method),
            status_code=200 if status == 204 else status,
            opt=opt | {"status": status},
            sync_to_thread=None if inspect.iscoroutinefunction(fn) else False,
            include_in_schema=False,
        )
        return handler(fn)

    return decorate


def get(path: str, **kw: Any) -> Callable[[Callable[..., Any]], HTTPRouteHandler]:
    return route("GET", path, **kw)


def post(path: str, **kw: Any) -> Callable[[Callable[..., Any]], HTTPRouteHandler]:
    kw.setdefault("status", 201)
    return route("POST", path, **kw)


def put(path: str, **kw: Any) -> Callable[[Callable[..., Any]], HTTPRouteHandler]:
    return route("PUT", path, **kw)


def patch(path: str, **kw: Any) -> Callable[[Callable[..., Any]], HTTPRouteHandler]:
    return route("PATCH", path, **kw)


def delete(path: str, **kw: Any) -> Callable[[Callable[..., Any]], HTTPRouteHandler]:
    kw.setdefault("status", 204)
    return route("DELETE", path, **kw)
