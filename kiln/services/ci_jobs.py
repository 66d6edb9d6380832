"""Jobs of a project's pipelines, as GitLab's Jobs API serves them: lists, one job, its log,
retry, cancel, play and erase; its artifacts downloaded whole or one file at a time (by job,
or as the latest successful job of a name on a ref), kept, or deleted.

Statuses move only through kiln.services.pipeline_processing. Reading takes GitLab's
read_build (the project's pipelines readable by the caller); retry, cancel and play take
update_build, and on a protected branch the right to push or merge to it; erasing is the
job's own user's or a Maintainer's; deleting artifacts a Maintainer's. Files are removed
after the transaction that forgets them commits, so a refused or failed request leaves
every file in place."""

from __future__ import annotations

import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pygit2
from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from kiln import jobs, policy
from kiln.auth.actor import Actor
from kiln.config import Settings
from kiln.db import transaction
from kiln.entities.ci_jobs import Beside, expired
from kiln.errors import BadRequest, Forbidden, NotFound
from kiln.git.names import is_object_id
from kiln.models.ci import (
    BRIDGE,
    BUILD,
    CANCELED,
    CANCELING,
    COMPLETED,
    FAILED,
    MANUAL,
    SCHEDULED,
    SUCCESS,
    CiJob,
    JobArtifact,
)
from kiln.pagination import Page, PageResult
from kiln.policy import Action, ProjectSubject
from kiln.queries import ci_jobs as finder
from kiln.queries import pipelines as pipeline_reads
from kiln.queries import users as user_reads
from kiln.queries.ci_jobs import ARCHIVE, ArtifactRow, JobRow
from kiln.queries.runners import ONLINE_WINDOW
from kiln.schemas.ci_jobs import JobList, JobPlay, PipelineJobList
from kiln.services import pipeline_processing, repositories, subjects
from kiln.storage import Storage, ci, job_prefix, trace_key

REMOVE_FILES = "ci.remove_artifact_files"
NOT_FOUND = "404 Not found"  # GitLab's answer for a job or pipeline that is not there
NOT_RETRYABLE = "Job is not retryable"
NOT_ERASABLE = "Job is not erasable!"
UNPLAYABLE = "Unplayable Job"
# What a job's `when` makes it: an action someone plays.
ACTIONS = ("manual", "delayed")
# Artifact file types a job's log is kept as, never removed with the artifacts.
TRACE_TYPES = ("trace",)
ZIP_CHUNK = 256 * 1024


@dataclass(slots=True)
class Jobs:
    page: PageResult  # items: JobRow
    beside: Beside


@dataclass(slots=True)
class OneJob:
    row: JobRow
    beside: Beside


@dataclass(slots=True)
class StoredFile:
    """A stored file to stream: the job's log, or its archive."""

    storage: Storage
    key: str
    filename: str
    size: int
    exists: bool

    def chunks(self) -> Iterator[bytes]:
        """The first `size` bytes as read now: a running job's log grows meanwhile, and the
        answer's length was said already."""
        left = self.size
        for chunk in self.storage.iter_bytes(self.key):
            if left <= 0:
                break
            yield chunk[:left]
            left -= len(chunk)


@dataclass(slots=True)
class ArchiveEntry:
    """One file inside a job's archive."""

    storage: Storage
    key: str
    path: str
    size: int

    @property
    def filename(self) -> str:
        return self.path.rsplit("/", 1)[-1]

    def chunks(self) -> Iterator[bytes]:
        """The file's bytes as they are inflated, never whole in memory."""
        with (
            self.storage.open(self.key) as fh,
            zipfile.ZipFile(fh) as archive,
            archive.open(self.path) as member,
        ):
            while chunk := member.read(ZIP_CHUNK):
                yield chunk


def _now() -> datetime:
    return datetime.now(UTC)


# ----------------------------------------------------------------------------- subjects


