"""Moving a project to another namespace (GitLab's Projects::TransferService): one
transaction that changes the project's namespace and, where the new group is less visible,
its visibility. Everything else that names the project by path (full path, web URLs, clone
URLs, who reaches it through groups) derives from its namespace, and its repository, uploads
and avatar are stored by its id, so nothing on disk moves and a clone at the new path works
at once."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from sqlalchemy import func, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from kiln import policy
from kiln.auth.actor import Actor
from kiln.config import Settings
from kiln.db import fresh, transaction
from kiln.errors import BadRequest, NotFound
from kiln.models import Member, Namespace, Project
from kiln.models.namespaces import OWNER
from kiln.pagination import Page, PageResult
from kiln.policy import Action
from kiln.queries import groups as group_finder
from kiln.queries import namespaces as namespace_finder
from kiln.queries.paging import offset_page
from kiln.queries.projects import NamespaceRow
from kiln.records import ProjectRecord
from kiln.services import subjects
from kiln.services.projects import record

ALREADY_THERE = "Project is already in this namespace."
NOT_ALLOWED_INTO = "You don't have permission to transfer projects into that namespace."
TAKEN = "Project with same name or path in target namespace already exists"


def _failed(reason: str) -> BadRequest:
    """GitLab's answer: the model's errors, as Ruby inspects them, under `new_namespace`."""
    return BadRequest(f"Failed to transfer project {{:new_namespace=>[{json.dumps(reason)}]}}", raw=True)


def target_namespace(db: Session, actor: Actor, ident: str) -> Namespace:
    """The namespace a project moves to, by id or full path: 404 for one the caller may not
    read (another user's, a hidden group), as GitLab's find_namespace! answers."""
    ns = namespace_finder.by_ident(db, ident)
    if ns is None or not policy.may(actor, Action.READ_NAMESPACE, subjects.of_namespace(db, actor, ns)):
        raise NotFound("Namespace")
    return ns


def transfer(
    db: Session, actor: Actor, ident: str, namespace_ident: str, settings: Settings
) -> ProjectRecord:
    """PUT /projects/:id/transfer: the caller is the project's Owner (or an administrator) and
    may move projects into the target namespace."""
    s = subjects.project(db, actor, ident, Action.TRANSFER_PROJECT)
    project = s.project
    target = target_namespace(db, actor, namespace_ident)
    move(db, actor, project, target)
    return record(db, actor, project, settings=settings)


def move(db: Session, actor: Actor, project: Project, target: Namespace) -> None:
    """The transfer itself, in one transaction; refusals leave the project as it was."""
    with transaction(db):
        fresh(db, project, NotFound("Project"))
        if target.id == project.namespace_id:
            raise _failed(ALREADY_THERE)
        if not policy.may(actor, Action.TRANSFER_PROJECTS_INTO, subjects.of_namespace(db, actor, target)):
            raise _failed(NOT_ALLOWED_INTO)
        if policy.counts_toward_projects_limit(actor, target) and _at_limit(db, actor, target):
            # GitLab: a user at their projects limit may create no project in their
            # namespace, and so may move none into it.
            raise _failed(NOT_ALLOWED_INTO)
        if _taken(db, project, target):
            raise _failed(TAKEN)
        old = db.get(Namespace, project.namespace_id)
        if old is not None and not old.is_group and old.owner_id is not None:
            _keep_owner(db, project, old.owner_id)
        project.namespace_id = target.id
        # A project is never more visible than its group: moved into a less visible one, it
        # takes that group's visibility, as GitLab does.
        if target.is_group and policy.exceeds(project.visibility, target.visibility):
            project.visibility = target.visibility
        project.updated_at = datetime.now(UTC)
        try:
            with db.begin_nested():
                db.flush()
        except IntegrityError:
            raise _failed(TAKEN) from None


def _at_limit(db: Session, actor: Actor, target: Namespace) -> bool:
    held = db.scalar(select(func.count()).select_from(Project).where(Project.namespace_id == target.id)) or 0
    return held >= actor.user.projects_limit


def _taken(db: Session, project: Project, target: Namespace) -> bool:
    """Another project of the target with the same name or path (case-insensitive, as paths
    are unique), or a subgroup with the path: the moved project's URLs would name both."""
    same = select(Project.id).where(
        Project.namespace_id == target.id,
        Project.id != project.id,
        or_(
            func.lower(Project.path) == project.path.lower(),
            func.lower(Project.name) == project.name.lower(),
        ),
    )
    if db.scalar(same.limit(1)) is not None:
        return True
    if not target.is_group:
        return False
    sub = select(Namespace.id).where(
        Namespace.parent_id == target.id, func.lower(Namespace.path) == project.path.lower()
    )
    return db.scalar(sub.limit(1)) is not None


def _keep_owner(db: Session, project: Project, owner_id: int) -> None:
    """The holder of the personal namespace a project leaves stays its Owner, as the Owner
    membership GitLab gives them at creation stays with the project."""
    member = db.scalars(
        select(Member).where(Member.project_id == project.id, Member.user_id == owner_id)
    ).first()
    if member is None:
        db.add(Member(project_id=project.id, user_id=owner_id, access_level=OWNER, created_by_id=owner_id))
    elif member.access_level < OWNER or member.requested_at is not None or member.expires_at is not None:
        member.access_level, member.requested_at, member.expires_at = OWNER, None, None


def transfer_locations(db: Session, actor: Actor, ident: str, search: str | None, page: Page) -> PageResult:
    """GET /projects/:id/transfer_locations: the groups the caller may move the project into
    (Maintainer or more where they may create projects), its own group left out."""
    s = subjects.project(db, actor, ident, Action.TRANSFER_PROJECT, rows=True)
    current = s.namespace.id if s.namespace.is_group else None
    stmt, params = group_finder.transfer_locations(actor, current, search)
    result = offset_page(db, stmt, page, core=True, params=params)
    result.items = [NamespaceRow._make(row) for row in result.items]
    return result
