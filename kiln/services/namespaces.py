"""What user namespaces, groups and projects share: path rules, lookup by id or full path,
and keeping full paths and traversal chains in step when a namespace moves or is renamed."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from typing import Any

from sqlalchemy import Select, func, or_, select, union
from sqlalchemy.orm import Session, aliased

from kiln import policy
from kiln.auth.actor import Actor
from kiln.errors import NotFound
from kiln.models import Member, Namespace, Project, ProjectStatistics, User
from kiln.models.namespaces import OWNER
from kiln.pagination import Page, PageResult
from kiln.policy import Action, GroupSubject
from kiln.queries import access
from kiln.queries.namespaces import NamespaceRecord
from kiln.queries.paging import offset_page
from kiln.queries.text import ESCAPE, contains
from kiln.queries.users import username_taken
from kiln.schemas.groups import NamespaceList
from kiln.services import subjects

# GitLab's namespace/project path rule.
_PATH = re.compile(r"^[A-Za-z0-9_.][A-Za-z0-9_\-.]*[A-Za-z0-9_\-]$|^[A-Za-z0-9_]$")
PATH_MESSAGE = "can contain only letters, digits, '_', '-' and '.'. Cannot start with '-', end in '.git' or end in '.atom'"
_NAME = re.compile(r"^[\w\u00b8-\U0010ffff.+\- ()]*$")
NAME_MESSAGE = (
    "can contain only letters, digits, emoji, '_', '.', '+', dashes, or spaces. "
    "It must start with a letter, digit, emoji, or '_'."
)
MAX_DEPTH = 20


def path_error(path: str) -> str | None:
    if not path:
        return "can't be blank"
    if len(path) > 255:
        return "is too long (maximum is 255 characters)"
    lowered = path.lower()
    if not _PATH.match(path) or lowered.endswith(".git") or lowered.endswith(".atom") or path.startswith("-"):
        return PATH_MESSAGE
    return None


def name_error(name: str) -> str | None:
    if not name.strip():
        return "can't be blank"
    if len(name) > 255:
        return "is too long (maximum is 255 characters)"
    if not _NAME.match(name) or not (name[0].isalnum() or name[0] == "_" or ord(name[0]) > 0xB7):
        return NAME_MESSAGE
    return None


def path_from_name(name: str) -> str:
    """GitLab's parameterize: lower-case, runs of other characters become one dash."""
    slug = re.sub(r"[^A-Za-z0-9_.]+", "-", name.strip()).strip("-.").lower()
    return slug or "project"


def path_taken(db: Session, parent_id: int | None, path: str, *, except_ns: int | None = None) -> bool:
    """A path is taken in a parent by a namespace, or (inside a group) by a project."""
    lowered = path.lower()
    q = select(Namespace.id).where(
        func.coalesce(Namespace.parent_id, 0) == (parent_id or 0), func.lower(Namespace.path) == lowered
    )
    if except_ns is not None:
        q = q.where(Namespace.id != except_ns)
    if db.scalar(q.limit(1)) is not None:
        return True
    if parent_id is None:
        return except_ns is None and username_taken(db, path)
    return (
        db.scalar(
            select(Project.id)
            .where(Project.namespace_id == parent_id, func.lower(Project.path) == lowered)
            .limit(1)
        )
        is not None
    )


def place(db: Session, ns: Namespace, parent: Namespace | None) -> None:
    """Set the derived columns of `ns` (after flush, so it has an id) under `parent`."""
    if parent is None:
        ns.full_path, ns.full_name, ns.traversal = ns.path, ns.name, f"{ns.id}/"
    else:
        ns.full_path = f"{parent.full_path}/{ns.path}"
        ns.full_name = f"{parent.full_name} / {ns.name}"
        ns.traversal = f"{parent.traversal}{ns.id}/"


