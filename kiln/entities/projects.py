"""Project views, composed like GitLab's entities: simple ⊂ full ⊂ full with permissions."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import orjson

from kiln.entities._format import day, iso
from kiln.entities._rendered import RenderedViews
from kiln.entities.users import user_basic
from kiln.markdown import render as render_markdown
from kiln.models import Namespace, Project, ProjectGroupLink, ProjectStatistics, Upload
from kiln.records import ProjectRecord

if TYPE_CHECKING:
    from kiln.queries.projects import SharedGroupRow

IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".gif", ".bmp", ".tiff", ".ico", ".webp", ".svg")
VIDEO_EXTENSIONS = (".mp4", ".m4v", ".mov", ".webm", ".ogv")


def namespace_avatar_url(ns: Namespace, base: str) -> str | None:
    if not ns.avatar_path:
        return None
    return f"{base}/uploads/-/system/group/avatar/{ns.id}/{ns.avatar_path.rsplit('/', 1)[-1]}"


def namespace_web_url(ns: Namespace, base: str) -> str:
    return f"{base}/groups/{ns.full_path}" if ns.is_group else f"{base}/{ns.full_path}"


def project_web_url(full_path: str, base: str) -> str:
    return f"{base}/{full_path}"


def namespace_basic(ns: Namespace, base: str) -> dict[str, Any]:
    return {
        "id": ns.id,
        "name": ns.name,
        "path": ns.path,
        "kind": ns.kind,
        "full_path": ns.full_path,
        "parent_id": ns.parent_id,
        "avatar_url": namespace_avatar_url(ns, base),
        "web_url": namespace_web_url(ns, base),
    }


def project_avatar_url(project: Project, base: str) -> str | None:
    if not project.avatar_path:
        return None
    return f"{base}/uploads/-/system/project/avatar/{project.id}/{project.avatar_path.rsplit('/', 1)[-1]}"


def project_full_path(rec: ProjectRecord) -> str:
    return f"{rec.namespace.full_path}/{rec.project.path}"


def _ssh_host(base: str) -> str:
    host = base.split("://", 1)[-1].split("/", 1)[0]
    return host.split(":", 1)[0]


def _readme_url(rec: ProjectRecord, web_url: str) -> str | None:
    """Where the web interface shows the default branch's README, for those who may read code."""
    p = rec.project
    if not (rec.can_read_code and p.readme_path and p.default_branch):
        return None
    return f"{web_url}/-/blob/{quote(p.default_branch, safe='/')}/{quote(p.readme_path)}"


def project_simple(rec: ProjectRecord, base: str) -> dict[str, Any]:
    p, ns = rec.project, rec.namespace
    full_path = project_full_path(rec)
    web_url = project_web_url(full_path, base)
    view: dict[str, Any] = {
        "id": p.id,
        "description": p.description or None,
        "name": p.name,
        "name_with_namespace": f"{ns.full_name} / {p.name}",
        "path": p.path,
        "path_with_namespace": full_path,
        "created_at": iso(p.created_at),
        "default_branch": p.default_branch if rec.can_read_code else None,
        "tag_list": sorted(rec.topics),
        "topics": list(rec.topics),
        "ssh_url_to_repo": f"git@{_ssh_host(base)}:{full_path}.git",
        "http_url_to_repo": f"{web_url}.git",
        "web_url": web_url,
        "readme_url": _readme_url(rec, web_url),
        "forks_count": p.forks_count,
        "avatar_url": project_avatar_url(p, base),
        "star_count": p.star_count,
        "last_activity_at": iso(p.last_activity_at),
        "visibility": p.visibility,
        "namespace": namespace_basic(ns, base),
    }
    if rec.custom_attributes is not None:
        view["custom_attributes"] = [{"key": k, "value": v} for k, v in rec.custom_attributes]
    return view


