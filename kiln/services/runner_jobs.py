"""The server side of GitLab's runner protocol: a runner asks for a job and is handed the
oldest pending one it may run, sends its log in pieces and its end state, uploads artifacts
and downloads those of earlier jobs. Tolerant of every runner in use (GitLab's own and older
third-party ones): a valid runner token never gets a 4xx from a job request.

Job statuses move only through kiln.services.pipeline_processing (`transition`, then
`process`). Jobs whose runner went silent, and pending jobs no runner took, are failed by the
job queue (`ci.check_stuck`, `ci.drop_stale_pending`)."""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections.abc import Hashable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, BinaryIO
from urllib.parse import quote, urlsplit, urlunsplit

from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from kiln import jobs, storage
from kiln.auth.sealing import SealError, unseal
from kiln.auth.tokens import digest
from kiln.config import Settings
from kiln.db import is_sqlite, transaction
from kiln.entities.runner_jobs import current_job, job_payload
from kiln.errors import (
    BadRequest,
    Forbidden,
    JobForbidden,
    NotFound,
    ParamError,
    PayloadTooLarge,
    RangeNotSatisfiable,
    Unauthorized,
)
from kiln.models.ci import (
    CANCELED,
    CANCELING,
    FAILED,
    FAILURE_REASONS,
    PENDING,
    RUNNING,
    SUCCESS,
    CiJob,
    JobArtifact,
    Runner,
)
from kiln.models.projects import Project
from kiln.queries import runner_jobs as queries
from kiln.schemas._types import Upload
from kiln.services import (
    ci_config,
    ci_predefined,
    ci_variables,
    instance_settings,
    job_tokens,
    merge_request_pipelines,
    repositories,
    runners,
)
from kiln.services import pipeline_processing as processing
from kiln.services.ci_yaml import durations

log = logging.getLogger(__name__)

CHECK_STUCK = "ci.check_stuck"
DROP_STALE_PENDING = "ci.drop_stale_pending"

# How long a job request is held while no job is there (GitLab Workhorse's
# apiCiLongPollingDuration, 50 s on GitLab.com); KILN_CI_LONG_POLL_SECONDS overrides it.
LONG_POLL_SECONDS = 50.0
# How often the runner is told to send its log (X-GitLab-Trace-Update-Interval).
TRACE_UPDATE_INTERVAL = 3
# GitLab's default ci_jobs_trace_size_limit: a log grows no further; the job fails.
TRACE_SIZE_LIMIT = 100 * 1024 * 1024
# A running job is looked at again this long after its timeout, and failed if still running.
STUCK_GRACE = timedelta(minutes=5)
# A job nobody took for this long fails (GitLab's stuck pending jobs).
PENDING_LIMIT = timedelta(hours=24)
SWEEP_EVERY = timedelta(hours=1)
# A runner's last contact is written at most this often (its status needs minutes, not ms).
CONTACT_EVERY = timedelta(seconds=60)
DEFAULT_TIMEOUT = 3600
JOB_TOKEN_USER = "gitlab-ci-token"

STATES = ("pending", "running", "success", "failed", "canceled")
FORMATS = ("zip", "gzip", "raw", "zipzstd", "tarzstd")


def stuck_grace() -> timedelta:
    """How long past its timeout a silent running job is given before it is failed: the
    environment's KILN_CI_STUCK_GRACE_SECONDS, else five minutes."""
    value = os.environ.get("KILN_CI_STUCK_GRACE_SECONDS")
    try:
        return timedelta(seconds=max(0.0, float(value))) if value else STUCK_GRACE
    except ValueError:
        return STUCK_GRACE


def long_poll_seconds() -> float:
    """The hold of a job request: the environment's, else GitLab's 50 s."""
    value = os.environ.get("KILN_CI_LONG_POLL_SECONDS")
    try:
        return max(0.0, float(value)) if value else LONG_POLL_SECONDS
    except ValueError:
        return LONG_POLL_SECONDS


def _now() -> datetime:
    return datetime.now(UTC)


# ---------------------------------------------------------------------------- runners


