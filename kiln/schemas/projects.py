"""Request contracts for projects (spec part 3 "Projects"; GitLab's documented parameters
where the spec says "not shown")."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from kiln.schemas._types import (
    AccessLevel,
    CommaList,
    Day,
    Flag,
    Int,
    OptionalInt,
    PageParams,
    Params,
    SearchText,
    UploadFile,
    When,
)

Visibility = Literal["private", "internal", "public"]
FeatureLevel = Literal["disabled", "private", "enabled"]
PagesLevel = Literal["disabled", "private", "enabled", "public"]
ProjectOrder = Literal[
    "id",
    "name",
    "path",
    "created_at",
    "updated_at",
    "last_activity_at",
    "similarity",
    "star_count",
    "storage_size",
]


class ProjectSettings(Params):
    """Everything create and update share; absent fields are left alone."""

    description: str | None = None
    visibility: Visibility | None = None
    default_branch: str | None = None
    topics: CommaList | None = None
    tag_list: CommaList | None = None

    issues_access_level: FeatureLevel | None = None
    repository_access_level: FeatureLevel | None = None
    merge_requests_access_level: FeatureLevel | None = None
    forking_access_level: FeatureLevel | None = None
    wiki_access_level: FeatureLevel | None = None
    builds_access_level: FeatureLevel | None = None
    snippets_access_level: FeatureLevel | None = None
    pages_access_level: PagesLevel | None = None
    operations_access_level: FeatureLevel | None = None
    analytics_access_level: FeatureLevel | None = None
    container_registry_access_level: FeatureLevel | None = None
    security_and_compliance_access_level: FeatureLevel | None = None
    releases_access_level: FeatureLevel | None = None
    environments_access_level: FeatureLevel | None = None
    feature_flags_access_level: FeatureLevel | None = None
    infrastructure_access_level: FeatureLevel | None = None
    monitor_access_level: FeatureLevel | None = None
    model_experiments_access_level: FeatureLevel | None = None
    model_registry_access_level: FeatureLevel | None = None
    requirements_access_level: FeatureLevel | None = None

    # The older booleans for the same features.
    issues_enabled: Flag | None = None
    merge_requests_enabled: Flag | None = None
    jobs_enabled: Flag | None = None
    wiki_enabled: Flag | None = None
    snippets_enabled: Flag | None = None
    container_registry_enabled: Flag | None = None

    request_access_enabled: Flag | None = None
    lfs_enabled: Flag | None = None
    emails_disabled: Flag | None = None
    emails_enabled: Flag | None = None
    shared_runners_enabled: Flag | None = None
    group_runners_enabled: Flag | None = None
    public_builds: Flag | None = None
    public_jobs: Flag | None = None
    packages_enabled: Flag | None = None
    service_desk_enabled: Flag | None = None
    merge_method: Literal["merge", "rebase_merge", "ff"] | None = None
    squash_option: Literal["never", "always", "default_on", "default_off"] | None = None
    only_allow_merge_if_pipeline_succeeds: Flag | None = None
    only_allow_merge_if_all_discussions_are_resolved: Flag | None = None
    allow_merge_on_skipped_pipeline: Flag | None = None
    remove_source_branch_after_merge: Flag | None = None
    resolve_outdated_diff_discussions: Flag | None = None
    printing_merge_request_link_enabled: Flag | None = None
    autoclose_referenced_issues: Flag | None = None
    enforce_auth_checks_on_uploads: Flag | None = None
    suggestion_commit_message: str | None = None
    merge_commit_template: str | None = None
    squash_commit_template: str | None = None
    issue_branch_template: str | None = None
    merge_requests_template: str | None = None
    issues_template: str | None = None
    ci_config_path: str | None = None
    ci_default_git_depth: Annotated[int, Field(ge=0, le=1000)] | None = None
    build_timeout: Annotated[int, Field(ge=600, le=2_592_000)] | None = None
    auto_cancel_pending_pipelines: Literal["enabled", "disabled"] | None = None
    ci_forward_deployment_enabled: Flag | None = None
    keep_latest_artifact: Flag | None = None
    auto_devops_enabled: Flag | None = None
    auto_devops_deploy_strategy: Literal["continuous", "manual", "timed_incremental"] | None = None
    mirror: Flag | None = None
    approvals_before_merge: OptionalInt = None
    external_authorization_classification_label: str | None = None
    import_url: str | None = None
    # A multipart image file, or "" to remove the avatar.
    avatar: Any = None


class ProjectCreate(ProjectSettings):
    name: str | None = None
    path: str | None = None
    namespace_id: str | None = None
    initialize_with_readme: Flag = False
    use_custom_template: Flag | None = None


class ProjectCreateForUser(ProjectCreate):
    name: str  # type: ignore[assignment]


class ProjectUpdate(ProjectSettings):
    name: str | None = None
    path: str | None = None


class ProjectGet(Params):
    statistics: Flag = False
    license: Flag = False
    with_custom_attributes: Flag = False


class ProjectList(PageParams):
    archived: Flag | None = None
    visibility: Visibility | None = None
    order_by: ProjectOrder = "created_at"
    sort: Literal["asc", "desc"] | None = None
    search: SearchText | None = None
    search_namespaces: Flag = False
    simple: Flag = False
    owned: Flag = False
    membership: Flag = False
    starred: Flag = False
    statistics: Flag = False
    with_custom_attributes: Flag = False
    with_issues_enabled: Flag = False
    with_merge_requests_enabled: Flag = False
    with_programming_language: str | None = None
    wiki_checksum_failed: Flag = False
    repository_checksum_failed: Flag = False
    min_access_level: AccessLevel | None = None
    id_after: OptionalInt = None
    id_before: OptionalInt = None
    last_activity_after: When | None = None
    last_activity_before: When | None = None
    updated_after: When | None = None
    updated_before: When | None = None
    custom_attributes: dict[str, str] | None = None
    topic: CommaList | None = None
    topic_id: OptionalInt = None
    imported: Flag = False
    include_hidden: Flag = False
    include_pending_delete: Flag = False
    marked_for_deletion_on: Day | None = None
    active: Flag | None = None
    repository_storage: str | None = None


class GroupProjectList(ProjectList):
    include_subgroups: Flag = False
    with_shared: Flag = True
    with_security_reports: Flag = False


class ProjectFork(Params):
    namespace_id: OptionalInt = None
    namespace_path: str | None = None
    namespace: str | None = None
    path: str | None = None
    name: str | None = None
    description: str | None = None
    visibility: Visibility | None = None
    mr_default_target_self: Flag | None = None
    branches: str | None = None


class ProjectShare(Params):
    group_id: Int
    group_access: AccessLevel
    expires_at: Day | None = None


class StarrerList(PageParams):
    search: SearchText | None = None


class UploadCreate(Params):
    file: UploadFile


class ProjectDelete(Params):
    permanently_remove: Flag = False
    full_path: str | None = None


class ProjectTransfer(Params):
    namespace: str


class TransferLocations(PageParams):
    search: SearchText | None = None


class Housekeeping(Params):
    task: Literal["eager", "prune"] = "eager"


class SnapshotGet(Params):
    wiki: Flag = False
