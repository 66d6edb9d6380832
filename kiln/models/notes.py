"""Notes (comments, threads and the system's own notes) and award emoji on issues, epics,
merge requests and notes, keyed by (type, id) as GitLab's noteables and awardables are."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, Index, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from kiln.models.base import Base, Timestamps, contribution, never_reuse_ids

# noteable_type / awardable_type / target_type values, spelled as GitLab's API spells them.
ISSUE, EPIC, MERGE_REQUEST, NOTE, SNIPPET = "Issue", "Epic", "MergeRequest", "Note", "Snippet"
COMMIT = "Commit"


class Discussed:
    """What an issue, merge request or epic keeps of its discussion, written by the writes
    that change it (award emoji, notes, edits) in their own transaction, so lists read them
    from the row and order by them (popularity) without counting."""

    upvotes: Mapped[int] = mapped_column(default=0)
    downvotes: Mapped[int] = mapped_column(default=0)
    user_notes_count: Mapped[int] = mapped_column(default=0)
    last_edited_at: Mapped[datetime | None]
    last_edited_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))


class Note(Timestamps, Base):
    __tablename__ = "notes"
    __table_args__ = (
        Index("ix_notes_noteable", "noteable_type", "noteable_id", "created_at", "id"),
        Index("ix_notes_discussion_id", "discussion_id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    noteable_type: Mapped[str] = mapped_column(String(32))
    noteable_id: Mapped[int]
    project_id: Mapped[int | None] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    group_id: Mapped[int | None] = mapped_column(ForeignKey("namespaces.id", ondelete="CASCADE"), index=True)
    author_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), info=contribution()
    )
    body: Mapped[str] = mapped_column(Text)
    # `DiscussionNote` for a reply-able thread, `DiffNote` for one on a diff, None otherwise.
    type: Mapped[str | None] = mapped_column(String(32))
    system: Mapped[bool] = mapped_column(default=False)
    internal: Mapped[bool] = mapped_column(default=False)
    # 40 hex characters shared by the notes of one thread.
    discussion_id: Mapped[str] = mapped_column(String(40))
    resolvable: Mapped[bool] = mapped_column(default=False)
    resolved_at: Mapped[datetime | None]
    resolved_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    position: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    commit_id: Mapped[str | None] = mapped_column(String(64))
    updated_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    last_edited_at: Mapped[datetime | None]


class AwardEmoji(Timestamps, Base):
    __tablename__ = "award_emoji"
    __table_args__ = (
        UniqueConstraint("awardable_type", "awardable_id", "user_id", "name"),
        Index("ix_award_emoji_user_name", "user_id", "name"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(255))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    awardable_type: Mapped[str] = mapped_column(String(32))
    awardable_id: Mapped[int]


never_reuse_ids(Note)
never_reuse_ids(AwardEmoji)
