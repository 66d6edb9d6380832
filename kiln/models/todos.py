"""To-do items (what a user is asked to look at) and subscriptions (who hears of changes to
an issue, epic, label or merge request, besides its participants)."""

from __future__ import annotations

from sqlalchemy import ForeignKey, Index, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from kiln.models.base import Base, Timestamps, contribution, never_reuse_ids

PENDING, DONE = "pending", "done"
# GitLab's Todo actions (their numbers and the API's action_name).
ASSIGNED, MENTIONED, BUILD_FAILED, MARKED, APPROVAL_REQUIRED, UNMERGEABLE, DIRECTLY_ADDRESSED = (
    1,
    2,
    3,
    4,
    5,
    6,
    7,
)
MERGE_TRAIN_REMOVED, REVIEW_REQUESTED, MEMBER_ACCESS_REQUESTED, REVIEW_SUBMITTED = 8, 9, 10, 11
ACTION_NAMES = {
    ASSIGNED: "assigned",
    MENTIONED: "mentioned",
    BUILD_FAILED: "build_failed",
    MARKED: "marked",
    APPROVAL_REQUIRED: "approval_required",
    UNMERGEABLE: "unmergeable",
    DIRECTLY_ADDRESSED: "directly_addressed",
    MERGE_TRAIN_REMOVED: "merge_train_removed",
    REVIEW_REQUESTED: "review_requested",
    MEMBER_ACCESS_REQUESTED: "member_access_requested",
    REVIEW_SUBMITTED: "review_submitted",
}


class Todo(Timestamps, Base):
    __tablename__ = "todos"
    __table_args__ = (
        Index("ix_todos_user_state", "user_id", "state", "id"),
        Index("ix_todos_target", "target_type", "target_id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    author_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), info=contribution()
    )
    project_id: Mapped[int | None] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    group_id: Mapped[int | None] = mapped_column(ForeignKey("namespaces.id", ondelete="CASCADE"), index=True)
    target_type: Mapped[str] = mapped_column(String(32))
    target_id: Mapped[int]
    action: Mapped[int]
    state: Mapped[str] = mapped_column(String(16), default=PENDING)
    body: Mapped[str | None] = mapped_column(Text)
    note_id: Mapped[int | None] = mapped_column(ForeignKey("notes.id", ondelete="CASCADE"))
    commit_id: Mapped[str | None] = mapped_column(String(64))


class Subscription(Timestamps, Base):
    """A user's explicit choice to hear of (subscribed) or ignore (not) changes to a target."""

    __tablename__ = "subscriptions"
    __table_args__ = (UniqueConstraint("subscribable_type", "subscribable_id", "user_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    subscribable_type: Mapped[str] = mapped_column(String(32))
    subscribable_id: Mapped[int]
    project_id: Mapped[int | None] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    subscribed: Mapped[bool] = mapped_column(default=True)


never_reuse_ids(Todo)
