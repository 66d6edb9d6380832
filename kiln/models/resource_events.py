"""Resource events: the history of an issue's (epic's, merge request's) labels, milestone,
state and weight, one row per change, read back by the resource_*_events endpoints."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from kiln.models.base import Base, contribution, utcnow

ADD, REMOVE = "add", "remove"


class _ResourceEvent:
    id: Mapped[int] = mapped_column(primary_key=True)
    target_type: Mapped[str] = mapped_column(String(32))
    target_id: Mapped[int]
    user_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), info=contribution()
    )
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class ResourceLabelEvent(_ResourceEvent, Base):
    __tablename__ = "resource_label_events"
    __table_args__ = (Index("ix_resource_label_events_target", "target_type", "target_id", "id"),)

    label_id: Mapped[int | None] = mapped_column(ForeignKey("labels.id", ondelete="SET NULL"))
    action: Mapped[str] = mapped_column(String(16))


class ResourceMilestoneEvent(_ResourceEvent, Base):
    __tablename__ = "resource_milestone_events"
    __table_args__ = (Index("ix_resource_milestone_events_target", "target_type", "target_id", "id"),)

    milestone_id: Mapped[int | None] = mapped_column(ForeignKey("milestones.id", ondelete="SET NULL"))
    action: Mapped[str] = mapped_column(String(16))
    # The state when its milestone changed (GitLab's `state` field of the event).
    state: Mapped[str] = mapped_column(String(16))


class ResourceStateEvent(_ResourceEvent, Base):
    __tablename__ = "resource_state_events"
    __table_args__ = (Index("ix_resource_state_events_target", "target_type", "target_id", "id"),)

    state: Mapped[str] = mapped_column(String(16))


class ResourceWeightEvent(_ResourceEvent, Base):
    __tablename__ = "resource_weight_events"
    __table_args__ = (Index("ix_resource_weight_events_target", "target_type", "target_id", "id"),)

    weight: Mapped[int | None]
