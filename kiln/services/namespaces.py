"""What user namespaces, groups and projects share: path rules, lookup by id or full path,
and keeping full paths and traversal chains in step when a namespace moves or is renamed."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

from kiln import policy
from kiln.auth.actor import Actor
from kiln.errors import NotFound
from kiln.models import Namespace, Project
from kiln.pagination import Page, PageResult
from kiln.policy import Action, GroupSubject
from kiln.queries import access
from kiln.queries import namespaces as finder
from kiln.queries.namespaces import NamespaceRecord
from kiln.queries.paging import offset_page
from kiln.queries.users import username_taken
from kiln.schemas.groups import NamespaceList

# GitLab's namespace/project path rule.
_PATH = re.compile(r"^[A-Za-z0-9_.][A-Za-z0-9_\-.]*[A-Za-z0-9_\-]$|^[A-Za-z0-9_]$")
PATH_MESSAGE = "can contain only letters, digits, '_', '-' and '.'. Cannot start with '-', end in '.git' or end in '.atom'"
_NAME = re.compile(r"^[\w\u00b8-\U0010ffff.+\- ()]*$")
NAME_MESSAGE = (
    "can contain only letters, digits, emoji, '_', '.', '+', dashes, or spaces. "
    "It must start with a letter, digit, emoji, or '_'."
)
MAX_DEPTH = 20
# GitLab's top-level routes (Gitlab::PathRegex::TOP_LEVEL_ROUTES): no username and no
# top-level group may take one of these paths, in any letter case, or the route would hide it.
RESERVED_TOP_LEVEL_ROUTES = frozenset(
    {
        "-",
        ".well-known",
        "404.html",
        "422.html",
        "500.html",
        "502.html",
        "503.html",
        "admin",
        "api",
        "apple-touch-icon.png",
        "assets",
        "dashboard",
        "deploy.html",
        "explore",
        "favicon.ico",
        "favicon.png",
        "files",
        "groups",
        "health_check",
        "help",
        "import",
        "jwt",
        "login",
        "oauth",
        "profile",
        "projects",
        "public",
        "robots.txt",
        "s",
        "search",
        "sitemap",
        "sitemap.xml",
        "sitemap.xml.gz",
        "slash-command-logo.png",
        "snippets",
        "unsubscribes",
        "uploads",
        "users",
        "v2",
    }
)


def reserved_top_level(path: str) -> bool:
    """A path a user or a top-level group may not take (RESERVED_TOP_LEVEL_ROUTES)."""
    return path.lower() in RESERVED_TOP_LEVEL_ROUTES


def reserved_message(path: str) -> str:
    """GitLab's words for a reserved path, on `username` or `path`."""
    return f"{path} is a reserved name"


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


# ---------------------------------------------------------------------------- the namespaces API


@dataclass(slots=True)
class NamespaceListing:
    page: PageResult
    records: list[NamespaceRecord]


def list_for_api(db: Session, actor: Actor, q: NamespaceList, page: Page) -> NamespaceListing:
    """GET /namespaces: the caller's own namespace and the groups a membership reaches
    (every namespace for administrators), with `full_path_search` matching full paths.
    The page's ids, then their views, then the counts of the groups the caller administers."""
    stmt = finder.listing(
        every=policy.is_admin(actor),
        search=q.search,
        owned_only=q.owned_only,
        top_level_only=q.top_level_only,
        full_path_search=q.full_path_search,
    )
    result = offset_page(db, stmt, page, core=True, params=finder.listing_params(actor.id))
    ids = [row.id for row in result.items]
    views = finder.view_rows(db, actor.id, ids)
    return NamespaceListing(page=result, records=_records(db, actor, [views[i] for i in ids if i in views]))


def get_for_api(db: Session, actor: Actor, ident: str) -> NamespaceRecord:
    """A user's namespace is theirs (and administrators') to see; a group, whoever may read it."""
    view = finder.view_by_ident(db, actor.id, ident)
    if view is None or not policy.may(actor, Action.READ_NAMESPACE, _subject(view)):
        raise NotFound("Namespace")
    return _records(db, actor, [view])[0]


def _subject(view: finder.NamespaceViewRow) -> GroupSubject:
    if not view.namespace.is_group:
        return GroupSubject(group=view.namespace, level=None)
    return GroupSubject(group=view.namespace, level=view.level, related=view.related)


def path_exists(db: Session, path: str, parent_id: int | None) -> tuple[bool, list[str]]:
    """Whether a namespace in `parent_id` (top level without one) has the path, and if so a
    free alternative: the path with the first number that makes it unique (not a namespace,
    nor a username at the top level, nor a project in a group). One statement."""
    held, taken = finder.paths_like(db, parent_id or None, path)
    if path.lower() not in held:
        return False, []
    n = 1
    while f"{path}{n}".lower() in taken:
        n += 1
    return True, [f"{path}{n}"]


def _records(db: Session, actor: Actor, views: list[finder.NamespaceViewRow]) -> list[NamespaceRecord]:
    """Records of namespaces whose views are read: one more statement for the counts of the
    groups the caller administers (every group, for administrators)."""
    admin = policy.is_admin(actor)
    out = []
    for view in views:
        ns = view.namespace
        action = Action.UPDATE_GROUP if ns.is_group else Action.CREATE_PROJECT
        out.append(
            NamespaceRecord(
                namespace=ns,
                owner=view.owner,
                can_admin=policy.may(actor, action, _subject(view)),
                admin_view=admin and ns.is_group,
                billable_members_count=1 if not ns.is_group else 0,
            )
        )
    counted = [r.namespace.id for r in out if r.namespace.is_group and (r.can_admin or r.admin_view)]
    counts = finder.counts_of(db, counted)
    for r in out:
        if r.namespace.id in counts:
            members, billable, projects, root_size = counts[r.namespace.id]
            r.members_count, r.billable_members_count = members, billable
            if admin:
                r.projects_count, r.root_repository_size = projects, root_size
    return out
