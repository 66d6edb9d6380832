"""Epic reads."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from kiln.models import Epic


def subject_row(db: Session, group_id: int, ref: int, *, by_id: bool = False) -> Epic | None:
    """The group's epic by iid (or by global id with `by_id`), the model, or None."""
    key = Epic.id if by_id else Epic.iid
    return db.scalars(select(Epic).where(Epic.group_id == group_id, key == ref)).first()
