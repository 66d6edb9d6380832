"""Notes (comments) on issues, merge requests and epics, and the note writes that threads
(discussions) share.

Which things take notes is one table (KINDS): each kind names its parent (a project or a
group), its path, how its subject is loaded, and whether its threads can be resolved; merge
requests and snippets join by adding a row and a loader. Reading a note takes reading its
noteable, and internal notes take a Reporter; writing takes GitLab's create_note (may_comment:
a locked discussion takes a Reporter), changing or deleting GitLab's admin_note. A note that a
person writes counts in its noteable's user_notes_count, kept in the note's transaction."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import case, delete, update
from sqlalchemy.orm import Session

from kiln import events, policy, references
from kiln.auth.actor import Actor
from kiln.db import transaction
from kiln.errors import BadRequest, Forbidden, NotFound
from kiln.models import AwardEmoji, Note
from kiln.models.base import utcnow
from kiln.models.notes import NOTE
from kiln.pagination import Page, PageResult
from kiln.policy import ProjectSubject
from kiln.queries import notes as finder
from kiln.queries import users as user_finder
from kiln.queries.notes import NoteRow
from kiln.queries.users import UserRow
from kiln.schemas.notes import BODY_LIMIT, NoteCreate, NoteList, NoteUpdate
from kiln.services import cross_references, mentions
from kiln.services.subjects import Kind, Noteable, noteable
from kiln.services.system_notes import new_discussion_id

DISCUSSION_NOTE = "DiscussionNote"
DIFF_NOTE = "DiffNote"


def sees_internal(actor: Actor | None, n: Noteable) -> bool:
    """Internal notes are for those who see confidential issues (Reporters and up)."""
    return policy.sees_confidential(actor, n.subject)


# ----------------------------------------------------------------------------- reading


@dataclass(slots=True)
class Notes:
    page: PageResult  # items: NoteRow
    users: dict[int, UserRow]
    noteable: Noteable


@dataclass(slots=True)
class OneNote:
    row: NoteRow
    users: dict[int, UserRow]
    noteable: Noteable


def users_of(db: Session, rows: Iterable[NoteRow]) -> dict[int, UserRow]:
    """The authors (and resolvers) of the notes, in one statement."""
    ids: list[int] = []
    for r in rows:
        ids.extend(i for i in (r.author_id, r.resolved_by_id) if i is not None and i not in ids)
    return {u.id: u for u in user_finder.rows_by_ids(db, ids)}


def shown(db: Session, actor: Actor | None, n: Noteable, rows: list[NoteRow]) -> list[NoteRow]:
    """The notes the caller is shown: a system note naming an issue or epic hidden from them
    (a link, a move, a clone across projects) is left out, as GitLab leaves it out; the names
    of a page's notes are looked up together."""
    system = [r for r in rows if r.system]
    if not system:
        return rows
    scope = {"project": n.subject} if isinstance(n.subject, ProjectSubject) else {"group": n.subject}
    refs = references.References(db, actor, "", **scope)
    refs.prefetch(r.body for r in system)
    return [r for r in rows if not (r.system and refs.hides_any(r.body))]


def readable_note(db: Session, actor: Actor | None, n: Noteable, note_id: int) -> NoteRow:
    row = finder.note_of(db, n.kind.noteable_type, n.id, note_id, internal=sees_internal(actor, n))
    if row is None or not shown(db, actor, n, [row]):
        raise NotFound("Note")
    return row


def one(db: Session, actor: Actor | None, n: Noteable, note_id: int) -> OneNote:
    row = readable_note(db, actor, n, note_id)
    return OneNote(row, users_of(db, [row]), n)


def list_notes(
    db: Session, actor: Actor | None, kind: Kind, q: NoteList, page: Page, *, by_id: bool
) -> Notes:
    """The noteable's notes, newest first unless asked otherwise."""
    n = noteable(db, actor, kind, q.id, q.ref, by_id=by_id)
    result = finder.page_of_noteable(
        db,
        kind.noteable_type,
        n.id,
        page,
        order_by=q.order_by,
        sort=q.sort or "desc",
        activity=q.activity_filter,
        internal=sees_internal(actor, n),
    )
    result.items = shown(db, actor, n, result.items)
    return Notes(result, users_of(db, result.items), n)


def get_note(
    db: Session, actor: Actor | None, kind: Kind, ident: str, ref: int, note_id: int, *, by_id: bool
) -> OneNote:
    return one(db, actor, noteable(db, actor, kind, ident, ref, by_id=by_id), note_id)


# ----------------------------------------------------------------------------- writing


def check_body(body: str) -> None:
    """GitLab's Note validations on its text, in its words."""
    if not body.strip():
        raise BadRequest('Note {:note=>["can\'t be blank"]}')
    if len(body) > BODY_LIMIT:
        raise BadRequest(f'Note {{:note=>["is too long (maximum is {BODY_LIMIT} characters)"]}}')


def resolvable_type(n: Noteable, note_type: str | None) -> bool:
    """Whether a note of `note_type` on `n` can be resolved: a thread's notes where threads
    resolve (GitLab's DiscussionNote and DiffNote on a merge request)."""
    return n.kind.resolvable and note_type in (DISCUSSION_NOTE, DIFF_NOTE)


def check_may_comment(actor: Actor, n: Noteable) -> None:
    if not policy.may_comment(actor, n.subject, n.locked, reads=n.kind.reads):
        raise Forbidden()


def _count_notes(db: Session, n: Noteable, delta: int, *, touch: bool) -> None:
    """Keep the noteable's user_notes_count (never below zero); a new note also touches it."""
    model = type(n.model)
    count = (
        model.user_notes_count + delta
        if delta > 0
        else case((model.user_notes_count > 0, model.user_notes_count + delta), else_=0)
    )
    values: dict[str, object] = {"user_notes_count": count}
    if touch:
        values["updated_at"] = utcnow()
    db.execute(
        update(model).where(model.id == n.id).values(**values),
        execution_options={"synchronize_session": False},
    )


