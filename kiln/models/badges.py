"""Badges: a link and an image shown on a project, set on the project or on a group (whose
badges every project below it shows as well)."""

from __future__ import annotations

from sqlalchemy import CheckConstraint, ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from kiln.models.base import Base, Timestamps, never_reuse_ids


class Badge(Timestamps, Base):
    __tablename__ = "badges"
    # A badge belongs to exactly one project or one group.
    __table_args__ = (CheckConstraint("(project_id IS NULL) <> (group_id IS NULL)", name="one_source"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int | None] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    group_id: Mapped[int | None] = mapped_column(ForeignKey("namespaces.id", ondelete="CASCADE"), index=True)
    name: Mapped[str | None] = mapped_column(String(255))
    link_url: Mapped[str] = mapped_column(Text)
    image_url: Mapped[str] = mapped_column(Text)


# Clients hold their ids (to get or delete one later): a deleted one's id is never handed out again.
never_reuse_ids(Badge)