def runner_for(db: Session, token: str | None) -> Runner:
    """The runner behind an authentication token; 403 (the runner stops) for any other."""
    if not isinstance(token, str) or not token.isascii():
        raise Forbidden()
    runner = runners.by_token(db, token)
    if runner is None:
        raise Forbidden()
    return runner


_INFO_FIELDS = {
    "name": "name",
    "version": "version",
    "revision": "revision",
    "platform": "platform",
    "architecture": "architecture",
    "executor": "executor_type",
}


def _contact_due(runner: Runner, info: Any, ip: str | None) -> bool:
    """Whether a contact is worth a write: the runner was not heard of lately, or says
    something new of itself."""
    seen = runner.contacted_at
    if seen is None or _now() - seen >= CONTACT_EVERY:
        return True
    if ip and runner.ip_address != ip[:64]:
        return True
    if isinstance(info, dict):
        for key, column in _INFO_FIELDS.items():
            value = info.get(key)
            if isinstance(value, str | int | float) and getattr(runner, column) != str(value)[:255]:
                return True
    return False


def _record_contact(db: Session, runner: Runner, info: Any, ip: str | None) -> None:
    runners.record_contact(db, runner, info=info if isinstance(info, dict) else None, ip=ip)


# ---------------------------------------------------------------------------- taking a job


@dataclass(frozen=True, slots=True)
class Offer:
    """A job request's answer: the payload of the job taken, or none; and the queue's
    version (X-GitLab-Last-Update)."""

    payload: dict[str, Any] | None
    version: str


def _tags_fit(runner: Runner, tags: frozenset[str], job_tags: list[str]) -> bool:
    """A job's tags must all be the runner's; an untagged job goes to runners that take
    untagged jobs."""
    if not job_tags:
        return bool(runner.run_untagged)
    return set(job_tags) <= tags


def _matching(
    db: Session, runner: Runner, scope: queries.RunnerScope, *, skip_locked: bool
) -> list[queries.Candidate]:
    """The pending jobs the runner may run, oldest first (at most a few batches looked at)."""
    found: list[queries.Candidate] = []
    after = 0
    for _ in range(10):
        batch = queries.candidates(db, runner, scope, after=after, skip_locked=skip_locked)
        found += [c for c in batch if _tags_fit(runner, scope.tags, c.tag_list)]
        if found or len(batch) < queries.BATCH:
            break
        after = batch[-1].id
    return found


def request_job(
    db: Session, settings: Settings, *, token: str | None, info: Any = None, ip: str | None = None
) -> Offer:
    """POST /jobs/request, once: the oldest pending job the runner may run, taken for it
    (two runners never take one job), or none."""
    _fresh(db)
    runner = runner_for(db, token)
    due = _contact_due(runner, info, ip)
    scope = queries.scope_of(db, runner)
    matches = _matching(db, runner, scope, skip_locked=False) if runner.active else []
    _ensure_sweep(db)
    if not matches and not due:
        return _none(db)
    taken: tuple[CiJob, str, int] | None = None
    with transaction(db):
        if due:
            _record_contact(db, runner, info, ip)
        if matches:
            locked = not is_sqlite(db)
            for candidate in _matching(db, runner, scope, skip_locked=True) if locked else matches:
                taken = _take(db, settings, runner, candidate)
                if taken is not None:
                    break
    if taken is None:
        return _none(db)
    job, job_token, timeout = taken
    return Offer(_payload(db, settings, job, job_token, timeout), queue_version(db))


def _fresh(db: Session) -> None:
    """A request held for a while asks again from a fresh snapshot (SQLite reads a whole
    transaction in one)."""
    if db.in_transaction() and not db.info.get("tx_depth"):
        db.rollback()


def _none(db: Session) -> Offer:
    """No job: the queue's version, and the session's connection given back while the
    request is held."""
    offer = Offer(None, queue_version(db))
    _fresh(db)
    return offer


