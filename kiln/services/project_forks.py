"""Forks: a new project in a namespace the actor may create in, starting as a copy of its
source's settings, topics, avatar and repository."""

from __future__ import annotations

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from kiln import policy, storage
from kiln.auth.actor import Actor
from kiln.config import Settings
from kiln.db import transaction
from kiln.errors import ConflictList, NotFound
from kiln.models import Namespace, Project, ProjectStatistics
from kiln.policy import Action
from kiln.queries import namespaces as namespace_finder
from kiln.queries import projects as finder
from kiln.records import ProjectRecord
from kiln.schemas.projects import ProjectFork
from kiln.services import avatars, repositories, subjects
from kiln.services.project_creation import runners_token_columns
from kiln.services.project_settings import PLAIN_SETTINGS, check_name_path, set_topics
from kiln.services.projects import record

FORK_COPIES = (
    "description",
    *(f for f in PLAIN_SETTINGS if f.endswith("_access_level")),
    "merge_method",
    "squash_option",
    "lfs_enabled",
    "request_access_enabled",
)


def fork_project(db: Session, actor: Actor, ident: str, p: ProjectFork, settings: Settings) -> ProjectRecord:
    s = subjects.project(db, actor, ident, Action.FORK_PROJECT)
    source = s.project
    files = storage.uploads(settings)
    copied: list[int] = []
    try:
        fork = _fork(db, actor, source, p, settings, files, copied)
    except BaseException:
        for fork_id in copied:
            files.delete_prefix(storage.avatar_key("project", fork_id))
        raise
    db.refresh(source)
    return record(db, actor, fork, settings=settings)


def _fork(
    db: Session,
    actor: Actor,
    source: Project,
    p: ProjectFork,
    settings: Settings,
    files: storage.Storage,
    copied: list[int],
) -> Project:
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
        visibility = policy.capped(visibility, source.visibility)
        if ns.is_group:
            visibility = policy.capped(visibility, ns.visibility)
        errors: dict[str, list[str]] = {}
        check_name_path(db, ns, name, path, errors)
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
            **runners_token_columns(settings),
        )
        for attr in FORK_COPIES:
            setattr(fork, attr, getattr(source, attr))
        if p.description is not None:
            fork.description = p.description
        db.add(fork)
        db.flush()
        db.add(ProjectStatistics(project_id=fork.id))
        set_topics(db, fork, finder.topics_of(db, [source.id])[source.id])
        db.execute(update(Project).where(Project.id == source.id).values(forks_count=Project.forks_count + 1))
        # The fork's avatar is a copy of the source's, as GitLab's fork keeps it.
        copied.append(fork.id)
        fork.avatar_path = avatars.copy(files, "project", source.avatar_path, fork.id)
        db.flush()
        _copy_repository(settings, source.id, fork.id)
    return fork


def _copy_repository(settings: Settings, source_id: int, fork_id: int) -> None:
    """The fork's repository starts as a copy of its source's; removed again on failure."""
    try:
        repositories.store(settings).fork(source_id, fork_id)
    except BaseException:
        repositories.store(settings).remove(fork_id)
        raise


def _full_messages(errors: dict[str, list[str]]) -> list[str]:
    """Rails' full_messages: "Name has already been taken"."""
    return [f"{k.replace('_', ' ').capitalize()} {m}" for k, msgs in errors.items() for m in msgs]
