"""Groups and subgroups: listing, creation, settings, renames and moves, and deletion of a
group with everything below it.

Lookups go through `subjects.group`, which answers 404 for a group the actor may not see
and 403 for an action the policy refuses on a group they can see."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Select, delete, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from kiln import jobs, policy, storage
from kiln.auth.actor import Actor
from kiln.config import Settings
from kiln.db import fresh, transaction
from kiln.errors import BadRequest, NotFound, ValidationFailed
from kiln.models import (
    GroupCustomAttribute,
    Member,
    Namespace,
    Project,
    ProjectGroupLink,
    Upload,
)
from kiln.models.namespaces import KIND_GROUP, OWNER, VISIBILITY_LEVEL
from kiln.pagination import Page, PageResult
from kiln.policy import Action, GroupSubject
from kiln.queries import access
from kiln.queries import custom_attributes as attributes
from kiln.queries import groups as finder
from kiln.queries.groups import GroupRecord
from kiln.queries.paging import offset_page
from kiln.queries.projects import GroupScope
from kiln.schemas._types import Upload as FilePart
from kiln.schemas.groups import GroupCreate, GroupList, GroupProjects, GroupSettings, GroupUpdate
from kiln.schemas.projects import ProjectList
from kiln.services import avatars, instance_settings, project_lifecycle, project_transfers, subjects
from kiln.services import namespaces as ns_service
from kiln.services import projects as project_service
from kiln.services.projects import ProjectListing

REMOVE_FILES = "groups.remove_files"
DESTROY_ADJOURNED = "groups.destroy_adjourned"
# GroupDetail shows at most this many projects (GitLab's GroupProjectsFinder limit).
DETAIL_PROJECTS_LIMIT = 100
# The instance's default_project_creation setting and the level name it stands for.
_PROJECT_CREATION = {0: "noone", 1: "maintainer", 2: "developer", 3: "administrator", 4: "owner"}


@dataclass(slots=True)
class GroupListing:
    page: PageResult
    records: list[GroupRecord]


# ---------------------------------------------------------------------------- records


def _build(view: finder.GroupViewRow, attrs: dict[int, list[tuple[str, str]]] | None) -> GroupRecord:
    g = view.group
    protection = g.default_branch_protection
    if protection is None:
        protection = int(instance_settings.InstanceSettings(view.settings)["default_branch_protection"])
    return GroupRecord(
        group=g,
        default_branch_protection=protection,
        statistics=view.statistics,
        custom_attributes=attrs.get(g.id, []) if attrs is not None else None,
    )


def records(
    db: Session,
    actor: Actor | None,
    ids: list[int],
    *,
    statistics: bool = False,
    custom_attributes: bool = False,
) -> list[GroupRecord]:
    """Records of the groups `ids`, in that order: one view statement for the page (with the
    sizes when asked), one for custom attributes; both extras for administrators only."""
    if not ids:
        return []
    admin = policy.is_admin(actor)
    views = finder.view_rows(db, ids, statistics=statistics and admin)
    attrs = attributes.of_owners(db, "groups", ids) if custom_attributes and admin else None
    return [_build(views[gid], attrs) for gid in ids if gid in views]


def _with_projects(db: Session, actor: Actor | None, rec: GroupRecord, settings: Settings) -> GroupRecord:
    """GroupDetail's projects: the group's own and those shared with it (full views: see
    services.projects.records for what `settings` are for)."""
    page = Page(page=1, per_page=DETAIL_PROJECTS_LIMIT)
    q = ProjectList()
    gid = rec.group.id
    own = project_service.list_projects(db, actor, q, page, settings, namespace_ids=[gid])
    shared = project_service.list_projects(
        db, actor, q, page, settings, namespace_ids=[], shared_with_group=gid
    )
    rec.projects, rec.shared_projects = own.records, shared.records
    return rec


def _detail(db: Session, actor: Actor | None, group_id: int, settings: Settings) -> GroupRecord:
    """A group just written, read again as GroupDetail shows it."""
    return _with_projects(db, actor, records(db, actor, [group_id])[0], settings)


# ---------------------------------------------------------------------------- reads


def list_groups(db: Session, actor: Actor | None, q: GroupList, page: Page) -> GroupListing:
    return _listing(db, actor, q, page, finder.listing(actor, q), finder.listing_params(actor))


def list_subgroups(
    db: Session, actor: Actor | None, ident: str, q: GroupList, page: Page, *, descendants: bool = False
) -> GroupListing:
    parent = subjects.group(db, actor, ident, rows=True).group
    stmt = finder.listing(actor, q, parent=True, descendants=descendants)
    return _listing(db, actor, q, page, stmt, finder.listing_params(actor, parent))


def _listing(
    db: Session, actor: Actor | None, q: GroupList, page: Page, stmt: Select[Any], params: dict[str, Any]
) -> GroupListing:
    result = offset_page(db, stmt, page, core=True, params=params)
    ids = [row.id for row in result.items]
    recs = records(db, actor, ids, statistics=q.statistics, custom_attributes=q.with_custom_attributes)
    return GroupListing(page=result, records=recs)


def get_group(
    db: Session,
    actor: Actor | None,
    ident: str,
    settings: Settings,
    *,
    with_projects: bool,
    custom_attributes: bool,
) -> GroupRecord:
    """GET /groups/:id: the view statement finds the group by id or path with the caller's
    standing, so the policy answers 404 before anything else is read."""
    view = finder.view_by_ident(db, actor.id if actor is not None else None, ident)
    if view is None or not view.group.is_group:
        raise NotFound("Group")
    subject = GroupSubject(group=view.group, level=view.level, related=view.related)
    policy.authorize(actor, Action.READ_GROUP, subject, "Group")
    admin = policy.is_admin(actor)
    attrs = attributes.of_owners(db, "groups", [view.group.id]) if custom_attributes and admin else None
    rec = _build(view, attrs)
    return _with_projects(db, actor, rec, settings) if with_projects else rec


def list_projects(
    db: Session, actor: Actor | None, ident: str, q: GroupProjects, page: Page, settings: Settings
) -> ProjectListing:
    group = subjects.group(db, actor, ident, rows=True).group
    scope = GroupScope(
        group_id=group.id,
        traversal=group.traversal,
        ancestor_ids=tuple(group.ancestor_ids),
        subgroups=q.include_subgroups,
        ancestors=q.include_ancestor_groups,
        shared=q.with_shared,
    )
    return project_service.list_projects(db, actor, q, page, settings, group=scope)


# ---------------------------------------------------------------------------- validation


def _ruby_inspect(errors: dict[str, list[str]]) -> str:
    """Ruby's Hash#inspect of model errors, as GitLab puts them in "Failed to save group …"."""
    parts = [
        f":{key}=>[{', '.join(json.dumps(m, ensure_ascii=False) for m in messages)}]"
        for key, messages in errors.items()
    ]
    return "{" + ", ".join(parts) + "}"


