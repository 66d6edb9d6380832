"""Jobs (GitLab's Jobs API and job artifacts): a project's and a pipeline's jobs, one job, its
log, retry, cancel, play, erase; artifacts by job or by ref, kept or deleted.

The job routes ask for a signed-in caller, as GitLab's do; a pipeline's job lists and the
artifact downloads also serve anonymous callers on public projects and CI job tokens."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler
from litestar.response import Stream

from kiln.api import _user_content
from kiln.api._deps import Authenticated, Db, Viewer, in_thread, runtime, streamed
from kiln.api._pagination import page_of, paginated
from kiln.api._params import params
from kiln.api._render import no_content, render
from kiln.api._routes import delete, get, post
from kiln.entities import ci_jobs as view
from kiln.entities.ci_jobs import Beside
from kiln.errors import RouteNotFound
from kiln.schemas.ci_jobs import (
    ArtifactFile,
    JobCancel,
    JobGet,
    JobList,
    JobPlay,
    PipelineJobList,
    ProjectArtifacts,
    RefRoute,
)
from kiln.services import ci_jobs as service
from kiln.services.ci_jobs import ArchiveEntry, Jobs, OneJob, StoredFile

if TYPE_CHECKING:
    from kiln.pagination import Page
    from kiln.queries.ci_jobs import JobRow

Req = Request[Any, Any, Any]
JOBS = "/projects/{id:str}/jobs"
JOB = JOBS + "/{job_id:str}"


def _now() -> datetime:
    return datetime.now(UTC)


def _one(found: OneJob, status: int = 200) -> Response[bytes]:
    return render(view.one(found.row, found.beside, _now()), status=status)


# ----------------------------------------------------------------------------- lists


def _page(
    request: Req, found: Jobs, page: Page, shown: Callable[[JobRow, Beside, datetime], Any]
) -> Response[bytes]:
    """A page of jobs, each shown with what was read beside the page."""
    now = _now()
    return paginated(request, [shown(r, found.beside, now) for r in found.page.items], page, found.page)


@get(JOBS, params=JobList, summary="List a project's jobs")
async def list_jobs(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    q: JobList = await params(request)
    page = page_of(q)
    found = service.list_jobs(db, actor, q, page, runtime(request).settings)
    return _page(request, found, page, view.job)


@get("/projects/{id:str}/pipelines/{pipeline_id:str}/jobs", auth="optional", params=PipelineJobList)
async def list_pipeline_jobs(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
    """A pipeline's jobs."""
    q: PipelineJobList = await params(request)
    page = page_of(q)
    found = service.list_pipeline_jobs(db, viewer, q, page, runtime(request).settings)
    return _page(request, found, page, view.job)