def _subject(
    db: Session, actor: Actor | None, ident: str, action: Action = Action.READ_BUILD
) -> ProjectSubject:
    """The project: 404 when hidden, 403 when its jobs (or `action`) are refused."""
    s = subjects.project(db, actor, ident, Action.READ_BUILD, rows=True)
    if action is not Action.READ_BUILD:
        policy.authorize(actor, action, s, "Project")
    return s


def _row(db: Session, s: ProjectSubject, job_id: int, *, any_type: bool = False) -> JobRow:
    row = finder.job_of(db, s.project.id, job_id, any_type=any_type)
    if row is None:
        raise NotFound(message=NOT_FOUND)
    return row


def _locked(db: Session, s: ProjectSubject, job_id: int, *, any_type: bool = False) -> CiJob:
    """The job for a write, locked against the runner and other writers."""
    types = (BUILD, BRIDGE) if any_type else (BUILD,)
    stmt = (
        select(CiJob)
        .where(CiJob.id == job_id, CiJob.project_id == s.project.id, CiJob.type.in_(types))
        .with_for_update()
    )
    job = db.scalars(stmt).first()
    if job is None:
        raise NotFound(message=NOT_FOUND)
    return job


def _protection(db: Session, s: ProjectSubject, job: CiJob) -> tuple[int | None, ...] | None:
    """The push and merge levels of the rule protecting the job's branch; None if none."""
    if job.tag:
        return None
    rule = repositories.protection_for(db, s.project.id, job.ref)
    return None if rule is None else (rule.push_access_level, rule.merge_access_level)


def _may_update(db: Session, actor: Actor, s: ProjectSubject, job: CiJob) -> None:
    if not policy.may_update_job(actor, s, _protection(db, s, job)):
        raise Forbidden()


# ----------------------------------------------------------------------------- views


def _project_web(settings: Settings, s: ProjectSubject) -> str:
    return f"{settings.external_url}/{s.namespace.full_path}/{s.project.path}"


def _commits(settings: Settings, project_id: int, shas: Iterable[str]) -> dict[str, pygit2.Commit | None]:
    """The commits of the page's distinct shas, read from the repository once each."""
    wanted = {sha for sha in shas if sha}
    if not wanted:
        return {}
    repo = repositories.store(settings).find(project_id)
    found: dict[str, pygit2.Commit | None] = {}
    for sha in wanted:
        commit = None
        if repo is not None and is_object_id(sha):
            try:
                obj = repo.get(sha)
            except (ValueError, pygit2.GitError):
                obj = None
            commit = obj if isinstance(obj, pygit2.Commit) else None
        found[sha] = commit
    return found


def _beside(
    db: Session,
    actor: Actor | None,
    s: ProjectSubject,
    rows: list[JobRow],
    settings: Settings,
    *,
    full: bool = True,
) -> Beside:
    """What the rows' views show beside them: one statement per related table, whatever
    the number of rows."""
    user_ids = sorted({r.user_id for r in rows if r.user_id is not None})
    users = {u.id: u for u in user_reads.rows_by_ids(db, user_ids)}
    job_ids = [r.id for r in rows]
    return Beside(
        base=settings.external_url,
        project_web=_project_web(settings, s),
        pipelines=pipeline_reads.basics_by_ids(db, sorted({r.pipeline_id for r in rows})),
        users=users,
        profiles={uid: policy.may(actor, Action.READ_USER_PROFILE, u) for uid, u in users.items()},
        commits=_commits(settings, s.project.id, (r.sha for r in rows)),
        artifacts=finder.artifacts_of(db, job_ids) if full and job_ids else {},
        runners=finder.runners_by_ids(db, (r.runner_id for r in rows)) if full else {},
        online_after=_now() - ONLINE_WINDOW,
    )


def _one(db: Session, actor: Actor | None, s: ProjectSubject, job_id: int, settings: Settings) -> OneJob:
    row = _row(db, s, job_id, any_type=True)
    return OneJob(row, _beside(db, actor, s, [row], settings, full=row.type == BUILD))


