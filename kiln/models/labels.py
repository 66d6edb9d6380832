"""Labels of a project or a group, which issues, epics and merge requests carry (LabelLink);
a project may rank any label it sees (LabelPriority), its own or its groups'."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import CheckConstraint, ForeignKey, Index, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from kiln.models.base import Base, Timestamps, never_reuse_ids, utcnow


class Label(Timestamps, Base):
    __tablename__ = "labels"
    __table_args__ = (
        CheckConstraint("(project_id IS NULL) <> (group_id IS NULL)", name="one_owner"),
        UniqueConstraint("project_id", "title"),
        UniqueConstraint("group_id", "title"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int | None] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    group_id: Mapped[int | None] = mapped_column(ForeignKey("namespaces.id", ondelete="CASCADE"), index=True)
    title: Mapped[str] = mapped_column(String(255))
    color: Mapped[str] = mapped_column(String(7))
    description: Mapped[str | None] = mapped_column(Text)
    lock_on_merge: Mapped[bool] = mapped_column(default=False)


class LabelLink(Base):
    """A label carried by an issue, epic or merge request."""

    __tablename__ = "label_links"
    __table_args__ = (
        UniqueConstraint("label_id", "target_type", "target_id"),
        Index("ix_label_links_target", "target_type", "target_id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    label_id: Mapped[int] = mapped_column(ForeignKey("labels.id", ondelete="CASCADE"))
    target_type: Mapped[str] = mapped_column(String(32))
    target_id: Mapped[int]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class LabelPriority(Base):
    __tablename__ = "label_priorities"
    __table_args__ = (UniqueConstraint("project_id", "label_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    label_id: Mapped[int] = mapped_column(ForeignKey("labels.id", ondelete="CASCADE"), index=True)
    priority: Mapped[int]


never_reuse_ids(Label)
