"""CI: runners, pipelines and their jobs, job artifacts, CI variables (instance, group,
project, pipeline, schedule), pipeline schedules and trigger tokens.

A job is one row of `ci_jobs` whatever made it: a job of the configuration (`build`), a
trigger of another pipeline (`bridge`), or a status reported from outside (`external`, the
commit statuses API), as GitLab keeps them in one table, so that a pipeline's status is
composed from one list."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, ForeignKey, Index, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from kiln.models.base import Base, Timestamps, contribution, never_reuse_ids, utcnow

# Job and pipeline statuses, GitLab's names.
CREATED = "created"
WAITING_FOR_RESOURCE = "waiting_for_resource"
PREPARING = "preparing"
PENDING = "pending"
RUNNING = "running"
SUCCESS = "success"
FAILED = "failed"
CANCELING = "canceling"
CANCELED = "canceled"
SKIPPED = "skipped"
MANUAL = "manual"
SCHEDULED = "scheduled"
STATUSES = (
    CREATED,
    WAITING_FOR_RESOURCE,
    PREPARING,
    PENDING,
    RUNNING,
    SUCCESS,
    FAILED,
    CANCELING,
    CANCELED,
    SKIPPED,
    MANUAL,
    SCHEDULED,
)
# Still to finish; finished.
ACTIVE = (WAITING_FOR_RESOURCE, PREPARING, PENDING, RUNNING, CANCELING)
COMPLETED = (SUCCESS, FAILED, CANCELED, SKIPPED)
# What may still be canceled (GitLab's cancelable statuses).
CANCELABLE = (CREATED, WAITING_FOR_RESOURCE, PREPARING, PENDING, RUNNING, SCHEDULED, MANUAL)

# Job failure reasons (GitLab's CommitStatus failure reasons). Those `retry:when` may name
# (GitLab's RETRY_WHEN_IN_DOCUMENTATION, besides "always") come first; every reason the
# server knows is FAILURE_REASONS, in GitLab's order.
RETRYABLE_FAILURE_REASONS = (
    "unknown_failure",
    "script_failure",
    "api_failure",
    "stuck_or_timeout_failure",
    "runner_system_failure",
    "runner_unsupported",
    "stale_schedule",
    "job_execution_timeout",
    "archived_failure",
    "unmet_prerequisites",
    "scheduler_failure",
    "data_integrity_failure",
)
FAILURE_REASONS = (
    *RETRYABLE_FAILURE_REASONS[:5],
    "missing_dependency_failure",
    *RETRYABLE_FAILURE_REASONS[5:],
    "forward_deployment_failure",
    "user_blocked",
    "project_deleted",
    "ci_quota_exceeded",
    "pipeline_loop_detected",
    "no_matching_runner",
    "trace_size_exceeded",
    "builds_disabled",
    "environment_creation_failure",
    "deployment_rejected",
    "failed_outdated_deployment_job",
    "protected_environment_failure",
    "insufficient_bridge_permissions",
    "downstream_bridge_project_not_found",
    "invalid_bridge_trigger",
    "upstream_bridge_project_not_found",
    "insufficient_upstream_permissions",
    "bridge_pipeline_is_child_pipeline",
    "downstream_pipeline_creation_failed",
    "secrets_provider_not_found",
    "reached_max_descendant_pipelines_depth",
    "ip_restriction_failure",
    "reached_max_pipeline_hierarchy_size",
    "reached_downstream_pipeline_trigger_rate_limit",
)

# ci_jobs.type
BUILD, BRIDGE, EXTERNAL = "build", "bridge", "external"

# Runner types and access levels.
INSTANCE_TYPE, GROUP_TYPE, PROJECT_TYPE = "instance_type", "group_type", "project_type"
RUNNER_TYPES = (INSTANCE_TYPE, GROUP_TYPE, PROJECT_TYPE)
NOT_PROTECTED, REF_PROTECTED = "not_protected", "ref_protected"

# Variable types.
ENV_VAR, FILE = "env_var", "file"


class Runner(Timestamps, Base):
    """A runner and its authentication token (kept as a digest). `contacted_at` is when it
    last asked for a job or sent one's state: its status is read from that and `active`."""

    __tablename__ = "ci_runners"
    __table_args__ = (Index("uq_ci_runners_token_digest", "token_digest", unique=True),)

    id: Mapped[int] = mapped_column(primary_key=True)
    runner_type: Mapped[str] = mapped_column(String(16))
    token_digest: Mapped[str] = mapped_column(String(64))
    # The first characters of the token, shown where GitLab shows a shortened token.
    token_prefix: Mapped[str] = mapped_column(String(16), default="")
    token_expires_at: Mapped[datetime | None]
    # `registration_token` (POST /runners) or `authenticated_user` (POST /user/runners).
    registration_type: Mapped[str] = mapped_column(String(32), default="registration_token")
    creator_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    description: Mapped[str] = mapped_column(Text, default="")
    maintenance_note: Mapped[str | None] = mapped_column(Text)
    active: Mapped[bool] = mapped_column(default=True)
    locked: Mapped[bool] = mapped_column(default=False)
    run_untagged: Mapped[bool] = mapped_column(default=True)
    access_level: Mapped[str] = mapped_column(String(16), default=NOT_PROTECTED)
    maximum_timeout: Mapped[int | None]
    # What the runner said of itself (`info` on registration, verify and job requests).
    name: Mapped[str | None] = mapped_column(String(255))
    version: Mapped[str | None] = mapped_column(String(255))
    revision: Mapped[str | None] = mapped_column(String(255))
    platform: Mapped[str | None] = mapped_column(String(255))
    architecture: Mapped[str | None] = mapped_column(String(255))
    executor_type: Mapped[str | None] = mapped_column(String(64))
    ip_address: Mapped[str | None] = mapped_column(String(64))
    contacted_at: Mapped[datetime | None]


