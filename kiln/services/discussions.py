"""Threads (GitLab's discussions) on issues, merge requests and epics: every note grouped by
its discussion id. A note written alone is an individual note (type null); a thread started
as one, or a reply, is a `DiscussionNote`, and replying to an individual note turns it into a
thread as GitLab does. A merge request's thread may sit on a place of its diff (a `DiffNote`
with the position, checked against the merge request's diff versions and the diff itself).
Resolving works on the notes' resolvable and resolved fields, for the kinds whose threads
resolve (none of issues' and epics', as in GitLab: merge requests'); resolving a thread
resolves each of its notes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pygit2
from sqlalchemy import update
from sqlalchemy.orm import Session

from kiln import policy
from kiln.auth.actor import Actor
from kiln.config import Settings
from kiln.db import transaction
from kiln.errors import BadRequest, Forbidden, NotFound
from kiln.git import diffs as git_diffs
from kiln.models import Note
from kiln.models.base import utcnow
from kiln.models.notes import MERGE_REQUEST
from kiln.pagination import Page, PageResult
from kiln.queries import discussions as finder
from kiln.queries.notes import NoteRow
from kiln.queries.users import UserRow
from kiln.schemas.discussions import (
    DiffPosition,
    DiscussionCreate,
    DiscussionList,
    DiscussionNoteUpdate,
    DiscussionReply,
    DiscussionResolve,
)
from kiln.services import merge_request_diffs, notes, subjects
from kiln.services.notes import DIFF_NOTE, DISCUSSION_NOTE, OneNote
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


# GitLab's answer to a diff position that names no line of the diff (its DiffNote's line_code
# validation), whatever is wrong with it: shas of no version, a file or line not in the diff.
INVALID_POSITION = 'Note {:line_code=>["can\'t be blank", "must be a valid line code"]}'


def _refs_known(db: Session, n: Noteable, pos: DiffPosition, commit_id: str | None) -> bool:
    """The position's shas are those of one of the merge request's diff versions, or, for a
    thread on one of its commits, that commit (head; its parent is checked with the diff)."""
    if commit_id is not None:
        return pos.head_sha == commit_id and finder.has_commit(db, n.id, commit_id)
    return any(
        pos.base_sha in (base, start) and pos.start_sha == start and pos.head_sha == head
        for base, start, head in finder.version_refs(db, n.id)
    )


def _commit(repo: pygit2.Repository, sha: str) -> pygit2.Commit | None:
    """The commit `sha` names (full hex only: never a revision expression)."""
    try:
        found = repo.get(pygit2.Oid(hex=sha))
    except (ValueError, TypeError):
        return None
    return found if isinstance(found, pygit2.Commit) else None


def _diff_lines(
    repo: pygit2.Repository, pos: DiffPosition, commit_id: str | None
) -> set[tuple[int | None, int | None]] | None:
    """The (old_line, new_line) pairs the diff from the position's base to its head shows for
    its file (an added line has no old line, a removed one no new line); None when the file is
    not in that diff (or is too large to show lines), or, on a commit, the base and start are
    not its parent."""
    base, head = _commit(repo, pos.base_sha), _commit(repo, pos.head_sha)
    if base is None or head is None:
        return None
    if commit_id is not None and (pos.start_sha != pos.base_sha or base.id not in head.parent_ids):
        return None
    found = git_diffs.changes(repo, base.tree, head.tree)
    for index, delta in enumerate(found.diff.deltas):
        paths = (delta.old_file.path, delta.new_file.path)
        if (pos.new_path or pos.old_path) not in paths or (pos.old_path or pos.new_path) not in paths:
            continue
        size = git_diffs.blob_size(repo, delta.old_file.id) + git_diffs.blob_size(repo, delta.new_file.id)
        if size > git_diffs.IN_PROCESS_BYTES:
            return None
        patch = found.diff[index]
        lines: set[tuple[int | None, int | None]] = set()
        for hunk in patch.hunks if patch is not None else ():
            for line in hunk.lines:
                old_line = line.old_lineno if line.old_lineno > 0 else None
                new_line = line.new_lineno if line.new_lineno > 0 else None
                lines.add((old_line, new_line))
        return lines
    return None


def _position_view(pos: DiffPosition) -> dict[str, Any]:
    """The position as GitLab keeps and echoes it (its Position#to_h for the type)."""
    view: dict[str, Any] = {
        "base_sha": pos.base_sha,
        "start_sha": pos.start_sha,
        "head_sha": pos.head_sha,
        "old_path": pos.old_path or pos.new_path,
        "new_path": pos.new_path or pos.old_path,
        "position_type": pos.position_type,
    }
    if pos.position_type == "text":
        line_range = None
        if pos.line_range is not None:
            line_range = pos.line_range.model_dump()
        view.update(old_line=pos.old_line, new_line=pos.new_line, line_range=line_range)
    elif pos.position_type == "image":
        view.update(width=pos.width, height=pos.height, x=pos.x, y=pos.y)
    return view


def _checked_position(
    db: Session, settings: Settings | None, n: Noteable, pos: DiffPosition, commit_id: str | None
) -> dict[str, Any]:
    """The position of a new diff thread, if it names a place on the merge request's diff;
    otherwise GitLab's 400."""
    if not (pos.new_path or pos.old_path) or settings is None or not _refs_known(db, n, pos, commit_id):
        raise BadRequest(INVALID_POSITION)
    if pos.position_type == "text" and pos.new_line is None and pos.old_line is None:
        raise BadRequest(INVALID_POSITION)
    repo = merge_request_diffs.target_repository(settings, n.model)  # type: ignore[arg-type]
    lines = _diff_lines(repo, pos, commit_id)
    if lines is None or (pos.position_type == "text" and (pos.old_line, pos.new_line) not in lines):
        raise BadRequest(INVALID_POSITION)
    return _position_view(pos)


def create_discussion(
    db: Session,
    actor: Actor,
    kind: Kind,
    p: DiscussionCreate,
    *,
    by_id: bool,
    settings: Settings | None = None,
) -> OneThread:
    """A new thread: its first note is a `DiscussionNote` others reply to; on a merge request
    with a `position`, a `DiffNote` on that place of the diff (`settings`: where its
    repository is, to check the place is in the diff)."""
    n = subjects.noteable(db, actor, kind, p.id, p.ref, by_id=by_id)
    note_type, position, commit_id = DISCUSSION_NOTE, None, None
    if kind.noteable_type == MERGE_REQUEST:
        notes.check_may_comment(actor, n)
        commit_id = p.commit_id
        if p.position is not None:
            note_type = DIFF_NOTE
            position = _checked_position(db, settings, n, p.position, commit_id)
        elif commit_id is not None and not finder.has_commit(db, n.id, commit_id):
            raise BadRequest(INVALID_POSITION)
    discussion_id = new_discussion_id()
    with transaction(db):
        notes.add_note(
            db,
            actor,
            n,
            p.body,
            created_at=p.created_at,
            note_type=note_type,
            discussion_id=discussion_id,
            position=position,
            commit_id=commit_id,
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
    # A reply in a diff thread is on the same place of the diff, as GitLab's are.
    note_type = DIFF_NOTE if first.type == DIFF_NOTE else DISCUSSION_NOTE
    with transaction(db):
        if first.type is None:
            db.execute(
                update(Note)
                .where(
                    Note.noteable_type == kind.noteable_type,
                    Note.noteable_id == n.id,
                    Note.discussion_id == p.discussion_id,
                )
                .values(type=DISCUSSION_NOTE, resolvable=notes.resolvable_type(n, DISCUSSION_NOTE)),
                execution_options={"synchronize_session": False},
            )
        note_id = notes.add_note(
            db,
            actor,
            n,
            p.body,
            created_at=p.created_at,
            note_type=note_type,
            discussion_id=p.discussion_id,
            internal=bool(first.internal),
            position=first.position if note_type == DIFF_NOTE else None,
            commit_id=first.commit_id,
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
