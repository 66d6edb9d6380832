"""Members and access requests of groups and projects.

A member row grants its level on its group (and everything inside it) or on its project; a
row with `requested_at` is an access request and grants nothing until approved; an expired
row grants nothing and is not listed. A personal project has no row for its namespace's
owner, yet GitLab lists that user as an Owner member, so the lists add one."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any, Literal

from sqlalchemy import (
    ColumnElement,
    delete,
    func,
    or_,
    select,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from kiln import policy
from kiln.auth.actor import Actor
from kiln.db import transaction
from kiln.errors import Conflict, Forbidden, NotFound, ValidationFailed
from kiln.models import Member, Namespace, Project, User
from kiln.models.base import numeric_id
from kiln.models.namespaces import DEVELOPER, OWNER
from kiln.pagination import Page, PageResult
from kiln.policy import Action, GroupSubject, ProjectSubject
from kiln.queries import access
from kiln.queries import members as finder
from kiln.queries.members import MemberRecord
from kiln.queries.paging import offset_page
from kiln.queries.users import rows_by_ids
from kiln.schemas.members import (
    AccessRequestApprove,
    MemberAllList,
    MemberCreate,
    MemberDelete,
    MemberList,
    MemberUpdate,
)
from kiln.services import subjects

Kind = Literal["groups", "projects"]
# GitLab's answer when a member or requester row is missing (ActiveRecord::RecordNotFound).
MEMBER_NOT_FOUND = "404 Not found"
PAST_EXPIRY = "cannot be a date in the past"
# How many users one POST may add (GitLab's Members::CreateService limit).
BULK_LIMIT = 100


@dataclass(slots=True, frozen=True)
class Source:
    """A group or a project whose members are managed, with the actor's standing on it."""

    kind: Kind
    subject: ProjectSubject | GroupSubject

    @property
    def project(self) -> Project | None:
        return self.subject.project if isinstance(self.subject, ProjectSubject) else None

    @property
    def namespace(self) -> Namespace:
        """The group itself, or the namespace holding the project."""
        if isinstance(self.subject, ProjectSubject):
            return self.subject.namespace
        return self.subject.group

    @property
    def personal_owner_id(self) -> int | None:
        """The user whose own namespace holds the project: an Owner without a member row."""
        return self.namespace.owner_id if self.project is not None else None

    def rows(self) -> ColumnElement[bool]:
        if self.project is not None:
            return Member.project_id == self.project.id
        return Member.namespace_id == self.namespace.id


@dataclass(slots=True)
class MemberListing:
    page: PageResult
    records: list[MemberRecord]


@dataclass(slots=True)
class BulkResult:
    """GitLab's answer to adding several users at once: a status, not members."""

    errors: list[str]
    reason: str | None = None

    def as_dict(self) -> dict[str, Any]:
        if not self.errors:
            return {"status": "success"}
        body: dict[str, Any] = {"status": "error", "message": _to_sentence(self.errors)}
        if self.reason is not None:
            body["reason"] = self.reason
        return body


# ---------------------------------------------------------------------------- sources


def load_source(
    db: Session,
    actor: Actor | None,
    kind: Kind,
    ident: str,
    action: Action = Action.READ_MEMBERS,
    *,
    rows: bool = False,
) -> Source:
    """The group or project by id or full path: 404 when absent or hidden, 403 for `action`.
    `rows`: row records for a route that only reads; otherwise the models a write changes."""
    if kind == "groups":
        return Source(kind, subjects.group(db, actor, ident, action, rows=rows))
    return Source(kind, subjects.project(db, actor, ident, action, rows=rows))


def _today() -> date:
    return date.today()


# ---------------------------------------------------------------------------- reading


def _params(source: Source, *, deep: bool) -> dict[str, Any]:
    """A project inherits from its group and the group's ancestors; a group from its ancestors."""
    chain: list[int] | None = None
    if deep:
        chain = source.namespace.ancestor_ids if source.namespace.is_group else []
        if source.project is None:
            chain = chain[:-1]
    project = source.project
    return finder.source_params(
        project_id=project.id if project is not None else None,
        namespace_id=source.namespace.id if project is None else None,
        chain=chain,
    )


