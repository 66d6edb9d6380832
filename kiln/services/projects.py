"""Projects: creation, settings, visibility, forks, stars, shares, archiving and deletion.

Every function loads the project through `subjects.project`, which answers 404 for a
project the actor may not see and 403 for an action the policy refuses."""

from __future__ import annotations

import secrets
import shutil
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from sqlalchemy import delete, func, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from kiln import jobs, policy
from kiln.auth.actor import Actor
from kiln.config import Settings
from kiln.db import transaction
from kiln.errors import BadRequest, Conflict, ConflictList, NotFound, ValidationFailed
from kiln.git.files import readme_name
from kiln.git.layout import repository_path, wiki_path
from kiln.models import (
    Member,
    Namespace,
    Project,
    ProjectGroupLink,
    ProjectStar,
    ProjectStatistics,
    ProjectTopic,
    Upload,
    User,
)
from kiln.models.namespaces import KIND_GROUP, MAINTAINER, OWNER, VISIBILITY_LEVEL
from kiln.models.projects import DISABLED, ENABLED
from kiln.pagination import Page, PageResult
from kiln.policy import Action, ProjectSubject
from kiln.queries import access
from kiln.queries import namespaces as namespace_finder
from kiln.queries import projects as finder
from kiln.queries.paging import keyset_page, offset_page
from kiln.queries.text import ESCAPE, contains
from kiln.records import ProjectRecord
from kiln.schemas.projects import ProjectCreate, ProjectFork, ProjectList, ProjectSettings, ProjectUpdate
from kiln.services import instance_settings, subjects
from kiln.services import namespaces as ns_service
from kiln.storage import Storage

# The older feature booleans and the access level each one stands for.
LEGACY_FEATURES = {
    "issues_enabled": "issues_access_level",
    "merge_requests_enabled": "merge_requests_access_level",
    "jobs_enabled": "builds_access_level",
    "wiki_enabled": "wiki_access_level",
    "snippets_enabled": "snippets_access_level",
    "container_registry_enabled": "container_registry_access_level",
}
# Settings copied onto the model as given (after validation).
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
# Settings a fork takes over from its source.
FORK_COPIES = (
    "description",
    *(f for f in PLAIN_SETTINGS if f.endswith("_access_level")),
    "merge_method",
    "squash_option",
    "lfs_enabled",
    "request_access_enabled",
    "avatar_path",
)
MAX_TOPICS = 20
REMOVE_FILES = "projects.remove_files"
DESTROY_ADJOURNED = "projects.destroy_adjourned"


@dataclass(slots=True)
class ProjectListing:
    page: PageResult
    records: list[ProjectRecord]


# ---------------------------------------------------------------------------- views


