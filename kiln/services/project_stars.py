"""Stars: starring and unstarring a project, its starrers, and a removed user's stars."""

from __future__ import annotations

from sqlalchemy import delete, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from kiln import policy
from kiln.auth.actor import Actor
from kiln.config import Settings
from kiln.db import transaction
from kiln.models import Project, ProjectStar
from kiln.pagination import Page, PageResult
from kiln.policy import Action
from kiln.queries import project_stars as finder
from kiln.records import ProjectRecord
from kiln.services import subjects
from kiln.services.projects import record


def star(
    db: Session, actor: Actor, ident: str, starred: bool, settings: Settings
) -> tuple[ProjectRecord, bool]:
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
    return record(db, actor, project, settings=settings), changed


def starrers(db: Session, actor: Actor | None, ident: str, search: str | None, page: Page) -> PageResult:
    """Items are (StarRow, UserRow). The list shows the profiles READ_USER_PROFILE shows:
    public ones and the viewer's own, or all of them to those who see private profiles."""
    s = subjects.project(db, actor, ident, rows=True)
    return finder.starrers(
        db,
        s.project.id,
        page,
        viewer_id=actor.user.id if actor is not None else None,
        all_profiles=policy.sees_private_profiles(actor),
        search=search,
    )


def forget_stars(db: Session, user_id: int) -> None:
    """Before a user's stars go with the user: the counts they were part of drop by one."""
    starred = select(ProjectStar.project_id).where(ProjectStar.user_id == user_id)
    db.execute(update(Project).where(Project.id.in_(starred)).values(star_count=Project.star_count - 1))
