"""Project views and lists: the records a project's views render, and every list of projects.

What changes projects lives beside this module, one concern each: project_creation,
project_settings, project_lifecycle (archive, delete, restore), project_forks, project_stars,
project_shares, uploads and languages."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from kiln import policy
from kiln.auth import server_secret
from kiln.auth.actor import Actor
from kiln.auth.tokens import runners_token
from kiln.config import Settings
from kiln.errors import NotFound
from kiln.kept import Kept, text_size
from kiln.models import Project
from kiln.pagination import Page, PageResult
from kiln.policy import Action, ProjectSubject
from kiln.queries import custom_attributes as attributes
from kiln.queries import groups as group_finder
from kiln.queries import projects as finder
from kiln.queries.paging import keyset_page, offset_page
from kiln.queries.shapes import bounds_params
from kiln.records import ProjectRecord
from kiln.schemas.groups import ProjectGroupList
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
    projects: list[Any],
    *,
    settings: Settings | None,
    statistics: bool = False,
    custom_attributes: bool = False,
) -> list[ProjectRecord]:
    """Records for `projects` (anything with an `id`: rows of a page, or a project just
    written) and their visible fork parents: one view statement for the page, one for parents
    not on it, one for shared groups when any project has them. Only with `settings` (the
    server secret's) do the records of projects the caller may administer carry their runner
    registration token: whatever renders a full project view passes them; None says on
    purpose that no view of these records shows it."""
    if not projects:
        return []
    ids = [p.id for p in projects]
    user_id = actor.id if actor is not None else None
    views = finder.view_rows(db, user_id, ids, statistics=statistics)
    return _build(
        db, actor, views, ids, settings=settings, statistics=statistics, custom_attributes=custom_attributes
    )


def get(
    db: Session,
    actor: Actor | None,
    ident: str,
    *,
    settings: Settings | None,
    statistics: bool = False,
    custom_attributes: bool = False,
) -> ProjectRecord:
    """GET /projects/:id: the view statement finds the project by id or path, with everything
    the policy needs to answer 404 first. `settings`: as for `records`."""
    view = finder.view_by_ident(db, actor.id if actor is not None else None, ident, statistics=statistics)
    if view is None:
        raise NotFound("Project")
    subject = ProjectSubject(project=view.project, namespace=view.namespace, level=view.level)
    policy.authorize(actor, Action.READ_PROJECT, subject, "Project")
    ids = [view.project.id]
    return _build(
        db,
        actor,
        {ids[0]: view},
        ids,
        settings=settings,
        statistics=statistics,
        custom_attributes=custom_attributes,
    )[0]


def _build(
    db: Session,
    actor: Actor | None,
    views: dict[int, finder.ViewRow],
    ids: list[int],
    *,
    settings: Settings | None,
    statistics: bool,
    custom_attributes: bool,
) -> list[ProjectRecord]:
    user_id = actor.id if actor is not None else None
    key: bytes | None = None

    def shown(row: finder.ProjectRow) -> finder.ProjectRow:
        """A row the caller may administer, with its token if `settings` were given: the key
        is read once, and only for such a caller."""
        nonlocal key
        if settings is None:
            return row
        if key is None:
            key = server_secret.key(settings)
        return with_runners_token(row, key)

    parent_ids = {v.project.forked_from_id for v in views.values()} - {None} - set(views)
    parents = finder.view_rows(db, user_id, sorted(parent_ids)) if parent_ids else {}
    shared_ids = [pid for pid, v in (views | parents).items() if v.shared]
    shared = finder.shared_groups_of(db, shared_ids) if shared_ids else {}
    attrs = (
        attributes.of_owners(db, "projects", ids) if custom_attributes and policy.is_admin(actor) else None
    )

    def build(v: finder.ViewRow, parent: ProjectRecord | None) -> ProjectRecord:
        s = ProjectSubject(project=v.project, namespace=v.namespace, level=v.level)
        can_admin = policy.may(actor, Action.READ_PROJECT_SETTINGS, s)
        return ProjectRecord(
            project=shown(v.project) if can_admin else v.project,
            namespace=v.namespace,
            owner=v.owner,
            topics=v.topics,
            level=v.level,
            project_access=v.project_access,
            group_access=v.group_access,
            forked_from=parent,
            statistics=(v.statistics or finder.ZERO_STATISTICS) if statistics else None,
            shared_with_groups=shared.get(v.project.id, []),
            custom_attributes=attrs.get(v.project.id, []) if attrs is not None else None,
            can_read_code=policy.may(actor, Action.READ_CODE, s),
            can_admin=can_admin,
            can_create_merge_request_in=policy.may(actor, Action.CREATE_MERGE_REQUEST_IN, s),
            features_open=policy.open_features(actor, s),
        )

    def parent_of(v: finder.ViewRow) -> ProjectRecord | None:
        # A parent on the same page is checked too: the page's ids were read before its views,
        # and the parent may have closed in between.
        parent_id = v.project.forked_from_id
        if parent_id is None:
            return None
        found = views.get(parent_id)
        if found is None:
            found = parents.get(parent_id)
        if found is None:
            return None
        subject = ProjectSubject(project=found.project, namespace=found.namespace, level=found.level)
        return build(found, None) if policy.may(actor, Action.READ_PROJECT, subject) else None

    return [build(views[pid], parent_of(views[pid])) for pid in ids if pid in views]


def record(db: Session, actor: Actor | None, project: Any, **kw: Any) -> ProjectRecord:
    return records(db, actor, [project], **kw)[0]


def with_runners_token(row: finder.ProjectRow, key: bytes) -> finder.ProjectRow:
    """The row with its registration token, derived from its nonce under the server key: no
    statement, so a page of projects costs what it did."""
    return row._replace(runners_token=runners_token(key, row.runners_token_nonce))


# ---------------------------------------------------------------------------- lists


def list_projects(
    db: Session, actor: Actor | None, q: ProjectList, page: Page, settings: Settings, **scope: Any
) -> ProjectListing:
    """`scope`: which projects the list is of (finder.listing's arguments). Lists show the
    full view, so `settings` (see `records`) are needed."""
    listing = finder.listing(actor, q, **scope)
    params = {**finder.viewer_params(actor), **bounds_params(q), **finder.scope_params(**scope)}
    if page.keyset:
        result = keyset_page(
            db, listing.ids, page, Project.id, q.id_after, q.id_before, core=True, params=params
        )
    else:
        result = offset_page(db, listing.ids, page, core=True, params=params, count=listing.count)
    if q.statistics or q.with_custom_attributes:
        recs = records(
            db,
            actor,
            result.items,
            settings=settings,
            statistics=q.statistics,
            custom_attributes=q.with_custom_attributes,
        )
    else:
        recs = _kept_records(db, actor, [p.id for p in result.items], settings)
    return ProjectListing(page=result, records=recs)


# Project records as lists read them, kept across requests by what they were read from.
def _record_size(rec: ProjectRecord) -> int:
    parent = rec.forked_from
    own = text_size(rec.project, rec.namespace, rec.owner, rec.topics, rec.shared_with_groups)
    return own if parent is None else own + _record_size(parent)


KEPT: Kept[ProjectRecord] = Kept(limit=1024, budget=8 << 20, size=_record_size)


def _kept_records(
    db: Session, actor: Actor | None, ids: list[int], settings: Settings
) -> list[ProjectRecord]:
    """The records of a page: the versions of its rows first (one narrow statement, and one
    for the parents of its forks), then the view statement only for projects whose records
    are not kept under those versions. A record is kept under the versions and levels it was
    read with (its own rows', not the narrow statement's: a write between the two statements
    leaves it under versions no read will give again, and a level that changed back cannot
    find it) and the caller's kind, which is all it is made of: so an equal key is an equal
    record. The versions of the groups a project is shared with come from the narrow
    statement, read before the view: newer names under older versions are never asked for. A
    fork is kept with its parent's key; one whose parent the caller may not see is read whole
    every time (nothing read with it tells that parent's level). A record may hold its
    project's registration token: whether it does is the caller's kind and level (in the
    key), and the token is its nonce (under the row's version) under the process's server
    key, so a record kept for one caller shows it to no one who may not administer."""
    user_id = actor.id if actor is not None else None
    kind = policy.viewer_kind(actor)
    versions = finder.view_versions(db, user_id, ids)
    parent_ids = sorted({v.forked_from_id for v in versions.values()} - {None})
    parents = finder.view_versions(db, user_id, parent_ids) if parent_ids else {}

    def wanted(v: finder.VersionRow) -> tuple[Any, ...] | None:
        if v.forked_from_id is None:
            return (kind, *_narrow_key(v), None)
        parent = parents.get(v.forked_from_id)
        return None if parent is None else (kind, *_narrow_key(v), _narrow_key(parent))

    def read(missing: list[int]) -> Iterable[tuple[int, ProjectRecord, tuple[Any, ...] | None]]:
        for rec in records(db, actor, [_Id(pid) for pid in missing], settings=settings):
            rec.version = kept_key(rec)
            yield rec.project.id, rec, rec.version

    def kept_key(rec: ProjectRecord) -> tuple[Any, ...] | None:
        subject = ProjectSubject(project=rec.project, namespace=rec.namespace, level=rec.level)
        if not policy.may(actor, Action.READ_PROJECT, subject):
            return None  # closed since the page's ids were read: kept for no one
        parent_key = None
        if rec.project.forked_from_id is not None:
            parent = parents.get(rec.project.forked_from_id)
            if rec.forked_from is None or parent is None:
                return None
            parent_key = _record_key(rec.forked_from, parent.shares)
        return (kind, *_record_key(rec, versions[rec.project.id].shares), parent_key)

    found = KEPT.many({pid: wanted(v) for pid, v in versions.items()}, read)
    return [found[pid] for pid in ids if pid in found]


def _narrow_key(v: finder.VersionRow) -> tuple[Any, ...]:
    """A project's part of a key, as the narrow statement read it (_record_key's shape)."""
    return (v.id, v.versions, v.shares, v.level, v.project_access, v.group_access)


def _record_key(rec: ProjectRecord, shares: str | None) -> tuple[Any, ...]:
    """A record's part of its key, from what it was itself read with (_kept_records)."""
    return (rec.project.id, _versions(rec), shares, rec.level, rec.project_access, rec.group_access)


@dataclass(frozen=True, slots=True)
class _Id:
    id: int


def _versions(rec: ProjectRecord) -> tuple[int, int, int | None]:
    owner = rec.owner.row_version if rec.owner is not None else None
    return (rec.project.row_version, rec.namespace.row_version, owner)


def list_user_projects(
    db: Session, actor: Actor | None, user_ident: str, q: ProjectList, page: Page, settings: Settings
) -> ProjectListing:
    from kiln.queries.users import by_id_or_username

    user = by_id_or_username(db, user_ident)
    if user is None:
        raise NotFound("User")
    return list_projects(db, actor, q, page, settings, owner_user_id=user.id)


def list_starred_by(
    db: Session, actor: Actor | None, user_ident: str, q: ProjectList, page: Page, settings: Settings
) -> ProjectListing:
    from kiln.queries.users import by_id_or_username

    user = by_id_or_username(db, user_ident)
    if user is None:
        raise NotFound("User")
    if user.private_profile and not (actor is not None and (actor.user.id == user.id or actor.is_admin)):
        raise NotFound("User")
    return list_projects(db, actor, q, page, settings, starred_by=user.id)


def list_forks(
    db: Session, actor: Actor | None, ident: str, q: ProjectList, page: Page, settings: Settings
) -> ProjectListing:
    s = subjects.project(db, actor, ident)
    return list_projects(db, actor, q, page, settings, forked_from=s.project.id)


def groups_of(db: Session, actor: Actor | None, ident: str, q: ProjectGroupList, page: Page) -> PageResult:
    """GET /projects/:id/groups: rows of the project's ancestor groups (and shared groups),
    for whoever may read the project; one statement for the subject, one for the page (and
    one counting, past the first page)."""
    s = subjects.project(db, actor, ident, rows=True)
    ns = s.namespace
    stmt, params = group_finder.project_groups(
        actor,
        ancestor_ids=list(ns.ancestor_ids) if ns.is_group else [],
        project_id=s.project.id,
        with_shared=q.with_shared,
        shared_min_access_level=q.shared_min_access_level,
        shared_visible_only=q.shared_visible_only,
        skip_groups=q.skip_groups,
        search=q.search,
    )
    result = offset_page(db, stmt, page, core=True, params=params)
    result.items = [finder.NamespaceRow._make(row) for row in result.items]
    return result
