"""Projects and what hangs directly off them: statistics, stars, topics, group shares,
uploads and custom attributes. The repository itself lives in storage (services/repositories)."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    ForeignKey,
    Index,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from kiln.auth.tokens import new_runners_nonce
from kiln.models.base import Base, RowVersion, Timestamps, never_reuse_ids, utcnow
from kiln.models.namespaces import PRIVATE

# Feature access levels (GitLab's *_access_level): who may use a project feature.
DISABLED, FEATURE_PRIVATE, ENABLED, FEATURE_PUBLIC = "disabled", "private", "enabled", "public"
FEATURE_LEVELS = (DISABLED, FEATURE_PRIVATE, ENABLED)
# Every feature with an access level; `<name>_access_level` is a column of Project.
FEATURES = (
    "issues",
    "repository",
    "merge_requests",
    "forking",
    "wiki",
    "builds",
    "snippets",
    "pages",
    "operations",
    "analytics",
    "container_registry",
    "security_and_compliance",
    "releases",
    "environments",
    "feature_flags",
    "infrastructure",
    "monitor",
    "model_experiments",
    "model_registry",
    "requirements",
)


def _feature() -> Mapped[str]:
    return mapped_column(String(16), default=ENABLED)


class Project(Timestamps, RowVersion, Base):
    __tablename__ = "projects"
    __table_args__ = (
        Index("uq_projects_namespace_path_lower", "namespace_id", text("lower(path)"), unique=True),
        Index("ix_projects_visibility_id", "visibility", "id"),
        Index("ix_projects_last_activity_at", "last_activity_at"),
        # The default order of project lists (newest first), walked by a page.
        Index("ix_projects_created_at_id", "created_at", "id"),
        # A runner registering names its project by its token, found by digest.
        Index("uq_projects_runners_token_digest", "runners_token_digest", unique=True),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    namespace_id: Mapped[int] = mapped_column(ForeignKey("namespaces.id", ondelete="CASCADE"), index=True)
    creator_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"), index=True)
    name: Mapped[str] = mapped_column(String(255))
    path: Mapped[str] = mapped_column(String(255))
    description: Mapped[str] = mapped_column(Text, default="")
    visibility: Mapped[str] = mapped_column(String(16), default=PRIVATE)
    default_branch: Mapped[str | None] = mapped_column(String(255))
    # The README at the root of the default branch, kept by every ref update (readme_url).
    readme_path: Mapped[str | None] = mapped_column(String(255))
    archived: Mapped[bool] = mapped_column(default=False)
    avatar_path: Mapped[str | None] = mapped_column(String(512))
    last_activity_at: Mapped[datetime] = mapped_column(default=utcnow)
    forked_from_id: Mapped[int | None] = mapped_column(
        ForeignKey("projects.id", ondelete="SET NULL"), index=True
    )
    forks_count: Mapped[int] = mapped_column(default=0)
    star_count: Mapped[int] = mapped_column(default=0)
    marked_for_deletion_on: Mapped[date | None]
    marked_for_deletion_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    # The runner registration token is derived from the nonce under the server key
    # (auth.tokens.runners_token); the database keeps the nonce and the token's digest, never
    # the token. A digest is missing where a nonce was written without the key (projects
    # whose clear token was replaced by a nonce on upgrade): services.project_creation makes
    # the missing ones before it looks a token up.
    runners_token_nonce: Mapped[str] = mapped_column(String(64), default=new_runners_nonce)
    runners_token_digest: Mapped[str | None] = mapped_column(String(64))
    import_status: Mapped[str] = mapped_column(String(32), default="none")
    import_url: Mapped[str | None] = mapped_column(String(2048))
    import_error: Mapped[str | None] = mapped_column(Text)
    # Primary language by share of the default branch (filled by the repository's languages).
    primary_language: Mapped[str | None] = mapped_column(String(64), index=True)
    # Languages of the default branch, computed once per commit (`languages_sha`).
    languages: Mapped[dict[str, float] | None] = mapped_column(JSON)
    languages_sha: Mapped[str | None] = mapped_column(String(64))

    issues_access_level: Mapped[str] = _feature()
    repository_access_level: Mapped[str] = _feature()
    merge_requests_access_level: Mapped[str] = _feature()
    forking_access_level: Mapped[str] = _feature()
    wiki_access_level: Mapped[str] = _feature()
    builds_access_level: Mapped[str] = _feature()
    snippets_access_level: Mapped[str] = _feature()
    pages_access_level: Mapped[str] = mapped_column(String(16), default=FEATURE_PRIVATE)
    operations_access_level: Mapped[str] = _feature()
    analytics_access_level: Mapped[str] = _feature()
    container_registry_access_level: Mapped[str] = _feature()
    security_and_compliance_access_level: Mapped[str] = mapped_column(String(16), default=FEATURE_PRIVATE)
    releases_access_level: Mapped[str] = _feature()
    environments_access_level: Mapped[str] = _feature()
    feature_flags_access_level: Mapped[str] = _feature()
    infrastructure_access_level: Mapped[str] = _feature()
    monitor_access_level: Mapped[str] = _feature()
    model_experiments_access_level: Mapped[str] = _feature()
    model_registry_access_level: Mapped[str] = _feature()
    requirements_access_level: Mapped[str] = _feature()

    request_access_enabled: Mapped[bool] = mapped_column(default=True)
    lfs_enabled: Mapped[bool] = mapped_column(default=True)
    emails_enabled: Mapped[bool] = mapped_column(default=True)
    shared_runners_enabled: Mapped[bool] = mapped_column(default=True)
    group_runners_enabled: Mapped[bool] = mapped_column(default=True)
    public_jobs: Mapped[bool] = mapped_column(default=True)
    packages_enabled: Mapped[bool] = mapped_column(default=True)
    service_desk_enabled: Mapped[bool] = mapped_column(default=False)
    merge_method: Mapped[str] = mapped_column(String(16), default="merge")
    squash_option: Mapped[str] = mapped_column(String(16), default="default_off")
    only_allow_merge_if_pipeline_succeeds: Mapped[bool] = mapped_column(default=False)
    only_allow_merge_if_all_discussions_are_resolved: Mapped[bool] = mapped_column(default=False)
    allow_merge_on_skipped_pipeline: Mapped[bool | None]
    remove_source_branch_after_merge: Mapped[bool] = mapped_column(default=True)
    resolve_outdated_diff_discussions: Mapped[bool] = mapped_column(default=False)
    printing_merge_request_link_enabled: Mapped[bool] = mapped_column(default=True)
    autoclose_referenced_issues: Mapped[bool] = mapped_column(default=True)
    enforce_auth_checks_on_uploads: Mapped[bool] = mapped_column(default=True)
    suggestion_commit_message: Mapped[str | None] = mapped_column(String(255))
    merge_commit_template: Mapped[str | None] = mapped_column(Text)
    squash_commit_template: Mapped[str | None] = mapped_column(Text)
    issue_branch_template: Mapped[str | None] = mapped_column(String(255))
    merge_requests_template: Mapped[str | None] = mapped_column(Text)
    issues_template: Mapped[str | None] = mapped_column(Text)
    ci_config_path: Mapped[str | None] = mapped_column(String(255))
    ci_default_git_depth: Mapped[int] = mapped_column(default=20)
    build_timeout: Mapped[int] = mapped_column(default=3600)
    auto_cancel_pending_pipelines: Mapped[str] = mapped_column(String(16), default="enabled")
    ci_forward_deployment_enabled: Mapped[bool] = mapped_column(default=True)
    keep_latest_artifact: Mapped[bool] = mapped_column(default=True)
    auto_devops_enabled: Mapped[bool] = mapped_column(default=False)
    auto_devops_deploy_strategy: Mapped[str] = mapped_column(String(32), default="continuous")
    mirror: Mapped[bool] = mapped_column(default=False)
    approvals_before_merge: Mapped[int] = mapped_column(default=0)
    # Approval settings (GET|POST /projects/:id/approvals). merge_requests_author_approval
    # true means authors cannot approve their own merge requests, as the spec defines it.
    reset_approvals_on_push: Mapped[bool] = mapped_column(default=True)
    disable_overriding_approvers_per_merge_request: Mapped[bool] = mapped_column(default=False)
    merge_requests_author_approval: Mapped[bool] = mapped_column(default=False)
    merge_requests_disable_committers_approval: Mapped[bool] = mapped_column(default=False)
    require_password_to_approve: Mapped[bool] = mapped_column(default=False)
    external_authorization_classification_label: Mapped[str] = mapped_column(String(255), default="")
    repository_storage: Mapped[str] = mapped_column(String(64), default="default")


# The sizes that add up to a project's (or a group's) storage_size.
STORAGE_SIZES = (
    "repository_size",
    "wiki_size",
    "lfs_objects_size",
    "job_artifacts_size",
    "pipeline_artifacts_size",
    "packages_size",
    "snippets_size",
    "uploads_size",
)


def storage_size(sizes: Any) -> int:
    """The storage size of anything carrying the STORAGE_SIZES (a model or a row record)."""
    return sum(int(getattr(sizes, name)) for name in STORAGE_SIZES)


class ProjectStatistics(Base):
    """Sizes in bytes, kept current by whatever changes them (pushes, uploads, packages)."""

    __tablename__ = "project_statistics"

    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), primary_key=True)
    commit_count: Mapped[int] = mapped_column(default=0)
    repository_size: Mapped[int] = mapped_column(default=0)
    wiki_size: Mapped[int] = mapped_column(default=0)
    lfs_objects_size: Mapped[int] = mapped_column(default=0)
    job_artifacts_size: Mapped[int] = mapped_column(default=0)
    pipeline_artifacts_size: Mapped[int] = mapped_column(default=0)
    packages_size: Mapped[int] = mapped_column(default=0)
    snippets_size: Mapped[int] = mapped_column(default=0)
    uploads_size: Mapped[int] = mapped_column(default=0)
    container_registry_size: Mapped[int] = mapped_column(default=0)

    @property
    def storage_size(self) -> int:
        return storage_size(self)


class ProjectVisibilityCount(Base):
    """How many projects there are of each visibility, kept by the database's own triggers on
    every insert, delete and change of visibility of a project, whoever writes it (migration
    3c7f1e2b9a64): a member's project total reads the open ones off two rows instead of
    counting thousands (10,000 projects: SQLite 0.23 ms, PostgreSQL 0.7 ms a count)."""

    __tablename__ = "project_visibility_counts"

    visibility: Mapped[str] = mapped_column(String(16), primary_key=True)
    projects: Mapped[int] = mapped_column(BigInteger())


class ProjectTopic(Base):
    __tablename__ = "project_topics"
    __table_args__ = (UniqueConstraint("project_id", "name"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(255), index=True)
    position: Mapped[int] = mapped_column(default=0)


class ProjectStar(Base):
    __tablename__ = "project_stars"
    __table_args__ = (UniqueConstraint("project_id", "user_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class ProjectGroupLink(Timestamps, Base):
    """A project shared with a group: the group's members get at most `group_access`."""

    __tablename__ = "project_group_links"
    __table_args__ = (UniqueConstraint("project_id", "group_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    group_id: Mapped[int] = mapped_column(ForeignKey("namespaces.id", ondelete="CASCADE"), index=True)
    group_access: Mapped[int]
    expires_at: Mapped[date | None]


class Upload(Base):
    """A file attached to a project (or a group), served back at /<full_path>/uploads/<secret>/<name>."""

    __tablename__ = "uploads"

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int | None] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    namespace_id: Mapped[int | None] = mapped_column(
        ForeignKey("namespaces.id", ondelete="CASCADE"), index=True
    )
    secret: Mapped[str] = mapped_column(String(64), index=True)
    filename: Mapped[str] = mapped_column(String(255))
    size: Mapped[int]
    storage_key: Mapped[str] = mapped_column(String(1024))
    uploaded_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class ProjectCustomAttribute(Timestamps, Base):
    __tablename__ = "project_custom_attributes"
    __table_args__ = (UniqueConstraint("project_id", "key"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    key: Mapped[str] = mapped_column(String(255))
    value: Mapped[str] = mapped_column(Text)


never_reuse_ids(Project)