# ----------------------------------------------------------------------------- reading


def list_jobs(db: Session, actor: Actor | None, q: JobList, page: Page, settings: Settings) -> Jobs:
    """The project's jobs (builds), newest first."""
    s = _subject(db, actor, q.id)
    result = finder.page_of_jobs(db, s.project.id, page, statuses=q.scope, include_retried=q.include_retried)
    return Jobs(result, _beside(db, actor, s, result.items, settings))


def list_pipeline_jobs(
    db: Session,
    actor: Actor | None,
    q: PipelineJobList,
    page: Page,
    settings: Settings,
    *,
    bridges: bool = False,
) -> Jobs:
    """A pipeline's builds (or its bridges), newest first, retried ones only when asked."""
    s = _subject(db, actor, q.id)
    if pipeline_reads.row_of(db, s.project.id, q.pipeline_id) is None:
        raise NotFound(message=NOT_FOUND)
    result = finder.page_of_jobs(
        db,
        s.project.id,
        page,
        pipeline_id=q.pipeline_id,
        job_type=BRIDGE if bridges else BUILD,
        statuses=q.scope,
        include_retried=q.include_retried,
    )
    return Jobs(result, _beside(db, actor, s, result.items, settings, full=not bridges))


def get_job(db: Session, actor: Actor | None, ident: str, job_id: int, settings: Settings) -> OneJob:
    s = _subject(db, actor, ident)
    row = _row(db, s, job_id)
    return OneJob(row, _beside(db, actor, s, [row], settings))


def trace(db: Session, actor: Actor | None, ident: str, job_id: int, settings: Settings) -> StoredFile:
    """The job's log as stored (nothing yet, or erased: empty)."""
    s = _subject(db, actor, ident)
    row = _row(db, s, job_id)
    storage = ci(settings)
    key = trace_key(s.project.id, row.id)
    size = storage.size(key)
    return StoredFile(storage, key, f"{row.id}.log", size, size > 0)


# ----------------------------------------------------------------------------- changing


def _retryable(job: CiJob) -> bool:
    return not job.retried and job.status in (SUCCESS, FAILED, CANCELED)


def _playable(job: CiJob) -> bool:
    return job.when in ACTIONS and (job.status in (MANUAL, SCHEDULED) or _retryable(job))


def retry_job(db: Session, actor: Actor, ident: str, job_id: int, settings: Settings) -> OneJob:
    """A new job in place of a finished one (build or bridge); 403 for one still going."""
    s = _subject(db, actor, ident)
    with transaction(db):
        job = _locked(db, s, job_id, any_type=True)
        _may_update(db, actor, s, job)
        if not _retryable(job):
            raise Forbidden(NOT_RETRYABLE)
        new_id = pipeline_processing.retry_job(db, job, actor=actor).id
    return _one(db, actor, s, new_id, settings)


def cancel_job(
    db: Session, actor: Actor, ident: str, job_id: int, settings: Settings, *, force: bool = False
) -> OneJob:
    """Cancels the job if it may still be canceled; a finished job is answered as it is.
    `force` ends a job stuck in `canceling` (its runner never confirmed): Maintainers."""
    s = _subject(db, actor, ident)
    with transaction(db):
        job = _locked(db, s, job_id)
        protection = _protection(db, s, job)
        if force:
            if not policy.may_force_cancel_job(actor, s, protection):
                raise Forbidden()
            if job.status == CANCELING:
                pipeline_processing.transition(db, job, CANCELED, actor=actor)
                pipeline_processing.process(db, job.pipeline_id, actor=actor)
        elif not policy.may_update_job(actor, s, protection):
            raise Forbidden()
        pipeline_processing.cancel_job(db, job, actor=actor)
    return _one(db, actor, s, job_id, settings)