def _save_failed(errors: dict[str, list[str]]) -> BadRequest:
    """POST /groups reports model errors as one string, unlike the hash of PUT."""
    return BadRequest(f"Failed to save group {_ruby_inspect(errors)}", raw=True)


def _check_name_path(
    db: Session,
    parent: Namespace | None,
    name: str,
    path: str,
    errors: dict[str, list[str]],
    *,
    except_ns: int | None = None,
    check_name: bool = True,
    check_path: bool = True,
) -> None:
    if check_name:
        problem = ns_service.name_error(name)
        if problem:
            errors.setdefault("name", []).append(problem)
        elif parent is not None:
            # Sibling subgroups need distinct names; top-level groups may share one.
            same = select(Namespace.id).where(
                Namespace.parent_id == parent.id, func.lower(Namespace.name) == name.lower()
            )
            if except_ns is not None:
                same = same.where(Namespace.id != except_ns)
            if db.scalar(same.limit(1)) is not None:
                errors.setdefault("name", []).append("has already been taken")
    if check_path:
        problem = ns_service.path_error(path)
        if problem is None and parent is None and ns_service.reserved_top_level(path):
            problem = ns_service.reserved_message(path)
        if problem:
            errors.setdefault("path", []).append(problem)
        elif ns_service.path_taken(db, parent.id if parent else None, path, except_ns=except_ns):
            errors.setdefault("path", []).append("has already been taken")


