"""The runner protocol's job calls (GitLab's lib/api/ci/runner.rb): a runner asks for a job
(held as a long poll while there is none), reports its state, streams its log, uploads and
downloads artifacts. Runners authenticate with their own token; a job's calls with the job's
token (JOB-TOKEN, or `token`).

A held job request waits on the event loop, not in a thread: it looks at the database's
change stamp (kiln.changes, which hears commits of every process) a few times a second, and
asks the database again only when something was written and the queue changed."""

from __future__ import annotations

import asyncio
from typing import Any

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler

from kiln import changes, storage
from kiln.api import _user_content
from kiln.api._asgi import ADMISSION_SLOT, AdmissionSlot
from kiln.api._deps import Db, base_url, credentials_of, in_thread, runtime, streamed
from kiln.api._params import params
from kiln.api._render import render
from kiln.api._routes import get, patch, post, put
from kiln.entities.runner_jobs import artifact_upload
from kiln.runtime import Runtime
from kiln.schemas.runner_jobs import (
    ArtifactsAuthorize,
    ArtifactsDownload,
    ArtifactsUpload,
    CurrentJob,
    JobRequest,
    JobTrace,
    JobUpdate,
)
from kiln.services import runner_jobs as service

Req = Request[Any, Any, Any]

# How often a held request looks at the change stamp; and how often it asks the database
# again even if nothing seems to have changed (a runner's tags changed, a stamp missed).
TICK_S = 0.2
UNKNOWN_STAMP_S = 1.0
RECHECK_S = 10.0


def _ip(request: Req) -> str | None:
    client = request.scope.get("client")
    return str(client[0]) if client else None


def _job_token(request: Req, given: Any = None) -> str | None:
    token = request.headers.get("job-token") or (given if isinstance(given, str) else None)
    return token or request.query_params.get("token") or None


def _queue_headers(version: str) -> dict[str, str]:
    return {"X-GitLab-Last-Update": version, "X-Service-Last-Update": version}


@post("/jobs/request", auth="none", params=JobRequest, status=201)
async def request_job(request: Req, db: Db) -> Response[bytes]:
    p: JobRequest = await params(request)
    token = p.token if isinstance(p.token, str) and p.token else request.headers.get("runner-token")
    rt = runtime(request)
    ip = _ip(request)
    offer = await in_thread(service.request_job, db, rt.settings, token=token, info=p.info, ip=ip)
    if offer.payload is None and _holding[0] < HOLD_LIMIT:
        _holding[0] += 1
        try:
            offer = await _hold(rt, db, token, p.info, ip, offer, request.scope.get(ADMISSION_SLOT))
        finally:
            _holding[0] -= 1
    if offer.payload is None:
        return Response(b"", status_code=204, headers=_queue_headers(offer.version))
    return render(offer.payload, status=201, headers=_queue_headers(offer.version))


# Requests held now by this process (all on its serving loop). A held request gives its
# admission slot back while it waits (kiln.api._asgi.AdmissionSlot) and holds no connection;
# past this many, a runner is answered 204 at once and asks again.
_holding = [0]
HOLD_LIMIT = 2000


async def _hold(
    rt: Runtime,
    db: Any,
    token: str | None,
    info: Any,
    ip: str | None,
    offer: service.Offer,
    slot: AdmissionSlot | None,
) -> service.Offer:
    """Wait for a job up to the long poll's end, without a database slot; asked again as
    soon as the queue changed (with the slot taken back for the question)."""
    if slot is not None:
        slot.release()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + service.long_poll_seconds()
    clock = changes.clock_of(rt.engine)
    stamp = clock.stamp() if clock is not None else None
    seen = offer.version
    asked = looked = loop.time()
    while (left := deadline - loop.time()) > 0:
        await asyncio.sleep(min(TICK_S, left))
        if not rt.ready:
            break  # shutting down: the runner asks again, of another process
        now = loop.time()
        current = clock.stamp() if clock is not None else None
        due = now - asked >= RECHECK_S
        if not due:
            if current is not None and current == stamp:
                continue
            if current is None and now - looked < UNKNOWN_STAMP_S:
                continue
            stamp, looked = current, now
            if slot is not None and not await slot.retake():
                break  # overloaded: the runner asks again
            version = await in_thread(service.queue_version_at, rt.sessions, current)
            if slot is not None:
                slot.release()
            if version == seen:
                continue
        if slot is not None and not await slot.retake():
            break
        offer = await in_thread(service.request_job, db, rt.settings, token=token, info=info, ip=ip)
        if slot is not None:
            slot.release()
        asked = looked = loop.time()
        seen = offer.version
        if offer.payload is not None:
            return offer
    return offer


