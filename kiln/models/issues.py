"""Issues and what hangs directly off them: assignees, links between issues, and time logs.
Labels, notes, award emoji, subscriptions, todos and resource events are shared with epics
and merge requests and live in their own modules, keyed by (target type, target id)."""

from __future__ import annotations

from datetime import date, datetime

from sqlalchemy import BigInteger, ForeignKey, Index, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from kiln.models.base import Base, Timestamps, contribution, never_reuse_ids, utcnow
from kiln.models.notes import Discussed

OPENED, CLOSED = "opened", "closed"
ISSUE_TYPES = ("issue", "incident", "test_case", "task")
# What an issue link says of its source (`is_blocked_by` is stored as `blocks` turned round).
RELATES_TO, BLOCKS, IS_BLOCKED_BY = "relates_to", "blocks", "is_blocked_by"


class InternalId(Base):
    """The last iid handed out per scope and usage (a project's issues, a group's epics):
    taken with one UPDATE in the transaction that inserts the row, so iids are unique and
    gap-free across processes and nodes (a rolled-back insert gives its iid back)."""

    __tablename__ = "internal_ids"

    usage: Mapped[str] = mapped_column(String(32), primary_key=True)
    scope_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    last_value: Mapped[int] = mapped_column(BigInteger, default=0)


class TimeTracked:
    """An issue's or merge request's time tracking, in seconds; total_time_spent is the sum of
    its time logs, kept with each log."""

    time_estimate: Mapped[int] = mapped_column(default=0)
    total_time_spent: Mapped[int] = mapped_column(default=0)


class Issue(TimeTracked, Discussed, Timestamps, Base):
    __tablename__ = "issues"
    __table_args__ = (
        UniqueConstraint("project_id", "iid"),
        # The lists' default order per state, and the other orders a list walks.
        Index("ix_issues_project_state_created", "project_id", "state", "created_at", "id"),
        Index("ix_issues_project_created", "project_id", "created_at", "id"),
        Index("ix_issues_project_updated", "project_id", "updated_at", "id"),
        Index("ix_issues_author_created", "author_id", "created_at", "id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    iid: Mapped[int]
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    author_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), info=contribution()
    )
    title: Mapped[str] = mapped_column(String(255))
    description: Mapped[str | None] = mapped_column(Text)
    state: Mapped[str] = mapped_column(String(16), default=OPENED)
    issue_type: Mapped[str] = mapped_column(String(32), default="issue")
    closed_at: Mapped[datetime | None]
    closed_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    moved_to_id: Mapped[int | None] = mapped_column(ForeignKey("issues.id", ondelete="SET NULL"))
    duplicated_to_id: Mapped[int | None] = mapped_column(ForeignKey("issues.id", ondelete="SET NULL"))
    milestone_id: Mapped[int | None] = mapped_column(
        ForeignKey("milestones.id", ondelete="SET NULL"), index=True
    )
    due_date: Mapped[date | None]
    confidential: Mapped[bool] = mapped_column(default=False)
    discussion_locked: Mapped[bool | None]
    weight: Mapped[int | None]
    relative_position: Mapped[int | None]


class IssueAssignee(Base):
    __tablename__ = "issue_assignees"

    issue_id: Mapped[int] = mapped_column(ForeignKey("issues.id", ondelete="CASCADE"), primary_key=True)
    user_id: Mapped[int] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), primary_key=True, index=True
    )
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class IssueLink(Timestamps, Base):
    """A link from one issue to another: `relates_to` or `blocks` (source blocks target)."""

    __tablename__ = "issue_links"
    __table_args__ = (UniqueConstraint("source_id", "target_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    source_id: Mapped[int] = mapped_column(ForeignKey("issues.id", ondelete="CASCADE"))
    target_id: Mapped[int] = mapped_column(ForeignKey("issues.id", ondelete="CASCADE"), index=True)
    link_type: Mapped[str] = mapped_column(String(16), default=RELATES_TO)


class Timelog(Base):
    """Time spent on an issue or merge request (negative to subtract), as `/spend` adds it."""

    __tablename__ = "timelogs"
    __table_args__ = (Index("ix_timelogs_target", "target_type", "target_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    target_type: Mapped[str] = mapped_column(String(32))
    target_id: Mapped[int]
    project_id: Mapped[int | None] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), info=contribution()
    )
    time_spent: Mapped[int]
    spent_at: Mapped[datetime] = mapped_column(default=utcnow)
    summary: Mapped[str | None] = mapped_column(Text)
    note_id: Mapped[int | None] = mapped_column(ForeignKey("notes.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


# Clients hold issue ids (links, moved_to_id): a deleted issue's id is never handed out again.
never_reuse_ids(Issue)