def _check_visibility(
    db: Session,
    actor: Actor,
    group: Namespace | None,
    parent: Namespace | None,
    visibility: str,
    errors: dict[str, list[str]],
) -> None:
    messages = errors.setdefault("visibility_level", [])
    if parent is not None and policy.exceeds(visibility, parent.visibility):
        messages.append(
            f"{visibility} is not allowed since the parent group has a {parent.visibility} visibility."
        )
    if group is not None:
        lower = [v for v in VISIBILITY_LEVEL if policy.exceeds(v, visibility)]
        if lower and db.scalar(
            select(Project.id).where(Project.namespace_id == group.id, Project.visibility.in_(lower)).limit(1)
        ):
            messages.append(
                f"{visibility} is not allowed since this group contains projects with higher visibility."
            )
        if lower and db.scalar(
            select(Namespace.id)
            .where(Namespace.parent_id == group.id, Namespace.visibility.in_(lower))
            .limit(1)
        ):
            messages.append(f"{visibility} is not allowed since there are sub-groups with higher visibility.")
    restricted = instance_settings.current(db)["restricted_visibility_levels"]
    if not policy.may_use_visibility(actor, visibility, restricted):
        messages.append(f"{visibility.capitalize()} has been restricted by your GitLab administrator")
    if not messages:
        del errors["visibility_level"]


def _apply_settings(group: Namespace, p: GroupSettings) -> None:
    given = p.given()
    for name in (
        "description",
        "share_with_group_lock",
        "require_two_factor_authentication",
        "two_factor_grace_period",
        "project_creation_level",
        "subgroup_creation_level",
        "lfs_enabled",
        "request_access_enabled",
        "default_branch_protection",
    ):
        value = getattr(p, name)
        if name in given and value is not None:
            setattr(group, name, value)
    # Null has a meaning of its own here (follow the instance's choice): kept as given.
    for name in ("auto_devops_enabled", "mentions_disabled"):
        if name in given:
            setattr(group, name, getattr(p, name))
    if "default_branch" in given:
        group.default_branch = p.default_branch or None
    if "emails_disabled" in given and p.emails_disabled is not None:
        group.emails_enabled = not p.emails_disabled
    elif "emails_enabled" in given and p.emails_enabled is not None:
        group.emails_enabled = p.emails_enabled


# ---------------------------------------------------------------------------- writes


def create_group(db: Session, actor: Actor, p: GroupCreate, files: storage.Storage) -> GroupRecord:
    """A top-level group (Action.CREATE_GROUP) or a subgroup (CREATE_SUBGROUP on the parent);
    the creator becomes its Owner. An avatar is written once the group has its id, and
    removed again if the group is not made."""
    avatar = avatars.requested(p)
    made: list[avatars.Change] = []
    try:
        return _create_group(db, actor, p, files, avatar, made)
    except BaseException:
        for change in made:
            change.undo()
        raise


