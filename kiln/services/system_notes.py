"""System notes: what kiln writes in an issue's (epic's) thread when its state, labels,
milestone, assignees or other fields change, as GitLab's SystemNoteService words them.
Written in the transaction of the change; they count in no user_notes_count."""

from __future__ import annotations

import secrets

from sqlalchemy.orm import Session

from kiln.auth.actor import Actor
from kiln.models import Note


def new_discussion_id() -> str:
    """A thread's id: 40 hex characters, as GitLab's discussion ids are."""
    return secrets.token_hex(20)


def add(
    db: Session,
    actor: Actor | None,
    *,
    noteable_type: str,
    noteable_id: int,
    body: str,
    project_id: int | None = None,
    group_id: int | None = None,
) -> Note:
    note = Note(
        noteable_type=noteable_type,
        noteable_id=noteable_id,
        project_id=project_id,
        group_id=group_id,
        author_id=actor.id if actor is not None else None,
        body=body,
        system=True,
        discussion_id=new_discussion_id(),
    )
    db.add(note)
    return note
