"""The subject of a project-, group- or user-scoped route: the project (with its namespace) or
the group, and the caller's level on it, loaded for one caller and one action; or the user
whose keys, addresses or memberships a route reads.

Every project- or group-scoped service starts here, never from another resource's service:
`project` and `group` answer the route's 404 or 403 through `policy.authorize`; the `find_*`
functions decide nothing, for callers with answers of their own (git over HTTP, uploads)."""

from __future__ import annotations

from sqlalchemy.orm import Session

from kiln import policy
from kiln.auth.actor import Actor
from kiln.errors import NotFound
from kiln.models import Namespace
from kiln.policy import Action, GroupSubject, ProjectSubject
from kiln.queries import access
from kiln.queries import groups as group_finder
from kiln.queries import projects as project_finder
from kiln.queries import users as user_finder
from kiln.queries.users import UserRow


def find_project(
    db: Session, actor: Actor | None, ident: str, *, rows: bool = False
) -> ProjectSubject | None:
    """The project by id or full path, its namespace and the actor's level, in one statement;
    nothing decided yet. `rows`: immutable row records for a route that only reads (cheaper
    than model objects); otherwise the models a write changes."""
    row = project_finder.subject_row(db, ident, actor.id if actor is not None else None, orm=not rows)
    return None if row is None else ProjectSubject(project=row[0], namespace=row[1], level=row[2])


def project(
    db: Session, actor: Actor | None, ident: str, action: Action = Action.READ_PROJECT, *, rows: bool = False
) -> ProjectSubject:
    """The project by id or full path; 404 if absent or hidden, 403 if `action` is refused."""
    s = find_project(db, actor, ident, rows=rows)
    if s is None:
        raise NotFound("Project")
    policy.authorize(actor, action, s, "Project")
    return s


def of_namespace(db: Session, actor: Actor | None, ns: Namespace) -> GroupSubject:
    """A namespace already loaded, as a subject: a group with the actor's level on it (and
    whether something inside it relates them to it), in one statement; a user's namespace
    with no level."""
    if actor is None or not ns.is_group:
        return GroupSubject(group=ns, level=None)
    level, related = access.group_standing(db, actor.user.id, ns.id)
    # has_membership_row is asked only by an access request, which looks it up itself.
    return GroupSubject(group=ns, level=level, related=related)


def find_group(db: Session, actor: Actor | None, ident: str, *, rows: bool = False) -> GroupSubject | None:
    """The group by id or full path with the actor's level on it and whether something inside
    it relates them to it, in one statement; nothing decided yet. `rows`: a NamespaceRow for a
    route that only reads (cheaper than the model); otherwise the model a write changes."""
    found = group_finder.subject_row(db, ident, actor.id if actor is not None else None, orm=not rows)
    if found is None or not found[0].is_group:
        return None
    return GroupSubject(group=found[0], level=found[1], related=found[2])


def group(
    db: Session, actor: Actor | None, ident: str, action: Action = Action.READ_GROUP, *, rows: bool = False
) -> GroupSubject:
    """The group by id or full path; 404 if absent or hidden, 403 if `action` is refused."""
    s = find_group(db, actor, ident, rows=rows)
    if s is None:
        raise NotFound("Group")
    policy.authorize(actor, action, s, "Group")
    return s


def user(db: Session, user_id: int) -> UserRow:
    """The user a /users/:id route is about; none is the 404 "User"."""
    found = user_finder.row_by_id(db, user_id)
    if found is None:
        raise NotFound("User")
    return found