def refresh_descendants(
    db: Session, ns: Namespace, old_full_path: str, old_full_name: str, old_traversal: str
) -> None:
    """After `ns` moved or was renamed, rewrite what its descendants derived from it."""
    descendants = db.scalars(
        select(Namespace).where(Namespace.traversal.startswith(old_traversal), Namespace.id != ns.id)
    ).all()
    for child in descendants:
        child.full_path = ns.full_path + child.full_path[len(old_full_path) :]
        child.full_name = ns.full_name + child.full_name[len(old_full_name) :]
        child.traversal = ns.traversal + child.traversal[len(old_traversal) :]


def descendant_ids(ns: Namespace) -> Select[Any]:
    """Ids of the namespace and everything below it."""
    return select(Namespace.id).where(access.within(Namespace, ns))


def visible_namespaces(
    db: Session,
    actor: Actor,
    search: str | None,
    owned_only: bool,
    top_level_only: bool,
    page: Page,
    *,
    full_path_search: bool = False,
) -> PageResult:
    """GET /namespaces: the user's own namespace and groups a membership reaches (all for
    admins); `full_path_search` matches the search against full paths."""
    stmt = select(Namespace)
    if not policy.is_admin(actor) or owned_only:
        levels = access.group_levels(actor.user.id)
        member_of = select(levels.c.namespace_id)
        if owned_only:
            member_of = member_of.where(levels.c.level >= OWNER)
        stmt = stmt.where(or_(Namespace.owner_id == actor.user.id, Namespace.id.in_(member_of)))
    if search:
        term = contains(search)
        if full_path_search:
            stmt = stmt.where(func.lower(Namespace.full_path).like(term, escape=ESCAPE))
        else:
            stmt = stmt.where(
                or_(
                    func.lower(Namespace.path).like(term, escape=ESCAPE),
                    func.lower(Namespace.name).like(term, escape=ESCAPE),
                )
            )
    if top_level_only:
        stmt = stmt.where(Namespace.parent_id.is_(None))
    return offset_page(db, stmt.order_by(Namespace.id.asc()), page)


# ---------------------------------------------------------------------------- the namespaces API


@dataclass(slots=True)
class NamespaceListing:
    page: PageResult
    records: list[NamespaceRecord]


def list_for_api(db: Session, actor: Actor, q: NamespaceList, page: Page) -> NamespaceListing:
    """GET /namespaces: the caller's own namespace and the groups a membership reaches
    (every namespace for administrators), with `full_path_search` matching full paths."""
    result = visible_namespaces(
        db, actor, q.search, q.owned_only, q.top_level_only, page, full_path_search=q.full_path_search
    )
    return NamespaceListing(page=result, records=namespace_records(db, actor, result.items))


def get_for_api(db: Session, actor: Actor, ident: str) -> NamespaceRecord:
    """A user's namespace is theirs (and administrators') to see; a group, whoever may read it."""
    s = subjects.find_namespace(db, actor, ident)
    if s is None or not policy.may(actor, Action.READ_NAMESPACE, s):
        raise NotFound("Namespace")
    return namespace_records(db, actor, [s.group])[0]


def path_exists(db: Session, path: str, parent_id: int | None) -> tuple[bool, list[str]]:
    """Whether a namespace in `parent_id` (top level without one) has the path, and if so a
    free alternative: the path with the first number that makes it unique."""
    lowered = path.lower()
    taken = db.scalar(
        select(Namespace.id)
        .where(
            func.coalesce(Namespace.parent_id, 0) == (parent_id or 0), func.lower(Namespace.path) == lowered
        )
        .limit(1)
    )
    if taken is None:
        return False, []
    n = 1
    while path_taken(db, parent_id, f"{path}{n}"):
        n += 1
    return True, [f"{path}{n}"]