def _create_group(
    db: Session,
    actor: Actor,
    p: GroupCreate,
    files: storage.Storage,
    avatar: FilePart | str | None,
    made: list[avatars.Change],
) -> GroupRecord:
    parent: Namespace | None = None
    if p.parent_id is not None:
        parent = subjects.group(db, actor, str(p.parent_id), Action.CREATE_SUBGROUP).group
    else:
        policy.require(actor, Action.CREATE_GROUP)
    inst = instance_settings.current(db)
    with transaction(db):
        errors: dict[str, list[str]] = avatars.errors(avatar)
        _check_name_path(db, parent, p.name, p.path, errors)
        if parent is not None and len(parent.ancestor_ids) >= ns_service.MAX_DEPTH:
            errors.setdefault("parent_id", []).append("has too deep level of nesting")
        visibility: str
        if p.visibility is not None:
            visibility = p.visibility
        else:
            # Not asked for: the instance default, lowered to what the parent allows.
            visibility = inst["default_group_visibility"]
            if parent is not None:
                visibility = policy.capped(visibility, parent.visibility)
        _check_visibility(db, actor, None, parent, visibility, errors)
        if errors:
            raise _save_failed(errors)
        group = Namespace(
            kind=KIND_GROUP,
            name=p.name,
            path=p.path,
            parent_id=parent.id if parent is not None else None,
            visibility=visibility,
            creator_id=actor.user.id,
            project_creation_level=_PROJECT_CREATION.get(int(inst["default_project_creation"]), "developer"),
        )
        _apply_settings(group, p)
        db.add(group)
        try:
            with db.begin_nested():
                db.flush()
        except IntegrityError:
            raise _save_failed({"path": ["has already been taken"]}) from None
        ns_service.place(db, group, parent)
        db.add(
            Member(
                namespace_id=group.id,
                user_id=actor.user.id,
                access_level=OWNER,
                created_by_id=actor.user.id,
            )
        )
        if isinstance(avatar, FilePart):
            made.append(avatars.Change(files, "group", group.id, None))
            group.avatar_path = made[0].apply(avatar)
        db.flush()
    return records(db, actor, [group.id])[0]


def update_group(db: Session, actor: Actor, ident: str, p: GroupUpdate, settings: Settings) -> GroupRecord:
    subject = subjects.group(db, actor, ident, Action.UPDATE_GROUP)
    group = subject.group
    avatar = avatars.requested(p)
    change = avatars.Change(storage.uploads(settings), "group", group.id, group.avatar_path)
    try:
        _update_group(db, actor, group, p, avatar, change)
    except BaseException:
        change.undo()
        raise
    change.finish()
    return _detail(db, actor, group.id, settings)


def _update_group(
    db: Session,
    actor: Actor,
    group: Namespace,
    p: GroupUpdate,
    avatar: FilePart | str | None,
    change: avatars.Change,
) -> None:
    given = p.given()
    parent = db.get(Namespace, group.parent_id) if group.parent_id is not None else None
    with transaction(db):
        errors: dict[str, list[str]] = avatars.errors(avatar)
        name = p.name if "name" in given and p.name is not None else group.name
        path = p.path if "path" in given and p.path is not None else group.path
        _check_name_path(
            db,
            parent,
            name,
            path,
            errors,
            except_ns=group.id,
            check_name=name != group.name,
            check_path=path != group.path,
        )
        if "visibility" in given and p.visibility is not None and p.visibility != group.visibility:
            _check_visibility(db, actor, group, parent, p.visibility, errors)
        if errors:
            raise ValidationFailed(errors)
        old = (group.full_path, group.full_name, group.traversal)
        renamed = name != group.name or path != group.path
        group.name, group.path = name, path
        if "visibility" in given and p.visibility is not None:
            group.visibility = p.visibility
        _apply_settings(group, p)
        if renamed:
            ns_service.place(db, group, parent)
            _moved(db, group, *old)
        if avatar is not None:
            group.avatar_path = change.apply(avatar)
        group.updated_at = datetime.now(UTC)
        try:
            with db.begin_nested():
                db.flush()
        except IntegrityError:
            raise ValidationFailed({"path": ["has already been taken"]}) from None


def _moved(db: Session, group: Namespace, old_full_path: str, old_full_name: str, old_traversal: str) -> None:
    """Descendants follow a renamed or moved group (projects' paths derive from theirs)."""
    ns_service.refresh_descendants(db, group, old_full_path, old_full_name, old_traversal)
    db.flush()


