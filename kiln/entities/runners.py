"""Runner views (GitLab's Runner, RunnerDetails, RunnerRegistrationDetails, ResetTokenResult
and JobBasicWithProject entities).

A runner's `status` is read from `active` and `contacted_at`: `paused` when not active,
`not_connected` when it never asked for a job, `online` when it asked within the online window
(two hours: the caller passes the moment it started, `online_after`), `offline` otherwise;
`online` is null while it never asked."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from kiln.entities._format import iso
from kiln.entities.commits import commit_basic
from kiln.entities.projects import project_web_url
from kiln.entities.users import user_basic, user_public
from kiln.models.ci import INSTANCE_TYPE

if TYPE_CHECKING:
    import pygit2

    from kiln.queries.runners import RunnerGroupRow, RunnerJobRow, RunnerProjectRow, RunnerRow
    from kiln.queries.users import UserRow


def _aware(value: datetime | None) -> datetime | None:
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)


def is_online(row: RunnerRow, online_after: datetime) -> bool | None:
    """Whether it asked for work after `online_after` (two hours ago); None if never."""
    contacted = _aware(row.contacted_at)
    if contacted is None:
        return None
    return contacted > online_after


def status(row: RunnerRow, online_after: datetime) -> str:
    if not row.active:
        return "paused"
    online = is_online(row, online_after)
    if online is None:
        return "not_connected"
    return "online" if online else "offline"


def runner(
    row: RunnerRow, online_after: datetime, *, creator: UserRow | None = None, base: str = ""
) -> dict[str, Any]:
    """The list view; `created_by` when the runner was made by a user still there."""
    view = {
        "id": row.id,
        "description": row.description,
        "ip_address": row.ip_address,
        "active": row.active,
        "paused": not row.active,
        "is_shared": row.runner_type == INSTANCE_TYPE,
        "runner_type": row.runner_type,
        "name": row.name,
        "online": is_online(row, online_after),
        "status": status(row, online_after),
        "created_at": iso(row.created_at),
    }
    if creator is not None:
        view["created_by"] = user_basic(creator, base)
    return view


def runner_project(p: RunnerProjectRow) -> dict[str, Any]:
    return {
        "id": p.id,
        "description": p.description or None,
        "name": p.name,
        "name_with_namespace": f"{p.namespace_full_name} / {p.name}",
        "path": p.path,
        "path_with_namespace": f"{p.namespace_full_path}/{p.path}",
        "created_at": iso(p.created_at),
    }


def runner_group(g: RunnerGroupRow, base: str) -> dict[str, Any]:
    return {"id": g.id, "web_url": f"{base}/groups/{g.full_path}", "name": g.name}


def runner_detail(
    row: RunnerRow,
    online_after: datetime,
    *,
    tags: Sequence[str],
    projects: Sequence[RunnerProjectRow],
    groups: Sequence[RunnerGroupRow],
    base: str,
    with_note: bool,
    creator: UserRow | None = None,
) -> dict[str, Any]:
    """The detail view; the maintenance note only for those who may change the runner, the
    deprecated `token` never (kiln keeps only its digest)."""
    view = runner(row, online_after, creator=creator, base=base)
    view.update(
        tag_list=list(tags),
        run_untagged=row.run_untagged,
        locked=row.locked,
        maximum_timeout=row.maximum_timeout,
        access_level=row.access_level,
        version=row.version,
        revision=row.revision,
        platform=row.platform,
        architecture=row.architecture,
        contacted_at=iso(row.contacted_at),
        maintenance_note=row.maintenance_note if with_note else None,
        projects=[runner_project(p) for p in projects],
        groups=[runner_group(g, base) for g in groups],
        token=None,
    )
    return view


def registered(runner_id: int, token: str, expires_at: datetime | None) -> dict[str, Any]:
    """What registration and verification answer: the authentication token goes into the
    runner's own configuration."""
    return {"id": runner_id, "token": token, "token_expires_at": iso(expires_at)}


def token_result(token: str, expires_at: datetime | None) -> dict[str, Any]:
    return {"token": token, "token_expires_at": iso(expires_at)}


def _duration(job: RunnerJobRow, at: datetime) -> int | None:
    """Whole seconds (the spec's integer): as stored once finished, so far while running."""
    if job.duration is not None:
        return int(job.duration)
    started = _aware(job.started_at)
    if started is None:
        return None
    end = _aware(job.finished_at) or at
    return int((end - started).total_seconds())


def _queued_duration(job: RunnerJobRow, at: datetime) -> float | None:
    queued = _aware(job.queued_at)
    if queued is None:
        return None
    end = _aware(job.started_at) or at
    return max((end - queued).total_seconds(), 0.0)


def runner_job(
    job: RunnerJobRow,
    at: datetime,
    *,
    user: UserRow | None,
    commit: pygit2.Commit | None,
    ip_address: str | None,
    base: str,
) -> dict[str, Any]:
    """A job a runner ran, with its pipeline, project, commit and user."""
    full_path = f"{job.namespace_full_path}/{job.project_path}"
    web = project_web_url(full_path, base)
    return {
        "id": job.id,
        "ip_address": ip_address,
        "status": job.status,
        "stage": job.stage,
        "name": job.name,
        "ref": job.ref,
        "tag": job.tag,
        "coverage": job.coverage,
        "allow_failure": job.allow_failure,
        "created_at": iso(job.created_at),
        "started_at": iso(job.started_at),
        "finished_at": iso(job.finished_at),
        "erased_at": iso(job.erased_at),
        "duration": _duration(job, at),
        "queued_duration": _queued_duration(job, at),
        "user": user_public(user, base) if user is not None else None,
        "commit": commit_basic(commit, web) if commit is not None else None,
        "pipeline": {
            "id": job.pipeline_id,
            "iid": job.pipeline_iid,
            "project_id": job.project_id,
            "sha": job.pipeline_sha,
            "ref": job.pipeline_ref,
            "status": job.pipeline_status,
            "source": job.pipeline_source,
            "created_at": iso(job.pipeline_created_at),
            "updated_at": iso(job.pipeline_updated_at),
            "web_url": f"{web}/-/pipelines/{job.pipeline_id}",
        },
        "failure_reason": job.failure_reason,
        "web_url": f"{web}/-/jobs/{job.id}",
        "project": {
            "id": job.project_id,
            "description": job.project_description or None,
            "name": job.project_name,
            "name_with_namespace": f"{job.namespace_full_name} / {job.project_name}",
            "path": job.project_path,
            "path_with_namespace": full_path,
            "created_at": iso(job.project_created_at),
        },
    }
