"""Version, health and readiness, the OpenAPI document and the Prometheus metrics."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response

from kiln import COMPATIBLE_GITLAB_VERSION, __version__, observability
from kiln.api import _openapi
from kiln.api._deps import Authenticated, Db, Viewer, in_thread, runtime
from kiln.api._render import render
from kiln.api._routes import get
from kiln.auth.tokens import API, READ_API, READ_USER
from kiln.metrics import CONTENT_TYPE
from kiln.services import health as health_service

Req = Request[Any, Any, Any]
READ = (API, READ_API, READ_USER)


def _version() -> dict[str, Any]:
    return {
        "version": COMPATIBLE_GITLAB_VERSION,
        "revision": f"kiln-{__version__}",
        "kas": {"enabled": False, "externalUrl": None, "externalK8sProxyUrl": None, "version": None},
        "enterprise": False,
    }


@get("/version", auth="optional", scopes=READ)
async def version(request: Req, viewer: Viewer) -> Response[bytes]:
    """Answered anonymously too: it is the readiness probe of tooling."""
    return render(_version())


@get("/metadata", scopes=READ)
async def metadata(request: Req, actor: Authenticated) -> Response[bytes]:
    return render(_version())


@get("/openapi.json", auth="none")
async def openapi(request: Req) -> Response[bytes]:
    rt = runtime(request)
    if rt.openapi_doc is None:
        rt.openapi_doc = _openapi.build(request.app)
    return render(rt.openapi_doc | {"servers": [{"url": rt.settings.external_url}]})  # paths carry /api/v4


@get("/-/health", auth="none")
async def health(request: Req) -> Response[bytes]:
    return Response(content=b"kiln OK", media_type="text/plain")


@get("/-/liveness", auth="none")
async def liveness(request: Req) -> Response[bytes]:
    return render({"status": "ok"})


@get("/-/readiness", auth="none")
async def readiness(request: Req, db: Db) -> Response[bytes]:
    ok, body = health_service.readiness(db, serving=runtime(request).ready)
    return render(body, status=200 if ok else 503)


@get("/-/metrics", auth="none")
async def metrics(request: Req) -> Response[bytes]:
    """Prometheus text: every HTTP process's counters and the job queue (read from the
    database, so off the event loop). Only for the monitoring allowlist, as GitLab's."""
    client = request.scope.get("client")
    rt = runtime(request)
    address = client[0] if client else None
    body = await in_thread(observability.scrape, address, rt.settings.monitoring_networks, rt.sessions)
    return Response(content=body, media_type=CONTENT_TYPE)