def _links(p: Project, base: str) -> dict[str, str]:
    api = f"{base}/api/v4/projects/{p.id}"
    return {
        "self": api,
        "issues": f"{api}/issues",
        "merge_requests": f"{api}/merge_requests",
        "repo_branches": f"{api}/repository/branches",
        "labels": f"{api}/labels",
        "events": f"{api}/events",
        "members": f"{api}/members",
        "cluster_agents": f"{api}/cluster_agents",
    }


def statistics_view(stats: ProjectStatistics) -> dict[str, int]:
    return {
        "commit_count": stats.commit_count,
        "storage_size": stats.storage_size,
        "repository_size": stats.repository_size,
        "wiki_size": stats.wiki_size,
        "lfs_objects_size": stats.lfs_objects_size,
        "job_artifacts_size": stats.job_artifacts_size,
        "pipeline_artifacts_size": stats.pipeline_artifacts_size,
        "packages_size": stats.packages_size,
        "snippets_size": stats.snippets_size,
        "uploads_size": stats.uploads_size,
        "container_registry_size": stats.container_registry_size,
    }


def shared_group(link: SharedGroupRow) -> dict[str, Any]:
    return {
        "group_id": link.id,
        "group_name": link.name,
        "group_full_path": link.full_path,
        "group_access_level": link.group_access,
        "expires_at": day(link.expires_at),
    }


