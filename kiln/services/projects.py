"""Project views and lists: the records a project's views render, and every list of projects.

What changes projects lives beside this module, one concern each: project_creation,
project_settings, project_lifecycle (archive, delete, restore), project_forks, project_stars,
project_shares, uploads and languages."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from kiln import policy
from kiln.auth.actor import Actor
from kiln.errors import NotFound
from kiln.models import (
    Member,
    Namespace,
    Project,
    ProjectGroupLink,
    ProjectStatistics,
    User,
)
from kiln.models.namespaces import KIND_GROUP, MAINTAINER
from kiln.models.projects import DISABLED, ENABLED
from kiln.pagination import Page, PageResult
from kiln.policy import Action, ProjectSubject
from kiln.queries import access
from kiln.queries import projects as finder
from kiln.queries.paging import keyset_page, offset_page
from kiln.records import ProjectRecord
from kiln.schemas.projects import ProjectList
from kiln.services import subjects


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
