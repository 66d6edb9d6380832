"""Project finders: lookup by id or full path, and the filters of every project list."""

from __future__ import annotations

from datetime import date
from functools import cache
from typing import Any
from urllib.parse import unquote

from sqlalchemy import (
    ColumnElement,
    Date,
    Select,
    and_,
    bindparam,
    exists,
    false,
    func,
    null,
    or_,
    select,
    true,
)
from sqlalchemy.orm import Session

from kiln import policy
from kiln.auth.actor import Actor
from kiln.models import Namespace, Project, ProjectCustomAttribute, ProjectStar, ProjectTopic
from kiln.models.namespaces import OWNER, PUBLIC
from kiln.models.projects import DISABLED
from kiln.queries import access
from kiln.queries.text import ESCAPE, contains, escape_like
from kiln.schemas.projects import ProjectList


@cache
def _subject_statement(by_path: bool, signed_in: bool) -> Select[Any]:
    """Project, namespace and the caller's level in one round trip, built once per shape:
    every project route starts here."""
    if by_path:
        project_id: Any = (
            select(Project.id)
            .join(Namespace, Namespace.id == Project.namespace_id)
            .where(
                func.lower(Namespace.full_path) == bindparam("namespace_path"),
                func.lower(Project.path) == bindparam("path"),
            )
            .scalar_subquery()
        )
    else:
        project_id = bindparam("id")
    level: Any = (
        access.project_level_of(bindparam("user_id"), project_id, bindparam("today", type_=Date()))
        if signed_in
        else null()
    )
    return (
        select(Project, Namespace, level.label("level"))
        .join(Namespace, Namespace.id == Project.namespace_id)
        .where(Project.id == project_id)
    )


def subject_row(db: Session, ident: str, user_id: int | None) -> tuple[Project, Namespace, int | None] | None:
    """The project by numeric id or full path (case-insensitive; `%2F` decoded here), its
    namespace, and `user_id`'s effective access level on it."""
    ident = unquote(ident)
    params: dict[str, Any] = {}
    if ident.isdigit():
        params["id"] = int(ident)
    elif "/" in ident:
        ns_path, _, path = ident.rpartition("/")
        params["namespace_path"], params["path"] = ns_path.lower(), path.lower()
    else:
        return None
    if user_id is not None:
        params["user_id"], params["today"] = user_id, date.today()
    stmt = _subject_statement("id" not in params, user_id is not None)
    row = db.execute(stmt, params).first()
    return None if row is None else (row[0], row[1], row[2])


def visible_to(actor: Actor | None) -> ColumnElement[bool]:
    """Projects the actor may see: public ones, internal ones when signed in (not external),
    and private ones some membership reaches. Admins see everything."""
    if actor is None:
        return Project.visibility == PUBLIC
    if actor.is_admin:
        return true()
    levels = access.project_levels(actor.user.id)
    open_levels = policy.open_visibilities(actor)
    return or_(Project.visibility.in_(open_levels), Project.id.in_(select(levels.c.project_id)))