def namespace_records(db: Session, actor: Actor, namespaces: list[Namespace]) -> list[NamespaceRecord]:
    """Views for a page of namespaces in a fixed number of queries."""
    if not namespaces:
        return []
    admin = policy.is_admin(actor)
    owner_ids = {n.owner_id for n in namespaces if n.owner_id is not None}
    owners = {u.id: u for u in db.scalars(select(User).where(User.id.in_(owner_ids)))} if owner_ids else {}
    group_ids = [n.id for n in namespaces if n.is_group]
    levels = access.group_access(db, actor.user.id, group_ids)
    out = []
    for ns in namespaces:
        if ns.is_group:
            s = GroupSubject(group=ns, level=levels.get(ns.id))
            can_admin = policy.may(actor, Action.UPDATE_GROUP, s)
        else:
            can_admin = policy.may(actor, Action.CREATE_PROJECT, GroupSubject(group=ns, level=None))
        out.append(
            NamespaceRecord(
                namespace=ns,
                owner=owners.get(ns.owner_id) if ns.owner_id is not None else None,
                can_admin=can_admin,
                admin_view=admin and ns.is_group,
                billable_members_count=1 if not ns.is_group else 0,
            )
        )
    counted = [r.namespace for r in out if r.namespace.is_group and (r.can_admin or r.admin_view)]
    if counted:
        members, billable = _member_counts(db, counted)
        projects = _project_counts(db, counted) if admin else {}
        for r in out:
            gid = r.namespace.id
            r.members_count = members.get(gid, 0)
            r.billable_members_count = billable.get(gid, 0)
            count, _ = projects.get(gid, (0, 0))
            r.projects_count = count
        if admin:
            roots = {n.ancestor_ids[0] for n in counted if n.ancestor_ids}
            root_rows = db.scalars(select(Namespace).where(Namespace.id.in_(roots))).all()
            root_sizes = _project_counts(db, list(root_rows))
            for r in out:
                if r.namespace.ancestor_ids:
                    r.root_repository_size = root_sizes.get(r.namespace.ancestor_ids[0], (0, 0))[1]
    return out


def _member_counts(db: Session, groups: list[Namespace]) -> tuple[dict[int, int], dict[int, int]]:
    """Distinct members of each group and its descendants; billable adds project members."""
    outer = aliased(Namespace)
    inner = aliased(Namespace)
    today = date.today()
    active = access.active_membership(today)
    ids = [g.id for g in groups]
    via_groups = (
        select(outer.id.label("gid"), Member.user_id.label("uid"))
        .select_from(outer)
        .join(inner, access.within(inner, outer))
        .join(Member, Member.namespace_id == inner.id)
        .where(outer.id.in_(ids), active)
    )
    via_projects = (
        select(outer.id.label("gid"), Member.user_id.label("uid"))
        .select_from(outer)
        .join(inner, access.within(inner, outer))
        .join(Project, Project.namespace_id == inner.id)
        .join(Member, Member.project_id == Project.id)
        .where(outer.id.in_(ids), active)
    )
    g = via_groups.subquery()
    members: dict[int, int] = dict(
        db.execute(select(g.c.gid, func.count(func.distinct(g.c.uid))).group_by(g.c.gid)).all()
    )
    both = union(via_groups, via_projects).subquery()
    billable: dict[int, int] = dict(
        db.execute(select(both.c.gid, func.count(func.distinct(both.c.uid))).group_by(both.c.gid)).all()
    )
    return members, billable


def _project_counts(db: Session, groups: list[Namespace]) -> dict[int, tuple[int, int]]:
    """(projects, repository bytes) in each group and its descendants."""
    if not groups:
        return {}
    outer = aliased(Namespace)
    inner = aliased(Namespace)
    rows = db.execute(
        select(
            outer.id,
            func.count(Project.id),
            func.coalesce(func.sum(ProjectStatistics.repository_size), 0),
        )
        .select_from(outer)
        .join(inner, access.within(inner, outer))
        .join(Project, Project.namespace_id == inner.id)
        .outerjoin(ProjectStatistics, ProjectStatistics.project_id == Project.id)
        .where(outer.id.in_([g.id for g in groups]))
        .group_by(outer.id)
    )
    return {gid: (int(n), int(size)) for gid, n, size in rows}