def _take(
    db: Session, settings: Settings, runner: Runner, candidate: queries.Candidate
) -> tuple[CiJob, str, int] | None:
    """The job for `runner`, if it is still pending as seen: the compare-and-swap on its
    lock_version lets exactly one of two runners that saw it have it."""
    claimed = db.execute(
        update(CiJob)
        .where(
            CiJob.id == candidate.id,
            CiJob.status == PENDING,
            CiJob.lock_version == candidate.lock_version,
        )
        .values(runner_id=runner.id, lock_version=CiJob.lock_version + 1)
        .execution_options(synchronize_session=False)
    )
    if claimed.rowcount != 1:  # type: ignore[attr-defined]
        return None
    job = db.get(CiJob, candidate.id, populate_existing=True)
    assert job is not None
    now = _now()
    processing.transition(db, job, RUNNING, now=now)
    assert job.started_at is not None
    job_token = job_tokens.derive(settings, job.id, job.started_at)
    job.token_digest = digest(job_token)
    job.trace_updated_at = now
    timeout = job_timeout(db, job, runner)
    processing.process(db, job.pipeline_id)
    jobs.enqueue(db, CHECK_STUCK, {"job_id": job.id}, run_at=now + timedelta(seconds=timeout) + stuck_grace())
    return job, job_token, timeout


def job_timeout(db: Session, job: CiJob, runner: Runner | None) -> int:
    """The job's own timeout, else its project's; never past the runner's maximum."""
    own = job.options.get("timeout") if job.options else None
    timeout = own if isinstance(own, int) and own > 0 else None
    if timeout is None:
        project = db.get(Project, job.project_id)
        timeout = project.build_timeout if project is not None and project.build_timeout else DEFAULT_TIMEOUT
    if runner is not None and runner.maximum_timeout:
        timeout = min(timeout, runner.maximum_timeout)
    return int(timeout)


def _payload(db: Session, settings: Settings, job: CiJob, job_token: str, timeout: int) -> dict[str, Any]:
    src = queries.payload_sources(db, job)
    repo_url = _repo_url(settings, src, job_token)
    config_path = src.pipeline.config_path or ci_config.configured_path(
        src.project.ci_config_path, instance_settings.current(db).get("default_ci_config_path")
    )
    variables = ci_predefined.for_job(
        settings,
        src,
        token=job_token,
        repo_url=repo_url,
        timeout=timeout,
        config_path=config_path,
        commit=_commit_facts(settings, job),
    )
    variables += merge_request_pipelines.job_variables(db, settings, src.pipeline)
    variables += [_yaml_variable(v) for v in job.yaml_variables or [] if isinstance(v, dict)]
    environment = job.options.get("environment") if job.options else None
    variables += ci_variables.for_pipeline(
        db,
        settings,
        project_id=job.project_id,
        namespace_ids=[n.id for n in src.namespaces],
        protected_ref=bool(job.protected),
        environment=environment.get("name") if isinstance(environment, dict) else None,
    )
    for row in src.pipeline_variables:
        variables.append(
            {
                "key": row.key,
                "value": _unsealed(settings, row.value),
                "public": False,
                "masked": False,
                "file": row.variable_type == "file",
                "raw": bool(row.raw),
            }
        )
    for played in (job.options or {}).get("job_variables") or []:
        if isinstance(played, dict) and played.get("key"):
            variables.append(
                {
                    "key": str(played["key"]),
                    "value": played.get("value", ""),
                    "public": False,
                    "masked": False,
                    "file": played.get("variable_type") == "file",
                    "raw": bool(played.get("raw", False)),
                }
            )
    queue_size = queries.queue_state(db)[0]
    return job_payload(
        src, token=job_token, repo_url=repo_url, timeout=timeout, variables=variables, queue_size=queue_size
    )


def _yaml_variable(v: dict[str, Any]) -> dict[str, Any]:
    return {
        "key": str(v.get("key", "")),
        "value": v.get("value", ""),
        "public": bool(v.get("public", True)),
        "masked": False,
        "file": False,
        "raw": bool(v.get("raw", False)),
    }


def _unsealed(settings: Settings, value: str) -> str:
    """A pipeline variable's value: sealed as every CI variable is kept (a value written
    before sealing is taken as it is)."""
    try:
        return unseal(settings, value)
    except SealError:
        return value


