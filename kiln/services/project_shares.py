"""Sharing a project with a group: the group's members reach it, capped at the share's level."""

from __future__ import annotations

from datetime import UTC, date, datetime

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from kiln import policy
from kiln.auth.actor import Actor
from kiln.db import transaction
from kiln.errors import BadRequest, Conflict, Forbidden, NotFound, ValidationFailed
from kiln.models import Namespace, ProjectGroupLink
from kiln.policy import Action
from kiln.services import subjects


def share(
    db: Session, actor: Actor, ident: str, group_id: int, group_access: int, expires_at: date | None
) -> ProjectGroupLink:
    s = subjects.project(db, actor, ident, Action.SHARE_PROJECT)
    if s.namespace.is_group and s.namespace.share_with_group_lock:
        raise BadRequest("The project sharing with group is disabled", raw=True)
    if not policy.may_share_at(actor, s, group_access):
        raise Forbidden()
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