def list_members(
    db: Session, actor: Actor, kind: Kind, q: MemberList | MemberAllList, page: Page, *, deep: bool
) -> MemberListing:
    """The page's member rows, then their users (and who added them) in one statement."""
    source = load_source(db, actor, kind, q.id, rows=True)
    filters: dict[str, Any] = {
        "query": q.query,
        "user_ids": q.user_ids,
        "skip_users": q.skip_users if isinstance(q, MemberList) else None,
    }
    stmt = finder.listing(on_project=source.project is not None, deep=deep, **filters)
    params = {**_params(source, deep=deep), **finder.listing_params(**filters)}
    result = offset_page(db, stmt, page, core=True, params=params)
    return MemberListing(page=result, records=finder.records(db, result.items))


def get_member(
    db: Session, actor: Actor, kind: Kind, ident: str, user_id: int, *, deep: bool
) -> MemberRecord:
    """The subject, then the member with their user and who added them: two statements."""
    source = load_source(db, actor, kind, ident, rows=True)
    found = finder.one(
        db, _params(source, deep=deep), user_id, on_project=source.project is not None, deep=deep
    )
    if found is None:
        raise NotFound(message=MEMBER_NOT_FOUND)
    return found


def _record_of(db: Session, row: Member) -> MemberRecord:
    """A row just written, as its view shows it (even when its expiry already passed)."""
    ids = [row.user_id] + ([row.created_by_id] if row.created_by_id is not None else [])
    users = {u.id: u for u in rows_by_ids(db, ids)}
    return MemberRecord(
        user=users[row.user_id],
        access_level=row.access_level,
        created_at=row.created_at,
        expires_at=row.expires_at,
        created_by=users.get(row.created_by_id) if row.created_by_id is not None else None,
        requested_at=row.requested_at,
    )


# ---------------------------------------------------------------------------- adding


def add_members(db: Session, actor: Actor, kind: Kind, p: MemberCreate) -> MemberRecord | BulkResult:
    """One user (201 with the member) or several separated by commas (201 with a status)."""
    source = load_source(db, actor, kind, p.id, Action.ADMIN_MEMBERS)
    if not policy.may_grant(actor, source.subject, p.access_level):
        raise Forbidden()
    given = p.user_id if p.user_id is not None else p.username or ""
    if "," in given:
        return _add_many(db, actor, source, p, given)
    user = _find_user(db, given, by_username=p.user_id is None)
    if user is None:
        raise NotFound("User")
    with transaction(db):
        row = _row_of(db, source, user.id)
        if (row is not None and row.requested_at is None) or user.id == source.personal_owner_id:
            raise Conflict("Member already exists")
        _check_expiry(p.expires_at)
        row = _grant(db, actor, source, user.id, row, p.access_level, p.expires_at)
    return _record_of(db, row)


def _add_many(db: Session, actor: Actor, source: Source, p: MemberCreate, given: str) -> BulkResult:
    """GitLab's bulk add: unknown users are skipped, existing members take the new level."""
    idents = list(dict.fromkeys(part.strip() for part in given.split(",") if part.strip()))
    if not idents:
        return BulkResult(["No users specified."], reason="blank_invites_error")
    if len(idents) > BULK_LIMIT:
        return BulkResult(
            [f"Too many users specified (limit is {BULK_LIMIT})"], reason="too_many_invites_error"
        )
    if p.user_id is not None:
        numbers = [n for n in map(numeric_id, idents) if n is not None]
        users = (
            list(db.scalars(select(User).where(User.id.in_(numbers)).order_by(User.id))) if numbers else []
        )
    else:
        lowered = [i.lower() for i in idents]
        users = list(db.scalars(select(User).where(func.lower(User.username).in_(lowered)).order_by(User.id)))
    users = [u for u in users if u.id != source.personal_owner_id]
    if p.expires_at is not None and p.expires_at < _today():
        return BulkResult([f"{u.username}: Expires at {PAST_EXPIRY}" for u in users])
    with transaction(db):
        for user in users:
            row = _row_of(db, source, user.id)
            if row is not None and row.requested_at is None:
                _check_change(db, actor, source, row, p.access_level)
            _grant(db, actor, source, user.id, row, p.access_level, p.expires_at)
    return BulkResult([])


