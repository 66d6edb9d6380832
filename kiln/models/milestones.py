"""Milestones of a project or a group: a title, dates and a state that issues and merge
requests are planned against."""

from __future__ import annotations

from datetime import date

from sqlalchemy import CheckConstraint, ForeignKey, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from kiln.models.base import Base, Timestamps, never_reuse_ids

ACTIVE, CLOSED = "active", "closed"


class Milestone(Timestamps, Base):
    __tablename__ = "milestones"
    __table_args__ = (
        CheckConstraint("(project_id IS NULL) <> (group_id IS NULL)", name="one_owner"),
        UniqueConstraint("project_id", "iid"),
        UniqueConstraint("group_id", "iid"),
        UniqueConstraint("project_id", "title"),
        UniqueConstraint("group_id", "title"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    iid: Mapped[int]
    project_id: Mapped[int | None] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    group_id: Mapped[int | None] = mapped_column(ForeignKey("namespaces.id", ondelete="CASCADE"), index=True)
    title: Mapped[str] = mapped_column(String(255))
    description: Mapped[str | None] = mapped_column(Text)
    state: Mapped[str] = mapped_column(String(16), default=ACTIVE)
    start_date: Mapped[date | None]
    due_date: Mapped[date | None]


never_reuse_ids(Milestone)
