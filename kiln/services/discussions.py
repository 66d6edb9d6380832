"""Threads (GitLab's discussions) on issues and epics: every note grouped by its discussion id.
A note written alone is an individual note (type null); a thread started as one, or a reply,
is a `DiscussionNote`, and replying to an individual note turns it into a thread as GitLab
does. Resolving works on the notes' resolvable and resolved fields, for the kinds whose
threads resolve (none of issues' and epics', as in GitLab: merge requests')."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import update
from sqlalchemy.orm import Session

from kiln import policy
from kiln.auth.actor import Actor
from kiln.db import transaction
from kiln.errors import BadRequest, Forbidden, NotFound
from kiln.models import Note
from kiln.models.base import utcnow
from kiln.pagination import Page, PageResult
from kiln.queries import discussions as finder
from kiln.queries.notes import NoteRow
from kiln.queries.users import UserRow
from kiln.schemas.discussions import (
    DiscussionCreate,
    DiscussionList,
    DiscussionNoteUpdate,
    DiscussionReply,
    DiscussionResolve,
)
from kiln.services import notes, subjects
from kiln.services.notes import DISCUSSION_NOTE, OneNote
from kiln.services.subjects import Kind, Noteable
from kiln.services.system_notes import new_discussion_id


@dataclass(slots=True)
class Thread:
    id: str
    notes: list[NoteRow]


@dataclass(slots=True)
class Threads:
    page: PageResult  # items: Thread
    users: dict[int, UserRow]
    noteable: Noteable


@dataclass(slots=True)
class OneThread:
    thread: Thread
    users: dict[int, UserRow]
    noteable: Noteable


def _grouped(ids: list[str], rows: list[NoteRow]) -> list[Thread]:
    by_id: dict[str, list[NoteRow]] = {i: [] for i in ids}
    for row in rows:
        by_id[row.discussion_id].append(row)
    return [Thread(i, by_id[i]) for i in ids if by_id[i]]


def _thread(db: Session, actor: Actor | None, n: Noteable, discussion_id: str) -> Thread:
    """The thread's notes the caller may read; none is the 404 "Discussion"."""
    rows = finder.thread_notes(
        db, n.kind.noteable_type, n.id, [discussion_id], internal=notes.sees_internal(actor, n)
    )
    rows = notes.shown(db, actor, n, rows)
    if not rows:
        raise NotFound("Discussion")
    return Thread(discussion_id, rows)


def _one(db: Session, actor: Actor | None, n: Noteable, discussion_id: str) -> OneThread:
    thread = _thread(db, actor, n, discussion_id)
    return OneThread(thread, notes.users_of(db, thread.notes), n)


# ----------------------------------------------------------------------------- reading


def list_discussions(
    db: Session, actor: Actor | None, kind: Kind, q: DiscussionList, page: Page, *, by_id: bool
) -> Threads:
    """The noteable's threads in the order they began, each with its notes oldest first."""
    n = subjects.noteable(db, actor, kind, q.id, q.ref, by_id=by_id)
    result, rows = finder.page_of_threads(
        db, kind.noteable_type, n.id, page, internal=notes.sees_internal(actor, n)
    )
    rows = notes.shown(db, actor, n, rows)
    result.items = _grouped(result.items, rows)
    return Threads(result, notes.users_of(db, rows), n)


def get_discussion(
    db: Session, actor: Actor | None, kind: Kind, ident: str, ref: int, discussion_id: str, *, by_id: bool
) -> OneThread:
    return _one(db, actor, subjects.noteable(db, actor, kind, ident, ref, by_id=by_id), discussion_id)


def get_discussion_note(
    db: Session, actor: Actor | None, kind: Kind, ident: str, ref: int, note_id: int, *, by_id: bool
) -> OneNote:
    """A note of the noteable (found by id, as GitLab finds it, whatever thread is named)."""
    return notes.get_note(db, actor, kind, ident, ref, note_id, by_id=by_id)


# ----------------------------------------------------------------------------- writing


