"""Pipeline views (GitLab's PipelineBasic, Pipeline with its detailed_status, and pipeline
variables).

Exported for other modules: `pipeline_basic(row, base_url) -> dict` renders a
queries.pipelines.PipelineRow as jobs and commit statuses show their pipeline."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from kiln.entities._format import iso
from kiln.entities.users import user_basic

if TYPE_CHECKING:
    from kiln.models.ci import Pipeline
    from kiln.queries.pipeline_schedules import PipelineBasicRow
    from kiln.queries.pipelines import PipelineRow, VariableRow
    from kiln.queries.users import UserRow

# status -> (icon, text, label, group, tooltip) as GitLab's Gitlab::Ci::Status classes say them.
_STATUS: dict[str, tuple[str, str, str, str, str]] = {
    "created": ("status_created", "created", "created", "created", "created"),
    "waiting_for_resource": (
        "status_pending",
        "waiting",
        "waiting for resource",
        "waiting-for-resource",
        "waiting for resource",
    ),
    "preparing": ("status_preparing", "preparing", "preparing", "preparing", "preparing"),
    "pending": ("status_pending", "pending", "pending", "pending", "pending"),
    "running": ("status_running", "running", "running", "running", "running"),
    "success": ("status_success", "passed", "passed", "success", "passed"),
    "failed": ("status_failed", "failed", "failed", "failed", "failed"),
    "canceling": ("status_canceled", "canceling", "canceling", "canceling", "canceling"),
    "canceled": ("status_canceled", "canceled", "canceled", "canceled", "canceled"),
    "skipped": ("status_skipped", "skipped", "skipped", "skipped", "skipped"),
    "manual": ("status_manual", "blocked", "manual action", "manual", "manual action"),
    "scheduled": ("status_scheduled", "delayed", "delayed", "scheduled", "delayed"),
}


def web_url(row: PipelineRow, base_url: str) -> str:
    return f"{base_url}/{row.project_path}/-/pipelines/{row.id}"


def pipeline_basic(row: PipelineRow, base_url: str) -> dict[str, Any]:
    """A pipeline in lists and wherever another resource shows its pipeline."""
    return basic_fields(row, web_url(row, base_url))


def pipeline_basic_at(row: PipelineRow | PipelineBasicRow, project_web_url: str) -> dict[str, Any]:
    """The same view under its project's web address (a schedule's or a commit's pipeline)."""
    return basic_fields(row, f"{project_web_url}/-/pipelines/{row.id}")


def basic_fields(row: PipelineRow | PipelineBasicRow | Pipeline, url: str) -> dict[str, Any]:
    """GitLab's PipelineBasic from any row holding its columns: one shape for the pipeline
    lists, a job's pipeline, a schedule's pipelines and a commit's last pipeline."""
    return {
        "id": row.id,
        "iid": row.iid,
        "project_id": row.project_id,
        "sha": row.sha,
        "ref": row.ref,
        "status": row.status,
        "source": row.source,
        "created_at": iso(row.created_at),
        "updated_at": iso(row.updated_at),
        "web_url": url,
        "name": row.name,
    }


# A success with allowed failures among its jobs (GitLab's SuccessWarning).
_WARNING = ("status_warning", "warning", "passed with warnings", "success-with-warnings", "passed")


def detailed_status(row: PipelineRow, *, warnings: bool = False) -> dict[str, Any]:
    """GitLab's detailed_status of a pipeline: how its status is drawn, and where it links.
    `warnings`: some current job failed and was allowed to."""
    icon, text, label, group, tooltip = _STATUS.get(row.status, _STATUS["created"])
    favicon = icon
    if warnings and row.status == "success":
        icon, text, label, group, tooltip = _WARNING
    return {
        "icon": icon,
        "text": text,
        "label": label,
        "group": group,
        "tooltip": tooltip,
        "has_details": True,
        "details_path": f"/{row.project_path}/-/pipelines/{row.id}",
        "illustration": None,
        "favicon": f"/assets/ci_favicons/favicon_{favicon}.png",
    }


def _seconds_between(start: str | datetime | None, end: str | datetime | None) -> int | None:
    if start is None or end is None:
        return None
    a = datetime.fromisoformat(start) if isinstance(start, str) else start
    b = datetime.fromisoformat(end) if isinstance(end, str) else end
    return int((b - a).total_seconds())


def queued_duration(row: PipelineRow) -> int | None:
    """Seconds from creation until the first job started (None before; GitLab leaves out 0)."""
    seconds = _seconds_between(row.created_at, row.started_at)
    return seconds if seconds else None


def pipeline(
    row: PipelineRow, base_url: str, user: UserRow | None, coverage: float | None, *, warnings: bool = False
) -> dict[str, Any]:
    """A pipeline's detail; `warnings` as detailed_status takes it."""
    view = pipeline_basic(row, base_url)
    view.update(
        before_sha=row.before_sha,
        tag=bool(row.tag),
        yaml_errors=row.yaml_errors,
        user=user_basic(user, base_url) if user is not None else None,
        started_at=iso(row.started_at),
        finished_at=iso(row.finished_at),
        committed_at=iso(row.committed_at),
        duration=row.duration,
        queued_duration=queued_duration(row),
        coverage=None if coverage is None else f"{coverage:.2f}",
        detailed_status=detailed_status(row, warnings=warnings),
        archived=False,
    )
    return view


def variable(row: VariableRow, value: str) -> dict[str, Any]:
    """A pipeline variable (`value` unsealed by the caller)."""
    return {"variable_type": row.variable_type, "key": row.key, "value": value, "raw": bool(row.raw)}


def empty_test_report() -> dict[str, Any]:
    """A pipeline's test report while kiln reads no JUnit reports."""
    return {
        "total_time": 0,
        "total_count": 0,
        "success_count": 0,
        "failed_count": 0,
        "skipped_count": 0,
        "error_count": 0,
        "test_suites": [],
    }


def empty_test_report_summary() -> dict[str, Any]:
    return {
        "total": {
            "time": 0,
            "count": 0,
            "success": 0,
            "failed": 0,
            "skipped": 0,
            "error": 0,
            "suite_error": None,
        },
        "test_suites": [],
    }