def project_full(rec: ProjectRecord, base: str, *, license: bool = False) -> dict[str, Any]:
    """The full view (authenticated callers); `permissions` is added by project_with_access."""
    p = rec.project
    view = project_simple(rec, base)
    if rec.forked_from is not None:
        view["forked_from_project"] = project_simple(rec.forked_from, base)
    if license:
        view["license_url"] = None
        view["license"] = None
    open_ = rec.features_open
    view.update(
        {
            "_links": _links(p, base),
            "packages_enabled": p.packages_enabled,
            "empty_repo": p.default_branch is None,
            "archived": p.archived,
        }
    )
    if rec.owner is not None:
        view["owner"] = {
            "id": rec.owner.id,
            "username": rec.owner.username,
            "name": rec.owner.name,
            "state": rec.owner.state,
            "locked": False,
            "avatar_url": user_basic(rec.owner, base)["avatar_url"],
            "web_url": f"{base}/{rec.owner.username}",
            "created_at": iso(rec.owner.created_at),
        }
    view.update(
        {
            "resolve_outdated_diff_discussions": p.resolve_outdated_diff_discussions,
            "container_expiration_policy": {
                "cadence": "1d",
                "enabled": False,
                "keep_n": 10,
                "older_than": "90d",
                "name_regex": ".*",
                "name_regex_keep": None,
                "next_run_at": None,
            },
            "repository_object_format": "sha1",
            "issues_enabled": open_.get("issues", False),
            "merge_requests_enabled": open_.get("merge_requests", False),
            "wiki_enabled": open_.get("wiki", False),
            "jobs_enabled": open_.get("builds", False),
            "snippets_enabled": open_.get("snippets", False),
            "container_registry_enabled": open_.get("container_registry", False),
            "service_desk_enabled": p.service_desk_enabled,
            "service_desk_address": None,
            "can_create_merge_request_in": rec.can_create_merge_request_in,
            "issues_access_level": p.issues_access_level,
            "repository_access_level": p.repository_access_level,
            "merge_requests_access_level": p.merge_requests_access_level,
            "forking_access_level": p.forking_access_level,
            "wiki_access_level": p.wiki_access_level,
            "builds_access_level": p.builds_access_level,
            "snippets_access_level": p.snippets_access_level,
            "pages_access_level": p.pages_access_level,
            "analytics_access_level": p.analytics_access_level,
            "container_registry_access_level": p.container_registry_access_level,
            "security_and_compliance_access_level": p.security_and_compliance_access_level,
            "releases_access_level": p.releases_access_level,
            "environments_access_level": p.environments_access_level,
            "feature_flags_access_level": p.feature_flags_access_level,
            "infrastructure_access_level": p.infrastructure_access_level,
            "monitor_access_level": p.monitor_access_level,
            "model_experiments_access_level": p.model_experiments_access_level,
            "model_registry_access_level": p.model_registry_access_level,
            "requirements_access_level": p.requirements_access_level,
            "emails_disabled": not p.emails_enabled,
            "emails_enabled": p.emails_enabled,
            "shared_runners_enabled": p.shared_runners_enabled,
            "lfs_enabled": p.lfs_enabled,
            "creator_id": p.creator_id,
        }
    )
    if p.forked_from_id is not None:
        view["mr_default_target_self"] = False
    if rec.can_admin:
        view["import_url"] = p.import_url
        view["import_type"] = None
    view.update(
        {
            "import_status": p.import_status,
            "import_error": p.import_error,
            "open_issues_count": 0,
            "description_html": render_markdown(p.description),
            "updated_at": iso(p.updated_at),
        }
    )
    if rec.can_admin:
        view.update(
            {
                "ci_default_git_depth": p.ci_default_git_depth,
                "ci_forward_deployment_enabled": p.ci_forward_deployment_enabled,
                "ci_job_token_scope_enabled": False,
                "ci_separated_caches": True,
                "build_git_strategy": "fetch",
                "keep_latest_artifact": p.keep_latest_artifact,
                "restrict_user_defined_variables": False,
                "runners_token": p.runners_token,
                "runner_token_expiration_interval": None,
                "group_runners_enabled": p.group_runners_enabled,
                "auto_cancel_pending_pipelines": p.auto_cancel_pending_pipelines,
                "build_timeout": p.build_timeout,
                "auto_devops_enabled": p.auto_devops_enabled,
                "auto_devops_deploy_strategy": p.auto_devops_deploy_strategy,
            }
        )
    view.update(
        {
            "ci_config_path": p.ci_config_path if rec.can_read_code else None,
            "public_jobs": p.public_jobs,
            "shared_with_groups": [shared_group(link) for link in rec.shared_with_groups],
            "only_allow_merge_if_pipeline_succeeds": p.only_allow_merge_if_pipeline_succeeds,
            "allow_merge_on_skipped_pipeline": p.allow_merge_on_skipped_pipeline,
            "request_access_enabled": p.request_access_enabled,
            "only_allow_merge_if_all_discussions_are_resolved": p.only_allow_merge_if_all_discussions_are_resolved,
            "remove_source_branch_after_merge": p.remove_source_branch_after_merge,
            "printing_merge_request_link_enabled": p.printing_merge_request_link_enabled,
            "merge_method": p.merge_method,
            "squash_option": p.squash_option,
            "enforce_auth_checks_on_uploads": p.enforce_auth_checks_on_uploads,
            "suggestion_commit_message": p.suggestion_commit_message,
            "merge_commit_template": p.merge_commit_template,
            "squash_commit_template": p.squash_commit_template,
            "issue_branch_template": p.issue_branch_template,
        }
    )
    if rec.statistics is not None:
        view["statistics"] = statistics_view(rec.statistics)
    view.update(
        {
            "warn_about_potentially_unwanted_characters": True,
            "autoclose_referenced_issues": p.autoclose_referenced_issues,
            "approvals_before_merge": p.approvals_before_merge,
            "mirror": p.mirror,
            "external_authorization_classification_label": p.external_authorization_classification_label,
            "requirements_enabled": p.requirements_access_level != "disabled",
            "security_and_compliance_enabled": p.security_and_compliance_access_level != "disabled",
            "compliance_frameworks": [],
            "issues_template": p.issues_template,
            "merge_requests_template": p.merge_requests_template,
            "repository_storage": p.repository_storage,
            "marked_for_deletion_at": day(p.marked_for_deletion_on),
            "marked_for_deletion_on": day(p.marked_for_deletion_on),
        }
    )
    return view


def project_with_access(rec: ProjectRecord, base: str, *, license: bool = False) -> dict[str, Any]:
    view = project_full(rec, base, license=license)
    view["permissions"] = {
        "project_access": _member_access(rec.project_access),
        "group_access": _member_access(rec.group_access) if rec.namespace.is_group else None,
    }
    return view


