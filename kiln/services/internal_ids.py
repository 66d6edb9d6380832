"""Per-scope iids (a project's issues and milestones, a group's epics and milestones): one
UPDATE … RETURNING on the scope's counter inside the transaction that inserts the row. The
row lock (PostgreSQL) or the single writer (SQLite) orders concurrent creators across
processes and nodes, and a rolled-back insert gives its number back, so iids stay unique
and gap-free."""

from __future__ import annotations

from typing import Any

from sqlalchemy import case, func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from kiln.models import Epic, InternalId, Issue, MergeRequest, Milestone, Pipeline

# usage → (model, column naming its scope)
USAGES: dict[str, tuple[Any, Any]] = {
    "issues": (Issue, Issue.project_id),
    "milestones": (Milestone, Milestone.project_id),
    "group_milestones": (Milestone, Milestone.group_id),
    "epics": (Epic, Epic.group_id),
    "ci_pipelines": (Pipeline, Pipeline.project_id),
    "merge_requests": (MergeRequest, MergeRequest.project_id),
}


def _set(db: Session, usage: str, scope_id: int, value: Any) -> int | None:
    stmt = (
        update(InternalId)
        .where(InternalId.usage == usage, InternalId.scope_id == scope_id)
        .values(last_value=value)
        .returning(InternalId.last_value)
    )
    return db.execute(stmt, execution_options={"synchronize_session": False}).scalar()


def _bump(db: Session, usage: str, scope_id: int) -> int | None:
    return _set(db, usage, scope_id, InternalId.last_value + 1)


def _seed(db: Session, usage: str, scope_id: int) -> None:
    """The scope's counter, started at the highest iid already there (rows written before the
    counter existed), unless another transaction made it first."""
    model, scope_column = USAGES[usage]
    highest = select(func.coalesce(func.max(model.iid), 0)).where(scope_column == scope_id).scalar_subquery()
    insert = postgresql.insert if db.get_bind().dialect.name == "postgresql" else sqlite.insert
    stmt = (
        insert(InternalId).values(usage=usage, scope_id=scope_id, last_value=highest).on_conflict_do_nothing()
    )
    db.execute(stmt)


def next_iid(db: Session, usage: str, scope_id: int) -> int:
    """The next iid of `usage` in the scope, taken in the caller's (write) transaction."""
    value = _bump(db, usage, scope_id)
    if value is None:
        _seed(db, usage, scope_id)
        value = _bump(db, usage, scope_id)
    assert value is not None
    return int(value)


def track(db: Session, usage: str, scope_id: int, iid: int) -> None:
    """An iid given by hand (imports): later ones are handed out above it."""
    raised = case((InternalId.last_value < iid, iid), else_=InternalId.last_value)
    if _set(db, usage, scope_id, raised) is None:
        _seed(db, usage, scope_id)
        _set(db, usage, scope_id, raised)