@get("/projects/{id:str}/pipelines/{pipeline_id:str}/bridges", auth="optional", params=PipelineJobList)
async def list_pipeline_bridges(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
    """A pipeline's trigger jobs (bridges)."""
    q: PipelineJobList = await params(request)
    page = page_of(q)
    found = service.list_pipeline_jobs(db, viewer, q, page, runtime(request).settings, bridges=True)
    return _page(request, found, page, view.bridge)


# ----------------------------------------------------------------------------- one job


@get(JOB, params=JobGet, summary="Get a job")
async def get_job(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    q: JobGet = await params(request)
    return _one(service.get_job(db, actor, q.id, q.job_id, runtime(request).settings))


def _stored(found: StoredFile, media_type: str, disposition: str | None = None) -> Response[Any]:
    """A stored file streamed as it is read (never whole in memory)."""
    headers = {
        "Content-Length": str(found.size),
        "X-Content-Type-Options": "nosniff",
        "Content-Security-Policy": _user_content.SANDBOX,
    }
    if disposition is not None:
        headers["Content-Disposition"] = disposition
    if not found.exists or found.size == 0:
        return Response(content=b"", media_type=media_type, headers={**headers, "Content-Length": "0"})
    return Stream(streamed(found.chunks()), media_type=media_type, headers=headers)


@get(JOB + "/trace", params=JobGet, summary="Get a job's log")
async def get_trace(request: Req, db: Db, actor: Authenticated) -> Response[Any]:
    q: JobGet = await params(request)
    found = service.trace(db, actor, q.id, q.job_id, runtime(request).settings)
    return _stored(found, _user_content.TEXT, f'infile; filename="{found.filename}"')


@post(JOB + "/cancel", params=JobCancel, summary="Cancel a job")
async def cancel_job(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    p: JobCancel = await params(request)
    found = await in_thread(
        service.cancel_job, db, actor, p.id, p.job_id, runtime(request).settings, force=p.force
    )
    return _one(found, 201)


@post(JOB + "/retry", params=JobGet, summary="Retry a job")
async def retry_job(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    p: JobGet = await params(request)
    found = await in_thread(service.retry_job, db, actor, p.id, p.job_id, runtime(request).settings)
    return _one(found, 201)


@post(JOB + "/erase", params=JobGet, summary="Erase a job's log and artifacts")
async def erase_job(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    p: JobGet = await params(request)
    found = await in_thread(service.erase_job, db, actor, p.id, p.job_id, runtime(request).settings)
    return _one(found, 201)


@post(JOB + "/play", params=JobPlay, status=200, summary="Play a manual or delayed job")
async def play_job(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    p: JobPlay = await params(request)
    found = await in_thread(service.play_job, db, actor, p, runtime(request).settings)
    return _one(found, 200)


# ----------------------------------------------------------------------------- artifacts


def _archive(found: StoredFile) -> Response[Any]:
    served = _user_content.ServedAs.download(
        "application/zip" if found.filename.endswith(".zip") else _user_content.OCTET_STREAM
    )
    headers = {"Content-Length": str(found.size)}
    return _user_content.stream(streamed(found.chunks()), found.filename, served, headers)


def _entry(found: ArchiveEntry) -> Stream:
    served = _user_content.served_as(found.filename)
    headers = {"Content-Length": str(found.size)}
    return _user_content.stream(streamed(found.chunks()), found.filename, served, headers)


@get(JOB + "/artifacts", auth="optional", params=JobGet, summary="Download a job's artifacts archive")
async def download_artifacts(request: Req, db: Db, viewer: Viewer) -> Response[Any]:
    q: JobGet = await params(request)
    return _archive(service.archive(db, viewer, q.id, q.job_id, runtime(request).settings))


@get(
    JOB + "/artifacts/{artifact_path:path}",
    auth="optional",
    params=ArtifactFile,
    summary="Download one file of a job's artifacts archive",
)
async def download_artifact_file(request: Req, db: Db, viewer: Viewer) -> Response[Any]:
    q: ArtifactFile = await params(request)
    found = await in_thread(
        service.archive_entry, db, viewer, q.id, q.job_id, q.artifact_path, runtime(request).settings
    )
    return _entry(found)


@get(
    JOBS + "/artifacts/{rest:path}",
    auth="optional",
    params=RefRoute,
    summary="Download the artifacts of the latest successful job of a name on a ref",
)
async def download_by_ref(request: Req, db: Db, viewer: Viewer) -> Response[Any]:
    """`<ref_name>/download` (the archive) or `<ref_name>/raw/<path>` (one file of it)."""
    q: RefRoute = await params(request)
    rest = q.rest.lstrip("/")
    settings = runtime(request).settings
    recent = q.search_recent_successful_pipelines
    ref, sep, path = rest.partition("/raw/")
    if sep and ref and path:
        found = await in_thread(
            service.archive_entry_by_ref, db, viewer, q.id, ref, q.job, path, recent, settings
        )
        return _entry(found)
    if rest.endswith("/download") and len(rest) > len("/download"):
        ref = rest[: -len("/download")]
        return _archive(service.archive_by_ref(db, viewer, q.id, ref, q.job, recent, settings))
    raise RouteNotFound()


@post(JOB + "/artifacts/keep", params=JobGet, status=200, summary="Keep a job's artifacts")
async def keep_artifacts(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    p: JobGet = await params(request)
    found = await in_thread(service.keep_artifacts, db, actor, p.id, p.job_id, runtime(request).settings)
    return _one(found, 200)


@delete(JOB + "/artifacts", params=JobGet, summary="Delete a job's artifacts")
async def delete_job_artifacts(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    p: JobGet = await params(request)
    await in_thread(service.delete_artifacts, db, actor, p.id, p.job_id, runtime(request).settings)
    return no_content()


@delete(
    "/projects/{id:str}/artifacts",
    params=ProjectArtifacts,
    status=202,
    summary="Delete a project's artifacts",
)
async def delete_project_artifacts(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    p: ProjectArtifacts = await params(request)
    await in_thread(service.delete_project_artifacts, db, actor, p.id)
    return render({"message": "202 Accepted"}, status=202)


ROUTES: list[HTTPRouteHandler] = [
    list_jobs,
    list_pipeline_jobs,
    list_pipeline_bridges,
    get_job,
    get_trace,
    cancel_job,
    retry_job,
    erase_job,
    play_job,
    download_artifacts,
    download_artifact_file,
    download_by_ref,
    keep_artifacts,
    delete_job_artifacts,
    delete_project_artifacts,
]