def listing(
    actor: Actor | None,
    q: ProjectList,
    *,
    namespace_ids: Select[Any] | list[int] | None = None,
    shared_with_group: int | None = None,
    owner_user_id: int | None = None,
    starred_by: int | None = None,
    forked_from: int | None = None,
) -> Select[Any]:
    # Administrators see everything: no condition at all, so an unfiltered count stays cheap.
    stmt = (
        select(Project) if actor is not None and actor.is_admin else select(Project).where(visible_to(actor))
    )
    user_id = actor.user.id if actor is not None else None
    if namespace_ids is not None:
        if shared_with_group is not None:
            from kiln.models import ProjectGroupLink

            shared = select(ProjectGroupLink.project_id).where(ProjectGroupLink.group_id == shared_with_group)
            stmt = stmt.where(or_(Project.namespace_id.in_(namespace_ids), Project.id.in_(shared)))
        else:
            stmt = stmt.where(Project.namespace_id.in_(namespace_ids))
    if owner_user_id is not None:
        stmt = stmt.where(
            Project.namespace_id.in_(select(Namespace.id).where(Namespace.owner_id == owner_user_id))
        )
    if starred_by is not None:
        stmt = stmt.where(
            Project.id.in_(select(ProjectStar.project_id).where(ProjectStar.user_id == starred_by))
        )
    if forked_from is not None:
        stmt = stmt.where(Project.forked_from_id == forked_from)
    if q.archived is not None:
        stmt = stmt.where(Project.archived == q.archived)
    if q.active is not None:
        stmt = stmt.where(
            and_(Project.archived.is_(False), Project.marked_for_deletion_on.is_(None))
            if q.active
            else or_(Project.archived.is_(True), Project.marked_for_deletion_on.is_not(None))
        )
    if q.visibility is not None:
        stmt = stmt.where(Project.visibility == q.visibility)
    if q.search:
        term = contains(q.search)
        matches = [
            func.lower(Project.name).like(term, escape=ESCAPE),
            func.lower(Project.path).like(term, escape=ESCAPE),
            func.lower(Project.description).like(term, escape=ESCAPE),
        ]
        if q.search_namespaces:
            full = select(Namespace.id).where(func.lower(Namespace.full_path).like(term, escape=ESCAPE))
            matches.append(Project.namespace_id.in_(full))
            if "/" in q.search:
                ns_part, _, name_part = q.search.lower().rpartition("/")
                nested = select(Namespace.id).where(
                    func.lower(Namespace.full_path).like(f"%{escape_like(ns_part)}", escape=ESCAPE)
                )
                matches.append(
                    and_(
                        Project.namespace_id.in_(nested),
                        func.lower(Project.path).like(f"{escape_like(name_part)}%", escape=ESCAPE),
                    )
                )
        stmt = stmt.where(or_(*matches))
    if q.owned:
        stmt = stmt.where(_reached(user_id, OWNER))
    if q.membership:
        stmt = stmt.where(_reached(user_id, None))
    if q.min_access_level is not None:
        stmt = stmt.where(_reached(user_id, q.min_access_level))
    if q.starred:
        stmt = stmt.where(
            Project.id.in_(select(ProjectStar.project_id).where(ProjectStar.user_id == user_id))
            if user_id is not None
            else false()
        )
    if q.with_issues_enabled:
        stmt = stmt.where(Project.issues_access_level != DISABLED)
    if q.with_merge_requests_enabled:
        stmt = stmt.where(Project.merge_requests_access_level != DISABLED)
    if q.with_programming_language:
        stmt = stmt.where(func.lower(Project.primary_language) == q.with_programming_language.lower())
    if q.wiki_checksum_failed or q.repository_checksum_failed:
        # Checksums are verified on write and never fail afterwards: nothing to list.
        stmt = stmt.where(false())
    if q.imported:
        stmt = stmt.where(Project.import_url.is_not(None))
    if q.id_after is not None:
        stmt = stmt.where(Project.id > q.id_after)
    if q.id_before is not None:
        stmt = stmt.where(Project.id < q.id_before)
    if q.last_activity_after is not None:
        stmt = stmt.where(Project.last_activity_at > q.last_activity_after)
    if q.last_activity_before is not None:
        stmt = stmt.where(Project.last_activity_at < q.last_activity_before)
    if q.updated_after is not None:
        stmt = stmt.where(Project.updated_at > q.updated_after)
    if q.updated_before is not None:
        stmt = stmt.where(Project.updated_at < q.updated_before)
    if q.marked_for_deletion_on is not None:
        stmt = stmt.where(Project.marked_for_deletion_on == q.marked_for_deletion_on)
    if q.repository_storage:
        stmt = stmt.where(Project.repository_storage == q.repository_storage)
    for name in q.topic or []:
        stmt = stmt.where(
            exists(
                select(ProjectTopic.id).where(
                    ProjectTopic.project_id == Project.id, func.lower(ProjectTopic.name) == name.lower()
                )
            )
        )
    if actor is not None and actor.is_admin:
        for key, value in (q.custom_attributes or {}).items():
            stmt = stmt.where(
                exists(
                    select(ProjectCustomAttribute.id).where(
                        ProjectCustomAttribute.project_id == Project.id,
                        ProjectCustomAttribute.key == key,
                        ProjectCustomAttribute.value == value,
                    )
                )
            )
    return _ordered(stmt, q)


def _reached(
    user_id: int | None, min_level: int | None, *, personal_only: bool = False
) -> ColumnElement[bool]:
    """Projects a membership reaches (at `min_level` or more); owned = in the user's namespace
    or owned through a group, as GitLab's `owned` filter."""
    if user_id is None:
        return false()
    if personal_only:
        own_ns = select(Namespace.id).where(Namespace.owner_id == user_id)
        return Project.namespace_id.in_(own_ns)
    levels = access.project_levels(user_id)
    ids = select(levels.c.project_id)
    if min_level is not None:
        ids = ids.where(levels.c.level >= min_level)
    return Project.id.in_(ids)


def _ordered(stmt: Select[Any], q: ProjectList) -> Select[Any]:
    order = q.order_by if q.order_by not in ("similarity", "storage_size") else "id"
    column = getattr(Project, order)
    asc = (q.sort or "desc").lower() == "asc"
    primary = column.asc() if asc else column.desc()
    if column is Project.id:
        return stmt.order_by(primary)
    return stmt.order_by(primary, Project.id.asc() if asc else Project.id.desc())


def topics_of(db: Session, project_ids: list[int]) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {pid: [] for pid in project_ids}
    if project_ids:
        rows = db.execute(
            select(ProjectTopic.project_id, ProjectTopic.name)
            .where(ProjectTopic.project_id.in_(project_ids))
            .order_by(ProjectTopic.project_id, ProjectTopic.position, ProjectTopic.id)
        )
        for pid, name in rows:
            out[pid].append(name)
    return out


def custom_attributes_of(db: Session, project_ids: list[int]) -> dict[int, list[tuple[str, str]]]:
    out: dict[int, list[tuple[str, str]]] = {pid: [] for pid in project_ids}
    if project_ids:
        rows = db.execute(
            select(
                ProjectCustomAttribute.project_id, ProjectCustomAttribute.key, ProjectCustomAttribute.value
            )
            .where(ProjectCustomAttribute.project_id.in_(project_ids))
            .order_by(ProjectCustomAttribute.key)
        )
        for pid, key, value in rows:
            out[pid].append((key, value))
    return out
