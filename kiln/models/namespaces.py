"""Namespaces (a user's own or a group) and group membership.

A user's namespace shares its path with the username, so user and group paths never clash.
"""

from __future__ import annotations

from datetime import date

from sqlalchemy import ForeignKey, Index, String, Text, UniqueConstraint, select, text
from sqlalchemy.orm import Mapped, column_property, mapped_column

from kiln.models.base import Base, Timestamps
from kiln.models.users import User

KIND_USER = "user"
KIND_GROUP = "group"

GUEST, REPORTER, DEVELOPER, MAINTAINER, OWNER = 10, 20, 30, 40, 50


class Namespace(Timestamps, Base):
    __tablename__ = "namespaces"
    __table_args__ = (
        Index(
            "uq_namespaces_parent_path_lower",
            text("coalesce(parent_id, 0)"),
            text("lower(path)"),
            unique=True,
        ),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))
    name: Mapped[str] = mapped_column(String(255))
    path: Mapped[str] = mapped_column(String(255))
    parent_id: Mapped[int | None] = mapped_column(ForeignKey("namespaces.id", ondelete="CASCADE"), index=True)
    owner_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), index=True, unique=True
    )
    description: Mapped[str] = mapped_column(Text, default="")
    visibility: Mapped[str] = mapped_column(String(16), default="private")


class Member(Timestamps, Base):
    """Membership of a user in a group namespace (project membership joins in [projects])."""

    __tablename__ = "members"
    __table_args__ = (UniqueConstraint("namespace_id", "user_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    namespace_id: Mapped[int] = mapped_column(ForeignKey("namespaces.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    access_level: Mapped[int]
    expires_at: Mapped[date | None]


# A user's own namespace id rides along with every user row (one indexed subquery), so views
# that show it (admin views, lists) need no query of their own.
User.namespace_id = column_property(  # type: ignore[misc,assignment]
    select(Namespace.id).where(Namespace.owner_id == User.id).correlate_except(Namespace).scalar_subquery()
)