def add_note(
    db: Session,
    actor: Actor,
    n: Noteable,
    body: str,
    *,
    internal: bool = False,
    created_at: datetime | None = None,
    note_type: str | None = None,
    discussion_id: str | None = None,
    position: dict[str, Any] | None = None,
    commit_id: str | None = None,
) -> int:
    """A person's note on the noteable, in the caller's transaction: counted, its mentions
    turned into to-dos, and its `commented` event recorded. Checks come first. A thread's
    note on a kind whose threads resolve (merge requests) is resolvable; an individual note
    is not, as in GitLab."""
    check_may_comment(actor, n)
    if internal and not sees_internal(actor, n):
        raise Forbidden()
    check_body(body)
    when = created_at if created_at is not None and policy.may_backdate(actor, n.subject) else None
    note = Note(
        noteable_type=n.kind.noteable_type,
        noteable_id=n.id,
        author_id=actor.id,
        body=body,
        type=note_type,
        internal=internal,
        discussion_id=discussion_id or new_discussion_id(),
        resolvable=resolvable_type(n, note_type),
        position=position,
        commit_id=commit_id,
        **n.owner,
    )
    if when is not None:
        note.created_at = note.updated_at = when
    db.add(note)
    db.flush()
    _count_notes(db, n, 1, touch=True)
    mentions.record(
        db, actor, body, target_type=n.kind.noteable_type, target_id=n.id, note_id=note.id, **n.owner
    )
    if not internal:
        _cross_reference(db, actor, n, body)
    _event(db, actor, n, "commented", "create", note.id, internal=internal)
    return note.id


def _cross_reference(db: Session, actor: Actor, n: Noteable, body: str, previous: str | None = None) -> None:
    """What a note on an issue or merge request names is noted as mentioned in that one (an
    internal note's never: the note would tell of it)."""
    if isinstance(n.subject, ProjectSubject):
        cross_references.record(
            db,
            actor,
            body,
            kind=n.kind.noteable_type,
            target_id=n.id,
            iid=n.iid,
            subject=n.subject,
            previous_text=previous,
        )


def _event(
    db: Session, actor: Actor, n: Noteable, action: str, hook_action: str, note_id: int, *, internal: bool
) -> None:
    data: dict[str, object] = {
        "hook": "confidential_note" if internal or n.confidential else "note",
        "hook_action": hook_action,
        "noteable_type": n.kind.noteable_type,
        "iid": n.iid,
    }
    if n.group_id is not None:
        data["group_id"] = n.group_id
    events.record(
        db, action, project_id=n.project_id, actor=actor, target_type=NOTE, target_id=note_id, data=data
    )


def writable_note(db: Session, actor: Actor, n: Noteable, note_id: int) -> Note:
    """A note the caller may change or delete: 404 when unseen, 403 for a system note or
    another's note without admin_note."""
    readable_note(db, actor, n, note_id)
    note = db.get(Note, note_id)
    if note is None:
        raise NotFound("Note")
    if note.system or not policy.may_admin_note(actor, n.subject, note.author_id):
        raise Forbidden()
    return note


def change_note(db: Session, actor: Actor, n: Noteable, note_id: int, body: str | None) -> None:
    """A note's new text (nothing given: unchanged), in the caller's transaction."""
    note = writable_note(db, actor, n, note_id)
    if body is None or body == note.body:
        return
    check_body(body)
    previous = note.body
    now = utcnow()
    note.body = body
    note.updated_at = note.last_edited_at = now
    note.updated_by_id = actor.id
    db.flush()
    mentions.record(
        db,
        actor,
        body,
        target_type=n.kind.noteable_type,
        target_id=n.id,
        note_id=note.id,
        previous_text=previous,
        **n.owner,
    )
    if not note.internal:
        _cross_reference(db, actor, n, body, previous)
    _event(db, actor, n, "updated", "update", note.id, internal=note.internal)


def remove_note(db: Session, actor: Actor, n: Noteable, note_id: int) -> None:
    """Delete a note and its award emoji, uncounting it, in the caller's transaction."""
    note = writable_note(db, actor, n, note_id)
    db.execute(
        delete(AwardEmoji).where(AwardEmoji.awardable_type == NOTE, AwardEmoji.awardable_id == note.id),
        execution_options={"synchronize_session": False},
    )
    db.delete(note)
    db.flush()
    _count_notes(db, n, -1, touch=False)


def create_note(db: Session, actor: Actor, kind: Kind, p: NoteCreate, *, by_id: bool) -> OneNote:
    n = noteable(db, actor, kind, p.id, p.ref, by_id=by_id)
    with transaction(db):
        note_id = add_note(
            db,
            actor,
            n,
            p.body,
            internal=bool(p.internal or p.confidential),
            created_at=p.created_at,
        )
    return one(db, actor, n, note_id)


def update_note(db: Session, actor: Actor, kind: Kind, p: NoteUpdate, *, by_id: bool) -> OneNote:
    n = noteable(db, actor, kind, p.id, p.ref, by_id=by_id)
    with transaction(db):
        change_note(db, actor, n, p.note_id, p.body)
    return one(db, actor, n, p.note_id)


def delete_note(
    db: Session, actor: Actor, kind: Kind, ident: str, ref: int, note_id: int, *, by_id: bool
) -> None:
    n = noteable(db, actor, kind, ident, ref, by_id=by_id)
    with transaction(db):
        remove_note(db, actor, n, note_id)
