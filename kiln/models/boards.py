"""Issue boards of a project or a group, their scope (milestone, assignee, labels, weight)
and their lists (a label's, an assignee's, a milestone's; backlog and closed)."""

from __future__ import annotations

from sqlalchemy import CheckConstraint, ForeignKey, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from kiln.models.base import Base, Timestamps, never_reuse_ids

BACKLOG, LABEL, CLOSED, ASSIGNEE, MILESTONE, ITERATION = 0, 1, 2, 3, 4, 5
LIST_TYPES = {
    BACKLOG: "backlog",
    LABEL: "label",
    CLOSED: "closed",
    ASSIGNEE: "assignee",
    MILESTONE: "milestone",
}


class Board(Timestamps, Base):
    __tablename__ = "boards"
    __table_args__ = (CheckConstraint("(project_id IS NULL) <> (group_id IS NULL)", name="one_owner"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int | None] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    group_id: Mapped[int | None] = mapped_column(ForeignKey("namespaces.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(255), default="Development")
    milestone_id: Mapped[int | None] = mapped_column(ForeignKey("milestones.id", ondelete="SET NULL"))
    assignee_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    weight: Mapped[int | None]
    hide_backlog_list: Mapped[bool] = mapped_column(default=False)
    hide_closed_list: Mapped[bool] = mapped_column(default=False)


class BoardLabel(Base):
    __tablename__ = "board_labels"
    __table_args__ = (UniqueConstraint("board_id", "label_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    board_id: Mapped[int] = mapped_column(ForeignKey("boards.id", ondelete="CASCADE"), index=True)
    label_id: Mapped[int] = mapped_column(ForeignKey("labels.id", ondelete="CASCADE"), index=True)


class BoardList(Timestamps, Base):
    __tablename__ = "lists"

    id: Mapped[int] = mapped_column(primary_key=True)
    board_id: Mapped[int] = mapped_column(ForeignKey("boards.id", ondelete="CASCADE"), index=True)
    list_type: Mapped[int] = mapped_column(default=LABEL)
    label_id: Mapped[int | None] = mapped_column(ForeignKey("labels.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    milestone_id: Mapped[int | None] = mapped_column(ForeignKey("milestones.id", ondelete="CASCADE"))
    position: Mapped[int | None]


never_reuse_ids(Board)
never_reuse_ids(BoardList)
