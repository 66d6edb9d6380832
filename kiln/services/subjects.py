"""The subject of a project-, group- or user-scoped route: the project (with its namespace) or
the group, and the caller's level on it, loaded for one caller and one action; an issue, a
merge request or an epic with its project or group; or the user whose keys, addresses or memberships a route reads.

Every project- or group-scoped service starts here, never from another resource's service:
`project` and `group` answer the route's 404 or 403 through `policy.authorize`; the `find_*`
functions decide nothing, for callers with answers of their own (git over HTTP, uploads)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from sqlalchemy.orm import Session

from kiln import policy
from kiln.auth.actor import Actor
from kiln.errors import Forbidden, NotFound
from kiln.models import Epic, Issue, MergeRequest, Namespace
from kiln.models.notes import EPIC, ISSUE, MERGE_REQUEST
from kiln.policy import Action, EpicSubject, GroupSubject, IssueSubject, MergeRequestSubject, ProjectSubject
from kiln.queries import access
from kiln.queries import epics as epic_finder
from kiln.queries import groups as group_finder
from kiln.queries import issues as issue_finder
from kiln.queries import merge_requests as merge_request_finder
from kiln.queries import projects as project_finder
from kiln.queries import users as user_finder
from kiln.queries.issues import IssueRow
from kiln.queries.projects import ProjectAccess
from kiln.queries.users import UserRow
from kiln.services import features


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


def issue(
    db: Session,
    actor: Actor | None,
    ident: str,
    iid: int,
    action: Action = Action.READ_ISSUE,
    *,
    rows: bool = True,
) -> IssueSubject:
    """Issue `iid` of the project: 404 "Project" for a project hidden from the actor, 403 when
    its issues are closed to them, 404 "Issue" when the issue is absent or confidential and
    hidden; then 403 if `action` (an Action on the project) is refused. The issue is the model."""
    s = project(db, actor, ident, Action.READ_ISSUE, rows=rows)
    found = issue_finder.subject_row(db, s.project.id, iid)
    if found is None:
        raise NotFound("Issue")
    row, assignee_ids = found
    if not policy.may_read_issue(actor, s, row.confidential, row.author_id, assignee_ids):
        raise NotFound("Issue")
    if action is not Action.READ_ISSUE:
        policy.require(actor, action, s)
    return IssueSubject(project=s, issue=row, assignee_ids=tuple(assignee_ids))


def readable_issues(
    db: Session,
    actor: Actor | None,
    rows: Iterable[IssueRow],
    projects: Mapping[int, ProjectAccess] | None = None,
) -> dict[int, IssueRow]:
    """Of issues shown beside another's (links, to-dos, an epic's issues), those the actor may
    read, by id: their projects with the actor's level in one statement (or `projects` the
    caller already read), then policy.may_read_issue for each."""
    rows = list(rows)
    if projects is None:
        projects = project_finder.access_of(
            db, actor.id if actor is not None else None, {r.project_id for r in rows}
        )
    shown: dict[int, IssueRow] = {}
    for row in rows:
        p = projects.get(row.project_id)
        if p is None:
            continue
        s = ProjectSubject(project=p.project, namespace=p.namespace, level=p.level)
        if policy.may_read_issue(actor, s, row.confidential, row.author_id, row.assignee_ids):
            shown[row.id] = row
    return shown


def merge_request(
    db: Session,
    actor: Actor | None,
    ident: str,
    iid: int,
    action: Action = Action.READ_MERGE_REQUEST,
    *,
    rows: bool = True,
) -> MergeRequestSubject:
    """Merge request `iid` of the (target) project: 404 "Project" for a project hidden from the
    actor, 403 when its merge requests are closed to them, 404 "Merge Request" when absent;
    then 403 if `action` (an Action on the project) is refused. The merge request is the
    model; who may update, merge or approve it is asked of policy by the service."""
    s = project(db, actor, ident, Action.READ_MERGE_REQUEST, rows=rows)
    found = merge_request_finder.subject_row(db, s.project.id, iid)
    if found is None:
        raise NotFound("Merge Request")
    row, assignee_ids, reviewer_ids = found
    if action is not Action.READ_MERGE_REQUEST:
        policy.require(actor, action, s)
    return MergeRequestSubject(
        project=s, merge_request=row, assignee_ids=tuple(assignee_ids), reviewer_ids=tuple(reviewer_ids)
    )


def epics_group(
    db: Session, actor: Actor | None, ident: str, action: Action = Action.READ_EPIC, *, rows: bool = True
) -> GroupSubject:
    """The group whose epics a route reads or changes: 404 "Group" when hidden, 403 while the
    epics feature is off for it, then 403 if `action` is refused."""
    s = group(db, actor, ident, Action.READ_GROUP, rows=rows)
    if not features.enabled(db, features.EPICS, group=s.group):
        raise Forbidden()
    if action is not Action.READ_GROUP:
        policy.authorize(actor, action, s, "Group")
    return s


def epic(
    db: Session,
    actor: Actor | None,
    ident: str,
    epic_ref: int,
    action: Action = Action.READ_EPIC,
    *,
    by_id: bool = False,
    rows: bool = True,
) -> EpicSubject:
    """Epic `epic_ref` of the group (its iid, or its global id with `by_id`, as epic notes are
    reached): 404 "Epic" when absent or confidential and hidden, otherwise as epics_group."""
    s = epics_group(db, actor, ident, rows=rows)
    row = epic_finder.subject_row(db, s.group.id, epic_ref, by_id=by_id)
    if row is None or not policy.may_read_epic(actor, s, row.confidential, row.author_id):
        raise NotFound("Epic")
    if action is not Action.READ_EPIC:
        policy.require(actor, action, s)
    return EpicSubject(group=s, epic=row)


# ----------------------------------------------------------------------------- noteables
# What takes notes, threads and emoji reactions: one table of kinds (merge requests and
# snippets join with a row and a loader), each loaded as its own subject above.


@dataclass(frozen=True, slots=True)
class Kind:
    """A kind of noteable: how its routes name it and what its notes may do."""

    noteable_type: str  # as the API spells it ("Issue")
    parent: Literal["projects", "groups"]
    path: str  # the collection in the URL ("issues")
    # Whether its threads can be resolved (GitLab: merge requests); issues' and epics' cannot.
    resolvable: bool = False
    # What reading one takes on its project (commenting and reacting ask it too).
    reads: Action = Action.READ_ISSUE


ISSUES = Kind(ISSUE, "projects", "issues")
EPICS = Kind(EPIC, "groups", "epics", reads=Action.READ_EPIC)
MERGE_REQUESTS = Kind(
    MERGE_REQUEST, "projects", "merge_requests", resolvable=True, reads=Action.READ_MERGE_REQUEST
)
KINDS: dict[str, Kind] = {kind.path: kind for kind in (ISSUES, EPICS, MERGE_REQUESTS)}


@dataclass(frozen=True, slots=True)
class Noteable:
    """An issue, merge request or epic the caller may read, with what notes need to know of it."""

    kind: Kind
    subject: ProjectSubject | GroupSubject
    model: Issue | MergeRequest | Epic
    id: int
    iid: int
    project_id: int | None
    group_id: int | None
    author_id: int | None
    confidential: bool
    locked: bool

    @property
    def owner(self) -> dict[str, int | None]:
        return {"project_id": self.project_id, "group_id": self.group_id}


def _in_project(kind: Kind, s: ProjectSubject, found: Issue | MergeRequest, confidential: bool) -> Noteable:
    """An issue or merge request (`found`) of project `s` as a Noteable."""
    return Noteable(
        kind,
        s,
        found,
        found.id,
        found.iid,
        found.project_id,
        None,
        found.author_id,
        confidential,
        bool(found.discussion_locked),
    )


def _noteable_issue(db: Session, actor: Actor | None, ident: str, ref: int, by_id: bool) -> Noteable:
    s = issue(db, actor, ident, ref)
    return _in_project(ISSUES, s.project, s.issue, bool(s.issue.confidential))


def _noteable_epic(db: Session, actor: Actor | None, ident: str, ref: int, by_id: bool) -> Noteable:
    s = epic(db, actor, ident, ref, by_id=by_id)
    found = s.epic
    return Noteable(
        EPICS,
        s.group,
        found,
        found.id,
        found.iid,
        None,
        found.group_id,
        found.author_id,
        bool(found.confidential),
        False,
    )


def _noteable_merge_request(db: Session, actor: Actor | None, ident: str, ref: int, by_id: bool) -> Noteable:
    s = merge_request(db, actor, ident, ref)
    return _in_project(MERGE_REQUESTS, s.project, s.merge_request, False)


_LOADERS: dict[str, Callable[[Session, Actor | None, str, int, bool], Noteable]] = {
    ISSUE: _noteable_issue,
    EPIC: _noteable_epic,
    MERGE_REQUEST: _noteable_merge_request,
}


def noteable(
    db: Session, actor: Actor | None, kind: Kind, ident: str, ref: int, *, by_id: bool = False
) -> Noteable:
    """The noteable `ref` (iid, or global id with `by_id`) of project or group `ident`: 404 when
    it or its parent is hidden from the caller."""
    return _LOADERS[kind.noteable_type](db, actor, ident, ref, by_id)


def user(db: Session, user_id: int) -> UserRow:
    """The user a /users/:id route is about; none is the 404 "User"."""
    found = user_finder.row_by_id(db, user_id)
    if found is None:
        raise NotFound("User")
    return found