def play_job(db: Session, actor: Actor, p: JobPlay, settings: Settings) -> OneJob:
    """Starts a manual or delayed job (a finished one runs again as a copy), with the
    variables given for this run."""
    s = _subject(db, actor, p.id)
    variables = [{"key": v.key, "value": v.value} for v in p.job_variables_attributes or []]
    with transaction(db):
        job = _locked(db, s, p.job_id, any_type=True)
        _may_update(db, actor, s, job)
        if not _playable(job):
            raise BadRequest(UNPLAYABLE)
        played_id = pipeline_processing.play_job(db, job, actor=actor, variables=variables or None).id
    return _one(db, actor, s, played_id, settings)


def _stored_keys(db: Session, job_ids: list[int], *, keep_trace: bool = True) -> list[str]:
    stmt = select(JobArtifact.store_key).where(JobArtifact.job_id.in_(job_ids))
    if keep_trace:
        stmt = stmt.where(JobArtifact.file_type.not_in(TRACE_TYPES))
    return list(db.scalars(stmt))


def _remove(storage: Storage, keys: Iterable[str]) -> None:
    for key in keys:
        storage.delete(key)


def erase_job(db: Session, actor: Actor, ident: str, job_id: int, settings: Settings) -> OneJob:
    """Removes a finished job's log and artifacts, and says who erased it and when."""
    s = _subject(db, actor, ident)
    storage = ci(settings)
    with transaction(db):
        job = _locked(db, s, job_id)
        if not policy.may_erase_job(actor, s, _protection(db, s, job), job.user_id):
            raise Forbidden()
        keys = _stored_keys(db, [job.id], keep_trace=False)
        has_trace = job.trace_size > 0 or storage.exists(trace_key(s.project.id, job.id))
        if job.status not in COMPLETED or not (keys or has_trace):
            raise Forbidden(NOT_ERASABLE)
        db.execute(delete(JobArtifact).where(JobArtifact.job_id == job.id))
        job.erased_at = _now()
        job.erased_by_id = actor.id
        job.artifacts_expire_at = None
        job.trace_size = 0
    storage.delete_prefix(job_prefix(s.project.id, job_id))
    _remove(storage, keys)
    return _one(db, actor, s, job_id, settings)


def keep_artifacts(db: Session, actor: Actor, ident: str, job_id: int, settings: Settings) -> OneJob:
    """The job's artifacts are kept past their expiry."""
    s = _subject(db, actor, ident)
    with transaction(db):
        job = _locked(db, s, job_id)
        _may_update(db, actor, s, job)
        archive = next(
            (a for a in finder.artifacts_of(db, [job.id]).get(job.id, []) if a.file_type == ARCHIVE), None
        )
        if archive is None or expired(archive, _now()):
            raise NotFound()
        job.artifacts_expire_at = None
        db.execute(update(JobArtifact).where(JobArtifact.job_id == job.id).values(expire_at=None))
    return _one(db, actor, s, job_id, settings)


def delete_artifacts(db: Session, actor: Actor, ident: str, job_id: int, settings: Settings) -> None:
    """The job's artifacts (not its log) are removed: Maintainers."""
    s = _subject(db, actor, ident, Action.DESTROY_ARTIFACTS)
    with transaction(db):
        job = _locked(db, s, job_id)
        keys = _stored_keys(db, [job.id])
        db.execute(
            delete(JobArtifact).where(JobArtifact.job_id == job.id, JobArtifact.file_type.not_in(TRACE_TYPES))
        )
        job.artifacts_expire_at = None
    _remove(ci(settings), keys)