def create_discussion(
    db: Session, actor: Actor, kind: Kind, p: DiscussionCreate, *, by_id: bool
) -> OneThread:
    """A new thread: its first note is a `DiscussionNote` others reply to."""
    n = subjects.noteable(db, actor, kind, p.id, p.ref, by_id=by_id)
    discussion_id = new_discussion_id()
    with transaction(db):
        notes.add_note(
            db,
            actor,
            n,
            p.body,
            created_at=p.created_at,
            note_type=DISCUSSION_NOTE,
            discussion_id=discussion_id,
        )
    return _one(db, actor, n, discussion_id)


def reply(db: Session, actor: Actor, kind: Kind, p: DiscussionReply, *, by_id: bool) -> OneNote:
    """A reply in a thread; replying to a person's individual note makes it a thread first.
    The system's own notes take no replies."""
    n = subjects.noteable(db, actor, kind, p.id, p.ref, by_id=by_id)
    thread = _thread(db, actor, n, p.discussion_id)
    first = thread.notes[0]
    if first.type is None and first.system:
        raise BadRequest("Discussion can not be replied to.")
    notes.check_may_comment(actor, n)
    notes.check_body(p.body)
    with transaction(db):
        if first.type is None:
            db.execute(
                update(Note)
                .where(
                    Note.noteable_type == kind.noteable_type,
                    Note.noteable_id == n.id,
                    Note.discussion_id == p.discussion_id,
                )
                .values(type=DISCUSSION_NOTE),
                execution_options={"synchronize_session": False},
            )
        note_id = notes.add_note(
            db,
            actor,
            n,
            p.body,
            created_at=p.created_at,
            note_type=DISCUSSION_NOTE,
            discussion_id=p.discussion_id,
            internal=bool(first.internal),
        )
    return notes.one(db, actor, n, note_id)


def _set_resolved(db: Session, actor: Actor, note_ids: list[int], resolved: bool) -> None:
    db.execute(
        update(Note)
        .where(Note.id.in_(note_ids), Note.resolvable.is_(True))
        .values(
            resolved_at=utcnow() if resolved else None,
            resolved_by_id=actor.id if resolved else None,
        ),
        execution_options={"synchronize_session": False},
    )


def update_discussion_note(
    db: Session, actor: Actor, kind: Kind, p: DiscussionNoteUpdate, *, by_id: bool
) -> OneNote:
    """A note's text, or whether it is resolved (only a resolvable note is)."""
    n = subjects.noteable(db, actor, kind, p.id, p.ref, by_id=by_id)
    if p.resolved is None:
        with transaction(db):
            notes.change_note(db, actor, n, p.note_id, p.body)
        return notes.one(db, actor, n, p.note_id)
    row = notes.readable_note(db, actor, n, p.note_id)
    if not policy.may_resolve_note(actor, n.subject, n.author_id):
        raise Forbidden()
    if not row.resolvable:
        raise BadRequest("Note is not resolvable")
    with transaction(db):
        _set_resolved(db, actor, [row.id], p.resolved)
    return notes.one(db, actor, n, p.note_id)


def delete_discussion_note(
    db: Session, actor: Actor, kind: Kind, ident: str, ref: int, note_id: int, *, by_id: bool
) -> None:
    notes.delete_note(db, actor, kind, ident, ref, note_id, by_id=by_id)


def resolve_discussion(
    db: Session, actor: Actor, kind: Kind, p: DiscussionResolve, *, by_id: bool
) -> OneThread:
    """Resolve (or reopen) every resolvable note of a thread: 403 when the thread is not
    resolvable or the caller may not resolve it."""
    n = subjects.noteable(db, actor, kind, p.id, p.ref, by_id=by_id)
    thread = _thread(db, actor, n, p.discussion_id)
    resolvable = [r.id for r in thread.notes if r.resolvable]
    if not resolvable or not policy.may_resolve_note(actor, n.subject, n.author_id):
        raise Forbidden()
    with transaction(db):
        _set_resolved(db, actor, resolvable, p.resolved)
    return _one(db, actor, n, p.discussion_id)