def _find_user(db: Session, given: str, *, by_username: bool) -> User | None:
    given = given.strip()
    if by_username:
        return db.scalars(select(User).where(func.lower(User.username) == given.lower())).first()
    user_id = numeric_id(given)
    return None if user_id is None else db.get(User, user_id)


def _row_of(db: Session, source: Source, user_id: int) -> Member | None:
    """The user's own row on the source: a membership (expired or not) or an access request."""
    return db.scalars(select(Member).where(source.rows(), Member.user_id == user_id)).first()


def _check_expiry(expires_at: date | None) -> None:
    if expires_at is not None and expires_at < _today():
        raise ValidationFailed({"expires_at": [PAST_EXPIRY]})


def _grant(
    db: Session,
    actor: Actor,
    source: Source,
    user_id: int,
    row: Member | None,
    level: int,
    expires_at: date | None,
) -> Member:
    """Make `user_id` a member: a new row, or an access request (or old row) turned into one."""
    if row is None:
        project = source.project
        row = Member(
            user_id=user_id,
            project_id=project.id if project is not None else None,
            namespace_id=None if project is not None else source.namespace.id,
            access_level=level,
            expires_at=expires_at,
            created_by_id=actor.user.id,
        )
        db.add(row)
    else:
        if row.requested_at is not None:
            row.created_by_id = actor.user.id
        row.requested_at = None
        row.access_level = level
        row.expires_at = expires_at
    try:
        db.flush()
    except IntegrityError:  # a twin request added the same user first
        raise Conflict("Member already exists") from None
    return row


# ---------------------------------------------------------------------------- changing


def _is_last_owner(db: Session, source: Source, row: Member) -> bool:
    """A group keeps at least one Owner, counting Owners of its ancestors too."""
    if source.project is not None or row.access_level < OWNER:
        return False
    others = select(Member.id).where(
        Member.namespace_id.in_(source.namespace.ancestor_ids),
        Member.user_id != row.user_id,
        Member.access_level >= OWNER,
        access.active_membership(_today()),
    )
    return db.scalar(others.limit(1)) is None


def _check_change(db: Session, actor: Actor, source: Source, row: Member, new_level: int | None) -> None:
    """Who may change or remove an existing member (GitLab answers 403 for each refusal)."""
    if not policy.may_change_member(actor, source.subject, row.access_level, new_level):
        raise Forbidden()
    if (new_level is None or new_level < OWNER) and _is_last_owner(db, source, row):
        raise Forbidden()


def _existing(db: Session, source: Source, user_id: int) -> Member:
    if user_id == source.personal_owner_id:
        # The holder of a personal namespace can't be changed or removed.
        raise Forbidden()
    row = db.scalars(
        select(Member).where(source.rows(), Member.user_id == user_id, Member.requested_at.is_(None))
    ).first()
    if row is None:
        raise NotFound(message=MEMBER_NOT_FOUND)
    return row


def update_member(db: Session, actor: Actor, kind: Kind, p: MemberUpdate) -> MemberRecord:
    source = load_source(db, actor, kind, p.id)
    with transaction(db):
        row = _existing(db, source, p.user_id)
        policy.require(actor, Action.ADMIN_MEMBERS, source.subject)
        _check_change(db, actor, source, row, p.access_level)
        row.access_level = p.access_level
        if "expires_at" in p.given():
            _check_expiry(p.expires_at)
            row.expires_at = p.expires_at
        db.flush()
    return _record_of(db, row)