def _repo_url(settings: Settings, src: queries.PayloadSources, job_token: str) -> str:
    """The project's git URL with the job token as credentials git over HTTP accepts."""
    parts = urlsplit(settings.external_url.rstrip("/"))
    namespace = src.namespaces[-1].full_path if src.namespaces else ""
    full_path = f"{namespace}/{src.project.path}" if namespace else src.project.path
    netloc = f"{JOB_TOKEN_USER}:{quote(job_token, safe='')}@{parts.netloc}"
    return urlunsplit((parts.scheme, netloc, f"{parts.path}/{full_path}.git", "", ""))


def _commit_facts(settings: Settings, job: CiJob) -> ci_predefined.CommitFacts:
    """The commit's message, time and author, read from the repository (nothing when the
    repository does not hold it)."""
    try:
        repo = repositories.store(settings).open(job.project_id)
        commit = repo.get(job.sha)
        if commit is None or not hasattr(commit, "message"):
            return ci_predefined.CommitFacts()
        author = commit.author
        when = datetime.fromtimestamp(author.time, UTC)
        tag_message = ""
        if job.tag:
            ref = repo.references.get(f"refs/tags/{job.ref}")
            target = repo.get(ref.target) if ref is not None else None
            tag_message = getattr(target, "message", "") or "" if target is not None else ""
            tag_message = tag_message if hasattr(target, "tagger") else ""
        return ci_predefined.CommitFacts(
            message=commit.message,
            timestamp=when,
            author=f"{author.name} <{author.email}>",
            tag_message=tag_message,
        )
    except Exception:  # no repository, no such object: the commit's facts stay empty
        return ci_predefined.CommitFacts()


# ---------------------------------------------------------------------------- the queue's version

_version_lock = threading.Lock()
# The last stamp a version was read at, and that version.
_version_seen: list[Any] = [None, ""]


def queue_version(db: Session) -> str:
    """The queue's version (X-GitLab-Last-Update): it changes whenever a job enters or
    leaves the queue."""
    count, newest, total = queries.queue_state(db)
    return hashlib.sha256(f"{count}:{newest}:{total}".encode()).hexdigest()[:16]


def queue_version_at(sessions: sessionmaker[Session], stamp: Hashable | None) -> str:
    """The queue's version as of the database's change stamp (kiln.changes): read once per
    stamp in this process, however many held requests ask; read every time without one."""
    with _version_lock:
        if stamp is not None and _version_seen[0] == stamp:
            return str(_version_seen[1])
        with sessions() as db:
            version = queue_version(db)
        _version_seen[:] = [stamp, version]
        return version


# ---------------------------------------------------------------------------- a job's own calls


def _job(db: Session, job_id: int) -> CiJob:
    if not 0 < job_id < 2**63:
        raise NotFound()
    job = db.get(CiJob, job_id, populate_existing=True)
    if job is None:
        raise NotFound()
    return job


@dataclass(frozen=True, slots=True)
class JobAnswer:
    """What a runner is told of its job: its status (Job-Status), and its log's size."""

    status: str
    size: int
    accepted: bool = True


def _reporting_job(db: Session, settings: Settings, job_id: int, token: str | None) -> CiJob:
    """The job its runner reports on: its own token (403 otherwise), running or canceling, or
    canceled (the runner is told so and stops)."""
    job = _job(db, job_id)
    if not job_tokens.owns(settings, job, token):
        raise Forbidden()
    if job.status not in (RUNNING, CANCELING, CANCELED):
        raise JobForbidden("Job is not running", job.status)
    return job