class RunnerTag(Base):
    __tablename__ = "ci_runner_tags"

    runner_id: Mapped[int] = mapped_column(ForeignKey("ci_runners.id", ondelete="CASCADE"), primary_key=True)
    name: Mapped[str] = mapped_column(String(255), primary_key=True)


class RunnerProject(Base):
    """A project runner's projects (the first is the one it was registered for)."""

    __tablename__ = "ci_runner_projects"
    __table_args__ = (UniqueConstraint("runner_id", "project_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    runner_id: Mapped[int] = mapped_column(ForeignKey("ci_runners.id", ondelete="CASCADE"))
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class RunnerNamespace(Base):
    """A group runner's group."""

    __tablename__ = "ci_runner_namespaces"

    runner_id: Mapped[int] = mapped_column(ForeignKey("ci_runners.id", ondelete="CASCADE"), primary_key=True)
    namespace_id: Mapped[int] = mapped_column(ForeignKey("namespaces.id", ondelete="CASCADE"), index=True)


class PipelineSchedule(Timestamps, Base):
    __tablename__ = "ci_pipeline_schedules"
    __table_args__ = (Index("ix_ci_pipeline_schedules_due", "active", "next_run_at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    owner_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    description: Mapped[str] = mapped_column(Text, default="")
    ref: Mapped[str] = mapped_column(String(1024))
    cron: Mapped[str] = mapped_column(String(255))
    cron_timezone: Mapped[str] = mapped_column(String(255), default="UTC")
    next_run_at: Mapped[datetime | None]
    active: Mapped[bool] = mapped_column(default=True)


class PipelineTrigger(Timestamps, Base):
    """A trigger token: its token is derived from `token_nonce` under the server key (shown
    again to its owner), found by its digest."""

    __tablename__ = "ci_triggers"
    __table_args__ = (Index("uq_ci_triggers_token_digest", "token_digest", unique=True),)

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    owner_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    description: Mapped[str] = mapped_column(Text, default="")
    token_nonce: Mapped[str] = mapped_column(String(64))
    token_digest: Mapped[str] = mapped_column(String(64))
    last_used: Mapped[datetime | None]
    expires_at: Mapped[datetime | None]


class Pipeline(Timestamps, Base):
    """`status` is composed from its jobs' statuses (services.pipeline_processing) in the
    transaction that changes one of them."""

    __tablename__ = "ci_pipelines"
    __table_args__ = (
        UniqueConstraint("project_id", "iid"),
        Index("ix_ci_pipelines_project_id_id", "project_id", "id"),
        Index("ix_ci_pipelines_project_sha", "project_id", "sha"),
        Index("ix_ci_pipelines_project_ref_id", "project_id", "ref", "id"),
        Index("ix_ci_pipelines_project_status_id", "project_id", "status", "id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    iid: Mapped[int]
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    ref: Mapped[str] = mapped_column(String(1024))
    sha: Mapped[str] = mapped_column(String(64))
    before_sha: Mapped[str] = mapped_column(String(64), default="0" * 40)
    tag: Mapped[bool] = mapped_column(default=False)
    # Whether `ref` was protected when the pipeline was made (protected variables, runners).
    protected: Mapped[bool] = mapped_column(default=False)
    # push, web, api, trigger, schedule, merge_request_event, external, pipeline, chat, …
    source: Mapped[str] = mapped_column(String(32))
    status: Mapped[str] = mapped_column(String(32), default=CREATED)
    yaml_errors: Mapped[str | None] = mapped_column(Text)
    # The configuration's path as read (CI_CONFIG_PATH).
    config_path: Mapped[str | None] = mapped_column(String(1024))
    name: Mapped[str | None] = mapped_column(String(255))
    user_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), info=contribution(), index=True
    )
    schedule_id: Mapped[int | None] = mapped_column(
        ForeignKey("ci_pipeline_schedules.id", ondelete="SET NULL"), index=True
    )
    trigger_id: Mapped[int | None] = mapped_column(ForeignKey("ci_triggers.id", ondelete="SET NULL"))
    # A merge request pipeline's merge request (source `merge_request_event`). No foreign key:
    # SQLite can add one to an existing table only by copying it; deleting a merge request
    # clears it.
    merge_request_id: Mapped[int | None] = mapped_column(BigInteger, index=True)
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
    committed_at: Mapped[datetime | None]
    duration: Mapped[int | None]
    coverage: Mapped[float | None]
    failure_reason: Mapped[str | None] = mapped_column(String(64))
    # Bumped by every status change, so two writers composing the status see each other.
    lock_version: Mapped[int] = mapped_column(default=0)


class PipelineVariable(Base):
    """A variable given to one pipeline (POST /pipeline, a trigger, a schedule's run)."""

    __tablename__ = "ci_pipeline_variables"
    __table_args__ = (UniqueConstraint("pipeline_id", "key"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    pipeline_id: Mapped[int] = mapped_column(ForeignKey("ci_pipelines.id", ondelete="CASCADE"))
    key: Mapped[str] = mapped_column(String(255))
    value: Mapped[str] = mapped_column(Text, default="")
    variable_type: Mapped[str] = mapped_column(String(16), default=ENV_VAR)
    raw: Mapped[bool] = mapped_column(default=False)


class CiJob(Timestamps, Base):
    """One job of a pipeline. `options` holds what the configuration said the runner does
    (script, before/after script, image, services, artifacts, cache, dependencies, needs,
    environment, retry, timeout, parallel, allow_failure exit codes); `yaml_variables` the
    job's own variables in order. A retried job stays, `retried` set, beside its new copy."""

    __tablename__ = "ci_jobs"
    __table_args__ = (
        Index("ix_ci_jobs_pipeline_id_id", "pipeline_id", "id"),
        Index("ix_ci_jobs_project_id_id", "project_id", "id"),
        Index("ix_ci_jobs_runner_id_id", "runner_id", "id"),
        # The queue runners take from, oldest first.
        Index("ix_ci_jobs_status_id", "status", "id"),
        Index("uq_ci_jobs_token_digest", "token_digest", unique=True),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    pipeline_id: Mapped[int] = mapped_column(ForeignKey("ci_pipelines.id", ondelete="CASCADE"))
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    type: Mapped[str] = mapped_column(String(16), default=BUILD)
    name: Mapped[str] = mapped_column(String(255))
    stage: Mapped[str] = mapped_column(String(255), default="test")
    stage_idx: Mapped[int] = mapped_column(default=0)
    status: Mapped[str] = mapped_column(String(32), default=CREATED)
    # on_success, on_failure, always, manual, delayed.
    when: Mapped[str] = mapped_column(String(16), default="on_success")
    allow_failure: Mapped[bool] = mapped_column(default=False)
    # `stage`: waits for the earlier stages; `dag`: waits for its `needs` only.
    scheduling_type: Mapped[str] = mapped_column(String(8), default="stage")
    options: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    yaml_variables: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    tag_list: Mapped[list[str]] = mapped_column(JSON, default=list)
    ref: Mapped[str] = mapped_column(String(1024))
    sha: Mapped[str] = mapped_column(String(64))
    tag: Mapped[bool] = mapped_column(default=False)
    protected: Mapped[bool] = mapped_column(default=False)
    user_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), info=contribution(), index=True
    )
    runner_id: Mapped[int | None] = mapped_column(ForeignKey("ci_runners.id", ondelete="SET NULL"))
    # The job token while the job runs: handed to the runner once, kept as a digest.
    token_digest: Mapped[str | None] = mapped_column(String(64))
    queued_at: Mapped[datetime | None]
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
    # When a delayed job becomes pending.
    scheduled_at: Mapped[datetime | None]
    duration: Mapped[float | None]
    coverage: Mapped[float | None]
    failure_reason: Mapped[str | None] = mapped_column(String(64))
    exit_code: Mapped[int | None]
    retried: Mapped[bool] = mapped_column(default=False)
    # The trace as stored: its size (where the next append starts) and its last update, by
    # which a job whose runner went silent is found stuck.
    trace_size: Mapped[int] = mapped_column(BigInteger, default=0)
    trace_updated_at: Mapped[datetime | None]
    erased_at: Mapped[datetime | None]
    erased_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    artifacts_expire_at: Mapped[datetime | None]
    # A commit status's (type external) link and text.
    target_url: Mapped[str | None] = mapped_column(Text)
    description: Mapped[str | None] = mapped_column(Text)
    # Bumped by every status change, so the runner, the API and the queue see each other.
    lock_version: Mapped[int] = mapped_column(default=0)


class JobArtifact(Base):
    """A file a job uploaded: its archive (`archive`, zip), its metadata, or a report
    (`junit`, …), stored under `store_key` through kiln.storage."""

    __tablename__ = "ci_job_artifacts"
    __table_args__ = (UniqueConstraint("job_id", "file_type"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("ci_jobs.id", ondelete="CASCADE"))
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    file_type: Mapped[str] = mapped_column(String(32))
    file_format: Mapped[str] = mapped_column(String(16), default="zip")
    filename: Mapped[str] = mapped_column(String(255))
    size: Mapped[int] = mapped_column(BigInteger, default=0)
    file_sha256: Mapped[str | None] = mapped_column(String(64))
    store_key: Mapped[str] = mapped_column(String(1024))
    expire_at: Mapped[datetime | None]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class _Variable:
    """What every level's CI variable holds. `value` is kept encrypted under the server key
    (services.ci_variables)."""

    id: Mapped[int] = mapped_column(primary_key=True)
    key: Mapped[str] = mapped_column(String(255))
    value: Mapped[str] = mapped_column(Text, default="")
    variable_type: Mapped[str] = mapped_column(String(16), default=ENV_VAR)
    protected: Mapped[bool] = mapped_column(default=False)
    masked: Mapped[bool] = mapped_column(default=False)
    hidden: Mapped[bool] = mapped_column(default=False)
    raw: Mapped[bool] = mapped_column(default=False)
    description: Mapped[str | None] = mapped_column(Text)


class InstanceVariable(_Variable, Timestamps, Base):
    __tablename__ = "ci_instance_variables"
    __table_args__ = (UniqueConstraint("key"),)


class GroupVariable(_Variable, Timestamps, Base):
    __tablename__ = "ci_group_variables"
    __table_args__ = (UniqueConstraint("namespace_id", "key", "environment_scope"),)

    namespace_id: Mapped[int] = mapped_column(ForeignKey("namespaces.id", ondelete="CASCADE"))
    environment_scope: Mapped[str] = mapped_column(String(255), default="*")


class ProjectVariable(_Variable, Timestamps, Base):
    __tablename__ = "ci_variables"
    __table_args__ = (UniqueConstraint("project_id", "key", "environment_scope"),)

    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    environment_scope: Mapped[str] = mapped_column(String(255), default="*")


class PipelineScheduleVariable(Base):
    __tablename__ = "ci_pipeline_schedule_variables"
    __table_args__ = (UniqueConstraint("schedule_id", "key"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    schedule_id: Mapped[int] = mapped_column(ForeignKey("ci_pipeline_schedules.id", ondelete="CASCADE"))
    key: Mapped[str] = mapped_column(String(255))
    value: Mapped[str] = mapped_column(Text, default="")
    variable_type: Mapped[str] = mapped_column(String(16), default=ENV_VAR)
    raw: Mapped[bool] = mapped_column(default=False)


never_reuse_ids(Runner)
never_reuse_ids(Pipeline)
never_reuse_ids(CiJob)
