"""To-do items: what a user is asked to look at (assigned, mentioned, marked by themselves).
Others' writes call `add` and `done_for_target` in their own transaction."""

from __future__ import annotations

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from kiln.models import Todo
from kiln.models.base import utcnow
from kiln.models.todos import DONE, PENDING


def pending_of(db: Session, user_id: int, target_type: str, target_id: int, action: int) -> Todo | None:
    return db.scalars(
        select(Todo).where(
            Todo.user_id == user_id,
            Todo.target_type == target_type,
            Todo.target_id == target_id,
            Todo.action == action,
            Todo.state == PENDING,
        )
    ).first()


def add(
    db: Session,
    *,
    user_id: int,
    author_id: int | None,
    action: int,
    target_type: str,
    target_id: int,
    project_id: int | None = None,
    group_id: int | None = None,
    body: str | None = None,
    note_id: int | None = None,
) -> Todo:
    """A pending to-do for `user_id`, in the caller's transaction (flushed, so it has its id)."""
    todo = Todo(
        user_id=user_id,
        author_id=author_id,
        action=action,
        target_type=target_type,
        target_id=target_id,
        project_id=project_id,
        group_id=group_id,
        body=body,
        note_id=note_id,
        state=PENDING,
    )
    db.add(todo)
    db.flush()
    return todo


def done_for_target(db: Session, target_type: str, target_id: int, *, user_id: int | None = None) -> None:
    """Mark the target's pending to-dos done (all users', or one user's): it was closed,
    deleted, or the user acted on it."""
    stmt = update(Todo).where(
        Todo.target_type == target_type, Todo.target_id == target_id, Todo.state == PENDING
    )
    if user_id is not None:
        stmt = stmt.where(Todo.user_id == user_id)
    db.execute(stmt.values(state=DONE, updated_at=utcnow()), execution_options={"synchronize_session": False})
