"""Feature flags as GitLab keeps them (Flipper's gates): a flag is on for everyone (the
boolean gate), for named actors (`User:1`, `Project:2`, `Group:3`), or for a percentage of
time or of actors. A flag with no row is at its default."""

from __future__ import annotations

from sqlalchemy import String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from kiln.models.base import Base, Timestamps


class FeatureGate(Timestamps, Base):
    __tablename__ = "feature_gates"
    __table_args__ = (UniqueConstraint("feature_key", "key", "value"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    feature_key: Mapped[str] = mapped_column(String(255), index=True)
    # boolean, actors, percentage_of_time, percentage_of_actors
    key: Mapped[str] = mapped_column(String(64))
    value: Mapped[str] = mapped_column(String(255))
