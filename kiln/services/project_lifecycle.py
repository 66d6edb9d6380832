"""Archiving, deleting (at once or adjourned) and restoring projects, and the jobs that
remove what a deleted project leaves on disk."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import delete, func, or_, select, update
from sqlalchemy.orm import Session

from kiln import jobs, storage
from kiln.auth.actor import Actor
from kiln.config import Settings
from kiln.db import fresh, transaction
from kiln.errors import BadRequest, NotFound
from kiln.git.layout import repository_path, wiki_path
from kiln.models import Namespace, Project, Upload
from kiln.policy import Action
from kiln.queries import access
from kiln.records import ProjectRecord
from kiln.services import instance_settings, subjects
from kiln.services.projects import record

REMOVE_FILES = "projects.remove_files"


DESTROY_ADJOURNED = "projects.destroy_adjourned"


def set_archived(db: Session, actor: Actor, ident: str, archived: bool, settings: Settings) -> ProjectRecord:
    """Idempotent: archiving an archived project answers the project unchanged."""
    s = subjects.project(db, actor, ident, Action.ADMIN_PROJECT)
    with transaction(db):
        if s.project.archived != archived:
            s.project.archived = archived
            s.project.updated_at = datetime.now(UTC)
        db.flush()
    return record(db, actor, s.project, settings=settings)


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
        # Read again in the write: another DELETE (a thread, a process) may have marked or
        # removed the project since it was read, and must not be marked and queued twice.
        fresh(db, project, NotFound("Project"))
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


def restore_project(db: Session, actor: Actor, ident: str, settings: Settings) -> ProjectRecord:
    s = subjects.project(db, actor, ident, Action.ADMIN_PROJECT)
    project = s.project
    with transaction(db):
        if project.marked_for_deletion_on is None:
            raise BadRequest("Project already not marked for deletion", raw=True)
        project.marked_for_deletion_on = None
        project.marked_for_deletion_by_id = None
        project.archived = False
        db.flush()
    return record(db, actor, project, settings=settings)


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
    files = storage.uploads(ctx.settings)
    files.delete_prefix(f"project/{pid}")
    files.delete_prefix(storage.avatar_key("project", pid))


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