def records(
    db: Session,
    actor: Actor | None,
    projects: list[Project],
    *,
    statistics: bool = False,
    custom_attributes: bool = False,
    known: ProjectSubject | None = None,
) -> list[ProjectRecord]:
    """Records for `projects` and their visible fork parents, each loader run once for all.
    `known` is a subject already loaded for a single project (its namespace and level)."""
    if not projects:
        return []
    ids = [p.id for p in projects]
    parent_ids = {p.forked_from_id for p in projects if p.forked_from_id is not None} - set(ids)
    parents: list[Project] = []
    if parent_ids:
        parents = list(
            db.scalars(select(Project).where(Project.id.in_(parent_ids), finder.visible_to(actor)))
        )
    everyone = projects + parents
    all_ids = [p.id for p in everyone]
    namespaces: dict[int, Namespace] = {}
    if known is not None:
        namespaces[known.namespace.id] = known.namespace
    missing_ns = {p.namespace_id for p in everyone} - set(namespaces)
    if missing_ns:
        namespaces.update(
            (n.id, n) for n in db.scalars(select(Namespace).where(Namespace.id.in_(missing_ns)))
        )
    owner_ids = {n.owner_id for n in namespaces.values() if n.owner_id is not None}
    owners = {u.id: u for u in db.scalars(select(User).where(User.id.in_(owner_ids)))} if owner_ids else {}
    topics = finder.topics_of(db, all_ids)
    levels: dict[int, int] = {}
    direct: dict[int, int] = {}
    group_levels: dict[int, int] = {}
    admin = policy.is_admin(actor)
    if actor is not None:
        if known is not None and not parents:
            levels = {known.project.id: known.level} if known.level is not None else {}
        else:
            levels = access.project_access(db, actor.user.id, all_ids)
        rows = db.execute(
            select(Member.project_id, Member.access_level).where(
                Member.project_id.in_(ids), Member.user_id == actor.user.id, Member.requested_at.is_(None)
            )
        )
        direct = {row[0]: row[1] for row in rows}
        group_ns = [n.id for n in namespaces.values() if n.kind == KIND_GROUP]
        group_levels = access.group_access(db, actor.user.id, group_ns)
    stats: dict[int, ProjectStatistics] = {}
    if statistics:
        stats = {
            s.project_id: s
            for s in db.scalars(select(ProjectStatistics).where(ProjectStatistics.project_id.in_(ids)))
        }
    links: dict[int, list[tuple[ProjectGroupLink, Namespace]]] = {pid: [] for pid in ids}
    for link, group in db.execute(
        select(ProjectGroupLink, Namespace)
        .join(Namespace, Namespace.id == ProjectGroupLink.group_id)
        .where(ProjectGroupLink.project_id.in_(ids))
        .order_by(ProjectGroupLink.id)
    ):
        links[link.project_id].append((link, group))
    attrs = finder.custom_attributes_of(db, ids) if custom_attributes and admin else None

    def build(p: Project, parent: ProjectRecord | None) -> ProjectRecord:
        ns = namespaces[p.namespace_id]
        level = levels.get(p.id)
        s = ProjectSubject(project=p, namespace=ns, level=level)
        return ProjectRecord(
            project=p,
            namespace=ns,
            owner=owners.get(ns.owner_id) if ns.owner_id is not None else None,
            topics=topics[p.id],
            level=level,
            project_access=direct.get(p.id),
            group_access=group_levels.get(ns.id),
            forked_from=parent,
            statistics=(stats.get(p.id) or ProjectStatistics(project_id=p.id, **_zero_stats()))
            if statistics
            else None,
            shared_with_groups=links.get(p.id, []),
            custom_attributes=attrs.get(p.id, []) if attrs is not None else None,
            can_read_code=policy.may(actor, Action.READ_CODE, s),
            can_admin=admin or (level or 0) >= MAINTAINER,
            features_open=_features_open(actor, s),
        )

    parent_records = {p.id: build(p, None) for p in parents}
    by_id = {p.id: p for p in projects}
    out = []
    for p in projects:
        parent = None
        if p.forked_from_id is not None:
            parent = parent_records.get(p.forked_from_id)
            if parent is None and p.forked_from_id in by_id:
                parent = build(by_id[p.forked_from_id], None)
        out.append(build(p, parent))
    return out


def _zero_stats() -> dict[str, int]:
    return {
        "commit_count": 0,
        "repository_size": 0,
        "wiki_size": 0,
        "lfs_objects_size": 0,
        "job_artifacts_size": 0,
        "pipeline_artifacts_size": 0,
        "packages_size": 0,
        "snippets_size": 0,
        "uploads_size": 0,
        "container_registry_size": 0,
    }


def _features_open(actor: Actor | None, s: ProjectSubject) -> dict[str, bool]:
    """Which features the viewer can use (the *_enabled booleans of the full view)."""
    admin = policy.is_admin(actor)
    member = (s.level or 0) >= 10 or admin
    out = {}
    for feature in ("issues", "merge_requests", "builds", "wiki", "snippets", "container_registry"):
        level = getattr(s.project, f"{feature}_access_level")
        out[feature] = level != DISABLED and (level == ENABLED or member)
    return out


def record(db: Session, actor: Actor | None, project: Project, **kw: Any) -> ProjectRecord:
    return records(db, actor, [project], **kw)[0]


# ---------------------------------------------------------------------------- lists