def delete_project_artifacts(db: Session, actor: Actor, ident: str) -> None:
    """Every artifact of the project's jobs is forgotten now and its file removed in the
    background (GitLab answers 202: accepted)."""
    s = _subject(db, actor, ident, Action.DESTROY_ARTIFACTS)
    with transaction(db):
        mine = (JobArtifact.project_id == s.project.id, JobArtifact.file_type.not_in(TRACE_TYPES))
        stored = list(db.scalars(select(JobArtifact.store_key).where(*mine)))
        if not stored:
            return
        db.execute(delete(JobArtifact).where(*mine))
        db.execute(
            update(CiJob)
            .where(CiJob.project_id == s.project.id, CiJob.artifacts_expire_at.is_not(None))
            .values(artifacts_expire_at=None)
        )
        jobs.enqueue(db, REMOVE_FILES, {"keys": stored})


@jobs.handler(REMOVE_FILES)
def _remove_files(ctx: jobs.JobContext, payload: dict[str, Any]) -> None:
    """Removing a file twice is harmless: a crash between removal and commit runs it again."""
    _remove(ci(ctx.settings), payload.get("keys") or [])


# ----------------------------------------------------------------------------- downloads


def _archive_of(
    db: Session, s: ProjectSubject, row: JobRow, settings: Settings
) -> tuple[ArtifactRow, Storage]:
    files = finder.artifacts_of(db, [row.id]).get(row.id, [])
    archive = next((a for a in files if a.file_type == ARCHIVE), None)
    storage = ci(settings)
    if archive is None or expired(archive, _now()) or not storage.exists(archive.store_key):
        raise NotFound()
    return archive, storage


def _stored_archive(archive: ArtifactRow, storage: Storage) -> StoredFile:
    # The stored file's own size: the answer's length must be what is sent.
    return StoredFile(storage, archive.store_key, archive.filename, storage.size(archive.store_key), True)


def _by_ref(db: Session, s: ProjectSubject, ref: str, name: str, recent: bool) -> JobRow:
    row = finder.latest_successful(db, s.project.id, ref, name, recent=recent, now=_now())
    if row is None:
        raise NotFound(message=NOT_FOUND)
    return row


def archive(db: Session, actor: Actor | None, ident: str, job_id: int, settings: Settings) -> StoredFile:
    s = _subject(db, actor, ident)
    return _stored_archive(*_archive_of(db, s, _row(db, s, job_id), settings))


def archive_by_ref(
    db: Session, actor: Actor | None, ident: str, ref: str, name: str, recent: bool, settings: Settings
) -> StoredFile:
    """The archive of the newest successful job called `name` in the latest successful
    pipeline on `ref` (`recent`: in any recent successful pipeline on it)."""
    s = _subject(db, actor, ident)
    return _stored_archive(*_archive_of(db, s, _by_ref(db, s, ref, name, recent), settings))


def _valid_path(path: str) -> str:
    """A path inside an archive as GitLab accepts it: no NUL, no `..` step."""
    if "\x00" in path or any(part == ".." for part in path.split("/")):
        raise BadRequest("400 Bad request", raw=True)
    return path.lstrip("/")


def _entry(archive: ArtifactRow, storage: Storage, path: str) -> ArchiveEntry:
    path = _valid_path(path)
    try:
        with storage.open(archive.store_key) as fh, zipfile.ZipFile(fh) as zf:
            info = zf.getinfo(path)
    except (KeyError, zipfile.BadZipFile, OSError):
        raise NotFound() from None
    if info.is_dir():
        raise NotFound()
    return ArchiveEntry(storage, archive.store_key, path, info.file_size)


def archive_entry(
    db: Session, actor: Actor | None, ident: str, job_id: int, path: str, settings: Settings
) -> ArchiveEntry:
    """One file of the job's archive; 404 when the archive or the file is not there."""
    s = _subject(db, actor, ident)
    return _entry(*_archive_of(db, s, _row(db, s, job_id), settings), path)


def archive_entry_by_ref(
    db: Session,
    actor: Actor | None,
    ident: str,
    ref: str,
    name: str,
    path: str,
    recent: bool,
    settings: Settings,
) -> ArchiveEntry:
    s = _subject(db, actor, ident)
    return _entry(*_archive_of(db, s, _by_ref(db, s, ref, name, recent), settings), path)
