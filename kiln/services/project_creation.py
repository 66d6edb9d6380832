"""Creating a project: in a namespace the actor may create in, with its repository (and
README) made in the same transaction and removed again if it fails. A project's runner
registration token is made here too, and found again by it."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from kiln import policy, storage
from kiln.auth import server_secret
from kiln.auth.actor import Actor
from kiln.auth.tokens import digest, new_runners_nonce, runners_token
from kiln.config import Settings
from kiln.db import transaction
from kiln.errors import ParamError, ValidationFailed
from kiln.git.writes import FileAction, Person, commit_actions
from kiln.models import Namespace, Project, ProjectStatistics, User
from kiln.policy import Action
from kiln.queries import namespaces as namespace_finder
from kiln.queries import projects as finder
from kiln.records import ProjectRecord
from kiln.schemas._types import Upload
from kiln.schemas.projects import ProjectCreate
from kiln.services import avatars, instance_settings, repositories, subjects
from kiln.services import namespaces as ns_service
from kiln.services.project_settings import (
    apply_settings,
    check_description,
    check_name_path,
    check_restricted,
    set_topics,
    topics_of_params,
)
from kiln.services.projects import record


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


def create_project(
    db: Session, actor: Actor, p: ProjectCreate, settings: Settings, *, for_user: User | None = None
) -> ProjectRecord:
    """A project in a namespace the actor may create in (the actor's own by default)."""
    if not p.name and not p.path:
        raise ParamError("name, path are missing, at least one parameter must be provided")
    inst = instance_settings.current(db)
    avatar = avatars.requested(p)
    created: list[int] = []
    change: avatars.Change | None = None
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
            errors: dict[str, list[str]] = avatars.errors(avatar)
            check_name_path(db, ns, name, path, errors)
            check_description(p.description, errors)
            check_restricted(actor, visibility, inst, errors)
            owner = for_user or actor.user
            if policy.counts_toward_projects_limit(actor, ns):
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
                **runners_token_columns(settings),
            )
            apply_settings(project, p)
            project.default_branch = p.default_branch or ns.default_branch or inst["default_branch_name"]
            db.add(project)
            try:
                db.flush()
            except IntegrityError:
                raise ValidationFailed({"path": ["has already been taken"]}) from None
            db.add(ProjectStatistics(project_id=project.id))
            topics = topics_of_params(p)
            if topics:
                set_topics(db, project, topics)
            db.flush()
            # The repository is created inside the transaction and removed if it fails, so a
            # refused or failed creation leaves neither rows nor folders behind.
            created.append(project.id)
            _create_repository(db, project, settings, readme=p.initialize_with_readme, author=actor.user)
            if isinstance(avatar, Upload):
                change = avatars.Change(storage.uploads(settings), "project", project.id, None)
                project.avatar_path = change.apply(avatar)
                db.flush()
    except BaseException:
        for pid in created:
            repositories.store(settings).remove(pid)
        if change is not None:
            change.undo()
        raise
    return record(db, actor, project, settings=settings)


def _create_repository(
    db: Session,
    project: Project,
    settings: Settings,
    *,
    readme: bool,
    author: User,
) -> None:
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
    return policy.capped(default, ns.visibility) if ns.is_group else default


# ---------------------------------------------------------------------------- runner registration tokens


def runners_token_columns(settings: Settings) -> dict[str, str]:
    """A new project's registration token as the database keeps it: a fresh nonce, and the
    digest of the token derived from it."""
    nonce = new_runners_nonce()
    return {
        "runners_token_nonce": nonce,
        "runners_token_digest": digest(runners_token(server_secret.key(settings), nonce)),
    }


def project_by_runners_token(db: Session, token: str) -> Project | None:
    """The project a runner registration token is of, found by its digest."""
    if not token:
        return None
    found = finder.project_id_by_runners_token_digest(db, digest(token))
    return None if found is None else db.get(Project, found)


def digest_runners_tokens(db: Session, settings: Settings) -> int:
    """Digests for the tokens whose nonce was written without the server key (the migration
    that stopped keeping tokens in clear has no key), made at start, in one transaction, so
    every token a project shows is found. How many were made."""
    missing = finder.undigested_runners_tokens(db)
    if not missing:
        return 0
    key = server_secret.key(settings)
    rows: list[dict[str, Any]] = [
        {"id": pid, "runners_token_digest": digest(runners_token(key, nonce))} for pid, nonce in missing
    ]
    with transaction(db):
        db.execute(update(Project), rows)
    return len(rows)