def transfer_group(
    db: Session, actor: Actor, ident: str, group_id: int | None, settings: Settings
) -> GroupRecord:
    """Under another group, or to the top level without one; descendants and projects move
    along and become no more visible than their new parent."""
    subject = subjects.group(db, actor, ident, Action.UPDATE_GROUP)
    group = subject.group
    new_parent: Namespace | None = None
    parent_subject: GroupSubject | None = None
    if group_id is not None:
        parent_subject = subjects.group(db, actor, str(group_id))
        new_parent = parent_subject.group

    def fail(reason: str) -> BadRequest:
        return BadRequest(f"Transfer failed: {reason}", raw=True)

    with transaction(db):
        if new_parent is None and group.parent_id is None:
            raise fail("Group is already a root group.")
        if new_parent is not None and new_parent.id == group.parent_id:
            raise fail("Group is already associated to the parent group.")
        allowed = (
            policy.may(actor, Action.CREATE_SUBGROUP, parent_subject)
            if parent_subject is not None
            else policy.may(actor, Action.CREATE_GROUP)
        )
        if not allowed:
            raise fail("You don't have enough permissions.")
        if new_parent is not None and new_parent.traversal.startswith(group.traversal):
            raise fail("Cannot transfer group to one of its subgroup.")
        if ns_service.path_taken(db, new_parent.id if new_parent else None, group.path, except_ns=group.id):
            raise fail("The parent group already has a subgroup or a project with the same path.")
        depth = len(new_parent.ancestor_ids) if new_parent is not None else 0
        if depth + _height(db, group) > ns_service.MAX_DEPTH:
            raise fail("Parent has too deep level of nesting")
        old = (group.full_path, group.full_name, group.traversal)
        group.parent_id = new_parent.id if new_parent is not None else None
        ns_service.place(db, group, new_parent)
        _moved(db, group, *old)
        if new_parent is not None:
            _cap_visibility(db, group, new_parent.visibility)
        group.updated_at = datetime.now(UTC)
        db.flush()
    db.refresh(group)
    return _detail(db, actor, group.id, settings)


def _height(db: Session, group: Namespace) -> int:
    """Levels from the group down to its deepest descendant, the group itself counted."""
    levels = func.length(Namespace.traversal) - func.length(func.replace(Namespace.traversal, "/", ""))
    deepest = db.scalar(select(func.max(levels)).where(access.within(Namespace, group)))
    return int(deepest or 0) - len(group.ancestor_ids) + 1


def _cap_visibility(db: Session, group: Namespace, ceiling: str) -> None:
    allowed = [v for v in VISIBILITY_LEVEL if not policy.exceeds(v, ceiling)]
    below = ns_service.descendant_ids(group)
    db.execute(
        update(Namespace)
        .where(Namespace.id.in_(below), Namespace.visibility.not_in(allowed))
        .values(visibility=ceiling)
        .execution_options(synchronize_session="fetch")
    )
    db.execute(
        update(Project)
        .where(Project.namespace_id.in_(below), Project.visibility.not_in(allowed))
        .values(visibility=ceiling)
        .execution_options(synchronize_session="fetch")
    )


def delete_group(
    db: Session, actor: Actor, ident: str, *, permanently: bool = False, full_path: str | None = None
) -> None:
    """Removed at once with everything below it, or marked for deletion when the instance
    adjourns deletions (then removed by a queued job when the period is over)."""
    group = subjects.group(db, actor, ident, Action.UPDATE_GROUP).group
    period = int(instance_settings.current(db)["deletion_adjourned_period"])
    with transaction(db):
        # Read again in the write: another DELETE may have marked or removed it since.
        fresh(db, group, NotFound("Group"))
        if permanently:
            if group.parent_id is None:
                raise BadRequest("`permanently_remove` option is only available for subgroups.", raw=True)
            if group.marked_for_deletion_on is None:
                raise BadRequest("Group must be marked for deletion first.", raw=True)
            if full_path != group.full_path:
                raise BadRequest(
                    "`full_path` is incorrect. You must enter the complete path for the subgroup.", raw=True
                )
            destroy(db, group)
            return
        if period > 0:
            if _ancestor_marked(db, group):
                return
            if group.marked_for_deletion_on is not None:
                raise BadRequest("Group has been already marked for deletion", raw=True)
            today = datetime.now(UTC).date()
            group.marked_for_deletion_on = today
            jobs.enqueue(
                db,
                DESTROY_ADJOURNED,
                {"group_id": group.id, "marked_on": today.isoformat()},
                run_at=datetime.now(UTC) + timedelta(days=period),
            )
            return
        destroy(db, group)