def _member_access(level: int | None) -> dict[str, int] | None:
    # notification_level 3 is "global": follow the user's global notification setting.
    return None if level is None else {"access_level": level, "notification_level": 3}


def project_in_list(rec: ProjectRecord, base: str, *, authenticated: bool, simple: bool) -> dict[str, Any]:
    if simple or not authenticated:
        return project_simple(rec, base)
    return project_with_access(rec, base)


# The project views lists and single reads send, as JSON kept by their record (RenderedViews).
RENDERED = RenderedViews(limit=1024, budget=8 << 20)


def project_in_list_json(
    rec: ProjectRecord, base: str, *, authenticated: bool, simple: bool
) -> orjson.Fragment:
    return RENDERED.get(
        ("list", base, authenticated, simple, record_key(rec)),
        lambda: project_in_list(rec, base, authenticated=authenticated, simple=simple),
    )


def project_with_access_json(rec: ProjectRecord, base: str, *, license: bool = False) -> orjson.Fragment:
    return RENDERED.get(
        ("access", base, license, record_key(rec)), lambda: project_with_access(rec, base, license=license)
    )


def record_key(rec: ProjectRecord) -> tuple[Any, ...]:
    """Everything a record holds (KEYED_FIELDS, in order): two records with equal keys render
    alike. Its rows go in as they are (a JSON column's dict makes the key unhashable, which
    RenderedViews turns into text). A record kept across requests has its version for a key."""
    if rec.version is not None:
        return ("version", rec.version)
    parent = rec.forked_from
    return (
        rec.project,
        rec.namespace,
        rec.owner,
        tuple(rec.topics),
        rec.level,
        rec.project_access,
        rec.group_access,
        None if parent is None else record_key(parent),
        rec.statistics,
        tuple(rec.shared_with_groups),
        None if rec.custom_attributes is None else tuple(rec.custom_attributes),
        rec.can_read_code,
        rec.can_admin,
        rec.can_create_merge_request_in,
        tuple(rec.features_open.items()),
        rec.version,
    )


KEYED_FIELDS = (
    "project",
    "namespace",
    "owner",
    "topics",
    "level",
    "project_access",
    "group_access",
    "forked_from",
    "statistics",
    "shared_with_groups",
    "custom_attributes",
    "can_read_code",
    "can_admin",
    "can_create_merge_request_in",
    "features_open",
    "version",
)


def upload_result(upload: Upload, project: Project, namespace: Namespace, base: str) -> dict[str, Any]:
    url = f"/uploads/{upload.secret}/{upload.filename}"
    alt = upload.filename.rsplit(".", 1)[0] if "." in upload.filename else upload.filename
    lowered = upload.filename.lower()
    embed = lowered.endswith(IMAGE_EXTENSIONS) or lowered.endswith(VIDEO_EXTENSIONS)
    markdown = f"![{alt}]({url})" if embed else f"[{upload.filename}]({url})"
    return {
        "id": upload.id,
        "alt": alt if embed else upload.filename,
        "url": url,
        "full_path": f"/-/project/{project.id}/uploads/{upload.secret}/{upload.filename}",
        "markdown": markdown,
    }


def starrer(star_created_at: Any, user: Any, base: str) -> dict[str, Any]:
    return {"starred_since": iso(star_created_at), "user": user_basic(user, base)}


def share_link(link: ProjectGroupLink) -> dict[str, Any]:
    return {
        "id": link.id,
        "project_id": link.project_id,
        "group_id": link.group_id,
        "group_access": link.group_access,
        "expires_at": day(link.expires_at),
    }


def repository_storage(info: Any) -> dict[str, Any]:
    """GitLab's ProjectRepositoryStorage (GET /projects/:id/storage)."""
    return {
        "project_id": info.project_id,
        "disk_path": info.disk_path,
        "created_at": iso(info.created_at),
        "repository_storage": info.repository_storage,
    }
