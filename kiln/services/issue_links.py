"""Issue links: an issue relates to, blocks or is blocked by another, in its project or
another. Linking takes GitLab's admin_issue_link on the issue linked from (Guests and up)
and sight of the other; a link is shown only where the caller may read its other end.
`is_blocked_by` is stored as `blocks` turned round, so one pair of issues has one link
whatever its direction, and each end's thread notes the link and its removal."""

from __future__ import annotations

from typing import Literal

from sqlalchemy import and_, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from kiln.auth.actor import Actor
from kiln.db import transaction
from kiln.errors import BadRequest, Conflict, NotFound
from kiln.models import IssueLink
from kiln.models.issues import BLOCKS, IS_BLOCKED_BY, RELATES_TO
from kiln.models.notes import ISSUE
from kiln.policy import Action, IssueSubject
from kiln.queries import issue_links as finder
from kiln.queries import issues as issue_finder
from kiln.queries.issue_links import Linked, LinkedIssues, LinkRow, OneLink
from kiln.queries.issues import IssueRow
from kiln.services import subjects, system_notes

LinkType = Literal["relates_to", "blocks", "is_blocked_by"]
LINK_NOT_FOUND = "404 Not found"
ALREADY_LINKED = "Issue(s) already assigned"


def _readable(db: Session, actor: Actor | None, ids: list[int]) -> dict[int, IssueRow]:
    """The issues `ids` the actor may read, by id, in two statements whatever their number."""
    return subjects.readable_issues(db, actor, issue_finder.rows_by_ids(db, ids))


def _seen_from(link: LinkRow, issue_id: int) -> tuple[int, str]:
    """The link's other end and its type from `issue_id`'s side."""
    if link.source_id == issue_id:
        return link.target_id, link.link_type
    return link.source_id, IS_BLOCKED_BY if link.link_type == BLOCKS else link.link_type


# ----------------------------------------------------------------------------- reading


def list_links(db: Session, actor: Actor | None, ident: str, iid: int) -> LinkedIssues:
    """The issues linked to this one that the actor may read, in the order they were linked."""
    s = subjects.issue(db, actor, ident, iid)
    links = finder.links_of(db, s.issue.id)
    ends = [_seen_from(link, s.issue.id) for link in links]
    shown = _readable(db, actor, [other for other, _ in ends])
    items = [
        Linked(shown[other], link, link_type)
        for link, (other, link_type) in zip(links, ends, strict=True)
        if other in shown
    ]
    return LinkedIssues(s, items, issue_finder.related_of(db, [item.issue for item in items]))


def _one(db: Session, actor: Actor | None, s: IssueSubject, link_id: int) -> OneLink:
    link = finder.link_of(db, s.issue.id, link_id)
    if link is None:
        raise NotFound(message=LINK_NOT_FOUND)
    shown = _readable(db, actor, [link.source_id, link.target_id])
    if link.source_id not in shown or link.target_id not in shown:
        raise NotFound(message=LINK_NOT_FOUND)
    source, target = shown[link.source_id], shown[link.target_id]
    return OneLink(s, source, target, link.link_type, issue_finder.related_of(db, [source, target]))


def get_link(db: Session, actor: Actor | None, ident: str, iid: int, link_id: int) -> OneLink:
    """One of the issue's links (either end), both ends readable by the actor."""
    return _one(db, actor, subjects.issue(db, actor, ident, iid), link_id)


# ----------------------------------------------------------------------------- changing


def _reference(of: IssueSubject, seen_from: IssueSubject) -> str:
    """How `of` is named in `seen_from`'s thread: `#2` in the same project, else with its path."""
    if of.project.project.id == seen_from.project.project.id:
        return f"#{of.issue.iid}"
    return f"{of.project.namespace.full_path}/{of.project.project.path}#{of.issue.iid}"


def _note(db: Session, actor: Actor, on: IssueSubject, body: str) -> None:
    system_notes.add(
        db, actor, noteable_type=ISSUE, noteable_id=on.issue.id, body=body, project_id=on.project.project.id
    )


def create_link(
    db: Session,
    actor: Actor,
    ident: str,
    iid: int,
    target_project: str,
    target_iid: int,
    link_type: LinkType = RELATES_TO,
) -> OneLink:
    """Link the issue to another the actor may see (404 otherwise): 400 for itself, 409 when
    the two are linked already, either way round."""
    s = subjects.issue(db, actor, ident, iid, Action.ADMIN_ISSUE_LINK)
    # Both ends take GitLab's admin_issue_link: a link writes a note into each.
    t = subjects.issue(db, actor, target_project, target_iid, Action.ADMIN_ISSUE_LINK)
    if s.issue.id == t.issue.id:
        raise BadRequest(f"{_reference(t, s)} cannot be added: cannot be related to itself", raw=True)
    source, target = (t, s) if link_type == IS_BLOCKED_BY else (s, t)
    stored = RELATES_TO if link_type == RELATES_TO else BLOCKS
    a, b = s.issue.id, t.issue.id
    try:
        with transaction(db):
            either_way = or_(
                and_(IssueLink.source_id == a, IssueLink.target_id == b),
                and_(IssueLink.source_id == b, IssueLink.target_id == a),
            )
            if db.scalars(select(IssueLink.id).where(either_way)).first() is not None:
                raise Conflict(ALREADY_LINKED)
            link = IssueLink(source_id=source.issue.id, target_id=target.issue.id, link_type=stored)
            db.add(link)
            db.flush()
            link_id = link.id
            if stored == RELATES_TO:
                _note(db, actor, s, f"marked this issue as related to {_reference(t, s)}")
                _note(db, actor, t, f"marked this issue as related to {_reference(s, t)}")
            else:
                _note(db, actor, source, f"marked this issue as blocking {_reference(target, source)}")
                _note(db, actor, target, f"marked this issue as blocked by {_reference(source, target)}")
    except IntegrityError:
        # The same pair linked by a concurrent request first.
        raise Conflict(ALREADY_LINKED) from None
    return _one(db, actor, s, link_id)


def delete_link(db: Session, actor: Actor, ident: str, iid: int, link_id: int) -> OneLink:
    """Remove one of the issue's links; answers it as it was."""
    s = subjects.issue(db, actor, ident, iid, Action.ADMIN_ISSUE_LINK)
    found = _one(db, actor, s, link_id)
    other_row = found.target if found.source.id == s.issue.id else found.source
    other = subjects.issue(db, actor, str(other_row.project_id), other_row.iid, Action.ADMIN_ISSUE_LINK)
    with transaction(db):
        link = db.get(IssueLink, link_id)
        if link is None:
            raise NotFound(message=LINK_NOT_FOUND)
        db.delete(link)
        _note(db, actor, s, f"removed the relation with {_reference(other, s)}")
        _note(db, actor, other, f"removed the relation with {_reference(s, other)}")
    return found
