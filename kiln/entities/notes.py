"""Note views (GitLab's Note entity): the note, its author, what it is about, and whether its
thread is resolved (a diff note: its position on the diff too); a thread (GitLab's Discussion
entity) is its id and its notes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kiln.entities.users import user_basic

if TYPE_CHECKING:
    from kiln.queries.notes import NoteRow
    from kiln.queries.users import UserRow


def _user(user_id: int | None, users: Mapping[int, UserRow], base: str) -> dict[str, Any] | None:
    found = users.get(user_id) if user_id is not None else None
    return user_basic(found, base) if found is not None else None  # type: ignore[arg-type]


def note(row: NoteRow, users: Mapping[int, UserRow], noteable_iid: int | None, base: str) -> dict[str, Any]:
    view: dict[str, Any] = {
        "id": row.id,
        "type": row.type,
        "body": row.body,
        "attachment": None,
        "author": _user(row.author_id, users, base),
        "created_at": row.created_at,
        "updated_at": row.updated_at,
        "system": bool(row.system),
        "noteable_id": row.noteable_id,
        "noteable_type": row.noteable_type,
        "project_id": row.project_id,
        "resolvable": bool(row.resolvable),
        "resolved": bool(row.resolvable) and row.resolved_at is not None,
        "resolved_by": _user(row.resolved_by_id, users, base),
        "resolved_at": row.resolved_at,
        "confidential": bool(row.internal),
        "internal": bool(row.internal),
        "imported": False,
        "imported_from": "none",
        "noteable_iid": noteable_iid,
        "commands_changes": {},
    }
    if row.type == "DiffNote":
        # GitLab shows a diff note's place on the diff (and the commit it is on, if any).
        view["position"] = row.position
        view["commit_id"] = row.commit_id
    return view


def discussion(
    discussion_id: str, rows: list[NoteRow], users: Mapping[int, UserRow], noteable_iid: int | None, base: str
) -> dict[str, Any]:
    """A thread: an individual note is a note no one can reply to in place (type null)."""
    return {
        "id": discussion_id,
        "individual_note": bool(rows) and rows[0].type is None,
        "notes": [note(r, users, noteable_iid, base) for r in rows],
    }
