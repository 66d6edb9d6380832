"""What issues and merge requests (and epics, for the text checks) share: a title that is there
and fits, and a description that fits (GitLab's Issuable validations), before anything is
written; the label scope and milestones a project's issuables may use; and the system notes
and to-dos of their writes (labels, assignees, reviewers), which differ only in the kind of
target (kiln.models.notes: ISSUE, MERGE_REQUEST)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from kiln.auth.actor import Actor
from kiln.errors import ValidationFailed
from kiln.models import Label, Milestone, User
from kiln.models.todos import ASSIGNED, REVIEW_REQUESTED
from kiln.policy import ProjectSubject
from kiln.services import system_notes, todos
from kiln.services.label_links import LabelScope

TITLE_LIMIT = 255
DESCRIPTION_LIMIT = 1_048_576


def validate_text(title: str | None, description: str | None, *, creating: bool) -> None:
    """400 {"message": {"title": [...], "description": [...]}} for a blank or long title (given,
    or needed on creation) and a long description."""
    errors: dict[str, list[str]] = {}
    if title is not None or creating:
        if not (title or "").strip():
            errors["title"] = ["can't be blank"]
        elif len(title or "") > TITLE_LIMIT:
            errors["title"] = [f"is too long (maximum is {TITLE_LIMIT} characters)"]
    if description is not None and len(description) > DESCRIPTION_LIMIT:
        errors["description"] = [f"is too long (maximum is {DESCRIPTION_LIMIT} characters)"]
    if errors:
        raise ValidationFailed(errors)


def now() -> datetime:
    return datetime.now(UTC)


def label_scope(s: ProjectSubject) -> LabelScope:
    """The labels a project's issuables use: its own, then its groups' (nearest first)."""
    ns = s.namespace
    return LabelScope(s.project.id, list(reversed(ns.ancestor_ids)) if ns.is_group else [])


def group_ids(s: ProjectSubject) -> list[int]:
    return list(s.namespace.ancestor_ids) if s.namespace.is_group else []


def usable_milestone(db: Session, s: ProjectSubject, milestone_id: int) -> Milestone | None:
    """A milestone the project may use: its own or one of its groups'."""
    m = db.get(Milestone, milestone_id)
    if m is None:
        return None
    if m.project_id == s.project.id or (m.group_id is not None and m.group_id in group_ids(s)):
        return m
    return None


def usernames(db: Session, ids: list[int]) -> dict[int, str]:
    if not ids:
        return {}
    return dict(db.execute(select(User.id, User.username).where(User.id.in_(ids))).all())


def at(names: dict[int, str], ids: list[int]) -> str:
    """ "@a, @b and @c", as GitLab's system notes name people."""
    return " and ".join(", ".join(f"@{names[i]}" for i in ids if i in names).rsplit(", ", 1))


def note(db: Session, actor: Actor, kind: str, target: Any, body: str) -> None:
    """A system note on `target` (an issue or merge request model) of type `kind`."""
    system_notes.add(
        db, actor, noteable_type=kind, noteable_id=target.id, body=body, project_id=target.project_id
    )


def label_note(
    db: Session, actor: Actor, kind: str, target: Any, added: list[int], removed: list[int]
) -> None:
    """The system note of a label change: `added ~"a" label and removed ~"b" ~"c" labels`."""
    if not added and not removed:
        return
    titles = dict(db.execute(select(Label.id, Label.title).where(Label.id.in_(added + removed))).all())

    def refs(ids: list[int]) -> str:
        noun = "label" if len(ids) == 1 else "labels"
        return " ".join(f'~"{titles[i]}"' for i in ids if i in titles) + f" {noun}"

    parts = []
    if added:
        parts.append(f"added {refs(added)}")
    if removed:
        parts.append(f"removed {refs(removed)}")
    note(db, actor, kind, target, " and ".join(parts))


def set_people(
    db: Session,
    actor: Actor,
    kind: str,
    target: Any,
    table: Any,
    current: list[int],
    wanted: list[int],
    *,
    review: bool = False,
) -> bool:
    """Assign (or, `review`, ask to review) exactly `wanted`: the rows of `table` (keyed by its
    first foreign key column to `target`, then user_id), the system note, ASSIGNED (or
    REVIEW_REQUESTED) to-dos for the new ones. False when nothing changed."""
    added = [i for i in wanted if i not in current]
    removed = [i for i in current if i not in wanted]
    if not added and not removed:
        return False
    owner = _owner_column(table)
    if removed:
        db.execute(
            delete(table).where(getattr(table, owner) == target.id, table.user_id.in_(removed)),
            execution_options={"synchronize_session": False},
        )
    for uid in added:
        db.add(table(**{owner: target.id, "user_id": uid}))
    names = usernames(db, added + removed)
    parts = []
    if review:
        if added:
            parts.append(f"requested review from {at(names, added)}")
        if removed:
            parts.append(f"removed review request for {at(names, removed)}")
    else:
        if added:
            parts.append(f"assigned to {at(names, added)}")
        if removed:
            parts.append(f"unassigned {at(names, removed)}")
    note(db, actor, kind, target, " and ".join(parts))
    for uid in added:
        if uid != actor.id:
            todos.add(
                db,
                user_id=uid,
                author_id=actor.id,
                action=REVIEW_REQUESTED if review else ASSIGNED,
                target_type=kind,
                target_id=target.id,
                project_id=target.project_id,
            )
    return True


def _owner_column(table: Any) -> str:
    """The column of a people table naming what they are on (issue_id, merge_request_id)."""
    for column in table.__table__.c:
        if column.key != "user_id" and column.foreign_keys:
            return str(column.key)
    raise ValueError(table)  # pragma: no cover - every people table has one
