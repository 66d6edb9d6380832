"""Exception handlers: domain errors and framework errors become GitLab bodies. Never a
stack trace, never a 500 for what the client got wrong, and never a 500 for a database that
is out of connections or busy: that is a 503 the client may retry."""

from __future__ import annotations

import logging
from http import HTTPStatus
from typing import Any

from litestar import Request, Response
from litestar.exceptions import (
    ClientException,
    HTTPException,
    MethodNotAllowedException,
    NotAuthorizedException,
    NotFoundException,
    PermissionDeniedException,
    ValidationException,
)

from kiln.api._render import render
from kiln.db import database_unavailable
from kiln.errors import KilnError, MethodNotAllowed, RouteNotFound

log = logging.getLogger("kiln.api")

UNAVAILABLE = {"message": "503 Service Unavailable"}


def kiln_error(_: Request[Any, Any, Any], exc: KilnError) -> Response[bytes]:
    return render(exc.body(), status=exc.status, headers=exc.headers() or None)


def unavailable(retry_after: int) -> Response[bytes]:
    return render(UNAVAILABLE, status=503, headers={"Retry-After": str(retry_after)})


def retry_after(request: Request[Any, Any, Any]) -> int:
    runtime = getattr(request.app.state, "kiln", None)
    return int(getattr(getattr(runtime, "settings", None), "retry_after_seconds", 1))


def framework_error(request: Request[Any, Any, Any], exc: Exception) -> Response[bytes]:
    if database_unavailable(exc):
        log.warning("503 on %s %s: %s", request.method, request.url.path, type(exc).__name__)
        return unavailable(retry_after(request))
    if isinstance(exc, NotFoundException):
        return kiln_error(request, RouteNotFound())
    if isinstance(exc, MethodNotAllowedException):
        return kiln_error(request, MethodNotAllowed(_allow(exc)))
    if isinstance(exc, NotAuthorizedException):
        return render({"message": "401 Unauthorized"}, status=401)
    if isinstance(exc, PermissionDeniedException):
        return render({"message": "403 Forbidden"}, status=403)
    if isinstance(exc, ValidationException):
        return render({"error": "parameters are invalid"}, status=400)
    if isinstance(exc, HTTPException):
        status = exc.status_code
        if status == 413:
            return render({"message": "413 Request Entity Too Large"}, status=413)
        if isinstance(exc, ClientException) or 400 <= status < 500:
            return render({"message": f"{status} {exc.detail}"}, status=status)
        # A server-side detail may name internals; the client gets the status phrase only.
        log.error("%s on %s %s: %s", status, request.method, request.url.path, exc.detail)
        return render({"message": f"{status} {_phrase(status)}"}, status=status)
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    return render({"message": "500 Internal Server Error"}, status=500)


def _allow(exc: MethodNotAllowedException) -> str:
    """The route's methods; HEAD is served wherever GET is (api/_asgi)."""
    listed = [m.strip() for m in (exc.headers or {}).get("allow", "").split(",") if m.strip()]
    if "GET" in listed and "HEAD" not in listed:
        listed.append("HEAD")
    return ", ".join(sorted(listed))


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


HANDLERS: dict[type[Exception] | int, Any] = {
    KilnError: kiln_error,
    Exception: framework_error,
}