def update_job(
    db: Session,
    settings: Settings,
    job_id: int,
    *,
    token: str | None,
    state: str | None = None,
    failure_reason: str | None = None,
    exit_code: Any = None,
    trace: str | None = None,
    info: Any = None,
    ip: str | None = None,
) -> JobAnswer:
    """PUT /jobs/:id: the runner's word on its job. An end state ends it at once (with or
    without exit code and checksum); running is a heartbeat; a canceled job is only told so."""
    job = _reporting_job(db, settings, job_id, token)
    if job.status == CANCELED:
        return JobAnswer(CANCELED, job.trace_size)
    if state is not None and state not in STATES:
        raise ParamError("state does not have a valid value")
    target = {"success": SUCCESS, "failed": FAILED, "canceled": CANCELED}.get(state or "")
    if job.status == CANCELING and target is not None:
        target = CANCELED
    code = _exit_code(exit_code)
    reason = failure_reason if failure_reason in FAILURE_REASONS else None
    if failure_reason and reason is None:
        reason = "unknown_failure"
    with transaction(db):
        job = db.get(CiJob, job_id, with_for_update=True, populate_existing=True)
        assert job is not None
        if job.status not in (RUNNING, CANCELING):
            raise JobForbidden("Job is not running", job.status)
        if trace:
            data = trace.encode("utf-8", "replace")[:TRACE_SIZE_LIMIT]
            size = storage.ci(settings).write_at(storage.trace_key(job.project_id, job.id), 0, data)
            job.trace_size, job.trace_updated_at = size, _now()
        if job.runner_id is not None:
            runner = db.get(Runner, job.runner_id)
            if runner is not None and _contact_due(runner, info, ip):
                _record_contact(db, runner, info, ip)
        if target is not None:
            processing.transition(
                db, job, target, failure_reason=reason if target == FAILED else None, exit_code=code
            )
            processing.process(db, job.pipeline_id)
        else:
            job.trace_updated_at = _now()
        return JobAnswer(job.status, job.trace_size)


def _exit_code(value: Any) -> int | None:
    if value is None or value == "" or isinstance(value, bool):
        return None
    try:
        code = int(value)
    except (TypeError, ValueError):
        return None
    return code if -(2**31) <= code < 2**31 else None


def parse_range(value: str | None) -> int | None:
    """The start of a `Content-Range: <start>-<end>` (`bytes ` and `/total` tolerated); the
    end is not read (runners disagree on it). None when absent."""
    if value is None:
        return None
    text = value.strip().removeprefix("bytes").strip().split("/", 1)[0]
    start, sep, _end = text.partition("-")
    if not sep or not start.strip().isdigit():
        raise BadRequest("Content-Range is invalid")
    return int(start)


def append_trace(
    db: Session, settings: Settings, job_id: int, *, token: str | None, start: int | None, body: bytes
) -> JobAnswer:
    """PATCH /jobs/:id/trace: `body` written where the stored log ends. An empty body is a
    heartbeat; a start elsewhere is refused (416) with where the log ends; past the size
    limit the log is cut there and the job fails (trace_size_exceeded)."""
    job = _reporting_job(db, settings, job_id, token)
    if job.status == CANCELED:
        return JobAnswer(CANCELED, job.trace_size)
    if start is not None and start != job.trace_size and body:
        raise RangeNotSatisfiable(job.trace_size, job.status)
    files = storage.ci(settings)
    key = storage.trace_key(job.project_id, job.id)
    with transaction(db):
        job = db.get(CiJob, job_id, with_for_update=True, populate_existing=True)
        assert job is not None
        if job.status not in (RUNNING, CANCELING):
            raise JobForbidden("Job is not running", job.status)
        now = _now()
        if not body:
            job.trace_updated_at = now
            return JobAnswer(job.status, job.trace_size)
        at = job.trace_size if start is None else start
        if at != job.trace_size:
            raise RangeNotSatisfiable(job.trace_size, job.status)
        room = TRACE_SIZE_LIMIT - at
        job.trace_size = files.write_at(key, at, body[: max(room, 0)])
        job.trace_updated_at = now
        if len(body) > room:
            processing.transition(db, job, FAILED, failure_reason="trace_size_exceeded")
            processing.process(db, job.pipeline_id)
            return JobAnswer(job.status, job.trace_size, accepted=False)
        return JobAnswer(job.status, job.trace_size)


# ---------------------------------------------------------------------------- artifacts


