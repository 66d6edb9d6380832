"""Epics: group-level plans that hold issues (EpicIssue) and child epics (parent_id)."""

from __future__ import annotations

from datetime import date, datetime

from sqlalchemy import ForeignKey, Index, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from kiln.models.base import Base, Timestamps, contribution, never_reuse_ids
from kiln.models.notes import Discussed

OPENED, CLOSED = "opened", "closed"


class Epic(Discussed, Timestamps, Base):
    __tablename__ = "epics"
    __table_args__ = (
        UniqueConstraint("group_id", "iid"),
        Index("ix_epics_group_created", "group_id", "created_at", "id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    iid: Mapped[int]
    group_id: Mapped[int] = mapped_column(ForeignKey("namespaces.id", ondelete="CASCADE"))
    author_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), info=contribution()
    )
    parent_id: Mapped[int | None] = mapped_column(ForeignKey("epics.id", ondelete="SET NULL"), index=True)
    title: Mapped[str] = mapped_column(String(255))
    description: Mapped[str | None] = mapped_column(Text)
    state: Mapped[str] = mapped_column(String(16), default=OPENED)
    confidential: Mapped[bool] = mapped_column(default=False)
    closed_at: Mapped[datetime | None]
    closed_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    # Dates are either fixed (set by hand) or inherited from the milestones of the epic's
    # issues and child epics; start_date / due_date hold whichever applies.
    start_date_is_fixed: Mapped[bool] = mapped_column(default=False)
    start_date_fixed: Mapped[date | None]
    due_date_is_fixed: Mapped[bool] = mapped_column(default=False)
    due_date_fixed: Mapped[date | None]
    start_date: Mapped[date | None]
    due_date: Mapped[date | None]
    start_date_sourcing_milestone_id: Mapped[int | None] = mapped_column(
        ForeignKey("milestones.id", ondelete="SET NULL")
    )
    due_date_sourcing_milestone_id: Mapped[int | None] = mapped_column(
        ForeignKey("milestones.id", ondelete="SET NULL")
    )
    relative_position: Mapped[int | None]


class EpicIssue(Timestamps, Base):
    """An issue in an epic (an issue belongs to one epic at most)."""

    __tablename__ = "epic_issues"

    id: Mapped[int] = mapped_column(primary_key=True)
    epic_id: Mapped[int] = mapped_column(ForeignKey("epics.id", ondelete="CASCADE"), index=True)
    issue_id: Mapped[int] = mapped_column(ForeignKey("issues.id", ondelete="CASCADE"), unique=True)
    relative_position: Mapped[int | None]


never_reuse_ids(Epic)