def remove_member(db: Session, actor: Actor, kind: Kind, p: MemberDelete) -> None:
    """Members may leave on their own; removing a group member also removes their memberships
    of its subgroups and projects unless `skip_subresources`."""
    source = load_source(db, actor, kind, p.id)
    with transaction(db):
        row = _existing(db, source, p.user_id)
        if row.user_id == actor.user.id:
            if _is_last_owner(db, source, row):
                raise Forbidden()
        else:
            policy.require(actor, Action.ADMIN_MEMBERS, source.subject)
            _check_change(db, actor, source, row, None)
        db.delete(row)
        if source.project is None and not p.skip_subresources:
            _remove_from_descendants(db, source.namespace, row.user_id)
        db.flush()


def _remove_from_descendants(db: Session, group: Namespace, user_id: int) -> None:
    inside = select(Namespace.id).where(access.within(Namespace, group))
    subgroups = inside.where(Namespace.id != group.id)
    projects = select(Project.id).where(Project.namespace_id.in_(inside))
    db.execute(
        delete(Member)
        .where(
            Member.user_id == user_id,
            or_(Member.namespace_id.in_(subgroups), Member.project_id.in_(projects)),
        )
        .execution_options(synchronize_session=False)
    )


# ---------------------------------------------------------------------------- access requests


def list_access_requests(db: Session, actor: Actor, kind: Kind, ident: str, page: Page) -> MemberListing:
    source = load_source(db, actor, kind, ident, Action.ADMIN_MEMBERS, rows=True)
    stmt = finder.access_requests(source.project is not None)
    result = offset_page(db, stmt, page, core=True, params=_params(source, deep=False))
    return MemberListing(page=result, records=finder.records(db, result.items))


def request_access(db: Session, actor: Actor, kind: Kind, ident: str) -> MemberRecord:
    """Anyone who can see the source, isn't a member and hasn't asked yet (403 otherwise)."""
    source = load_source(db, actor, kind, ident)
    subject = source.subject
    # Only this action asks whether a row (membership or request) already exists.
    has_row = _row_of(db, source, actor.user.id) is not None
    subject = dataclasses.replace(subject, has_membership_row=has_row)
    policy.require(actor, Action.REQUEST_ACCESS, subject)
    with transaction(db):
        project = source.project
        now = datetime.now(UTC)
        row = Member(
            user_id=actor.user.id,
            project_id=project.id if project is not None else None,
            namespace_id=None if project is not None else source.namespace.id,
            # Stored at Developer, what an approval grants unless it names another level.
            access_level=DEVELOPER,
            requested_at=now,
            created_at=now,
        )
        db.add(row)
        try:
            db.flush()
        except IntegrityError:  # a twin request was first
            raise Forbidden() from None
    return _record_of(db, row)


def _request_of(db: Session, source: Source, user_id: int) -> Member:
    row = db.scalars(
        select(Member).where(source.rows(), Member.user_id == user_id, Member.requested_at.is_not(None))
    ).first()
    if row is None:
        raise NotFound(message=MEMBER_NOT_FOUND)
    return row


def approve_access_request(db: Session, actor: Actor, kind: Kind, p: AccessRequestApprove) -> MemberRecord:
    source = load_source(db, actor, kind, p.id)
    with transaction(db):
        row = _request_of(db, source, p.user_id)
        policy.require(actor, Action.ADMIN_MEMBERS, source.subject)
        if not policy.may_grant(actor, source.subject, p.access_level):
            raise Forbidden()
        _grant(db, actor, source, row.user_id, row, p.access_level, row.expires_at)
    return _record_of(db, row)


def deny_access_request(db: Session, actor: Actor, kind: Kind, ident: str, user_id: int) -> None:
    """Maintainers deny a request; the requester may withdraw their own."""
    source = load_source(db, actor, kind, ident)
    with transaction(db):
        row = _request_of(db, source, user_id)
        if row.user_id != actor.user.id:
            policy.require(actor, Action.ADMIN_MEMBERS, source.subject)
        db.delete(row)
        db.flush()


def _to_sentence(items: list[str]) -> str:
    """Rails' Array#to_sentence."""
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]
