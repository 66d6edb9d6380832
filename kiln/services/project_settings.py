"""A project's settings: the rules every write of them shares (name and path, restricted
visibilities, topics, the older feature booleans) and the update itself."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from kiln import policy, storage
from kiln.auth.actor import Actor
from kiln.config import Settings
from kiln.db import transaction
from kiln.errors import ValidationFailed
from kiln.git.files import readme_name
from kiln.models import Namespace, Project, ProjectTopic
from kiln.models.projects import DISABLED, ENABLED
from kiln.policy import Action
from kiln.records import ProjectRecord
from kiln.schemas._types import Upload
from kiln.schemas.projects import ProjectSettings, ProjectUpdate
from kiln.services import avatars, instance_settings, repositories, subjects
from kiln.services import namespaces as ns_service
from kiln.services.projects import record

LEGACY_FEATURES = {
    "issues_enabled": "issues_access_level",
    "merge_requests_enabled": "merge_requests_access_level",
    "jobs_enabled": "builds_access_level",
    "wiki_enabled": "wiki_access_level",
    "snippets_enabled": "snippets_access_level",
    "container_registry_enabled": "container_registry_access_level",
}


PLAIN_SETTINGS = (
    "description",
    "issues_access_level",
    "repository_access_level",
    "merge_requests_access_level",
    "forking_access_level",
    "wiki_access_level",
    "builds_access_level",
    "snippets_access_level",
    "pages_access_level",
    "operations_access_level",
    "analytics_access_level",
    "container_registry_access_level",
    "security_and_compliance_access_level",
    "releases_access_level",
    "environments_access_level",
    "feature_flags_access_level",
    "infrastructure_access_level",
    "monitor_access_level",
    "model_experiments_access_level",
    "model_registry_access_level",
    "requirements_access_level",
    "request_access_enabled",
    "lfs_enabled",
    "shared_runners_enabled",
    "group_runners_enabled",
    "public_jobs",
    "packages_enabled",
    "service_desk_enabled",
    "merge_method",
    "squash_option",
    "only_allow_merge_if_pipeline_succeeds",
    "only_allow_merge_if_all_discussions_are_resolved",
    "allow_merge_on_skipped_pipeline",
    "remove_source_branch_after_merge",
    "resolve_outdated_diff_discussions",
    "printing_merge_request_link_enabled",
    "autoclose_referenced_issues",
    "enforce_auth_checks_on_uploads",
    "suggestion_commit_message",
    "merge_commit_template",
    "squash_commit_template",
    "issue_branch_template",
    "merge_requests_template",
    "issues_template",
    "ci_config_path",
    "ci_default_git_depth",
    "build_timeout",
    "auto_cancel_pending_pipelines",
    "ci_forward_deployment_enabled",
    "keep_latest_artifact",
    "auto_devops_enabled",
    "auto_devops_deploy_strategy",
    "mirror",
    "approvals_before_merge",
    "external_authorization_classification_label",
    "import_url",
)


MAX_TOPICS = 20


def _check_visibility(ns: Namespace, visibility: str, errors: dict[str, list[str]]) -> None:
    if ns.is_group and policy.exceeds(visibility, ns.visibility):
        errors.setdefault("visibility_level", []).append(
            f"{visibility} is not allowed in a {ns.visibility} group."
        )


# GitLab's bound on a project's description: past it, every view would render an unbounded text.
MAX_DESCRIPTION = 2000


def check_description(description: str | None, errors: dict[str, list[str]]) -> None:
    if description is not None and len(description) > MAX_DESCRIPTION:
        errors.setdefault("description", []).append(f"is too long (maximum is {MAX_DESCRIPTION} characters)")


def check_restricted(
    actor: Actor, visibility: str, inst: instance_settings.InstanceSettings, errors: dict[str, list[str]]
) -> None:
    if not policy.may_use_visibility(actor, visibility, inst["restricted_visibility_levels"]):
        errors.setdefault("visibility_level", []).append(
            f"{visibility.capitalize()} has been restricted by your GitLab administrator"
        )


def check_name_path(
    db: Session,
    ns: Namespace,
    name: str,
    path: str,
    errors: dict[str, list[str]],
    *,
    except_id: int | None = None,
) -> None:
    name_problem = ns_service.name_error(name)
    if name_problem:
        errors.setdefault("name", []).append(name_problem)
    path_problem = ns_service.path_error(path)
    if path_problem:
        errors.setdefault("path", []).append(path_problem)
    if name_problem or path_problem:
        return
    same_name = select(Project.id).where(
        Project.namespace_id == ns.id, func.lower(Project.name) == name.lower()
    )
    same_path = select(Project.id).where(
        Project.namespace_id == ns.id, func.lower(Project.path) == path.lower()
    )
    if except_id is not None:
        same_name = same_name.where(Project.id != except_id)
        same_path = same_path.where(Project.id != except_id)
    if db.scalar(same_name.limit(1)) is not None:
        errors.setdefault("name", []).append("has already been taken")
    sub_ns = db.scalar(
        select(Namespace.id)
        .where(Namespace.parent_id == ns.id, func.lower(Namespace.path) == path.lower())
        .limit(1)
    )
    if db.scalar(same_path.limit(1)) is not None or sub_ns is not None:
        errors.setdefault("path", []).append("has already been taken")


def apply_settings(project: Project, p: ProjectSettings) -> None:
    given = p.given()
    for legacy, column in LEGACY_FEATURES.items():
        if legacy in given and getattr(p, legacy) is not None and column not in given:
            setattr(project, column, ENABLED if getattr(p, legacy) else DISABLED)
    for name in PLAIN_SETTINGS:
        if name in given:
            value = getattr(p, name)
            if value is None and name not in ("allow_merge_on_skipped_pipeline",):
                continue
            setattr(project, name, value)
    if "public_builds" in given and "public_jobs" not in given and p.public_builds is not None:
        project.public_jobs = p.public_builds
    if "emails_disabled" in given and "emails_enabled" not in given and p.emails_disabled is not None:
        project.emails_enabled = not p.emails_disabled
    elif "emails_enabled" in given and p.emails_enabled is not None:
        project.emails_enabled = p.emails_enabled


def topics_of_params(p: ProjectSettings) -> list[str] | None:
    given = p.given()
    raw = p.topics if "topics" in given else (p.tag_list if "tag_list" in given else None)
    if raw is None:
        return None
    seen: dict[str, str] = {}
    for topic in raw:
        name = topic.strip()
        if name and name.lower() not in seen:
            seen[name.lower()] = name
    return list(seen.values())


def set_topics(db: Session, project: Project, topics: list[str]) -> None:
    if len(topics) > MAX_TOPICS:
        raise ValidationFailed({"topics": [f"is too long (maximum is {MAX_TOPICS} topics)"]})
    for topic in topics:
        if len(topic) > 255:
            raise ValidationFailed({"topics": ["is too long (maximum is 255 characters)"]})
    db.execute(delete(ProjectTopic).where(ProjectTopic.project_id == project.id))
    for position, topic in enumerate(topics):
        db.add(ProjectTopic(project_id=project.id, name=topic, position=position))


def update_project(
    db: Session, actor: Actor, ident: str, p: ProjectUpdate, settings: Settings
) -> ProjectRecord:
    s = subjects.project(db, actor, ident, Action.UPDATE_PROJECT)
    project = s.project
    given = p.given()
    inst = instance_settings.current(db)
    avatar = avatars.requested(p)
    change = avatars.Change(storage.uploads(settings), "project", project.id, project.avatar_path)
    try:
        _update(db, actor, s, p, given, inst, settings, avatar, change)
    except BaseException:
        change.undo()
        raise
    change.finish()
    return record(db, actor, project, settings=settings)


def _update(
    db: Session,
    actor: Actor,
    s: policy.ProjectSubject,
    p: ProjectUpdate,
    given: set[str],
    inst: instance_settings.InstanceSettings,
    settings: Settings,
    avatar: Upload | str | None,
    change: avatars.Change,
) -> None:
    project = s.project
    with transaction(db):
        errors: dict[str, list[str]] = avatars.errors(avatar)
        if "visibility" in given and p.visibility is not None and p.visibility != project.visibility:
            policy.require(actor, Action.CHANGE_VISIBILITY, s)
            _check_visibility(s.namespace, p.visibility, errors)
            check_restricted(actor, p.visibility, inst, errors)
            project.visibility = p.visibility
        name = p.name if "name" in given and p.name is not None else project.name
        path = p.path if "path" in given and p.path is not None else project.path
        if name != project.name or path != project.path:
            check_name_path(db, s.namespace, name, path, errors, except_id=project.id)
        if "description" in given:
            check_description(p.description, errors)
        if errors:
            raise ValidationFailed(errors)
        project.name, project.path = name, path
        if "default_branch" in given and p.default_branch and p.default_branch != project.default_branch:
            _move_head(settings, project, p.default_branch)
            project.default_branch = p.default_branch
        apply_settings(project, p)
        topics = topics_of_params(p)
        if topics is not None:
            set_topics(db, project, topics)
        if avatar is not None:
            project.avatar_path = change.apply(avatar)
        project.updated_at = datetime.now(UTC)
        db.flush()


def _move_head(settings: Settings, project: Project, branch: str) -> None:
    """The default branch is the repository's HEAD; it must name an existing branch (an
    empty repository takes any name, for its first push). readme_url follows it."""
    repo = repositories.store(settings).find(project.id)
    if repo is None:
        return
    if repo.head_is_unborn and not list(repo.branches.local):
        repo.set_head(f"refs/heads/{branch}")
        return
    if repo.references.get(f"refs/heads/{branch}") is None:
        raise ValidationFailed({"base": [f"Could not change HEAD: branch '{branch}' does not exist"]})
    repo.set_head(f"refs/heads/{branch}")
    project.readme_path = readme_name(repo)
