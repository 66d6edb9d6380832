"""What the database keeps about repositories: protected branches, commit comments, and
the events (pushes, later issues and merges) that hooks, feeds and CI consume."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, Index, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from kiln.models.base import Base, Timestamps, contribution, utcnow

NO_ACCESS, DEVELOPER_ACCESS, MAINTAINER_ACCESS, ADMIN_ACCESS = 0, 30, 40, 60


class ProtectedBranch(Timestamps, Base):
    """A branch name or wildcard pattern (`release/*`) with who may push, merge, unprotect."""

    __tablename__ = "protected_branches"
    __table_args__ = (UniqueConstraint("project_id", "name"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(255))
    push_access_level: Mapped[int] = mapped_column(default=MAINTAINER_ACCESS)
    merge_access_level: Mapped[int] = mapped_column(default=MAINTAINER_ACCESS)
    unprotect_access_level: Mapped[int] = mapped_column(default=MAINTAINER_ACCESS)
    allow_force_push: Mapped[bool] = mapped_column(default=False)
    code_owner_approval_required: Mapped[bool] = mapped_column(default=False)


class CommitNote(Base):
    __tablename__ = "commit_notes"
    __table_args__ = (Index("ix_commit_notes_project_sha", "project_id", "commit_sha"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    commit_sha: Mapped[str] = mapped_column(String(64))
    author_id: Mapped[int] = mapped_column(ForeignKey("users.id"), info=contribution())
    note: Mapped[str] = mapped_column(Text)
    path: Mapped[str | None] = mapped_column(Text)
    line: Mapped[int | None]
    line_type: Mapped[str | None] = mapped_column(String(8))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Event(Base):
    """The outbox: one row per change others react to, written in the change's transaction."""

    __tablename__ = "events"
    __table_args__ = (Index("ix_events_project_id_id", "project_id", "id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int | None] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    author_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"), index=True)
    action: Mapped[str] = mapped_column(String(32))  # pushed, created, deleted, ...
    target_type: Mapped[str | None] = mapped_column(String(32))
    target_id: Mapped[int | None]
    data: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