def _ancestor_marked(db: Session, group: Namespace) -> bool:
    ancestors = [i for i in group.ancestor_ids if i != group.id]
    if not ancestors:
        return False
    return (
        db.scalar(
            select(Namespace.id)
            .where(Namespace.id.in_(ancestors), Namespace.marked_for_deletion_on.is_not(None))
            .limit(1)
        )
        is not None
    )


def restore_group(db: Session, actor: Actor, ident: str, settings: Settings) -> GroupRecord:
    subject = subjects.group(db, actor, ident, Action.UPDATE_GROUP)
    group = subject.group
    with transaction(db):
        if group.marked_for_deletion_on is None:
            raise BadRequest("Group has not been marked for deletion", raw=True)
        group.marked_for_deletion_on = None
        db.flush()
    return _detail(db, actor, group.id, settings)


def destroy(db: Session, group: Namespace) -> None:
    """Remove the group, its subgroups and all their projects in the caller's transaction;
    repositories and uploaded files go by queued jobs, which run only if this commits."""
    ids = list(db.scalars(ns_service.descendant_ids(group)))
    project_lifecycle.destroy(db, project_lifecycle.ids_in_namespaces(db, [group.id]))
    uploads = list(db.scalars(select(Upload.storage_key).where(Upload.namespace_id.in_(ids))))
    db.execute(delete(Upload).where(Upload.namespace_id.in_(ids)))
    db.execute(delete(ProjectGroupLink).where(ProjectGroupLink.group_id.in_(ids)))
    db.execute(delete(Member).where(Member.namespace_id.in_(ids)))
    db.execute(delete(GroupCustomAttribute).where(GroupCustomAttribute.namespace_id.in_(ids)))
    # Deepest first, so no row ever points at a parent that is already gone.
    for gid in db.scalars(
        select(Namespace.id).where(Namespace.id.in_(ids)).order_by(func.length(Namespace.traversal).desc())
    ).all():
        db.execute(delete(Namespace).where(Namespace.id == gid))
    jobs.enqueue(db, REMOVE_FILES, {"namespace_ids": ids, "uploads": uploads})
    db.expunge(group)


@jobs.handler(REMOVE_FILES)
def _remove_files(ctx: jobs.JobContext, payload: dict[str, Any]) -> None:
    """Idempotent: removing what is already gone is no error."""
    files = storage.uploads(ctx.settings)
    for key in payload.get("uploads", []):
        files.delete(key)
    for gid in payload.get("namespace_ids", []):
        files.delete_prefix(f"group/{int(gid)}")
        files.delete_prefix(storage.avatar_key("group", int(gid)))


@jobs.handler(DESTROY_ADJOURNED)
def _destroy_adjourned(ctx: jobs.JobContext, payload: dict[str, Any]) -> None:
    """Runs when the waiting period is over; a group restored (or marked again later) in the
    meantime is left alone."""
    group = ctx.db.get(Namespace, int(payload["group_id"]))
    if group is None or group.kind != KIND_GROUP or group.marked_for_deletion_on is None:
        return
    if group.marked_for_deletion_on.isoformat() != payload.get("marked_on"):
        return
    destroy(ctx.db, group)


def transfer_project_to_group(
    db: Session, actor: Actor, ident: str, project_ident: str, settings: Settings
) -> GroupRecord:
    """POST /groups/:id/projects/:project_id (administrators): the project moves into the
    group as PUT /projects/:id/transfer moves it; the answer is the group."""
    policy.require(actor, Action.ADMIN_PROJECTS)
    group = subjects.group(db, actor, ident).group
    project = subjects.project(db, actor, project_ident).project
    project_transfers.move(db, actor, project, group)
    return _detail(db, actor, group.id, settings)