def _running_job(db: Session, settings: Settings, job_id: int, token: str | None) -> CiJob:
    job = _reporting_job(db, settings, job_id, token)
    if job.status == CANCELED:
        raise JobForbidden("Job is not running", job.status)
    return job


def _max_artifacts_bytes(db: Session) -> int:
    return int(instance_settings.current(db).get("max_artifacts_size") or 100) * 1024 * 1024


def authorize_artifacts(
    db: Session, settings: Settings, job_id: int, *, token: str | None, filesize: Any = None
) -> dict[str, Any]:
    """POST /jobs/:id/artifacts/authorize: where to put the file, as Workhorse is told;
    413 when the announced size is past the limit."""
    _running_job(db, settings, job_id, token)
    limit = _max_artifacts_bytes(db)
    size = _exit_code(filesize)
    if size is not None and size > limit:
        raise PayloadTooLarge()
    return {
        "TempPath": str(settings.data_dir / "tmp"),
        "MaximumSize": limit,
        "UploadHashFunctions": ["sha256"],
    }


class _Hashing:
    """A reader that hashes what passes through it."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.sha256 = hashlib.sha256()

    def read(self, n: int = -1) -> bytes:
        data = self.raw.read(n)
        self.sha256.update(data)
        return data


def upload_artifact(
    db: Session,
    settings: Settings,
    job_id: int,
    *,
    token: str | None,
    file: Upload | None,
    artifact_type: str | None,
    artifact_format: str | None,
    expire_in: str | None,
) -> CiJob:
    """POST /jobs/:id/artifacts: the file streamed to storage, one row per type of file."""
    job = _running_job(db, settings, job_id, token)
    if file is None:
        raise ParamError("file is missing")
    kind = artifact_type or "archive"
    if not (0 < len(kind) <= 32 and kind.replace("_", "").isalnum() and kind.isascii()):
        raise ParamError("artifact_type does not have a valid value")
    form = artifact_format or ("zip" if kind == "archive" else "raw")
    if form not in FORMATS:
        raise ParamError("artifact_format does not have a valid value")
    if file.size() > _max_artifacts_bytes(db):
        raise PayloadTooLarge()
    expire_at = _expiry(db, expire_in)
    key = storage.artifact_key(job.project_id, job.id, kind)
    file.file.seek(0)
    reader = _Hashing(file.file)
    size = storage.ci(settings).put(key, reader)  # type: ignore[arg-type]
    name = os.path.basename(file.filename or "") or ("artifacts.zip" if kind == "archive" else f"{kind}.gz")
    with transaction(db):
        job = db.get(CiJob, job_id, with_for_update=True, populate_existing=True)
        assert job is not None
        if job.status not in (RUNNING, CANCELING):
            raise JobForbidden("Job is not running", job.status)
        row = db.scalar(_artifact_row(job.id, kind))
        if row is None:
            row = JobArtifact(job_id=job.id, project_id=job.project_id, file_type=kind, store_key=key)
            db.add(row)
        row.file_format, row.filename, row.size = form, name[:255], size
        row.file_sha256, row.store_key, row.expire_at = reader.sha256.hexdigest(), key, expire_at
        if kind == "archive":
            job.artifacts_expire_at = expire_at
    return job


def _artifact_row(job_id: int, kind: str) -> Any:
    return select(JobArtifact).where(JobArtifact.job_id == job_id, JobArtifact.file_type == kind)


def _expiry(db: Session, expire_in: str | None) -> datetime | None:
    """When an upload's files expire: `expire_in`, else the instance's default; never for
    "never" (or a default of 0)."""
    text = (expire_in or "").strip()
    if text.lower() == "never":
        return None
    seconds = durations.parse(text) if text else None
    if seconds is None:
        default = instance_settings.current(db).get("default_artifacts_expire_in") or "0"
        seconds = durations.parse(str(default))
    if not seconds:
        return None
    return _now() + timedelta(seconds=seconds)


@dataclass(frozen=True, slots=True)
class StoredArchive:
    key: str
    filename: str
    size: int


def artifact_download(db: Session, settings: Settings, job_id: int, *, token: str | None) -> StoredArchive:
    """GET /jobs/:id/artifacts: a job's archive, for the token of a running job of the same
    project (the token `dependencies` hands out) or the job's own."""
    if not token:
        raise Unauthorized()
    target = _job(db, job_id)
    asking = job_tokens.running_job(db, token)
    if asking is None and not job_tokens.owns(settings, target, token):
        raise Forbidden()
    if asking is not None and asking.project_id != target.project_id:
        raise Forbidden()
    row = db.scalar(_artifact_row(target.id, "archive"))
    if row is None or target.erased_at is not None:
        raise NotFound()
    if row.expire_at is not None and row.expire_at <= _now():
        raise NotFound()
    return StoredArchive(row.store_key, row.filename, row.size)