@put("/jobs/{id:int}", auth="none", params=JobUpdate)
async def update_job(request: Req, db: Db) -> Response[bytes]:
    p: JobUpdate = await params(request)
    answer = await in_thread(
        service.update_job,
        db,
        runtime(request).settings,
        p.id,
        token=_job_token(request, p.token),
        state=p.state,
        failure_reason=p.failure_reason,
        exit_code=p.exit_code,
        trace=p.trace,
        info=p.info,
        ip=_ip(request),
    )
    return render({"id": p.id, "status": answer.status}, headers={"Job-Status": answer.status})


@patch("/jobs/{id:int}/trace", auth="none", params=JobTrace, status=202)
async def append_trace(request: Req, db: Db) -> Response[bytes]:
    """The body is the log's next piece, read as bytes whatever its declared type."""
    job_id = int(request.path_params["id"])
    start = service.parse_range(request.headers.get("content-range"))
    body = await request.body()
    answer = await in_thread(
        service.append_trace,
        db,
        runtime(request).settings,
        job_id,
        token=_job_token(request),
        start=start,
        body=body,
    )
    headers = {
        "Job-Status": answer.status,
        "Range": f"0-{answer.size}",
        "X-GitLab-Trace-Update-Interval": str(service.TRACE_UPDATE_INTERVAL),
        "X-Service-Trace-Update-Interval": str(service.TRACE_UPDATE_INTERVAL),
    }
    if not answer.accepted:
        return render({"message": "403 Forbidden - The job log size limit was reached"}, 403, headers)
    return Response(b"", status_code=202, headers=headers)


@post("/jobs/{id:int}/artifacts/authorize", auth="none", params=ArtifactsAuthorize, status=200)
async def authorize_artifacts(request: Req, db: Db) -> Response[bytes]:
    p: ArtifactsAuthorize = await params(request)
    found = await in_thread(
        service.authorize_artifacts,
        db,
        runtime(request).settings,
        p.id,
        token=_job_token(request, p.token),
        filesize=p.filesize,
    )
    return render(found)


@post("/jobs/{id:int}/artifacts", auth="none", params=ArtifactsUpload)
async def upload_artifact(request: Req, db: Db) -> Response[bytes]:
    p: ArtifactsUpload = await params(request)
    job = await in_thread(
        service.upload_artifact,
        db,
        runtime(request).settings,
        p.id,
        token=_job_token(request, p.token),
        file=p.file,
        artifact_type=p.artifact_type,
        artifact_format=p.artifact_format,
        expire_in=p.expire_in,
    )
    return render(artifact_upload(job), status=201)


@get("/jobs/{id:int}/artifacts", auth="none", params=ArtifactsDownload)
async def download_artifacts(request: Req, db: Db) -> Any:
    p: ArtifactsDownload = await params(request)
    settings = runtime(request).settings
    found = service.artifact_download(db, settings, p.id, token=_job_token(request, p.token))
    files = storage.ci(settings)
    return _user_content.stream(
        streamed(files.iter_bytes(found.key)),
        found.filename,
        _user_content.ServedAs.download("application/octet-stream"),
        {"Content-Length": str(found.size)},
    )


@get("/job", auth="none", params=CurrentJob)
async def current_job(request: Req, db: Db) -> Response[bytes]:
    """The job token as every API call sends it (JOB-TOKEN, `job_token`: credentials_of), or
    as the runner protocol does (`token`)."""
    await params(request)
    rt = runtime(request)
    token = credentials_of(request)[0].job_token or _job_token(request)
    return render(service.job_of_token(db, rt.settings, token, base_url(request)))


ROUTES: list[HTTPRouteHandler] = [
    request_job,
    update_job,
    append_trace,
    authorize_artifacts,
    upload_artifact,
    download_artifacts,
    current_job,
]