def list_projects(
    db: Session, actor: Actor | None, q: ProjectList, page: Page, **scope: Any
) -> ProjectListing:
    stmt = finder.listing(actor, q, **scope)
    if page.keyset:
        result = keyset_page(db, stmt, page, Project.id, q.id_after, q.id_before)
    else:
        result = offset_page(db, stmt, page)
    recs = records(
        db, actor, result.items, statistics=q.statistics, custom_attributes=q.with_custom_attributes
    )
    return ProjectListing(page=result, records=recs)


def list_user_projects(
    db: Session, actor: Actor | None, user_ident: str, q: ProjectList, page: Page
) -> ProjectListing:
    from kiln.queries.users import by_id_or_username

    user = by_id_or_username(db, user_ident)
    if user is None:
        raise NotFound("User")
    return list_projects(db, actor, q, page, owner_user_id=user.id)


def list_starred_by(
    db: Session, actor: Actor | None, user_ident: str, q: ProjectList, page: Page
) -> ProjectListing:
    from kiln.queries.users import by_id_or_username

    user = by_id_or_username(db, user_ident)
    if user is None:
        raise NotFound("User")
    if user.private_profile and not (actor is not None and (actor.user.id == user.id or actor.is_admin)):
        raise NotFound("User")
    return list_projects(db, actor, q, page, starred_by=user.id)


def list_forks(db: Session, actor: Actor | None, ident: str, q: ProjectList, page: Page) -> ProjectListing:
    s = subjects.project(db, actor, ident)
    return list_projects(db, actor, q, page, forked_from=s.project.id)


# ---------------------------------------------------------------------------- create and update


def _namespace_for_create(db: Session, actor: Actor, namespace_id: str | None) -> Namespace:
    if namespace_id is None or namespace_id == "":
        ns = db.scalars(select(Namespace).where(Namespace.owner_id == actor.user.id)).first()
        if ns is None:
            raise ValidationFailed({"namespace": ["is not valid"]})
        return ns
    ns = namespace_finder.by_ident(db, namespace_id)
    if ns is None:
        raise ValidationFailed({"namespace": ["is not valid"]})
    gs = subjects.of_namespace(db, actor, ns)
    if not policy.may(actor, Action.CREATE_PROJECT, gs):
        raise ValidationFailed({"namespace": ["is not valid"]})
    return ns


def _check_visibility(ns: Namespace, visibility: str, errors: dict[str, list[str]]) -> None:
    if ns.is_group and VISIBILITY_LEVEL[visibility] > VISIBILITY_LEVEL[ns.visibility]:
        errors.setdefault("visibility_level", []).append(
            f"{visibility} is not allowed in a {ns.visibility} group."
        )


def _check_restricted(
    actor: Actor, visibility: str, inst: instance_settings.InstanceSettings, errors: dict[str, list[str]]
) -> None:
    if visibility in inst["restricted_visibility_levels"] and not actor.is_admin:
        errors.setdefault("visibility_level", []).append(
            f"{visibility} has been restricted by your GitLab administrator"
        )