def job_of_token(db: Session, settings: Settings, token: str | None, base_url: str) -> dict[str, Any]:
    """GET /job: the running job a job token belongs to."""
    job = job_tokens.running_job(db, token)
    if job is None:
        raise Unauthorized()
    return current_job(queries.payload_sources(db, job), base_url)


# ---------------------------------------------------------------------------- stuck jobs


@jobs.handler(CHECK_STUCK)
def _check_stuck(ctx: jobs.JobContext, payload: dict[str, Any]) -> None:
    """A running job whose runner went silent for longer than the job's timeout fails
    (stuck_or_timeout_failure), and one still running past its timeout fails
    (job_execution_timeout); otherwise it is looked at again when it could be."""
    db = ctx.db
    job = db.get(CiJob, payload["job_id"], with_for_update=True)
    if job is None or job.status not in (RUNNING, CANCELING):
        return
    runner = db.get(Runner, job.runner_id) if job.runner_id is not None else None
    timeout = timedelta(seconds=job_timeout(db, job, runner))
    now = _now()
    heard = job.trace_updated_at or job.started_at or now
    started = job.started_at or now
    if now - heard > timeout:
        reason = "stuck_or_timeout_failure"
    elif now - started > timeout + stuck_grace():
        reason = "job_execution_timeout"
    else:
        again = min(heard + timeout, started + timeout + stuck_grace()) + timedelta(seconds=1)
        jobs.enqueue(db, CHECK_STUCK, {"job_id": job.id}, run_at=again)
        return
    target = CANCELED if job.status == CANCELING else FAILED
    processing.transition(db, job, target, failure_reason=reason)
    processing.process(db, job.pipeline_id)


@jobs.handler(DROP_STALE_PENDING)
def _drop_stale_pending(ctx: jobs.JobContext, payload: dict[str, Any]) -> None:
    """Pending jobs no runner took for a day fail (stuck_or_timeout_failure), as GitLab's
    stuck jobs worker fails them; the sweep comes back while runners are around."""
    db = ctx.db
    before = _now() - PENDING_LIMIT
    touched: set[int] = set()
    for job_id in queries.stale_pending_ids(db, before):
        job = db.get(CiJob, job_id, with_for_update=True)
        if job is not None and job.status == PENDING:
            processing.transition(db, job, FAILED, failure_reason="stuck_or_timeout_failure")
            touched.add(job.pipeline_id)
    for pipeline_id in sorted(touched):
        processing.process(db, pipeline_id)
    if not payload.get("once"):
        jobs.enqueue(db, DROP_STALE_PENDING, {}, run_at=_now() + SWEEP_EVERY)


# When this process last looked for the sweep in the queue (monotonic seconds).
_sweep_checked = [0.0]
_SWEEP_CHECK_S = 600.0


def _ensure_sweep(db: Session) -> None:
    """The stale pending jobs' sweep is in the queue: looked at once every ten minutes per
    process, from the requests of the runners that would take those jobs."""
    now = time.monotonic()
    if _sweep_checked[0] and now - _sweep_checked[0] < _SWEEP_CHECK_S:
        return
    _sweep_checked[0] = now
    if queries.job_queued(db, DROP_STALE_PENDING):
        return
    with transaction(db):
        jobs.enqueue(db, DROP_STALE_PENDING, {}, run_at=_now() + SWEEP_EVERY)
