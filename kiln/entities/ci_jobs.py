"""Job views (GitLab's JobBasic, Job and Bridge entities): a job with its user, commit,
pipeline and project switch; the full view adds its artifacts, runner and tags; a bridge its
downstream pipeline (kiln records triggers of other pipelines but makes none: null)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from kiln.entities._format import iso
from kiln.entities.commits import commit_basic
from kiln.entities.pipelines import pipeline_basic
from kiln.entities.runners import runner
from kiln.entities.users import user_public
from kiln.models.ci import BRIDGE, FAILED

if TYPE_CHECKING:
    import pygit2

    from kiln.models.ci import CiJob
    from kiln.queries.ci_jobs import ArtifactRow, JobRow, RunnerRow
    from kiln.queries.pipelines import PipelineRow
    from kiln.queries.users import UserRow


@dataclass(slots=True)
class Beside:
    """What a page of jobs shows beside each job, read once for the page."""

    base: str  # the instance's external URL
    project_web: str  # the project's web URL
    pipelines: Mapping[int, PipelineRow]
    users: Mapping[int, UserRow]
    profiles: Mapping[int, bool]  # whether each user's profile fields may be shown
    commits: Mapping[str, pygit2.Commit | None]
    artifacts: Mapping[int, Sequence[ArtifactRow]]
    runners: Mapping[int, RunnerRow]
    online_after: datetime


def _aware(value: datetime | None) -> datetime | None:
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)


def queued_duration(job: JobRow | CiJob, now: datetime) -> float | None:
    """How long it waited for a runner: from queued until started (or until now)."""
    queued = _aware(job.queued_at)
    if queued is None:
        return None
    end = _aware(job.started_at) or now
    return max((end - queued).total_seconds(), 0.0)


def expired(artifact: ArtifactRow, now: datetime) -> bool:
    """Past its expiry: no longer offered for download (the expiry removes it later)."""
    until = _aware(artifact.expire_at)
    return until is not None and until <= now


def duration(job: JobRow | CiJob, now: datetime) -> float | None:
    """Seconds it ran: until it finished, or until now while it runs (as GitLab counts)."""
    if job.finished_at is not None or job.started_at is None:
        return job.duration
    return max((now - _aware(job.started_at)).total_seconds(), 0.0)  # type: ignore[operator]


def job_fields(job: JobRow | CiJob, now: datetime) -> dict[str, Any]:
    """The fields every view of a job opens with (the jobs API's and the job token's own)."""
    return {
        "id": job.id,
        "status": job.status,
        "stage": job.stage,
        "name": job.name,
        "ref": job.ref,
        "tag": bool(job.tag),
        "coverage": job.coverage,
        "allow_failure": bool(job.allow_failure),
        "created_at": iso(job.created_at),
        "started_at": iso(job.started_at),
        "finished_at": iso(job.finished_at),
        "erased_at": iso(job.erased_at),
        "duration": duration(job, now),
        "queued_duration": queued_duration(job, now),
    }


def job_basic(job: JobRow, b: Beside, now: datetime) -> dict[str, Any]:
    user = b.users.get(job.user_id) if job.user_id is not None else None
    commit = b.commits.get(job.sha)
    pipeline = b.pipelines.get(job.pipeline_id)
    view: dict[str, Any] = {
        **job_fields(job, now),
        "user": None
        if user is None
        else user_public(user, b.base, profile_visible=b.profiles.get(user.id, True)),
        "commit": None if commit is None else commit_basic(commit, b.project_web),
        "pipeline": None if pipeline is None else pipeline_basic(pipeline, b.base),
        "web_url": f"{b.project_web}/-/jobs/{job.id}",
        "project": {"ci_job_token_scope_enabled": False},
    }
    if job.status == FAILED:
        view["failure_reason"] = job.failure_reason
    return view


def artifact(row: ArtifactRow) -> dict[str, Any]:
    return {
        "file_type": row.file_type,
        "size": row.size,
        "filename": row.filename,
        "file_format": row.file_format,
    }


def job(job: JobRow, b: Beside, now: datetime) -> dict[str, Any]:
    """The job view of lists and single jobs."""
    view = job_basic(job, b, now)
    files = b.artifacts.get(job.id, ())
    archive = next((a for a in files if a.file_type == "archive"), None)
    if archive is not None and not expired(archive, now):
        view["artifacts_file"] = {"filename": archive.filename, "size": archive.size}
    found = b.runners.get(job.runner_id) if job.runner_id is not None else None
    view.update(
        artifacts=[artifact(a) for a in files],
        runner=None if found is None else runner(found, b.online_after),  # type: ignore[arg-type]
        runner_manager=None,
        artifacts_expire_at=iso(job.artifacts_expire_at),
        archived=False,
        tag_list=sorted(job.tag_list or []),
    )
    return view


def bridge(job: JobRow, b: Beside, now: datetime) -> dict[str, Any]:
    view = job_basic(job, b, now)
    view["downstream_pipeline"] = None
    return view


def one(job_row: JobRow, b: Beside, now: datetime) -> dict[str, Any]:
    """A job as a single-job answer shows it: a bridge as a bridge, a build in full."""
    return bridge(job_row, b, now) if job_row.type == BRIDGE else job(job_row, b, now)