def _check_name_path(
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


def _apply_settings(project: Project, p: ProjectSettings) -> None:
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


def _topics_of_params(p: ProjectSettings) -> list[str] | None:
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


def _set_topics(db: Session, project: Project, topics: list[str]) -> None:
    if len(topics) > MAX_TOPICS:
        raise ValidationFailed({"topics": [f"is too long (maximum is {MAX_TOPICS} topics)"]})
    for topic in topics:
        if len(topic) > 255:
            raise ValidationFailed({"topics": ["is too long (maximum is 255 characters)"]})
    db.execute(delete(ProjectTopic).where(ProjectTopic.project_id == project.id))
    for position, topic in enumerate(topics):
        db.add(ProjectTopic(project_id=project.id, name=topic, position=position))


def create_project(
    db: Session, actor: Actor, p: ProjectCreate, settings: Settings, *, for_user: User | None = None
) -> ProjectRecord:
    """A project in a namespace the actor may create in (the actor's own by default)."""
    from kiln.errors import ParamError

    if not p.name and not p.path:
        raise ParamError("name, path are missing, at least one parameter must be provided")
    inst = instance_settings.current(db)
    created: list[int] = []
    try:
        with transaction(db):
            if for_user is not None:
                ns = db.scalars(select(Namespace).where(Namespace.owner_id == for_user.id)).one()
            else:
                ns = _namespace_for_create(db, actor, p.namespace_id)
            name = p.name if p.name else p.path or ""
            path = (
                p.path
                if p.path
                else (name if ns_service.path_error(name) is None else ns_service.path_from_name(name))
            )
            # Above the group's visibility a new project is quietly lowered to it, as GitLab does.
            visibility = _default_visibility(p.visibility or inst["default_project_visibility"], ns)
            errors: dict[str, list[str]] = {}
            _check_name_path(db, ns, name, path, errors)
            _check_restricted(actor, visibility, inst, errors)
            owner = for_user or actor.user
            if not ns.is_group and not actor.is_admin:
                count = (
                    db.scalar(select(func.count()).select_from(Project).where(Project.namespace_id == ns.id))
                    or 0
                )
                if count >= owner.projects_limit:
                    errors.setdefault("limit_reached", []).append(
                        f"Your project limit is {owner.projects_limit} projects! "
                        "Please contact your administrator to increase it"
                    )
            if errors:
                raise ValidationFailed(errors)
            project = Project(
                namespace_id=ns.id,
                creator_id=actor.user.id,
                name=name,
                path=path,
                visibility=visibility,
                runners_token="GR1348941" + secrets.token_urlsafe(15),
            )
            _apply_settings(project, p)
            project.default_branch = p.default_branch or ns.default_branch or inst["default_branch_name"]
            db.add(project)
            try:
                db.flush()
            except IntegrityError:
                raise ValidationFailed({"path": ["has already been taken"]}) from None
            db.add(ProjectStatistics(project_id=project.id, **_zero_stats()))
            topics = _topics_of_params(p)
            if topics:
                _set_topics(db, project, topics)
            db.flush()
            # The repository is created inside the transaction and removed if it fails, so a
            # refused or failed creation leaves neither rows nor folders behind.
            created.append(project.id)
            _create_repository(db, project, settings, readme=p.initialize_with_readme, author=actor.user)
    except BaseException:
        from kiln.services.repositories import store

        for pid in created:
            store(settings).remove(pid)
        raise
    return record(db, actor, project)


def _create_repository(
    db: Session,
    project: Project,
    settings: Settings,
    *,
    readme: bool,
    author: User,
) -> None:
    from kiln.git.writes import FileAction, Person, commit_actions
    from kiln.services import repositories

    repo = repositories.store(settings).create(project.id, project.default_branch or "main")
    if readme:
        person = Person(author.name, author.email)
        content = (
            f"# {project.name}\n\n{project.description}\n" if project.description else f"# {project.name}\n"
        )
        commit_actions(
            repo,
            branch=project.default_branch or "main",
            actions=[FileAction("create", "README.md", content.encode())],
            message="Initial commit",
            author=person,
            committer=person,
        )
        repositories.adopt_first_branch(db, project, repo, project.default_branch or "main")
        repositories.record_push(
            db, project, None, f"refs/heads/{project.default_branch}", None, str(repo.head.target), repo
        )


def _default_visibility(default: str, ns: Namespace) -> str:
    if ns.is_group and VISIBILITY_LEVEL[default] > VISIBILITY_LEVEL[ns.visibility]:
        return ns.visibility
    return default


def update_project(
    db: Session, actor: Actor, ident: str, p: ProjectUpdate, settings: Settings
) -> ProjectRecord:
    s = subjects.project(db, actor, ident, Action.UPDATE_PROJECT)
    project = s.project
    given = p.given()
    inst = instance_settings.current(db)
    with transaction(db):
        errors: dict[str, list[str]] = {}
        if "visibility" in given and p.visibility is not None and p.visibility != project.visibility:
            policy.require(actor, Action.CHANGE_VISIBILITY, s)
            _check_visibility(s.namespace, p.visibility, errors)
            _check_restricted(actor, p.visibility, inst, errors)
            project.visibility = p.visibility
        name = p.name if "name" in given and p.name is not None else project.name
        path = p.path if "path" in given and p.path is not None else project.path
        if name != project.name or path != project.path:
            _check_name_path(db, s.namespace, name, path, errors, except_id=project.id)
        if errors:
            raise ValidationFailed(errors)
        project.name, project.path = name, path
        if "default_branch" in given and p.default_branch and p.default_branch != project.default_branch:
            _move_head(settings, project, p.default_branch)
            project.default_branch = p.default_branch
        _apply_settings(project, p)
        topics = _topics_of_params(p)
        if topics is not None:
            _set_topics(db, project, topics)
        project.updated_at = datetime.now(UTC)
        db.flush()
    return record(db, actor, project)


# ---------------------------------------------------------------------------- archive, delete, restore


def set_archived(db: Session, actor: Actor, ident: str, archived: bool) -> ProjectRecord:
    """Idempotent: archiving an archived project answers the project unchanged."""
    s = subjects.project(db, actor, ident, Action.ADMIN_PROJECT)
    with transaction(db):
        if s.project.archived != archived:
            s.project.archived = archived
            s.project.updated_at = datetime.now(UTC)
        db.flush()
    return record(db, actor, s.project)


def delete_project(
    db: Session, actor: Actor, ident: str, *, permanently: bool = False, full_path: str | None = None
) -> None:
    """Removed at once, or marked for deletion when the instance adjourns deletions; the
    repository and uploads are removed by a job queued in the same transaction."""
    s = subjects.project(db, actor, ident, Action.ADMIN_PROJECT)
    project = s.project
    inst = instance_settings.current(db)
    period = int(inst["deletion_adjourned_period"])
    with transaction(db):
        if period > 0 and not permanently and project.marked_for_deletion_on is None:
            today = datetime.now(UTC).date()
            project.marked_for_deletion_on = today
            project.marked_for_deletion_by_id = actor.user.id
            project.archived = True
            jobs.enqueue(
                db,
                DESTROY_ADJOURNED,
                {"project_id": project.id, "marked_on": today.isoformat()},
                run_at=datetime.now(UTC) + timedelta(days=period),
            )
            return
        if permanently and project.marked_for_deletion_on is None:
            raise BadRequest("Project must be marked for deletion first.", raw=True)
        if permanently and full_path != f"{s.namespace.full_path}/{project.path}":
            raise BadRequest(
                "`full_path` is incorrect. You must enter the complete path for the project.", raw=True
            )
        destroy(db, [project.id])


def restore_project(db: Session, actor: Actor, ident: str) -> ProjectRecord:
    s = subjects.project(db, actor, ident, Action.ADMIN_PROJECT)
    project = s.project
    with transaction(db):
        if project.marked_for_deletion_on is None:
            raise BadRequest("Project already not marked for deletion", raw=True)
        project.marked_for_deletion_on = None
        project.marked_for_deletion_by_id = None
        project.archived = False
        db.flush()
    return record(db, actor, project)


def forget_stars(db: Session, user_id: int) -> None:
    """Before a user's stars go with the user: the counts they were part of drop by one."""
    starred = select(ProjectStar.project_id).where(ProjectStar.user_id == user_id)
    db.execute(update(Project).where(Project.id.in_(starred)).values(star_count=Project.star_count - 1))


def ids_in_namespaces(db: Session, namespace_ids: list[int]) -> list[int]:
    """Projects in these namespaces or anywhere below them."""
    if not namespace_ids:
        return []
    tops = db.scalars(select(Namespace).where(Namespace.id.in_(namespace_ids))).all()
    below = select(Namespace.id).where(or_(*(access.within(Namespace, top) for top in tops)))
    return list(db.scalars(select(Project.id).where(Project.namespace_id.in_(below))))


def destroy(db: Session, project_ids: list[int]) -> None:
    """Remove projects' rows now (inside the caller's transaction) and queue the removal of
    their files: nothing is left that points at a project that no longer exists."""
    if not project_ids:
        return
    parents = db.execute(
        select(Project.forked_from_id, func.count())
        .where(Project.id.in_(project_ids), Project.forked_from_id.is_not(None))
        .group_by(Project.forked_from_id)
    ).all()
    for parent_id, n in parents:
        db.execute(update(Project).where(Project.id == parent_id).values(forks_count=Project.forks_count - n))
    uploads = list(db.scalars(select(Upload.storage_key).where(Upload.project_id.in_(project_ids))))
    db.execute(update(Project).where(Project.forked_from_id.in_(project_ids)).values(forked_from_id=None))
    db.execute(delete(Project).where(Project.id.in_(project_ids)))
    for pid in project_ids:
        jobs.enqueue(
            db,
            REMOVE_FILES,
            {"project_id": pid, "uploads": [k for k in uploads if k.startswith(f"project/{pid}/")]},
        )


@jobs.handler(REMOVE_FILES)
def _remove_files(ctx: jobs.JobContext, payload: dict[str, Any]) -> None:
    """Idempotent: removing what is already gone is no error."""
    pid = int(payload["project_id"])
    root = ctx.settings.data_dir / "repositories"
    for path in (repository_path(root, pid), wiki_path(root, pid)):
        shutil.rmtree(path, ignore_errors=True)
    from kiln.storage import LocalStorage

    LocalStorage(ctx.settings.data_dir / "uploads").delete_prefix(f"project/{pid}")


@jobs.handler(DESTROY_ADJOURNED)
def _destroy_adjourned(ctx: jobs.JobContext, payload: dict[str, Any]) -> None:
    """Runs when the waiting period is over; a project restored (or marked again later) in
    the meantime is left alone."""
    project = ctx.db.get(Project, int(payload["project_id"]))
    if project is None or project.marked_for_deletion_on is None:
        return
    if project.marked_for_deletion_on.isoformat() != payload.get("marked_on"):
        return
    destroy(ctx.db, [project.id])


# ---------------------------------------------------------------------------- forks


def fork_project(db: Session, actor: Actor, ident: str, p: ProjectFork, settings: Settings) -> ProjectRecord:
    s = subjects.project(db, actor, ident)
    if not policy.may(actor, Action.FORK_PROJECT, s):
        raise NotFound()
    source = s.project
    target_ident = str(p.namespace_id) if p.namespace_id is not None else p.namespace_path or p.namespace
    with transaction(db):
        if target_ident:
            ns = namespace_finder.by_ident(db, target_ident)
            if ns is None:
                raise NotFound("Namespace")
            gs = subjects.of_namespace(db, actor, ns)
            if not policy.may(actor, Action.CREATE_PROJECT, gs):
                raise NotFound("Target Namespace")
        else:
            ns = db.scalars(select(Namespace).where(Namespace.owner_id == actor.user.id)).one()
        name = p.name or source.name
        path = p.path or source.path
        visibility = p.visibility or source.visibility
        if VISIBILITY_LEVEL[visibility] > VISIBILITY_LEVEL[source.visibility]:
            visibility = source.visibility
        if ns.is_group and VISIBILITY_LEVEL[visibility] > VISIBILITY_LEVEL[ns.visibility]:
            visibility = ns.visibility
        errors: dict[str, list[str]] = {}
        _check_name_path(db, ns, name, path, errors)
        if errors:
            raise ConflictList(_full_messages(errors))
        fork = Project(
            namespace_id=ns.id,
            creator_id=actor.user.id,
            name=name,
            path=path,
            visibility=visibility,
            default_branch=source.default_branch,
            readme_path=source.readme_path,
            forked_from_id=source.id,
            runners_token="GR1348941" + secrets.token_urlsafe(15),
        )
        for attr in FORK_COPIES:
            setattr(fork, attr, getattr(source, attr))
        if p.description is not None:
            fork.description = p.description
        db.add(fork)
        db.flush()
        db.add(ProjectStatistics(project_id=fork.id, **_zero_stats()))
        _set_topics(db, fork, finder.topics_of(db, [source.id])[source.id])
        db.execute(update(Project).where(Project.id == source.id).values(forks_count=Project.forks_count + 1))
        db.flush()
        _copy_repository(settings, source.id, fork.id)
    db.refresh(source)
    return record(db, actor, fork)


def _move_head(settings: Settings, project: Project, branch: str) -> None:
    """The default branch is the repository's HEAD; it must name an existing branch (an
    empty repository takes any name, for its first push). readme_url follows it."""
    from kiln.services.repositories import store

    repo = store(settings).find(project.id)
    if repo is None:
        return
    if repo.head_is_unborn and not list(repo.branches.local):
        repo.set_head(f"refs/heads/{branch}")
        return
    if repo.references.get(f"refs/heads/{branch}") is None:
        raise ValidationFailed({"base": [f"Could not change HEAD: branch '{branch}' does not exist"]})
    repo.set_head(f"refs/heads/{branch}")
    project.readme_path = readme_name(repo)


def _copy_repository(settings: Settings, source_id: int, fork_id: int) -> None:
    """The fork's repository starts as a copy of its source's; removed again on failure."""
    from kiln.services.repositories import store

    try:
        store(settings).fork(source_id, fork_id)
    except BaseException:
        store(settings).remove(fork_id)
        raise


def _full_messages(errors: dict[str, list[str]]) -> list[str]:
    """Rails' full_messages: "Name has already been taken"."""
    return [f"{k.replace('_', ' ').capitalize()} {m}" for k, msgs in errors.items() for m in msgs]


# ---------------------------------------------------------------------------- stars


def star(db: Session, actor: Actor, ident: str, starred: bool) -> tuple[ProjectRecord, bool]:
    """Returns the project and whether anything changed (GitLab answers 304 otherwise)."""
    s = subjects.project(db, actor, ident, Action.STAR_PROJECT)
    project = s.project
    with transaction(db):
        existing = db.scalar(
            select(ProjectStar.id).where(
                ProjectStar.project_id == project.id, ProjectStar.user_id == actor.user.id
            )
        )
        changed = (existing is None) == starred
        if changed and starred:
            try:
                with db.begin_nested():
                    db.add(ProjectStar(project_id=project.id, user_id=actor.user.id))
                    db.flush()
            except IntegrityError:
                changed = False
        elif changed:
            db.execute(delete(ProjectStar).where(ProjectStar.id == existing))
        if changed:
            count = db.scalar(
                select(func.count()).select_from(ProjectStar).where(ProjectStar.project_id == project.id)
            )
            project.star_count = count or 0
        db.flush()
    return record(db, actor, project), changed


def starrers(db: Session, actor: Actor | None, ident: str, search: str | None, page: Page) -> PageResult:
    s = subjects.project(db, actor, ident)
    stmt = (
        select(ProjectStar, User)
        .join(User, User.id == ProjectStar.user_id)
        .where(ProjectStar.project_id == s.project.id)
    )
    if not policy.is_admin(actor):
        viewer_id = actor.user.id if actor is not None else -1
        stmt = stmt.where((User.private_profile.is_(False)) | (User.id == viewer_id))
    if search:
        term = contains(search)
        stmt = stmt.where(
            func.lower(User.username).like(term, escape=ESCAPE)
            | func.lower(User.name).like(term, escape=ESCAPE)
        )
    return offset_page(db, stmt.order_by(ProjectStar.id.asc()), page, scalars=False)


def languages(db: Session, actor: Actor | None, ident: str, settings: Settings) -> dict[str, float]:
    """Computed from the repository's default branch once per commit; an empty repository has
    none."""
    from kiln.services import languages as language_service

    s = subjects.project(db, actor, ident, Action.READ_PROJECT)
    if not policy.may(actor, Action.READ_CODE, s):
        raise NotFound("Project")
    return language_service.for_project(db, s, settings)


# ---------------------------------------------------------------------------- sharing


def share(
    db: Session, actor: Actor, ident: str, group_id: int, group_access: int, expires_at: date | None
) -> ProjectGroupLink:
    s = subjects.project(db, actor, ident, Action.SHARE_PROJECT)
    if s.namespace.is_group and s.namespace.share_with_group_lock:
        raise BadRequest("The project sharing with group is disabled", raw=True)
    if group_access >= OWNER:
        policy.require(actor, Action.ADMIN_PROJECT, s)
    group = db.get(Namespace, group_id)
    if group is None or not group.is_group:
        raise NotFound(message="Not Found")
    if not policy.may(actor, Action.READ_GROUP, subjects.of_namespace(db, actor, group)):
        raise NotFound(message="Not Found")
    if expires_at is not None and expires_at <= datetime.now(UTC).date():
        raise ValidationFailed({"expires_at": ["must be in the future"]})
    with transaction(db):
        exists_ = db.scalar(
            select(ProjectGroupLink.id).where(
                ProjectGroupLink.project_id == s.project.id, ProjectGroupLink.group_id == group.id
            )
        )
        if exists_ is not None:
            raise Conflict("Project already shared with this group")
        if group.id in s.namespace.ancestor_ids:
            raise Conflict("Project cannot be shared with the group it is in or one of its ancestors.")
        link = ProjectGroupLink(
            project_id=s.project.id, group_id=group.id, group_access=group_access, expires_at=expires_at
        )
        db.add(link)
        db.flush()
    return link


def unshare(db: Session, actor: Actor, ident: str, group_id: int) -> None:
    s = subjects.project(db, actor, ident, Action.SHARE_PROJECT)
    with transaction(db):
        deleted = db.execute(
            delete(ProjectGroupLink).where(
                ProjectGroupLink.project_id == s.project.id, ProjectGroupLink.group_id == group_id
            )
        )
        if deleted.rowcount == 0:  # type: ignore[attr-defined]
            raise NotFound("Group Link")


# ---------------------------------------------------------------------------- uploads


@dataclass(slots=True)
class Uploaded:
    upload: Upload
    project: Project
    namespace: Namespace


def upload(
    db: Session, actor: Actor, ident: str, filename: str, data: Any, size: int, storage: Storage
) -> Uploaded:
    s = subjects.project(db, actor, ident, Action.UPLOAD_FILE)
    inst = instance_settings.current(db)
    limit = int(inst["max_attachment_size"]) * 1024 * 1024
    if size > limit:
        from kiln.errors import PayloadTooLarge

        raise PayloadTooLarge()
    name = sanitize_filename(filename)
    secret = secrets.token_hex(16)
    key = f"project/{s.project.id}/{secret}/{name}"
    written = storage.put(key, data)
    try:
        with transaction(db):
            row = Upload(
                project_id=s.project.id,
                secret=secret,
                filename=name,
                size=written,
                storage_key=key,
                uploaded_by_id=actor.user.id,
            )
            db.add(row)
            db.execute(
                update(ProjectStatistics)
                .where(ProjectStatistics.project_id == s.project.id)
                .values(uploads_size=ProjectStatistics.uploads_size + written)
            )
            db.flush()
    except BaseException:
        storage.delete_prefix(f"project/{s.project.id}/{secret}")
        raise
    return Uploaded(upload=row, project=s.project, namespace=s.namespace)


def sanitize_filename(filename: str) -> str:
    """The last path component, with characters that would break a URL or a path replaced."""
    base = filename.replace("\\", "/").rsplit("/", 1)[-1].strip()
    cleaned = "".join(ch if ch.isalnum() or ch in "._-+" else "_" for ch in base).lstrip(".")
    return cleaned[:255] or "file"


def find_upload(db: Session, actor: Actor | None, project_path: str, secret: str, filename: str) -> Upload:
    """An upload served back at its URL: hidden projects and wrong secrets are 404 alike."""
    s = subjects.find_project(db, actor, project_path)
    if s is None or not policy.may(actor, Action.READ_PROJECT, s):
        raise NotFound()
    row = db.scalars(
        select(Upload).where(
            Upload.project_id == s.project.id, Upload.secret == secret, Upload.filename == filename
        )
    ).first()
    if row is None:
        raise NotFound()
    return row
